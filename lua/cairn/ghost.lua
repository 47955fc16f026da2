--- Ghost text: the only module that owns the `cairn` namespace and sets extmarks.
---
--- The host pushes every pending proposal: the focused agent's (selected, or the newest) as
--- `{agent = {id, mark, summary, ...}, files = {[abs_path] = {path, kind, hunks = {{old_start,
--- removed, added}}, conflicts = {{s, e}}, conflict_with, overlaps}}}`, the others' in `others`
--- (same shape), and `status` (the project's status line). Positions are 0-based lines of the
--- file on disk. Each hunk renders as: removed lines highlighted `CairnDelete`, added lines as
--- `virt_lines` in `CairnAdd`, a sign (with the agent's mark when several agents have
--- proposals), and one header line per agent and file. A hunk that conflicts with what
--- landed (another agent's accept, the user's edit) uses `CairnConflict` and says with whom;
--- a hunk that overlaps another pending proposal, or the buffer's unsaved edits, says so.
--- Marks are extmarks, so they follow edits; rows are clamped, so nothing throws at the end
--- of a buffer.
local M = {}

local MARKS = { pass = '✓', fail = '✗', pending = '…' }

--- The mark of one check: `✓`, `✗` or `…`, and for a check an agent wrote, its author and
--- whether it counts for the gates: `✓(agent:x, not counted)`. `c` is a result string or a
--- check table (`{result, by, counts}` from the host, or a task's `{result, author,
--- approved_by}`).
function M.check_mark(c)
  if type(c) ~= 'table' then
    return MARKS[c] or '?'
  end
  local mark = MARKS[c.result] or '?'
  local by = c.by
  if by == nil and type(c.author) == 'string' and not c.author:match('^human') then
    by = c.author
  end
  if type(by) ~= 'string' then
    return mark
  end
  local counts = c.counts
  if counts == nil then
    counts = type(c.approved_by) == 'string'
  end
  return string.format('%s(%s%s)', mark, require('cairn.notify').escape(by), counts == true and ', approved' or ', not counted')
end

--- What the header says of the agent's state: at work (the proposal is still growing), undone,
--- its revision and how many hunks changed since the user last reviewed.
function M.state_text(agent, file)
  local parts = {}
  if agent.in_progress == true then
    table.insert(parts, 'in progress')
  elseif agent.state == 'undone' then
    table.insert(parts, 'undone')
  end
  if type(agent.revision) == 'number' and agent.revision > 1 then
    local changed = 0
    for _, r in ipairs(type(file.revised) == 'table' and file.revised or {}) do
      if r == true then
        changed = changed + 1
      end
    end
    table.insert(parts, string.format('revision %d, %d changed since your review', agent.revision, changed))
  end
  return #parts > 0 and ('  [' .. table.concat(parts, '; ') .. ']') or ''
end

--- `  checks ✓✗…` for the agent's task checks ('' without any).
function M.checks_text(checks)
  if type(checks) ~= 'table' or #checks == 0 then
    return ''
  end
  local marks = {}
  for _, c in ipairs(checks) do
    table.insert(marks, M.check_mark(c))
  end
  return '  checks ' .. table.concat(marks, ' ')
end

M.ns = vim.api.nvim_create_namespace('cairn')

---@type table? the last payload from the host
M.payload = nil

--- Per buffer: list of {mark = extmark id of the hunk's range, hunk = hunk, path = rel path}.
---@type table<integer, table[]>
M.hunk_marks = {}

local function buf_path(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' then
    return nil
  end
  return vim.fn.fnamemodify(name, ':p')
end


--- Clears ghost text from one buffer.
function M.clear(buf)
  if vim.api.nvim_buf_is_valid(buf) then
    vim.api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  end
  M.hunk_marks[buf] = nil
end

--- Does hunk `h` touch one of the buffer's unsaved edits `edits`?
local function touches_unsaved(h, edits)
  local s1, e1 = h.old_start, h.old_start + #(h.removed or {})
  for _, e in ipairs(edits) do
    if s1 <= e[2] and e[1] <= e1 then
      return true
    end
  end
  return false
end

--- Draws one agent's hunks of a file. `multi`: several agents have proposals (signs carry the
--- agent's mark).
local function draw(buf, file, agent, multi, map, unsaved, marks)
  local set = vim.api.nvim_buf_set_extmark
  local n = vim.api.nvim_buf_line_count(buf)
  local function row(r)
    return math.max(0, math.min(map(r), n - 1))
  end
  local esc = require('cairn.notify').escape
  local mark = (multi and type(agent.mark) == 'string') and agent.mark or ''
  local whole_conflict = file.file_conflict and file.file_conflict ~= vim.NIL
  local with = (type(file.conflict_with) == 'table' and #file.conflict_with > 0) and file.conflict_with or { 'your edit' }
  for i, h in ipairs(file.hunks or {}) do
    local removed, added = h.removed or {}, h.added or {}
    local first = row(h.old_start)
    local conflict = whole_conflict or M.in_conflict(file, h)
    local sign = conflict and '!' or (#removed == 0 and '+') or (#added == 0 and '-') or '~'
    local revised = type(file.revised) == 'table' and file.revised[i] == true
    if revised and not conflict then
      sign = 'R'
    end
    sign = mark:sub(1, 1) .. sign
    local del_hl, add_hl = conflict and 'CairnConflict' or 'CairnDelete', 'CairnAdd'
    local notes = {}
    if conflict then
      local who = {}
      for _, w in ipairs(with) do
        table.insert(who, w == 'your edit' and w or ('agent ' .. w))
      end
      table.insert(notes, 'conflicts with ' .. esc(table.concat(who, ', ')) .. '; the agent proposes (:CairnResolve):')
    end
    local over = type(file.overlaps) == 'table' and file.overlaps[i] or nil
    if type(over) == 'table' and #over > 0 then
      table.insert(notes, 'overlaps agent ' .. esc(table.concat(over, ', ')) .. ' (both change these lines)')
    end
    if touches_unsaved(h, unsaved) then
      table.insert(notes, 'overlaps your unsaved edit')
    end
    local chunks = {}
    for _, note in ipairs(notes) do
      table.insert(chunks, { { note, 'CairnConflict' } })
    end
    for _, l in ipairs(added) do
      table.insert(chunks, { { l, add_hl } })
    end
    if i == 1 then
      -- Created before the hunk's own marks: virtual lines on one row show in creation order.
      local at = (#removed > 0 or h.old_start == 0) and first or row(h.old_start - 1)
      local jj = (type(agent.jj) == 'string' and agent.jj ~= '') and ('  jj ' .. agent.jj) or ''
      local who = mark ~= '' and (mark .. ' ' .. agent.id) or agent.id
      local header = string.format('cairn %s: %s  (%d hunk%s)%s%s', who, agent.summary or '', #file.hunks, #file.hunks == 1 and '' or 's', M.checks_text(agent.checks), jj)
      header = header .. M.state_text(agent, file)
      if type(file.runs_by_itself) == 'string' then
        header = header .. '  ! ' .. file.runs_by_itself
      end
      header = esc(header)
      set(buf, M.ns, at, 0, { virt_lines = { { { header, 'CairnHeader' } } }, virt_lines_above = true })
    end
    local range_end
    if #removed > 0 then
      local last = row(h.old_start + #removed - 1)
      for r = first, last do
        set(buf, M.ns, r, 0, { line_hl_group = del_hl, sign_text = r == first and sign or nil, sign_hl_group = del_hl })
      end
      if #chunks > 0 then
        set(buf, M.ns, last, 0, { virt_lines = chunks })
      end
      range_end = last
    else
      -- Pure insertion after line old_start - 1 (before the first line when old_start is 0).
      local above = h.old_start == 0
      local anchor = above and 0 or row(h.old_start - 1)
      set(buf, M.ns, anchor, 0, { virt_lines = chunks, virt_lines_above = above, sign_text = sign, sign_hl_group = conflict and 'CairnConflict' or 'CairnAdd' })
      first, range_end = anchor, anchor
    end
    local id = set(buf, M.ns, first, 0, { end_row = range_end, end_col = 0, right_gravity = false, end_right_gravity = true })
    table.insert(marks, { mark = id, hunk = h, path = file.path, conflict = conflict, agent = agent.id })
  end
end

--- Renders the hunks of `file` into `buf` (one agent's).
function M.render(buf, file, agent)
  M.render_all(buf, { { file = file, agent = agent } }, false)
end

--- Renders every entry `{file, agent}` (the focused agent's first) into `buf`.
function M.render_all(buf, entries, multi)
  M.clear(buf)
  if not require('cairn.config').values.ghost_text then
    return
  end
  local map, unsaved = require('cairn.buffers').unsaved(buf)
  local marks = {}
  for _, e in ipairs(entries) do
    draw(buf, e.file, e.agent, multi, map, unsaved, marks)
  end
  M.hunk_marks[buf] = marks
  M.show_top_fill(buf)
end

--- Virtual lines above the first line only show when the window's `topfill` makes room:
--- set it in every window that shows the top of `buf`.
function M.show_top_fill(buf)
  local above = 0
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, M.ns, { 0, 0 }, { 0, -1 }, { details = true })) do
    if m[4].virt_lines_above and m[4].virt_lines then
      above = above + #m[4].virt_lines
    end
  end
  if above == 0 then
    return
  end
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    vim.api.nvim_win_call(win, function()
      if vim.fn.line('w0') == 1 then
        vim.fn.winrestview({ topfill = above })
      end
    end)
  end
end

--- Renders the current payload into `buf` if it shows one of the proposal's files.
function M.attach(buf)
  local path = buf_path(buf)
  local p = M.payload
  if not path or not p or not vim.api.nvim_buf_is_loaded(buf) then
    return
  end
  require('cairn.buffers').remember(buf)
  local entries = {}
  if p.files and p.files[path] then
    table.insert(entries, { file = p.files[path], agent = p.agent })
  end
  for _, o in ipairs(type(p.others) == 'table' and p.others or {}) do
    if type(o.files) == 'table' and o.files[path] then
      table.insert(entries, { file = o.files[path], agent = o.agent })
    end
  end
  if #entries > 0 then
    M.render_all(buf, entries, type(p.others) == 'table' and #p.others > 0)
  elseif M.hunk_marks[buf] then
    M.clear(buf)
  end
end

--- The project's status snapshot, as the host pushed it last (see `require('cairn').status()`).
M.status = { text = '', agents = {}, order = {} }

--- Called by the host with a new payload (`{status}` alone = no proposal to show).
function M.set(payload)
  if type(payload) == 'table' and type(payload.status) == 'table' then
    local changed = not vim.deep_equal(payload.status, M.status)
    M.status = payload.status
    if changed then
      vim.api.nvim_exec_autocmds('User', { pattern = 'CairnStatus', modeline = false, data = M.status })
    end
  end
  if type(payload) ~= 'table' or not (payload.agent or (type(payload.others) == 'table' and #payload.others > 0)) then
    payload = nil
  end
  M.payload = payload
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) then
      if payload then
        M.attach(buf)
      else
        M.clear(buf)
      end
    end
  end
  vim.api.nvim_exec_autocmds('User', { pattern = 'CairnGhost', modeline = false })
end

--- Does hunk `h` touch one of the file's conflicting line ranges `{s, e}` (0-based, end
--- exclusive; an insertion touches the line it goes before)?
function M.in_conflict(file, h)
  local s1, e1 = h.old_start, h.old_start + math.max(#(h.removed or {}), 1)
  for _, c in ipairs(file.conflicts or {}) do
    local s2, e2 = c[1], math.max(c[2], c[1] + 1)
    if s1 < e2 and s2 < e1 then
      return true
    end
  end
  return false
end

--- Rows (0-based, inclusive) a hunk covers now: its removed lines, or for a pure insertion
--- the line it follows; its ghost lines belong to that last row.
local function span(buf, m)
  local pos = vim.api.nvim_buf_get_extmark_by_id(buf, M.ns, m.mark, { details = true })
  local s = pos[1] or 0
  return s, (pos[3] and pos[3].end_row) or s
end

--- The hunk under the cursor in `buf` (`{path, hunk, conflict}`), or nil when the cursor is
--- on no hunk's lines and no hunk's ghost lines.
function M.hunk_at_cursor(buf)
  local cur = vim.api.nvim_win_get_cursor(0)[1] - 1
  -- The focused agent's hunks come first: where two agents' hunks share a line, its wins.
  for _, m in ipairs(M.hunk_marks[buf] or {}) do
    local s, e = span(buf, m)
    if cur >= s and cur <= e then
      return m
    end
  end
  return nil
end

--- Moves the cursor to the next (`dir` 1) or previous (-1) hunk in the current buffer;
--- returns false when there is none that way.
function M.jump(dir)
  local buf = vim.api.nvim_get_current_buf()
  local cur = vim.api.nvim_win_get_cursor(0)[1] - 1
  local rows = {}
  for _, m in ipairs(M.hunk_marks[buf] or {}) do
    table.insert(rows, (span(buf, m)))
  end
  table.sort(rows)
  local target
  for _, r in ipairs(rows) do
    if dir > 0 and r > cur and not target then
      target = r
    elseif dir < 0 and r < cur then
      target = r
    end
  end
  if not target then
    return false
  end
  vim.api.nvim_win_set_cursor(0, { target + 1, 0 })
  return true
end

local group = vim.api.nvim_create_augroup('cairn_ghost', {})
vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'BufWinEnter' }, {
  group = group,
  callback = function(ev)
    M.attach(ev.buf)
  end,
  desc = 'cairn: ghost text in buffers opened later',
})

local timer
--- Asks the host to recompute the proposal against the files as they are now (debounced):
--- after a save, the user's edit is rebased under the agent's change, never shown as one.
function M.refresh(delay)
  local rpc = require('cairn.rpc')
  if not rpc.chan then
    return
  end
  timer = timer or vim.uv.new_timer()
  timer:stop()
  timer:start(delay or 150, 0, vim.schedule_wrap(function()
    if rpc.chan then
      pcall(vim.rpcnotify, rpc.chan, 'refresh', vim.empty_dict())
    end
  end))
end

vim.api.nvim_create_autocmd({ 'TextChanged', 'InsertLeave' }, {
  group = group,
  callback = function(ev)
    if M.hunk_marks[ev.buf] then
      M.attach(ev.buf)
    end
  end,
  desc = 'cairn: ghost text placed on the lines of a buffer with unsaved edits',
})

vim.api.nvim_create_autocmd({ 'BufWritePost', 'FileChangedShellPost' }, {
  group = group,
  callback = function()
    M.refresh()
  end,
  desc = 'cairn: refresh ghost text after a save or an outside change',
})

return M
