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

--- `args`: `[id] [reason]` (a first word that names an agent is its id).
function M.reject(args, on_done)
  require('cairn.review').reject(args, on_done)
end

function M.revise(id, on_done)
  require('cairn.review').revise(id, on_done)
end

--- A note on lines `first`..`last` (1-based) of the current buffer's file.
function M.comment(first, last, text, on_done)
  require('cairn.review').comment(first, last, text, on_done)
end

function M.undo(id, on_done)
  require('cairn.review').undo(id, on_done)
end

--- `force` accepts a hunk even where it conflicts with the user's edit.
function M.accept_hunk(on_done, force)
  require('cairn.review').accept_hunk(on_done, force)
end

--- `:CairnHunks[!]`: the shown agent's pending hunks (`all`: every agent's) in the quickfix
--- list; `on_done(items)`.
function M.hunks(all, on_done)
  require('cairn.hunks').fill(all, on_done)
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

function M.reject_hunk(on_done, reason)
  require('cairn.review').reject_hunk(on_done, reason)
end

function M.preview(id, on_done, opts)
  require('cairn.preview').open(id, on_done, opts)
end

--- `:CairnStart [id]`: agents held by `auto_spawn = false` start (all, or `id`).
function M.start(id, on_done)
  rpc.call('start', (id and id ~= '') and { id = id } or vim.empty_dict(), function(r)
    local started = r.started or {}
    notify.notify(#started == 0 and 'no agent was waiting to start' or ('started ' .. table.concat(started, ', ')))
    if on_done then on_done(r) end
  end)
end

function M.wrap(cmd, on_done)
  require('cairn.wrap').start(cmd, on_done)
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
  local jj = ''
  if type(s.jj) == 'table' and type(s.jj.change) == 'string' and s.jj.change ~= '' then
    jj = '  jj ' .. s.jj.change:sub(1, 8) .. (s.jj.status ~= 'proposed' and (' (' .. tostring(s.jj.status) .. ')') or '')
  end
  local state = s.in_progress == true and (s.state .. ' (in progress)') or s.state
  if type(s.revision) == 'number' and s.revision > 1 then
    state = state .. ' r' .. s.revision
  end
  local over = (type(s.overlaps) == 'table' and #s.overlaps > 0) and ('  [overlaps ' .. table.concat(s.overlaps, ', ') .. ']') or ''
  -- The summary and task are the agent's words: shown, never obeyed.
  return notify.escape(string.format('%s  %-10s %s%s%s%s', s.id, state, summary ~= '' and summary or s.task, err, jj, over))
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
  local order = require('cairn.ghost').status.order
  local prompt = (type(order) == 'table' and #order > 1) and ('cairn agents (land in this order: ' .. table.concat(order, ', ') .. ')') or 'cairn agents'
  vim.ui.select(items, { prompt = prompt, format_item = describe }, function(choice)
    if choice then
      M.select(choice.id)
    end
  end)
end

--- Without arguments: the project's status snapshot, for statuslines (`{text, agents, order,
--- overlaps}`: `text` is one short line such as `A 3f2a waits ⚠B  B 9c1d works ⚠A`, `agents`
--- each agent's `{id, mark, state, waits, in_progress, checks_failed, stalled, overlaps}`).
--- Never blocks: it is what the host pushed last (`User CairnStatus` fires when it changes).
--- With an id (`''`: the shown agent): `:CairnStatus`, in a floating window.
function M.status(id, on_done)
  if id == nil and on_done == nil then
    return require('cairn.ghost').status
  end
  rpc.call('status', (id and id ~= '') and { id = id } or vim.empty_dict(), function(s)
    local lines = { describe(s) }
    if type(s.for_task) == 'table' then
      table.insert(lines, string.format('  task %s (%s)%s', s.for_task.id, s.for_task.status, require('cairn.ghost').checks_text(s.for_task.checks)))
    end
    if type(s.overlaps) == 'table' and #s.overlaps > 0 then
      table.insert(lines, '  overlaps ' .. table.concat(s.overlaps, ', '))
    end
    for _, c in ipairs(s.changes or {}) do
      table.insert(lines, string.format('  %-9s %s', c.kind, c.path))
    end
    notify.float(lines)
    if on_done then on_done(s) end
  end)
end

--- The statusline component (lualine: `sections = { lualine_x = { require('cairn').statusline } }`):
--- each agent's mark, id and state, `''` without agents.
function M.statusline()
  local s = require('cairn.ghost').status
  if type(s) ~= 'table' or type(s.text) ~= 'string' or s.text == '' then
    return ''
  end
  return 'cairn ' .. notify.escape(s.text)
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

--- A read-only scratch buffer in a new tab holding `lines`.
local function scratch(name, lines)
  vim.cmd('tabnew')
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  pcall(vim.api.nvim_buf_set_name, buf, name)
  return buf
end


--- One line of `:CairnTasks` (agent-written text escaped).
function M.task_line(t)
  local checks = {}
  for _, c in ipairs(t.checks or {}) do
    table.insert(checks, require('cairn.ghost').check_mark(c))
  end
  local s = string.format('%-8s %-12s %-5s %-18s %-6s %-5s %s', t.id, t.status, t.ready and 'ready' or '',
    t.assignee ~= vim.NIL and t.assignee or '-', t.agent ~= vim.NIL and t.agent or '-',
    #checks > 0 and table.concat(checks, ' ') or '-', t.title)
  if type(t.execution) == 'string' then
    s = s .. '  [' .. t.execution .. (type(t.progress) == 'string' and (': ' .. t.progress) or '') .. ']'
  end
  return notify.escape(s)
end

--- `:CairnTasks`: every task with status, ready, assignee, agent and checks; `<CR>` on a
--- task selects its agent (ghost text).
function M.tasks(on_done)
  rpc.call('tasks', nil, function(r)
    local tasks = r.tasks or {}
    local lines = { 'task     status       ready assignee           agent  check title' }
    for _, t in ipairs(tasks) do
      table.insert(lines, M.task_line(t))
    end
    local buf = scratch('cairn://tasks', lines)
    vim.keymap.set('n', '<CR>', function()
      local t = tasks[vim.api.nvim_win_get_cursor(0)[1] - 1]
      if t and t.agent ~= vim.NIL and t.agent then
        M.select(t.agent)
      else
        notify.notify('this task has no proposal yet')
      end
    end, { buffer = buf, desc = "Show the task agent's ghost text" })
    if on_done then on_done(tasks, buf) end
  end)
end

--- `:CairnLog [id]`: an agent's timeline (state changes, tool calls, log lines).
function M.log(id, on_done)
  rpc.call('log', (id and id ~= '') and { id = id } or vim.empty_dict(), function(r)
    local lines = {}
    for _, e in ipairs(r.events or {}) do
      local at = os.date('!%H:%M:%S', math.floor(e.ts_ms / 1000))
      table.insert(lines, notify.escape(string.format('%s %-10s %-15s %s', at, e.state, e.type, e.text)))
    end
    local buf = scratch('cairn://log/' .. r.id, lines)
    if on_done then on_done(r, buf) end
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

--- Called by the host for every state change (and task writes, rebases): one short message;
--- `notify` coalesces those that come together and keeps them to one line.
function M.on_event(ev)
  vim.api.nvim_exec_autocmds('User', { pattern = 'CairnEvent', modeline = false, data = ev })
  if ev.type == 'state_changed' and ev.state == 'reviewing' then
    -- Its proposal waits for the user: tell them if they are elsewhere (cairn.attention).
    require('cairn.attention').waiting(ev.id, type(ev.mark) == 'string' and ev.mark or nil)
  end
  -- Passing states are not worth a message; `:CairnLog` shows them.
  if ev.type == 'state_changed' and (ev.state == 'generating' or ev.state == 'submitting') then
    return
  end
  local msg
  if ev.type == 'task_changed' then
    -- A task write: its own text names the task, what happened and who did it.
    msg = ev.message
  else
    msg = string.format('agent %s %s', ev.id, ev.state)
    if ev.message and ev.message ~= '' then
      msg = msg .. ': ' .. ev.message
    end
  end
  if ev.type == 'rebased' then
    -- What an accept did to another pending proposal (said by the host, not an event).
    msg = ev.message
  end
  local level = (ev.type ~= 'task_changed' and levels[ev.state]) or vim.log.levels.INFO
  if ev.type == 'rebased' and (ev.conflicts or 0) > 0 then
    level = vim.log.levels.WARN
  end
  notify.notify(msg, level)
end

return M
