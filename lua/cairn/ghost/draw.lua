--- Drawing one buffer's ghost text, in the namespace `cairn.ghost` owns. Each hunk: its
--- removed lines highlighted in the buffer (`CairnDelete`, the deleted words `CairnDeleteWord`),
--- its proposed lines as virtual lines below them (`CairnAdd`, the inserted words
--- `CairnAddWord`), cut to the narrowest window that shows the buffer, notes on conflicts and
--- overlaps, a sign, and a range mark that follows edits (hunk actions find the hunk by it).
--- Each agent's header sits above its first hunk of the file. Virtual lines that share a row
--- are gathered into one extmark, so they show in the order drawn: headers first, then
--- bodies, the focused agent's first; where several agents' bodies share a place or their
--- hunks overlap, each body is labelled with its agent's mark (`[A] `).
local M = {}

local words = require('cairn.ghost.words')
local layout = require('cairn.ghost.layout')
local header = require('cairn.ghost.header')

--- A drawing of `buf` in namespace `ns`: `multi`, several agents have proposals (signs carry
--- the agent's mark).
function M.new(buf, ns, multi)
  local map, unsaved = require('cairn.buffers').unsaved(buf)
  return {
    buf = buf,
    ns = ns,
    multi = multi,
    map = map,
    unsaved = unsaved,
    n = vim.api.nvim_buf_line_count(buf),
    width = layout.width(buf),
    ts = vim.bo[buf].tabstop,
    marks = {},
    places = {},
  }
end

--- The virtual lines anchored at `row` (above it or below it).
local function place(ctx, row, above)
  local key = row * 2 + (above and 0 or 1)
  local p = ctx.places[key]
  if not p then
    p = { row = row, above = above, headers = {}, bodies = {} }
    ctx.places[key] = p
  end
  return p
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

--- `line` as runs `{text, hl}`: the byte ranges `ranges` in `word_hl`, the rest in `hl`.
local function runs(line, ranges, hl, word_hl)
  if not ranges or #ranges == 0 then
    return { { line, hl } }
  end
  local out, at = {}, 0
  for _, r in ipairs(ranges) do
    if r[1] > at then
      out[#out + 1] = { line:sub(at + 1, r[1]), hl }
    end
    out[#out + 1] = { line:sub(r[1] + 1, r[2]), word_hl }
    at = r[2]
  end
  if at < #line then
    out[#out + 1] = { line:sub(at + 1), hl }
  end
  return out
end

--- The notes of hunk `i` of `file` (conflict, overlaps, unsaved edits), as single runs.
local function notes(ctx, file, i, h, conflict)
  local esc = require('cairn.notify').escape
  local out = {}
  if conflict then
    local with = (type(file.conflict_with) == 'table' and #file.conflict_with > 0) and file.conflict_with or { 'your edit' }
    local who = {}
    for _, w in ipairs(with) do
      table.insert(who, w == 'your edit' and w or ('agent ' .. w))
    end
    table.insert(out, { { 'conflicts with ' .. esc(table.concat(who, ', ')) .. '; the agent proposes (:CairnResolve):', 'CairnConflict' } })
  end
  local over = type(file.overlaps) == 'table' and file.overlaps[i] or nil
  if type(over) == 'table' and #over > 0 then
    table.insert(out, { { 'overlaps agent ' .. esc(table.concat(over, ', ')) .. ' (both change these lines)', 'CairnConflict' } })
  end
  if touches_unsaved(h, ctx.unsaved) then
    table.insert(out, { { 'overlaps your unsaved edit', 'CairnConflict' } })
  end
  return out, type(over) == 'table' and #over > 0
end

--- Highlights the deleted words `ranges` of removed line `line` at buffer row `r`, when the
--- buffer shows that line as the agent read it.
local function deleted_words(ctx, r, line, ranges)
  if not ranges or #ranges == 0 or vim.api.nvim_buf_get_lines(ctx.buf, r, r + 1, false)[1] ~= line then
    return
  end
  for _, range in ipairs(ranges) do
    vim.api.nvim_buf_set_extmark(ctx.buf, ctx.ns, r, range[1], { end_col = range[2], hl_group = 'CairnDeleteWord', priority = 4200, strict = false })
  end
end

--- Draws `agent`'s hunks of `file` (its removed lines, signs and range marks at once; its
--- virtual lines gathered for `M.finish`).
function M.agent(ctx, file, agent)
  local set = vim.api.nvim_buf_set_extmark
  local buf, ns = ctx.buf, ctx.ns
  local function row(r)
    return math.max(0, math.min(ctx.map(r), ctx.n - 1))
  end
  local mark = type(agent.mark) == 'string' and agent.mark or ''
  local sign_mark = ctx.multi and mark:sub(1, 1) or ''
  local whole_conflict = file.file_conflict and file.file_conflict ~= vim.NIL
  local ghost = require('cairn.ghost')
  for i, h in ipairs(file.hunks or {}) do
    local removed, added = h.removed or {}, h.added or {}
    local first = row(h.old_start)
    local conflict = whole_conflict or ghost.in_conflict(file, h)
    local sign = conflict and '!' or (#removed == 0 and '+') or (#added == 0 and '-') or '~'
    if type(file.revised) == 'table' and file.revised[i] == true and not conflict then
      sign = 'R'
    end
    sign = sign_mark .. sign
    local del_hl = conflict and 'CairnConflict' or 'CairnDelete'
    if i == 1 then
      local at = (#removed > 0 or h.old_start == 0) and first or row(h.old_start - 1)
      table.insert(place(ctx, at, true).headers, header.text(agent, file))
    end
    local items, overlap = notes(ctx, file, i, h, conflict)
    local paired, ranges_of = {}, {}
    for _, p in ipairs(words.pairs(removed, added)) do
      local ra, rb = words.ranges(removed[p[1]], added[p[2]])
      if ra then
        paired[p[2]], ranges_of[p[1]] = rb, ra
      end
    end
    for k, l in ipairs(added) do
      table.insert(items, runs(l, paired[k], 'CairnAdd', 'CairnAddWord'))
    end
    local body = { mark = mark, agent = agent.id, items = items, overlap = overlap }
    local range_end
    if #removed > 0 then
      local last = row(h.old_start + #removed - 1)
      for r = first, last do
        set(buf, ns, r, 0, { line_hl_group = del_hl, sign_text = r == first and sign or nil, sign_hl_group = del_hl })
      end
      for k, ra in pairs(ranges_of) do
        deleted_words(ctx, row(h.old_start + k - 1), removed[k], ra)
      end
      if #items > 0 then
        table.insert(place(ctx, last, false).bodies, body)
      end
      range_end = last
    else
      -- Pure insertion after line old_start - 1 (before the first line when old_start is 0).
      local above = h.old_start == 0
      local anchor = above and 0 or row(h.old_start - 1)
      set(buf, ns, anchor, 0, { sign_text = sign, sign_hl_group = conflict and 'CairnConflict' or 'CairnAdd' })
      table.insert(place(ctx, anchor, above).bodies, body)
      first, range_end = anchor, anchor
    end
    local id = set(buf, ns, first, 0, { end_row = range_end, end_col = 0, right_gravity = false, end_right_gravity = true })
    table.insert(ctx.marks, { mark = id, hunk = h, path = file.path, conflict = conflict, agent = agent.id })
  end
end

--- Sets the gathered virtual lines: one extmark per row and side, headers first.
function M.finish(ctx)
  local keys = vim.tbl_keys(ctx.places)
  table.sort(keys)
  for _, key in ipairs(keys) do
    local p = ctx.places[key]
    local agents = {}
    for _, b in ipairs(p.bodies) do
      agents[b.agent] = true
    end
    local shared = #vim.tbl_keys(agents) > 1
    local lines = {}
    for _, h in ipairs(p.headers) do
      table.insert(lines, { { layout.cut(h, ctx.width), 'CairnHeader' } })
    end
    for _, b in ipairs(p.bodies) do
      local label = (shared or b.overlap) and b.mark ~= '' and { '[' .. require('cairn.notify').escape(b.mark) .. '] ', 'CairnLabel' } or nil
      for _, item in ipairs(b.items) do
        vim.list_extend(lines, layout.lines(item, label, ctx.width, ctx.ts))
      end
    end
    if #lines > 0 then
      vim.api.nvim_buf_set_extmark(ctx.buf, ctx.ns, p.row, 0, { virt_lines = lines, virt_lines_above = p.above })
    end
  end
end

return M
