--- :checkhealth cairn
local M = {}

function M.check()
  local h = vim.health
  h.start('cairn')
  if vim.fn.has('nvim-0.10') == 1 then
    h.ok('Neovim ' .. tostring(vim.version()))
  else
    h.error('Neovim 0.10 or newer is required')
  end
  local rpc = require('cairn.rpc')
  local bin = rpc.binary()
  if not bin then
    h.error('cairn binary not found', { 'cargo build --release in the plugin directory', 'or put cairn on PATH', 'or set the binary option' })
    return
  end
  local mine = require('cairn.version')
  local out = vim.system({ bin, '--version' }, { text = true }):wait()
  local version = vim.trim(out.stdout or ''):match('^cairn (%S+)')
  local rebuild = { 'cargo build --release in the plugin directory (' .. vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h') .. '), or put that version on PATH, or set the binary option (see :help cairn-install)' }
  if not version then
    h.error('binary: ' .. bin .. ' did not say its version (`--version`: ' .. vim.trim((out.stdout or '') .. (out.stderr or '')) .. ')', rebuild)
  elseif version ~= mine then
    h.error('binary: ' .. bin .. ' is cairn ' .. version .. ', the plugin is ' .. mine, rebuild)
  else
    h.ok('binary: ' .. bin .. ' (cairn ' .. version .. ', the plugin\'s version)')
  end
  local info, err = rpc.request('health')
  if not info then
    h.error('RPC handshake failed: ' .. (err and err.message or '?'))
    return
  end
  if info.version == mine then
    h.ok('RPC handshake: host ' .. info.version .. ' serving ' .. info.root)
  else
    h.error('RPC handshake: the running host is cairn ' .. info.version .. ', the plugin is ' .. mine, { 'restart Neovim after rebuilding' })
  end
  if info.indexing then
    h.info('first index of the project in progress (agents wait for it)')
  end
  if info.stable_db_writable then
    h.ok('sqlite: ' .. info.stable_db .. (info.indexing and ' can be made and written' or ' is writable'))
  else
    h.error('sqlite: ' .. info.stable_db .. ' is not writable')
  end
  if info.tmux and info.tmux ~= vim.NIL then
    h.ok(info.tmux .. (info.inside_tmux and ' (inside tmux: previews open in a split)' or ' (not inside tmux: previews open in a tab)'))
  else
    h.warn('tmux not found: previews open in a tab')
  end
  if #info.config_warnings == 0 then
    h.ok('config: no unknown keys (' .. info.cairn_home .. '/config.toml)')
  else
    for _, w in ipairs(info.config_warnings) do
      h.warn('config: ' .. w)
    end
  end
  M.sandbox(h, info.sandbox)
  if info.confined_runs == nil or info.confined_runs == vim.NIL then
    h.ok('confined runs: checks and run_command run in an allow-listed view with a copy-on-write workspace')
    for _, layer in ipairs(type(info.runs_layers) == 'table' and info.runs_layers or {}) do
      if layer:find('MISSING', 1, true) then
        h.warn('  ' .. layer, { 'see :help cairn-runs' })
      else
        h.ok('  ' .. layer)
      end
    end
  else
    h.error('confined runs unavailable (checks and run_command are refused): ' .. info.confined_runs,
      { 'see :help cairn-runs' })
  end
  local jj = info.jj
  if type(jj) == 'table' and jj.on then
    h.ok('jj: on, jj ' .. tostring(jj.version) .. ' (' .. tostring(jj.program) .. '): proposals are jj changes (see :help cairn-jj)')
  elseif type(jj) == 'table' and jj.error then
    h.error('jj: ' .. tostring(jj.why), { 'install jj 0.45 or newer, set [jj] program, or set [jj] enabled = "auto" (see :help cairn-jj)' })
  elseif type(jj) == 'table' then
    h.info('jj: off (' .. tostring(jj.why) .. ')')
  end
  if info.last_error and info.last_error ~= vim.NIL then
    h.warn('the host survived an error (and went on): ' .. info.last_error, { 'details in $CAIRN_HOME/logs/cairn.log' })
  else
    h.ok('host loop: no errors')
  end
  if info.llm_configured then
    h.ok('LLM provider configured')
  else
    h.info('no LLM configured: :CairnQueue takes .pym scripts only (see :help cairn-config-llm.endpoint)')
  end
end

--- The sandbox layers the host's self-test found on this kernel (see :help cairn-sandbox).
function M.sandbox(h, s)
  if type(s) ~= 'table' then
    h.error('sandbox: no self-test report')
    return
  end
  if s.error then
    h.error('sandbox self-test failed: ' .. s.error)
    return
  end
  local function check(ok, good, bad)
    if ok then h.ok('sandbox: ' .. good) else h.error('sandbox: ' .. bad) end
  end
  check(s.seccomp, 'seccomp allow-list installed', 'seccomp filter could not be installed')
  check(s.landlock == 'enforced', 'Landlock ' .. s.landlock, 'Landlock ' .. tostring(s.landlock))
  check(s.uid ~= 0, 'identity: ' .. s.identity .. ' (uid ' .. s.uid .. ')', 'the child runs as uid 0: ' .. s.identity)
  if s.namespaces_missing == '' then
    h.ok('sandbox: namespaces ' .. table.concat(s.namespaces, ', '))
  else
    h.warn('sandbox: namespaces ' .. table.concat(s.namespaces, ', ') .. '; not available: ' .. s.namespaces_missing,
      { 'seccomp and Landlock still deny what these would hide; see :help cairn-sandbox' })
  end
  if #s.not_denied == 0 then
    h.ok('sandbox: all ' .. s.probes .. ' forbidden syscalls denied')
  else
    h.error('sandbox: not denied: ' .. table.concat(s.not_denied, '; '))
  end
end

return M
