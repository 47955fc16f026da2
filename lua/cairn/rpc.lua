--- The only module that knows the Rust process: finds the binary, starts `cairn nvim` with
--- jobstart({rpc = true}) on first use, sends requests, stops it on exit.
---
--- Requests are asynchronous (`call`): a `call` notification carries a sequence number, and
--- the host answers later with `_reply(seq, reply)`, so the editor never waits for the host.
--- `request` (a blocking rpcrequest) is kept for what must answer inline and is instant:
--- completion and :checkhealth.
local config = require('cairn.config')
local notify = require('cairn.notify')

local M = {}

---@type integer?
M.chan = nil

--- Callbacks of calls in flight, by sequence number.
local pending = {}
local seq = 0

--- Ends every call in flight with `err` (the host went away).
local function fail_pending(err)
  local cbs = pending
  pending = {}
  for _, cb in pairs(cbs) do
    vim.schedule(function() cb(nil, err) end)
  end
end

local function plugin_root()
  local src = debug.getinfo(1, 'S').source:sub(2)
  return vim.fn.fnamemodify(src, ':p:h:h:h')
end

--- The cairn binary: the `binary` option, `cairn` on PATH, or the plugin's own build.
---@return string?
function M.binary()
  local candidates = {}
  if config.values.binary then
    table.insert(candidates, config.values.binary)
  end
  local on_path = vim.fn.exepath('cairn')
  if on_path ~= '' then
    table.insert(candidates, on_path)
  end
  table.insert(candidates, plugin_root() .. '/target/release/cairn')
  for _, c in ipairs(candidates) do
    if vim.fn.executable(c) == 1 then
      return c
    end
  end
  return nil
end

--- The project root: the option, the nearest ancestor with .agentfs/, else the nearest with
--- .git (never a whole home directory by accident), else the cwd.
function M.project_root()
  if config.values.project_root then
    return (vim.fn.fnamemodify(config.values.project_root, ':p'):gsub('/$', ''))
  end
  for _, marker in ipairs({ '.agentfs', '.git' }) do
    local found = vim.fs.find(marker, { upward = true, path = vim.fn.getcwd() })[1]
    if found then
      return vim.fs.dirname(found)
    end
  end
  return vim.fn.getcwd()
end

--- Starts the host if it is not running. Returns the channel or nil (after telling the user).
---@return integer?
function M.start()
  if M.chan then
    return M.chan
  end
  local bin = M.binary()
  if not bin then
    notify.error('cairn binary not found: put it on PATH, build it (cargo build --release), or set the binary option')
    return nil
  end
  local root = M.project_root()
  local argv = { bin, '--project-root', root }
  if config.values.cairn_home then
    vim.list_extend(argv, { '--cairn-home', vim.fn.fnamemodify(vim.fn.expand(config.values.cairn_home), ':p') })
  end
  table.insert(argv, 'nvim')
  local ok, chan = pcall(vim.fn.jobstart, argv, {
    rpc = true,
    cwd = root,
    on_exit = function(_, code)
      M.chan = nil
      fail_pending({ code = 'no_host', message = 'the cairn host exited (' .. code .. ')' })
      if code ~= 0 and code ~= 143 and not vim.v.exiting then
        notify.error('the cairn host exited (' .. code .. '); see $CAIRN_HOME/logs/cairn.log')
      end
    end,
  })
  if not ok or chan <= 0 then
    notify.error('could not start ' .. bin .. ': ' .. tostring(chan))
    return nil
  end
  M.chan = chan
  M.root = root
  -- config.toml's [ui] keys apply where setup() did not say otherwise. The host answers
  -- ping before it has indexed a new project; the index runs in the background.
  M.call_async('ping', nil, function(result)
    if result then
      config.apply_ui(result.ui)
      -- Said once per host: an unknown key, or a project's .cairn.toml keys ignored until
      -- `cairn config trust`.
      for _, w in ipairs(result.config_warnings or {}) do
        notify.warn(w)
      end
    end
  end)
  vim.api.nvim_create_autocmd('VimLeavePre', {
    group = vim.api.nvim_create_augroup('cairn_rpc', {}),
    callback = M.stop,
    desc = 'cairn: stop the host',
  })
  return chan
end

function M.stop()
  if M.chan then
    pcall(vim.fn.jobstop, M.chan)
    M.chan = nil
  end
end

--- Sends a request. Returns the result, or nil and the error `{code, message, hint}`.
---@param method string
---@param args table?
---@return any, table?
function M.request(method, args)
  local chan = M.start()
  if not chan then
    return nil, { code = 'no_host', message = 'the cairn host is not running' }
  end
  local ok, reply = pcall(vim.rpcrequest, chan, method, args or vim.empty_dict())
  if not ok then
    return nil, { code = 'rpc', message = tostring(reply) }
  end
  if type(reply) ~= 'table' then
    return nil, { code = 'rpc', message = 'malformed reply: ' .. vim.inspect(reply) }
  end
  if reply.ok then
    return reply.result, nil
  end
  return nil, reply.error
end

--- Sends a request without waiting: `cb(result, err)` runs later on the main loop, with the
--- result or the error `{code, message, hint}`.
---@param method string
---@param args table?
---@param cb fun(result: any, err: table?)
--- Inside a preview (`cairn preview`: a confined view, no host, no socket): :CairnAccept,
--- :CairnReject and the hunk commands (the hunk at the cursor's file and line) are asked of
--- the `cairn` outside with an OSC sequence on the terminal; it acts on the previewed agent
--- only once you confirm in tmux. Nothing else is available.
local relayed = { accept = true, reject = true, accept_hunk = true, reject_hunk = true }
local function in_preview(method, args, cb)
  if relayed[method] then
    args = args or {}
    local ask = vim.json.encode({ action = method, reason = args.reason, file = args.file, line = args.line })
    vim.api.nvim_chan_send(2, '\027]5379;' .. ask .. '\007')
    notify.notify('cairn: ' .. method:gsub('_', ' ') .. ' asked of the preview\'s cairn: confirm in tmux')
  else
    cb(nil, { code = 'preview', message = 'inside a preview only :CairnAccept, :CairnReject and the hunk commands are relayed (confirmed in tmux)' })
  end
end

function M.call_async(method, args, cb)
  if vim.env.CAIRN_PREVIEW and vim.env.CAIRN_PREVIEW ~= '' then
    return in_preview(method, args, cb)
  end
  local chan = M.start()
  if not chan then
    cb(nil, { code = 'no_host', message = 'the cairn host is not running' })
    return
  end
  seq = seq + 1
  pending[seq] = cb
  local ok, err = pcall(vim.rpcnotify, chan, 'call', { seq = seq, method = method, args = args or vim.empty_dict() })
  if not ok then
    pending[seq] = nil
    cb(nil, { code = 'rpc', message = tostring(err) })
  end
end

--- Called by the host with the reply to call `s`.
function M._reply(s, reply)
  local cb = pending[s]
  pending[s] = nil
  if not cb then
    return
  end
  vim.schedule(function()
    if type(reply) ~= 'table' then
      cb(nil, { code = 'rpc', message = 'malformed reply: ' .. vim.inspect(reply) })
    elseif reply.ok then
      cb(reply.result, nil)
    else
      cb(nil, reply.error)
    end
  end)
end

--- Like call_async, but tells the user about an error; `on_done(result)` runs on success.
---@param on_done fun(result: any)?
function M.call(method, args, on_done)
  M.call_async(method, args, function(result, err)
    if err then
      notify.host_error(err)
    elseif on_done then
      on_done(result)
    end
  end)
end

return M
