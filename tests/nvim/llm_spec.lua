-- :CairnQueue with text that is not a .pym path uses the configured llm provider (here a
-- command provider: a shell script that answers with code).
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')

local root = H.project({ ['README.md'] = '# demo\n' })
local home = vim.env.CAIRN_HOME
vim.fn.mkdir(home, 'p')
local answer = home .. '/answer.txt'
local f = assert(io.open(answer, 'w'))
f:write("Sure.\n```python\nwrite_file('README.md', read_file('README.md') + 'More words.\\n')\nsubmit_result('extend the readme', ['README.md'])\n```\n")
f:close()
local script = home .. '/fake-llm.sh'
f = assert(io.open(script, 'w'))
f:write('#!/bin/sh\ncat > /dev/null\ncat ' .. answer .. '\n')
f:close()
vim.fn.setfperm(script, 'rwxr-xr-x')
f = assert(io.open(home .. '/config.toml', 'w'))
f:write('[llm]\ncommand = ["' .. script .. '"]\n[ui]\nkeymaps = false\n')
f:close()

H.test(':CairnQueue in words runs the llm provider to reviewing', function()
  vim.cmd.edit(root .. '/README.md')
  local buf = vim.api.nvim_get_current_buf()
  vim.cmd('CairnQueue extend the readme')
  H.wait(15000, function() return H.hunks(buf) == 1 end, 'ghost text of the generated change')
  H.ok(vim.tbl_contains(H.virt_text(buf), 'More words.'), vim.inspect(H.virt_text(buf)))
  local s = require('cairn.rpc').request('status')
  H.eq(s.provider, 'llm', 'provider')
  H.eq(s.task, 'extend the readme', 'task')
end)

H.test('[ui] keymaps = false in config.toml removes the default mappings', function()
  H.eq(vim.fn.maparg('<leader>a', 'n'), '', '<leader>a mapped')
  H.ok(vim.fn.maparg('<Plug>(cairn-accept)', 'n') ~= '', '<Plug> mappings stay')
end)

H.finish()
