--- Accept, reject and undo, whole agents or one hunk (whichever agent's hunk is under the
--- cursor), and resolving a conflicted file in a three-way view.
local rpc = require('cairn.rpc')
local ghost = require('cairn.ghost')
local notify = require('cairn.notify')

local M = {}

--- The buffers of `paths` (project-relative) follow what the action changed on disk at once
--- (`cairn.buffers`; the host's `landed` event does the same for actions from elsewhere).
function M.reload(paths)
  if not rpc.root then
    return
  end
  local abs = {}
  for _, rel in ipairs(paths or {}) do
    table.insert(abs, rpc.root .. '/' .. rel)
  end
  require('cairn.buffers').landed(abs)
end

local function id_arg(id)
  if id == nil or id == '' then
    return vim.empty_dict()
  end
  return { id = id }
end

--- Each action is asynchronous: `on_done(result)` runs once the host has done it.
function M.accept(id, on_done)
  -- In the three-way view: the resolution is written first, then its agent lands.
  local resolving = vim.b.cairn_resolve
  if resolving and (id == nil or id == '') then
    local buf = vim.api.nvim_get_current_buf()
    if vim.bo[buf].modified then
      M.write_resolution(buf, function() M.accept(resolving.id, on_done) end)
      return
    end
    id = resolving.id
  end
  rpc.call('accept', id_arg(id), function(r)
    M.reload(vim.list_extend(vim.list_extend({}, r.written or {}), r.deleted or {}))
    notify.notify(string.format('accepted %s: %d written, %d deleted', r.id, #(r.written or {}), #(r.deleted or {})))
    if on_done then on_done(r) end
  end)
end

function M.reject(args, on_done)
  local a = (args == nil or args == '') and vim.empty_dict() or { words = args }
  rpc.call('reject', a, function(r)
    notify.notify('rejected ' .. r.id .. ((args or '') ~= '' and ' (:CairnRevise sends your reason)' or ''))
    if on_done then on_done(r) end
  end)
end

function M.revise(id, on_done)
  rpc.call('revise', id_arg(id), function(r)
    local how = ({ terminal = 'typed into its terminal', review_wait = 'for its review_wait', prompt = 're-queued with it' })[r.delivery]
      or ('`cairn wrap --agent ' .. r.id .. '` re-runs it with it')
    notify.notify(string.format('%s: revision %d, %d piece(s) of feedback %s', r.id, r.revision, r.sent, how))
    if on_done then on_done(r) end
  end)
end

function M.comment(first, last, text, on_done)
  local name = vim.api.nvim_buf_get_name(0)
  if name == '' then
    notify.warn(':CairnComment needs a file buffer')
    return
  end
  local a = { path = name, first = first, last = last, text = text }
  -- The agent whose hunk is under the cursor, else the shown one.
  local found = ghost.hunk_at_cursor(vim.api.nvim_get_current_buf())
  if found then
    a.id = found.agent
  elseif ghost.payload and ghost.payload.agent then
    a.id = ghost.payload.agent.id
  end
  rpc.call('comment', a, function(r)
    notify.notify('noted for ' .. r.id .. ' (:CairnRevise sends it)')
    if on_done then on_done(r) end
  end)
end

function M.undo(id, on_done)
  rpc.call('undo', id_arg(id), function(r)
    M.reload(vim.list_extend(vim.list_extend({}, r.restored or {}), r.removed or {}))
    notify.notify(r.unrejected and ('reject of ' .. r.id .. ' undone: reviewing again') or ('undone ' .. r.id))
    if on_done then on_done(r) end
  end)
end

--- Acts on the hunk under the cursor (on its lines or its ghost lines); elsewhere it says so.
local function hunk_action(method, on_done, force, reason)
  local buf = vim.api.nvim_get_current_buf()
  if vim.env.CAIRN_PREVIEW and vim.env.CAIRN_PREVIEW ~= '' then
    -- The preview shows the agent's version: the hunk is found outside from file and line.
    local a = { file = vim.api.nvim_buf_get_name(buf), line = vim.api.nvim_win_get_cursor(0)[1], reason = reason }
    rpc.call(method, a, function(r)
      if on_done then on_done(r) end
    end)
    return
  end
  local found = ghost.hunk_at_cursor(buf)
  if not found or not ghost.payload then
    notify.warn('the cursor is not on a cairn hunk (:CairnNextHunk / :CairnPrevHunk move to one)')
    return
  end
  local a = { id = found.agent or (ghost.payload.agent or {}).id, path = found.path, hunk = found.hunk, force = force or false }
  if reason and reason ~= '' then
    a.reason = reason
  end
  rpc.call(method, a, function(r)
    if method == 'accept_hunk' then
      M.reload({ found.path })
    end
    notify.notify(string.format('%s a hunk of %s (%d left in all)', method == 'accept_hunk' and 'accepted' or 'rejected', found.path, r.remaining_all or r.remaining))
    if on_done then on_done(r) end
  end)
end

--- A hunk that conflicts with what landed opens the three-way view (`!` lands it anyway).
function M.accept_hunk(on_done, force)
  local found = not (vim.env.CAIRN_PREVIEW and vim.env.CAIRN_PREVIEW ~= '') and ghost.hunk_at_cursor(vim.api.nvim_get_current_buf())
  if found and found.conflict and not force then
    M.resolve(on_done)
    return
  end
  hunk_action('accept_hunk', on_done, force)
end

--- A read-only scratch window of one version in the three-way view.
local function version_window(name, text, ft)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text or '', '\n', { plain = true, trimempty = false }))
  pcall(vim.api.nvim_buf_set_name, buf, name)
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].filetype = ft
  vim.bo[buf].modifiable = false
  vim.api.nvim_win_set_buf(0, buf)
  vim.cmd('diffthis')
  return buf
