--- Neovim follows the project with no key pressed: the host starts as soon as a buffer of a
--- Cairn project (its root holds `.agentfs/`) is open, at startup or later, so every pending
--- proposal is drawn and the status snapshot filled whether Neovim started before or after the
--- agents; status lines (and the tabline) redraw whenever the snapshot changes.
local M = {}

local function in_preview()
  return vim.env.CAIRN_PREVIEW ~= nil and vim.env.CAIRN_PREVIEW ~= ''
end

--- Is `path` (absolute) inside `root`, as written or with links resolved?
local function inside(path, root)
  for _, p in ipairs({ path, vim.fn.resolve(path) }) do
    for _, r in ipairs({ root, vim.fn.resolve(root) }) do
      if vim.startswith(p, r .. '/') then
        return true
      end
    end
  end
  return false
end

--- Does `buf` show a file of the project the host serves (`rpc.project_root()`), and is that
--- project a Cairn project (`.agentfs/` at its root)?
---@param buf integer
---@return boolean
function M.of_project(buf)
  if not vim.api.nvim_buf_is_valid(buf) or vim.bo[buf].buftype ~= '' then
    return false
  end
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' or name:find('^%a[%w+.-]*://') then
    return false
  end
  local rpc = require('cairn.rpc')
  local root = rpc.root or rpc.project_root()
  if vim.fn.isdirectory(root .. '/.agentfs') == 0 then
    return false
  end
  return inside(vim.fn.fnamemodify(name, ':p'), root)
end

--- Starts the host if `buf` is a file of a Cairn project and no host runs (never inside a
--- preview, which has no host of its own).
---@param buf integer
function M.maybe_start(buf)
  local rpc = require('cairn.rpc')
  if rpc.chan or in_preview() or not M.of_project(buf) then
    return
  end
  rpc.start()
end

--- Every loaded buffer: the host starts if one of them is a project's file.
function M.start_for_open_buffers()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) then
      M.maybe_start(buf)
    end
  end
end

--- Redraws every status line, window bar and the tabline: a statusline component
--- (`require('cairn').statusline`) shows the new snapshot at once, not at the next key.
function M.redraw()
  pcall(vim.cmd, 'redrawstatus!')
  pcall(vim.cmd, 'redrawtabline')
end

--- The autocommands (plugin/cairn.lua runs this once).
function M.install()
  local group = vim.api.nvim_create_augroup('cairn_live', {})
  -- Deferred: setup() (lazy.nvim's `opts`) runs after the plugin's files are sourced, and may
  -- name the binary, the project root or Cairn's home.
  local function later(f)
    vim.schedule(f)
  end
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile' }, {
    group = group,
    callback = function(ev)
      if vim.v.vim_did_enter == 1 then
        later(function() M.maybe_start(ev.buf) end)
      end
    end,
    desc = 'cairn: start the host when a file of a Cairn project opens',
  })
  if vim.v.vim_did_enter == 1 then
    later(M.start_for_open_buffers)
  else
    vim.api.nvim_create_autocmd('VimEnter', {
      group = group,
      once = true,
      callback = function() later(M.start_for_open_buffers) end,
      desc = 'cairn: start the host when Neovim opened a file of a Cairn project',
    })
  end
  vim.api.nvim_create_autocmd('User', {
    group = group,
    pattern = 'CairnStatus',
    callback = M.redraw,
    desc = 'cairn: redraw status lines when the status snapshot changes',
  })
end

return M
