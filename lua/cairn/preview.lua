--- Preview: the agent's workspace in a tmux split at the current file and line (the host
--- opens or reuses the pane), or in a new tab outside tmux.
local rpc = require('cairn.rpc')
local notify = require('cairn.notify')

local M = {}

function M.open(id, on_done)
  local args = { file = vim.fn.expand('%:p'), line = vim.api.nvim_win_get_cursor(0)[1], editor = vim.v.progpath }
  if id and id ~= '' then
    args.id = id
  end
  rpc.call('preview', args, function(r)
    M.show(r)
    if on_done then on_done(r) end
  end)
end

function M.show(r)
  if r.pane and r.pane ~= vim.NIL and r.session and r.session ~= vim.NIL then
    notify.notify('preview of ' .. r.id .. ' in tmux session ' .. r.session .. ' (tmux attach -t ' .. r.session .. ')')
  elseif r.pane and r.pane ~= vim.NIL then
    notify.notify('preview of ' .. r.id .. ' in tmux pane ' .. r.pane)
  else
    local file = (r.file ~= vim.NIL and r.file) or r.path
    vim.cmd.tabnew(vim.fn.fnameescape(file))
    if r.line and r.line ~= vim.NIL then
      pcall(vim.api.nvim_win_set_cursor, 0, { r.line, 0 })
    end
    notify.notify('not inside tmux: opened the preview of ' .. r.id .. ' in a new tab (' .. r.path .. ')')
  end
  return r
end

return M
