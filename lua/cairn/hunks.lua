--- `:CairnHunks[!]`: the pending hunks in the quickfix list, to walk with `:cnext`/`:cprev`:
--- the shown agent's, or with `!` every pending agent's, each at its file and line (through a
--- buffer's unsaved edits) with the agent's mark and id and its first changed line.
local M = {}

--- The row (0-based, of the file on disk) a hunk shows at: its first removed line, or for an
--- insertion the line it follows (the first line for one before it).
local function row_of(h)
  if #(h.removed or {}) > 0 or h.old_start == 0 then
    return h.old_start
  end
  return h.old_start - 1
end

--- `+ first added line`, else `- first removed line` (agent-written text, escaped).
local function first_changed(h)
  local esc = require('cairn.notify').escape
  if (h.added or {})[1] then
    return '+ ' .. esc(h.added[1])
  end
  return '- ' .. esc((h.removed or {})[1] or '')
end

--- Rows of the file on disk as rows of its loaded buffer (unsaved edits moved them).
local function rows_of(path)
  local buf = vim.fn.bufnr(path)
  if buf > 0 and vim.api.nvim_buf_is_loaded(buf) then
    return (require('cairn.buffers').unsaved(buf))
  end
  return function(r) return r end
end

--- Quickfix items of the host's ghost payload: agent `payload.agent`'s hunks, and with `all`
--- those of every other pending agent (`payload.others`); by file, then line.
---@param payload table
---@param all boolean
---@return table[]
function M.items(payload, all)
  local entries = {}
  if type(payload.agent) == 'table' then
    table.insert(entries, { agent = payload.agent, files = payload.files })
  end
  if all then
    vim.list_extend(entries, type(payload.others) == 'table' and payload.others or {})
  end
  local ghost = require('cairn.ghost')
  local items = {}
  for _, e in ipairs(entries) do
    local mark = type(e.agent.mark) == 'string' and e.agent.mark ~= '' and (e.agent.mark .. ' ') or ''
    for path, file in pairs(type(e.files) == 'table' and e.files or {}) do
      local map = rows_of(path)
      for _, h in ipairs(file.hunks or {}) do
        local conflict = (file.file_conflict and file.file_conflict ~= vim.NIL) or ghost.in_conflict(file, h)
        table.insert(items, {
          filename = path,
          lnum = map(row_of(h)) + 1,
          col = 1,
          type = conflict and 'W' or '',
          text = string.format('%s%s%s: %s', mark, e.agent.id, conflict and ' (conflict)' or '', first_changed(h)),
        })
      end
    end
  end
  table.sort(items, function(a, b)
    if a.filename ~= b.filename then
      return a.filename < b.filename
    end
    if a.lnum ~= b.lnum then
      return a.lnum < b.lnum
    end
    return a.text < b.text
  end)
  return items
end

--- Fills the quickfix list with the pending hunks (`all`: every agent's) and opens it;
--- `on_done(items)` then.
function M.fill(all, on_done)
  require('cairn.rpc').call('ghost', nil, function(payload)
    local items = M.items(type(payload) == 'table' and payload or {}, all)
    vim.fn.setqflist({}, ' ', { title = 'cairn hunks' .. (all and ' (every agent)' or ''), items = items })
    local notify = require('cairn.notify')
    if #items == 0 then
      notify.notify(all and 'no pending hunks' or 'no pending hunks of the shown agent (:CairnHunks! lists every agent\'s)')
    else
      notify.notify(string.format('%d hunk%s in the quickfix list (:cnext, :cprev)', #items, #items == 1 and '' or 's'))
      vim.cmd('botright copen')
      vim.cmd('wincmd p')
    end
    if on_done then on_done(items) end
  end)
end

return M
