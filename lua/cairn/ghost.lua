--- Ghost text: the only module that owns the `cairn` namespace and sets extmarks (drawing in
--- `cairn.ghost.draw`, with `layout` for widths and `words` for the word diff).
---
--- The host pushes every pending proposal: the focused agent's (selected, or the newest) as
--- `{agent = {id, mark, summary, ...}, files = {[abs_path] = {path, kind, hunks = {{old_start,
--- removed, added}}, conflicts = {{s, e}}, conflict_with, overlaps}}}`, the others' in `others`
--- (same shape), and `status` (the project's status line). Positions are 0-based lines of the
--- file on disk. Each hunk renders as: removed lines highlighted `CairnDelete` (changed words
--- `CairnDeleteWord`), added lines as `virt_lines` in `CairnAdd` (changed words
--- `CairnAddWord`) wrapped to the narrowest window that shows the buffer and laid out again
--- when it resizes, a sign (with the agent's mark when several agents have proposals), and
--- one header line per agent and file, leading with mark, state and revision. Where several
--- agents' proposals meet, each body is labelled with its agent's mark. A hunk that conflicts
--- with what landed (another agent's accept, the user's edit) uses `CairnConflict` and says
--- with whom; a hunk that overlaps another pending proposal, or the buffer's unsaved edits,
--- says so. Marks are extmarks, so they follow edits; rows are clamped, so nothing throws at
--- the end of a buffer.
local M = {}

local header = require('cairn.ghost.header')
M.check_mark = header.check_mark
M.checks_text = header.checks_text
M.state_text = header.state_text

M.ns = vim.api.nvim_create_namespace('cairn')

---@type table? the last payload from the host
M.payload = nil

--- Per buffer: list of {mark = extmark id of the hunk's range, hunk = hunk, path = rel path}.
---@type table<integer, table[]>
M.hunk_marks = {}

--- Per buffer: the width and tabstop its ghost lines were laid out for.
---@type table<integer, table>
M.laid_out = {}

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
  M.laid_out[buf] = nil
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
  local draw = require('cairn.ghost.draw')
  local ctx = draw.new(buf, M.ns, multi)
  for _, e in ipairs(entries) do
    draw.agent(ctx, e.file, e.agent)
  end
  draw.finish(ctx)
  M.hunk_marks[buf] = ctx.marks
  M.laid_out[buf] = { ctx.width, ctx.ts }
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

--- Lays `buf`'s ghost text out again when the width or tabstop it was laid out for changed.
function M.relayout(buf)
  local was = M.laid_out[buf]
  if was and vim.api.nvim_buf_is_valid(buf) and not vim.deep_equal(was, { require('cairn.ghost.layout').width(buf), vim.bo[buf].tabstop }) then
    M.attach(buf)
  end
end

vim.api.nvim_create_autocmd('WinResized', {
  group = group,
  callback = function()
    local seen = {}
    for _, win in ipairs(vim.v.event.windows or {}) do
      local buf = vim.api.nvim_win_is_valid(win) and vim.api.nvim_win_get_buf(win)
      if buf and not seen[buf] then
        seen[buf] = true
        M.relayout(buf)
      end
    end
  end,
  desc = 'cairn: ghost lines laid out again for the new width',
})

vim.api.nvim_create_autocmd('OptionSet', {
  group = group,
  pattern = { 'wrap', 'number', 'relativenumber', 'numberwidth', 'signcolumn', 'foldcolumn', 'statuscolumn', 'tabstop' },
  callback = function()
    M.relayout(vim.api.nvim_get_current_buf())
  end,
  desc = 'cairn: ghost lines laid out again for the new text width',
})

vim.api.nvim_create_autocmd('WinClosed', {
  group = group,
  callback = function(ev)
    -- The window is still there: look once it is gone (the others may be wider now).
    vim.schedule(function()
      M.relayout(ev.buf)
    end)
  end,
  desc = 'cairn: ghost lines laid out again when a narrower window closes',
})

vim.api.nvim_create_autocmd({ 'BufWritePost', 'FileChangedShellPost' }, {
  group = group,
  callback = function()
    M.refresh()
  end,
  desc = 'cairn: refresh ghost text after a save or an outside change',
})

return M
