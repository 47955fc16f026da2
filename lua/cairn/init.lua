--- cairn.nvim: review AI agents' proposals as ghost text. `setup()` is optional.
local config = require('cairn.config')
local notify = require('cairn.notify')
local rpc = require('cairn.rpc')

local M = {}

--- Validates and applies options (see :help cairn-setup).
---@param opts cairn.Config?
function M.setup(opts)
  config.setup(opts)
end

--- `:CairnQueue[!] {task}`: a .pym path runs that script; other text asks the configured LLM.
function M.queue(task, high, on_done)
  task = vim.trim(task or '')
  if task == '' then
    notify.error('CairnQueue needs a task: a .pym path or a description')
    return nil
  end
  -- The host reports the new agent (and each later state) through on_event.
  rpc.call('queue', { task = task, high = high and true or false }, on_done)
end

-- Every action below is asynchronous: the optional `on_done(result)` runs when it is done.

function M.accept(id, on_done)
  require('cairn.review').accept(id, on_done)
end

function M.reject(id, on_done)
  require('cairn.review').reject(id, on_done)
end

function M.undo(id, on_done)
  require('cairn.review').undo(id, on_done)
end

--- `force` accepts a hunk even where it conflicts with the user's edit.
function M.accept_hunk(on_done, force)
  require('cairn.review').accept_hunk(on_done, force)
end

function M.next_hunk()
  if not require('cairn.ghost').jump(1) then
    notify.notify('no next cairn hunk in this buffer')
  end
end

function M.prev_hunk()
  if not require('cairn.ghost').jump(-1) then
    notify.notify('no previous cairn hunk in this buffer')
  end
end

--- `:CairnRefresh`: recompute the proposal against the files as they are now.
function M.refresh()
  if not rpc.chan then
    rpc.start()
  end
  require('cairn.ghost').refresh(0)
end

function M.reject_hunk(on_done)
  require('cairn.review').reject_hunk(on_done)
end

function M.preview(id, on_done)
  require('cairn.preview').open(id, on_done)
end

function M.select(id, on_done)
  rpc.call('select', { id = id }, function(r)
    notify.notify('showing agent ' .. r.id)
    if on_done then on_done(r) end
  end)
end

local function describe(s)
  local summary = type(s.submission) == 'table' and s.submission.summary or ''
  local err = (s.error ~= vim.NIL and s.error) and (' [' .. tostring(s.error_kind) .. ']') or ''
  return string.format('%s  %-10s %s%s', s.id, s.state, summary ~= '' and summary or s.task, err)
end

--- `:CairnListTasks`: every agent with its state; choosing one selects it.
function M.list()
  rpc.call('list', nil, function(agents)
    M._choose(agents.agents or {})
  end)
end

function M._choose(items)
  if #items == 0 then
    notify.notify('no agents')
    return
  end
  vim.ui.select(items, { prompt = 'cairn agents', format_item = describe }, function(choice)
    if choice then
      M.select(choice.id)
    end
  end)
end

function M.status(id, on_done)
  rpc.call('status', (id and id ~= '') and { id = id } or vim.empty_dict(), function(s)
    local lines = { describe(s) }
    for _, c in ipairs(s.changes or {}) do
      table.insert(lines, string.format('  %-9s %s', c.kind, c.path))
    end
    notify.notify(table.concat(lines, '\n'))
    if on_done then on_done(s) end
  end)
end

--- `:CairnDiff`: the unified diff in a scratch buffer.
function M.diff(id, on_done)
  rpc.call('diff', (id and id ~= '') and { id = id } or vim.empty_dict(), function(d)
    vim.cmd('tabnew')
    local buf = vim.api.nvim_get_current_buf()
    vim.bo[buf].buftype = 'nofile'
    vim.bo[buf].bufhidden = 'wipe'
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(d.text, '\n', { trimempty = true }))
    vim.bo[buf].filetype = 'diff'
    vim.bo[buf].modifiable = false
    pcall(vim.api.nvim_buf_set_name, buf, 'cairn://diff/' .. d.id)
    if on_done then on_done(d) end
  end)
end

--- Completion of agent ids.
function M.complete_ids(arglead)
  if not rpc.chan then
    return {}
  end
  local r = rpc.request('list')
  local out = {}
  for _, s in ipairs((r and r.agents) or {}) do
    if vim.startswith(s.id, arglead or '') then
      table.insert(out, s.id)
    end
  end
  return out
end

local levels = {
  errored = vim.log.levels.ERROR,
  rejected = vim.log.levels.WARN,
  generating = vim.log.levels.DEBUG,
  executing = vim.log.levels.DEBUG,
  submitting = vim.log.levels.DEBUG,
}

--- Called by the host for every state change.
function M.on_event(ev)
  local msg = string.format('agent %s %s', ev.id, ev.state)
  if ev.message and ev.message ~= '' then
    msg = msg .. ': ' .. ev.message
  end
  notify.notify(msg, levels[ev.state])
  vim.api.nvim_exec_autocmds('User', { pattern = 'CairnEvent', modeline = false, data = ev })
end

return M
