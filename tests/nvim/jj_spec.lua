-- A jj project in Neovim: the ghost header and :CairnListTasks name the agent's jj change,
-- :checkhealth says jj is on and which, and :help cairn-jj opens.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')

local root = H.project({
  ['f.txt'] = 'a\nb\nc\n',
  ['agents/one.pym'] = "write_file('f.txt', read_file('f.txt').replace('b\\n', 'B\\n'))\nsubmit_result('upper b', ['f.txt'])\n",
})
local jj = H.repo .. '/.venv/jj/bin/jj'
H.ok(vim.fn.executable(jj) == 1, 'jj is installed by the test command: ' .. jj)
local function user_jj(args)
  local out = vim.fn.system(vim.list_extend({ jj, '--config', 'user.name=u', '--config', 'user.email=u@example.com' }, args))
  H.eq(vim.v.shell_error, 0, 'jj ' .. table.concat(args, ' ') .. ': ' .. out)
  return out
end
user_jj({ 'git', 'init', '--colocate' })
user_jj({ 'commit', '-m', 'base' })
vim.fn.mkdir(vim.env.CAIRN_HOME, 'p')
local cfg = assert(io.open(vim.env.CAIRN_HOME .. '/config.toml', 'w'))
cfg:write('[jj]\nprogram = "' .. jj .. '"\n')
cfg:close()
require('cairn').setup({})

H.test('the ghost header and the agent list name the jj change', function()
  vim.cmd.edit(vim.fn.fnameescape(root .. '/f.txt'))
  local buf = vim.api.nvim_get_current_buf()
  require('cairn').queue('agents/one.pym', false)
  H.wait(10000, function() return H.hunks(buf) == 1 end, 'the agent hunk')
  H.wait(10000, function()
    local header = H.virt_text(buf)[1] or ''
    return header:find('  jj %l%l%l%l%l%l%l%l') ~= nil
  end, 'the change in the header: ' .. tostring(H.virt_text(buf)[1]))
  local change = H.virt_text(buf)[1]:match('  jj (%l+)')
  H.ok(user_jj({ 'log', '--no-graph', '-r', change, '-T', 'description' }):find('^cairn: %x+ upper b'), 'jj knows the change ' .. change)
  local items
  local orig = vim.ui.select
  vim.ui.select = function(list, opts, _) items = vim.tbl_map(opts.format_item, list) end
  require('cairn').list()
  H.wait(5000, function() return items ~= nil end, 'the agent list')
  vim.ui.select = orig
  H.ok(items[1]:find('jj ' .. change, 1, true), 'the list names the change: ' .. vim.inspect(items))
end)

H.test(':checkhealth says jj is on and which', function()
  vim.cmd('checkhealth cairn')
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  H.ok(text:find('jj: on, jj 0%.45%.1 %(' .. vim.pesc(jj) .. '%)'), text)
  vim.cmd('bwipeout')
end)

H.test(':help cairn-jj', function()
  vim.cmd('helptags ' .. vim.fn.fnameescape(H.repo .. '/doc'))
  vim.cmd('help cairn-jj')
  H.ok(vim.api.nvim_get_current_line():find('%*cairn%-jj%*'), vim.api.nvim_get_current_line())
  vim.cmd('close')
end)

H.finish()
