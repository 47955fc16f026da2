--- Neovim follows the project with no key pressed: the host starts as soon as a buffer of a
--- Cairn project (its root holds `.agentfs/`) is open, at startup or later, or as soon as the
--- project of an open buffer is initialized (a `cairn` command from a shell), so every pending
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

--- Does `buf` show a file of the project the host would serve (`rpc.project_root()`)? Its
--- root then, and whether the project is initialized (`.agentfs/` at its root).
---@param buf integer
---@return string? root, boolean initialized
function M.of_project(buf)
  if not vim.api.nvim_buf_is_valid(buf) or vim.bo[buf].buftype ~= '' then
    return nil, false
  end
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' or name:find('^%a[%w+.-]*://') then
    return nil, false
  end
  local rpc = require('cairn.rpc')
  local root = rpc.project_root()
  if not inside(vim.fn.fnamemodify(name, ':p'), root) then
    return nil, false
  end
  return root, vim.fn.isdirectory(root .. '/.agentfs') == 1
end

--- A watch on a project's root while it is not initialized, for `.agentfs/` to appear.
local watcher

--- Is the root of an open buffer's project watched for its initialization?
function M.watching()
  return watcher ~= nil
end

function M.unwatch()
  if watcher then
    pcall(function() watcher:stop() end)
    pcall(function() watcher:close() end)
    watcher = nil
  end
end

--- The project of an open buffer is not initialized yet: its root is watched for `.agentfs/`
--- (a `cairn` command from a shell, an agent started there, creates it); when it appears, the
--- host starts as if the buffer had just opened. One directory, not recursive.
local function watch_for_init(root)
  if watcher or not (vim.uv and vim.uv.new_fs_event) then
    return
  end
  local w = vim.uv.new_fs_event()
  if not w then
    return
  end
  local ok = pcall(function()
    assert(w:start(root, {}, function(err, name)
      vim.schedule(function()
        if require('cairn.rpc').chan then
          -- A command started the host meanwhile: nothing to wait for.
          M.unwatch()
        elseif (err or name == '.agentfs') and vim.fn.isdirectory(root .. '/.agentfs') == 1 then
          M.unwatch()
          M.start_for_open_buffers()
        end
      end)
    end))
  end)
  if ok then
    watcher = w
  else
    pcall(function() w:close() end)
  end
end

--- Starts the host if `buf` is a file of a Cairn project and no host runs (never inside a
--- preview, which has no host of its own); a file of a project not initialized yet waits for
--- it to be.
---@param buf integer
function M.maybe_start(buf)
  local rpc = require('cairn.rpc')
  if rpc.chan or in_preview() then
    return
  end
  local root, initialized = M.of_project(buf)
  if initialized then
    M.unwatch()
    rpc.start()
  elseif root then
    watch_for_init(root)
  end
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
