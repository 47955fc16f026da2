--- Preview: the agent's version opened in a confined copy-on-write view (`cairn preview`),
--- at the current file and line: in a tmux split (the host opens or reuses the pane), or
--- outside tmux in a terminal tab running the session. A jj workspace preview opens its file
--- in a new tab. `opts.amend` (:CairnPreview!): what the user writes there joins the proposal.
--- `opts.ports`: ports of the view forwarded to the host (default `[preview] ports`).
local rpc = require('cairn.rpc')
local notify = require('cairn.notify')

local M = {}

function M.open(id, on_done, opts)
  opts = opts or {}
  local args = { file = vim.fn.expand('%:p'), line = vim.api.nvim_win_get_cursor(0)[1], editor = vim.v.progpath, amend = opts.amend or false }
  if opts.ports then
    args.ports = opts.ports
  end
  if id and id ~= '' then
    args.id = id
  end
  rpc.call('preview', args, function(r)
    M.show(r)
    if on_done then on_done(r) end
  end)
end

local function present(v)
  return v ~= nil and v ~= vim.NIL
end

function M.show(r)
  if present(r.pane) and present(r.session) then
    notify.notify('preview of ' .. r.id .. ' in tmux session ' .. r.session .. ' (tmux attach -t ' .. r.session .. ')')
  elseif present(r.pane) then
    notify.notify('preview of ' .. r.id .. ' in tmux pane ' .. r.pane)
  elseif r.jj then
    local file = (present(r.file) and r.file) or r.path
    vim.cmd.tabnew(vim.fn.fnameescape(file))
    if present(r.line) then
      pcall(vim.api.nvim_win_set_cursor, 0, { r.line, 0 })
    end
    notify.notify('not inside tmux: opened the jj preview of ' .. r.id .. ' in a new tab (' .. r.path .. ')')
  else
    vim.cmd.tabnew()
    vim.fn.jobstart(r.argv, { term = true })
    vim.cmd.startinsert()
    notify.notify('not inside tmux: the preview of ' .. r.id .. ' runs in this terminal tab')
  end
  return r
end

return M
