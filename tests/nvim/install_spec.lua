-- The plugin installed the ways a user installs it (:help cairn-install): with nothing but
-- 'runtimepath' set, `:help cairn` opens at the top of doc/cairn.txt (doc/tags ships, and is
-- what :helptags makes of it); options come from `vim.g.cairn` without a setup() call;
-- `:checkhealth cairn` compares the binary's version with the plugin's and, in a fresh project
-- whose first index is still running, shows no error that is not one.
-- (Neovim 0.12's vim.pack: install_pack_spec.lua.)
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')

local nvim = vim.v.progpath

--- Runs a child Neovim with only 'runtimepath' set to the plugin, executing `lua` (a chunk
--- whose value is printed as JSON); returns that value.
local function child(lua, env)
  local script = vim.fn.tempname() .. '.lua'
  vim.fn.writefile(vim.split('local function main()\n' .. lua .. '\nend\nio.stdout:write(vim.json.encode(main()))\n', '\n'), script)
  local r = vim.system({ nvim, '--headless', '-u', 'NONE', '-i', 'NONE', '-n', '--cmd', 'set rtp^=' .. vim.fn.fnameescape(H.repo), '-l', script }, { text = true, env = env }):wait()
  local ok, value = pcall(vim.json.decode, r.stdout or '')
  H.ok(ok, 'the child said: ' .. tostring(r.stdout) .. tostring(r.stderr))
  return value, r.stderr
end

H.test(':help cairn opens doc/cairn.txt at its top with only rtp set', function()
  local at = child([[
    vim.cmd('help cairn')
    return { file = vim.fn.expand('%:t'), line = vim.fn.line('.'), top = vim.fn.line('w0') }
  ]])
  H.eq(at, { file = 'cairn.txt', line = 1, top = 1 }, ':help cairn')
end)

H.test('doc/tags ships, and is what :helptags makes of doc/cairn.txt', function()
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, 'p')
  vim.fn.writefile(vim.fn.readfile(H.repo .. '/doc/cairn.txt', 'b'), dir .. '/cairn.txt', 'b')
  vim.cmd('helptags ' .. vim.fn.fnameescape(dir))
  local shipped = H.read(H.repo .. '/doc/tags')
  H.ok(shipped, 'doc/tags is missing')
  H.ok(shipped == H.read(dir .. '/tags'), 'doc/tags is stale: regenerate it with `nvim --headless -u NONE -c "helptags doc" -c q` and commit it')
end)

H.test('vim.g.cairn configures the plugin without setup(); a wrong key is said, defaults stay', function()
  local values = child([[
    vim.g.cairn = { ghost_text = false, keymaps = false, auto_reload = false }
    vim.cmd.runtime('plugin/cairn.lua')
    local c = require('cairn.config').values
    return { ghost_text = c.ghost_text, keymaps = c.keymaps, auto_reload = c.auto_reload, mapped = vim.fn.maparg('<leader>a', 'n') }
  ]])
  H.eq(values, { ghost_text = false, keymaps = false, auto_reload = false, mapped = '' }, 'the options vim.g.cairn set')
  local wrong, stderr = child([[
    local said = {}
    vim.notify = function(msg) table.insert(said, msg) end
    vim.g.cairn = { ghost_txt = false }
    vim.cmd.runtime('plugin/cairn.lua')
    return { ghost_text = require('cairn.config').values.ghost_text, said = said, commands = vim.fn.exists(':CairnAccept') }
  ]])
  H.eq({ wrong.ghost_text, wrong.commands }, { true, 2 }, 'defaults and commands after a wrong key: ' .. tostring(stderr))
  H.ok(#wrong.said == 1 and wrong.said[1]:find("vim.g.cairn: unknown option 'ghost_txt'", 1, true), vim.inspect(wrong.said))
end)

--- `:checkhealth cairn` as text.
local function health()
  vim.cmd('checkhealth cairn')
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  vim.cmd('bwipeout!')
  return text
end

--- Lines of a health report that are errors.
local function errors(text)
  return vim.tbl_filter(function(l) return l:find('ERROR', 1, true) ~= nil end, vim.split(text, '\n'))
end

H.test(':checkhealth cairn in a fresh project while its first index runs: no false error', function()
  -- Enough files that the first index is still running when :checkhealth asks.
  local files = {}
  for i = 1, 10000 do
    files[string.format('src/d%03d/f%05d.txt', i % 200, i)] = 'line ' .. i .. '\n'
  end
  H.project(files)
  local text = health()
  H.ok(text:find('first index of the project in progress', 1, true), 'asked while the first index ran:\n' .. text)
  H.ok(text:find("the plugin's version", 1, true), 'the versions compared:\n' .. text)
  for _, l in ipairs(errors(text)) do
    H.ok(not l:find('stable.db', 1, true) and not l:find('version', 1, true) and not l:find('RPC', 1, true), 'a false error:\n' .. text)
  end
  -- Once indexed: the database is there, and writable.
  H.wait(120000, function()
    local pong = require('cairn.rpc').request('ping')
    return pong ~= nil and pong.indexing == false
  end, 'the first index to end')
  text = health()
  H.ok(text:find('stable.db is writable', 1, true) and not text:find('in progress', 1, true), text)
end)

H.test(':checkhealth cairn says when the binary is of another version than the plugin', function()
  local other = vim.fn.tempname()
  vim.fn.writefile({ '#!/bin/sh', 'echo "cairn 0.0.1"' }, other)
  vim.fn.setfperm(other, 'rwxr-xr-x')
  local text = child([[
    vim.g.cairn = { binary = ']] .. other .. [[', keymaps = false }
    vim.cmd.runtime('plugin/cairn.lua')
    vim.cmd('checkhealth cairn')
    return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  ]], { CAIRN_HOME = vim.fn.tempname() })
  H.ok(text:find('is cairn 0.0.1, the plugin is ' .. require('cairn.version'), 1, true), text)
end)

H.finish()
