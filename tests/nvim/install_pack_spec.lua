-- Neovim 0.12's vim.pack installs the plugin from a local clone (`file://`, no network), as
-- :help cairn-install shows: the PackChanged hook sees the install with the plugin's path (where
-- its build step runs), the plugin loads with its options from `vim.g.cairn`, `:help cairn` and
-- `:checkhealth cairn` work from the installed copy. Skipped (one passing line) on 0.11.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')

if vim.pack == nil then
  H.test('vim.pack is Neovim 0.12\'s: nothing to install with here (skipped)', function() end)
  H.finish()
end

H.test('vim.pack.add installs cairn from a local clone; the hook, vim.g.cairn, :help and :checkhealth work', function()
  local work = vim.fn.tempname()
  vim.fn.mkdir(work, 'p')
  -- A clone of this repository as a user's would be: its committed files only (no target/).
  local clone = work .. '/cairn.git'
  local r = vim.system({ 'git', 'clone', '-q', '--no-local', H.repo, clone }, { text = true }):wait()
  H.eq(r.code, 0, 'git clone: ' .. tostring(r.stderr))
  H.ok(vim.fn.filereadable(clone .. '/doc/tags') == 1, 'doc/tags is committed')
  local binary = H.repo .. '/target/release/cairn'
  local project = work .. '/proj'
  vim.fn.mkdir(project, 'p')
  vim.fn.writefile({ 'a' }, project .. '/a.txt')
  local script = work .. '/init.lua'
  vim.fn.writefile(vim.split(([[
    local seen = {}
    vim.api.nvim_create_autocmd('PackChanged', {
      callback = function(ev)
        table.insert(seen, { name = ev.data.spec.name, kind = ev.data.kind, path = ev.data.path })
      end,
    })
    vim.g.cairn = { binary = %q, keymaps = false, ghost_text = false }
    vim.pack.add({ { src = %q, name = 'cairn' } }, { confirm = false, load = true })
    local out = { seen = seen, installed = vim.pack.get()[1] and vim.pack.get()[1].path or '' }
    out.commands = vim.fn.exists(':CairnAccept')
    out.ghost_text = require('cairn.config').values.ghost_text
    out.config_from = vim.fn.fnamemodify(vim.api.nvim_get_runtime_file('lua/cairn/config.lua', false)[1] or '', ':p')
    vim.cmd('help cairn')
    out.help = { file = vim.fn.expand('%%:p'), line = vim.fn.line('.') }
    vim.cmd('bwipeout!')
    vim.cmd('checkhealth cairn')
    out.health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
    io.stdout:write(vim.json.encode(out))
    require('cairn.rpc').stop()
  ]]):format(binary, 'file://' .. clone), '\n'), script)
  local env = {
    XDG_DATA_HOME = work .. '/data', XDG_CONFIG_HOME = work .. '/config',
    XDG_STATE_HOME = work .. '/state', XDG_CACHE_HOME = work .. '/cache',
    CAIRN_HOME = work .. '/home',
  }
  local run = vim.system({ vim.v.progpath, '--headless', '-u', 'NONE', '-i', 'NONE', '-n', '-l', script }, { text = true, env = env, cwd = project }):wait()
  local ok, out = pcall(vim.json.decode, run.stdout or '')
  H.ok(ok, 'the child Neovim said: ' .. tostring(run.stdout) .. '\n' .. tostring(run.stderr))
  local installed = out.installed
  H.ok(installed:find(work .. '/data/', 1, true) == 1, 'installed under the data directory: ' .. installed)
  -- (An install is also an update to its first version: the hook's build runs for either; a
  -- second cargo build of the same tree does nothing.)
  local install = vim.tbl_filter(function(e) return e.kind == 'install' end, out.seen)
  H.eq(install, { { name = 'cairn', kind = 'install', path = installed } }, 'PackChanged: the install, with the path the build step runs in: ' .. vim.inspect(out.seen))
  H.eq({ out.commands, out.ghost_text }, { 2, false }, 'loaded, with vim.g.cairn\'s options')
  H.ok(out.config_from:find(installed, 1, true) == 1, 'the installed copy runs: ' .. out.config_from)
  H.eq(out.help, { file = installed .. '/doc/cairn.txt', line = 1 }, ':help cairn')
  H.ok(out.health:find("the plugin's version", 1, true) and out.health:find('RPC handshake: host', 1, true), out.health)
end)

H.finish()
