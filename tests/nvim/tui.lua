-- Real TUIs for the end-to-end specs: a tmux server of the spec's own, an inner Neovim with the
-- plugin reached through its --listen socket (keys go in through tmux, as a user types them),
-- and Claude Code (npm, .venv/agents) signed in against the scripted Anthropic API on
-- 127.0.0.1 (tests/agents/anthropic_stub.py). `T.new(H, root)` returns the handle.
local T = {}
T.__index = T


--- A handle on one spec's tmux, stub and inner Neovim; `root` is the project.
function T.new(H, root)
  local home = vim.env.CAIRN_HOME
  local work = vim.fn.fnamemodify(home, ':h') -- the temp dir holding proj/ and home/
  local self = setmetatable({
    H = H,
    root = root,
    home = home,
    work = work,
    gates = work .. '/gates',
    stub_log = work .. '/requests.log',
    tmux_sock = work .. '/tmux.sock',
    nvim_sock = work .. '/nvim.sock',
    -- Unique to this run: what tells its processes apart from any other.
    key = string.format('sk-ant-scripted-%010d-abcdefghij', vim.fn.getpid()),
    claude = H.repo .. '/.venv/agents/node_modules/.bin/claude',
    hit_enter = 0, -- how often the inner Neovim stopped at "Press ENTER"
  }, T)
  vim.fn.mkdir(self.gates, 'p')
  return self
end

function T:tmux(args)
  local out = vim.fn.system(vim.list_extend({ 'tmux', '-S', self.tmux_sock }, args))
  return (out:gsub('%s+$', '')), vim.v.shell_error
end

function T:pane(id)
  return (self:tmux({ 'capture-pane', '-p', '-J', '-t', id }))
end

--- Types `text` into pane `id`, then Enter.
function T:type_into(id, text)
  self:tmux({ 'send-keys', '-t', id, '-l', text })
  self:tmux({ 'send-keys', '-t', id, 'Enter' })
end

--- Gives Claude Code in pane `id` a prompt: typed, then Enter once the text is on its screen,
--- again until Claude is at work (a TUI can take a fast Enter as part of the typed text).
function T:prompt(id, text)
  self:tmux({ 'send-keys', '-t', id, '-l', text })
  local start = (text:sub(1, 12):gsub('%s+', ''))
  T.wait_slow(10000, function() return (self:pane(id):gsub('%s+', '')):find(start, 1, true) ~= nil end, 'the prompt on screen')
  for _ = 1, 10 do
    self:tmux({ 'send-keys', '-t', id, 'Enter' })
    if vim.wait(3000, function() return self:pane(id):find('esc to interrupt', 1, true) ~= nil end, 100) then
      return
    end
  end
  error('Claude did not take the prompt:\n' .. self:pane(id), 2)
end

--- Waits on a condition that runs a command: polls every 100 ms.
function T.wait_slow(ms, cond, what)
  if not vim.wait(ms, cond, 100) then
    error('timed out waiting for ' .. (type(what) == 'function' and what() or what), 2)
  end
end

--- The cairn CLI on the project: its output and exit code.
function T:cli(...)
  local out = vim.fn.system(vim.list_extend({ require('cairn.rpc').binary(), '--project-root', self.root, '--cairn-home', self.home }, { ... }))
  return out, vim.v.shell_error
end

function T:cli_json(...)
  local out, code = self:cli(...)
  self.H.eq(code, 0, 'cairn ' .. table.concat({ ... }, ' ') .. ': ' .. out)
  return vim.json.decode(out)
end

--- Starts the scripted model with `script` (see anthropic_stub.py); returns its port. Its
--- gates are files under `self.gates`.
function T:stub(script)
  script.gate_dir = self.gates
  local f = assert(io.open(self.work .. '/script.json', 'w'))
  f:write(vim.json.encode(script))
  f:close()
  local job = vim.fn.jobstart({ 'sh', '-c', 'exec python3 "$0" "$1" "$2" 2>"$3"', self.H.repo .. '/tests/agents/anthropic_stub.py', self.work .. '/script.json', self.work .. '/port', self.stub_log })
  self.H.ok(job > 0, 'the stub started')
  self.stub_job = job
  self.H.wait(20000, function() return self.H.read(self.work .. '/port') ~= nil end, 'the scripted model to listen')
  self.port = self.H.read(self.work .. '/port')
  return self.port
end

