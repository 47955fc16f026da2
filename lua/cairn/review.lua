--- Accept, reject and undo, whole agents or one hunk, and what follows in the buffers:
--- reload of unmodified buffers, a warning instead for modified ones.
local rpc = require('cairn.rpc')
local ghost = require('cairn.ghost')
local notify = require('cairn.notify')
local config = require('cairn.config')

local M = {}

--- Reloads the buffers of `paths` (project-relative) after the files changed on disk.
function M.reload(paths)
  if not config.values.auto_reload or not rpc.root then
    return
  end
  for _, rel in ipairs(paths or {}) do
    local abs = rpc.root .. '/' .. rel
    local buf = vim.fn.bufnr(abs)
    if buf > 0 and vim.api.nvim_buf_is_loaded(buf) then
      if vim.bo[buf].modified then
        notify.warn(rel .. ' has unsaved edits: not reloaded (:e! loads the accepted version)')
      else
        vim.api.nvim_buf_call(buf, function()
          vim.cmd('silent! edit')
        end)
      end
    end
  end
end

local function id_arg(id)
  if id == nil or id == '' then
    return vim.empty_dict()
  end
  return { id = id }
end

--- Each action is asynchronous: `on_done(result)` runs once the host has done it.
function M.accept(id, on_done)
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
  if ghost.payload and ghost.payload.agent then
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
    notify.notify('undone ' .. r.id)
    if on_done then on_done(r) end
  end)
end

--- Acts on the hunk under the cursor (on its lines or its ghost lines); elsewhere it says so.
local function hunk_action(method, on_done, force, reason)
  local buf = vim.api.nvim_get_current_buf()
  local found = ghost.hunk_at_cursor(buf)
  if not found or not ghost.payload then
    notify.warn('the cursor is not on a cairn hunk (:CairnNextHunk / :CairnPrevHunk move to one)')
    return
  end
  local a = { id = ghost.payload.agent.id, path = found.path, hunk = found.hunk, force = force or false }
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

function M.accept_hunk(on_done, force)
  hunk_action('accept_hunk', on_done, force)
end

function M.reject_hunk(on_done, reason)
  hunk_action('reject_hunk', on_done, false, reason)
end

return M