end

--- How the three-way view fits `columns`: side by side when each version gets `MIN_WIDTH`
--- columns; else the base across the top and landed | proposed below; else all three stacked.
local MIN_WIDTH = 60

---@param columns integer
---@return 'columns'|'base_above'|'stacked'
function M.resolve_layout(columns)
  if columns >= 3 * MIN_WIDTH then
    return 'columns'
  elseif columns >= 2 * MIN_WIDTH then
    return 'base_above'
  end
  return 'stacked'
end

--- Line `line` (1-based) of text `a` in text `b`: moved by the changes above it; a line a
--- change replaces maps to where that change starts in `b`.
local function map_line(a, b, line)
  local diff = (vim.text and vim.text.diff) or vim.diff
  local ok, hunks = pcall(diff, a, b, { result_type = 'indices' })
  if not ok or type(hunks) ~= 'table' then
    return line
  end
  local shift = 0
  for _, h in ipairs(hunks) do
    -- {start_a, count_a, start_b, count_b}; a count of 0 means after line start.
    local sa, ca, sb, cb = h[1], h[2], h[3], h[4]
    local first_a, first_b = ca == 0 and sa + 1 or sa, cb == 0 and sb + 1 or sb
    if line < first_a then
      break
    end
    if line < first_a + ca then
      return math.max(first_b, 1)
    end
    shift = (first_b + cb) - (first_a + ca)
  end
  return math.max(line + shift, 1)
end