--- Writes cairn's config (`toml`) and a signed-in Claude Code user who trusts the project.
function T:setup(toml)
  vim.fn.mkdir(self.home, 'p')
  local f = assert(io.open(self.home .. '/config.toml', 'w'))
  f:write(toml)
  f:close()
  self.claude_home = self.work .. '/claude-home'
  vim.fn.mkdir(self.claude_home, 'p')
  f = assert(io.open(self.claude_home .. '/.claude.json', 'w'))
  f:write(vim.json.encode({
    hasCompletedOnboarding = true,
    theme = 'dark',
    customApiKeyResponses = { approved = { self.key:sub(-20) }, rejected = {} },
    projects = { [self.root] = { hasTrustDialogAccepted = true, hasCompletedProjectOnboarding = true } },
  }))
  f:close()
end

--- The tmux server, `width` × `height`, its first pane the inner Neovim on `file`. tmux's
--- panes get the server's environment: Claude's home, endpoint and key, cairn's home.
function T:start(width, height, file)
  local env = {
    'env', 'HOME=' .. self.claude_home, 'ANTHROPIC_BASE_URL=http://127.0.0.1:' .. self.port, 'ANTHROPIC_API_KEY=' .. self.key,
    'DISABLE_TELEMETRY=1', 'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1', 'CAIRN_HOME=' .. self.home, 'CAIRN_REPO=' .. self.H.repo,
  }
  local inner = string.format('%s --listen %s -u %s -i NONE -n %s', vim.fn.shellescape(vim.v.progpath),
    vim.fn.shellescape(self.nvim_sock), vim.fn.shellescape(self.H.repo .. '/tests/nvim/tmux_init.lua'), vim.fn.shellescape(file))
  local out = vim.fn.system(vim.list_extend(env, { 'tmux', '-S', self.tmux_sock, 'new-session', '-d', '-s', 'cairn', '-x', tostring(width), '-y', tostring(height), '-c', self.root, inner }))
  self.H.eq(vim.v.shell_error, 0, 'tmux new-session: ' .. out)
  self.nvim_pane = self:tmux({ 'display-message', '-p', '-t', 'cairn:0.0', '#{pane_id}' })
  -- A pane whose command ended stays, dead, with what it printed (for the failure messages).
  self:tmux({ 'set-option', '-g', 'remain-on-exit', 'on' })
  self.H.wait(10000, function()
    if vim.uv.fs_stat(self.nvim_sock) then
      local ok, c = pcall(vim.fn.sockconnect, 'pipe', self.nvim_sock, { rpc = true })
      self.chan = ok and c > 0 and c or nil
    end
    return self.chan ~= nil
  end, "the inner Neovim's socket")
end

--- Runs `code` in the inner Neovim; returns its value. A Neovim waiting at a prompt answers
--- no request but nvim_get_mode: at "Press ENTER" (its messages overflowed the command
--- line), Enter is pressed first, as its user would, and counted.
function T:remote(code, ...)
  local mode = vim.rpcrequest(self.chan, 'nvim_get_mode')
  if mode.blocking then
    self.H.ok(mode.mode:sub(1, 1) == 'r', 'the inner Neovim blocked at a prompt: ' .. vim.inspect(mode))
    self.hit_enter = self.hit_enter + 1
    self:tmux({ 'send-keys', '-t', self.nvim_pane, 'Enter' })
    self.H.wait(5000, function() return not vim.rpcrequest(self.chan, 'nvim_get_mode').blocking end, 'Enter to end "Press ENTER"')
  end
  return vim.rpcrequest(self.chan, 'nvim_exec_lua', code, { ... })
end

--- The pane that is not among `known` (pane ids), once there is one.
function T:new_pane(known, what)
  local found
  T.wait_slow(20000, function()
    for _, p in ipairs(vim.split(self:tmux({ 'list-panes', '-a', '-F', '#{pane_id}' }), '\n')) do
      if not vim.tbl_contains(known, p) then
        found = p
      end
    end
    return found ~= nil
  end, what)
  return found
end

--- Processes of this run (their environment holds its key), but this one.
function T:processes()
  local found = {}
  for _, dir in ipairs(vim.fn.glob('/proc/[0-9]*', false, true)) do
    local pid = tonumber(dir:match('%d+$'))
    local env = pid ~= vim.fn.getpid() and self.H.read(dir .. '/environ')
    if env and env:find(self.key, 1, true) then
      local cmd = (self.H.read(dir .. '/cmdline') or ''):gsub('%z', ' ')
      table.insert(found, pid .. ' ' .. cmd)
    end
  end
  return found
end

--- Ends it all: the inner Neovim's channel, the tmux server; true once no process of this
--- run is left.
function T:stop()
  if self.chan then
    pcall(vim.fn.chanclose, self.chan)
  end
  self:tmux({ 'kill-server' })
  if self.stub_job then
    vim.fn.jobstop(self.stub_job)
  end
  return vim.wait(20000, function() return #self:processes() == 0 end, 100)
end

return T
