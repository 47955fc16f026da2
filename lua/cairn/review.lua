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

function M.reject(id, on_done)
  rpc.call('reject', id_arg(id), function(r)
    notify.notify('rejected ' .. r.id)
    if on_done then on_done(r) end
  end)
end

function M.undo(id, on_done)
  rpc.call('undo', { id = id }, function(r)
    M.reload(vim.list_extend(vim.list_extend({}, r.restored or {}), r.removed or {}))
    notify.notify('undone ' .. r.id)
    if on_done then on_done(r) end
  end)
end

--- Acts on the hunk under the cursor (on its lines or its ghost lines); elsewhere it says so.
local function hunk_action(method, on_done, force)
  local buf = vim.api.nvim_get_current_buf()
  local found = ghost.hunk_at_cursor(buf)
  if not found or not ghost.payload then
    notify.warn('the cursor is not on a cairn hunk (:CairnNextHunk / :CairnPrevHunk move to one)')
    return
  end
  rpc.call(method, { id = ghost.payload.agent.id, path = found.path, hunk = found.hunk, force = force or false }, function(r)
    if method == 'accept_hunk' then
      M.reload({ found.path })
    end
    notify.notify(string.format('%s a hunk of %s (%d left)', method == 'accept_hunk' and 'accepted' or 'rejected', found.path, r.remaining))
    if on_done then on_done(r) end
  end)
end

function M.accept_hunk(on_done, force)
  hunk_action('accept_hunk', on_done, force)
end

function M.reject_hunk(on_done)
  hunk_action('reject_hunk', on_done)
end

return M