--- `:CairnResolve`: the file of the hunk under the cursor (or the first conflicted one of the
--- buffer) in a three-way view in a new tab: as the agent read it, as it is now (what landed),
--- and the agent's proposal, which you edit. `:w` there makes your text the agent's version
--- of the file (no conflict is left); `:CairnAccept` there writes it and lands the agent.
function M.resolve(on_done)
  local buf = vim.api.nvim_get_current_buf()
  local found = ghost.hunk_at_cursor(buf)
  if not found then
    for _, m in ipairs(ghost.hunk_marks[buf] or {}) do
      if m.conflict then
        found = m
        break
      end
    end
  end
  if not found then
    notify.warn('no cairn hunk to resolve here (:CairnNextHunk moves to one)')
    return
  end
  local ft = vim.bo[buf].filetype
  rpc.call('three_way', { id = found.agent, path = found.path }, function(r)
    local strip = function(t) return t ~= vim.NIL and t and t:gsub('\n$', '') or '' end
    local layout = M.resolve_layout(vim.o.columns)
    vim.cmd('tabnew')
    version_window('cairn://base/' .. r.id .. '/' .. r.path, strip(r.base), ft)
    vim.cmd(layout == 'columns' and 'rightbelow vsplit' or 'rightbelow split')
    version_window('cairn://landed/' .. r.path, strip(r.landed), ft)
    local landed_win = vim.api.nvim_get_current_win()
    vim.cmd(layout == 'stacked' and 'rightbelow split' or 'rightbelow vsplit')
    local out = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_lines(out, 0, -1, false, vim.split(strip(r.proposed), '\n', { plain = true }))
    pcall(vim.api.nvim_buf_set_name, out, 'cairn://resolve/' .. r.id .. '/' .. r.path)
    vim.bo[out].buftype = 'acwrite'
    vim.bo[out].bufhidden = 'wipe'
    vim.bo[out].filetype = ft
    vim.bo[out].modified = false
    vim.b[out].cairn_resolve = { id = r.id, path = r.path }
    vim.api.nvim_win_set_buf(0, out)
    vim.cmd('diffthis')
    if layout == 'base_above' then
      -- The base is for reference: a quarter of the height, the two to compare below it.
      vim.api.nvim_win_set_height(vim.fn.win_getid(1), math.max(3, math.floor(vim.o.lines / 4)))
    end
    -- At the first conflict (else the first change): in the landed version, and where the
    -- proposal has it.
    local first = type(r.conflicts) == 'table' and type(r.conflicts[1]) == 'table' and r.conflicts[1][1] or nil
    if first then
      local landed_line = math.min(first, vim.api.nvim_buf_line_count(vim.api.nvim_win_get_buf(landed_win)))
      vim.api.nvim_win_set_cursor(landed_win, { landed_line, 0 })
      local line = map_line(strip(r.landed) .. '\n', strip(r.proposed) .. '\n', first)
      vim.api.nvim_win_set_cursor(0, { math.min(line, vim.api.nvim_buf_line_count(out)), 0 })
    else
      vim.api.nvim_win_set_cursor(0, { 1, 0 })
      if vim.fn.diff_hlID(1, 1) == 0 then
        vim.cmd('silent! normal! ]c')
      end
    end
    vim.cmd('normal! zz')
    vim.api.nvim_create_autocmd('BufWriteCmd', {
      buffer = out,
      callback = function()
        M.write_resolution(out)
      end,
    })
    local who = {}
    for _, w in ipairs(r.conflict_with or {}) do
      table.insert(who, w == 'your edit' and w or ('agent ' .. w))
    end
    -- Short first: what to do leads, the command line cuts the end at its width.
    notify.notify(string.format('edit %s\'s %s (:w keeps it, :CairnAccept lands it)%s', r.id, r.path, #who > 0 and ('; it conflicts with ' .. table.concat(who, ', ')) or ''))
    if on_done then on_done(r, out) end
  end)
end

--- Sends the resolution buffer's text as the agent's version of its file.
function M.write_resolution(buf, on_done)
  local r = vim.b[buf].cairn_resolve
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n') .. '\n'
  rpc.call('resolve', { id = r.id, path = r.path, text = text }, function(res)
    if vim.api.nvim_buf_is_valid(buf) then
      vim.bo[buf].modified = false
    end
    notify.notify(string.format('resolved %s in %s\'s proposal (:CairnAccept %s lands it)', r.path, r.id, r.id))
    if on_done then on_done(res) end
  end)
end

function M.reject_hunk(on_done, reason)
  hunk_action('reject_hunk', on_done, false, reason)
end

return M
