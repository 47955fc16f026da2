--- Buffers follow the tree. After any accept, hunk accept or undo (from this Neovim, the CLI,
--- another Neovim or a signal file: the host sends a `landed` event with the paths), an
--- unmodified buffer reloads. A buffer with unsaved edits gets the landed change merged into
--- its text three-way (base: the text it was read from; yours: the buffer; theirs: the file
--- now), conflicts kept between markers, and is then based on the file as it is: a later `:w`
--- writes both the landed change and the user's edits, without a "changed since reading"
--- prompt. `u` goes back to the buffer as it was before the merge.
local M = {}

--- Per buffer: the text of its file as last read or written (the base of a merge).
---@type table<integer, string>
M.disk = {}

--- Files larger than this are not kept (a merge then asks the user to reload by hand).
local MAX = 4 * 1024 * 1024

--- The buffer's text as it would be written (line endings of its 'fileformat').
function M.text_of(buf)
  local sep = vim.bo[buf].fileformat == 'dos' and '\r\n' or (vim.bo[buf].fileformat == 'mac' and '\r' or '\n')
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local text = table.concat(lines, sep)
  if vim.bo[buf].eol or vim.bo[buf].fixeol then
    text = text .. sep
  end
  return text
end

local function lines_of(buf, text)
  local sep = vim.bo[buf].fileformat == 'dos' and '\r\n' or (vim.bo[buf].fileformat == 'mac' and '\r' or '\n')
  local lines = vim.split(text, sep, { plain = true })
  if lines[#lines] == '' then
    table.remove(lines)
  end
  return lines
end

--- Keeps the buffer's text as the base of a later merge, when it is the file's (unmodified).
function M.remember(buf)
  if vim.api.nvim_buf_is_loaded(buf) and not vim.bo[buf].modified and vim.bo[buf].buftype == '' then
    local text = M.text_of(buf)
    M.disk[buf] = #text <= MAX and text or nil
  end
end

--- Rows of the file on disk (0-based) as rows of `buf` (a function), and the buffer's unsaved
--- edits as disk rows `{start, end, buffer start, buffer count}`: from the text the buffer was
--- read from, so ghost text lands on the right lines of a modified buffer.
function M.unsaved(buf)
  local base = vim.bo[buf].modified and M.disk[buf]
  if not base then
    return function(r) return r end, {}
  end
  local text = M.text_of(buf)
  local ok, diff = pcall(vim.diff, base, text, { result_type = 'indices' })
  if not ok or type(diff) ~= 'table' then
    return function(r) return r end, {}
  end
  local edits = {}
  for _, d in ipairs(diff) do
    -- {start_a, count_a, start_b, count_b}, 1-based; count 0: after line start.
    local s0 = d[2] == 0 and d[1] or d[1] - 1
    table.insert(edits, { s0, s0 + d[2], d[3] - (d[4] == 0 and 0 or 1), d[4] })
  end
  local function map(r)
    local shift = 0
    for _, e in ipairs(edits) do
      if r >= e[2] and not (e[2] == e[1] and r < e[1]) then
        shift = (e[3] + e[4]) - e[2]
      end
    end
    return r + shift
  end
  return map, edits
end

local function buffer_of(abs)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.api.nvim_buf_get_name(buf) ~= '' and vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':p') == abs then
      return buf
    end
  end
end

--- Reloads `buf` from its file, keeping each window's view.
local function reload(buf)
  local views = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    views[win] = vim.api.nvim_win_call(win, vim.fn.winsaveview)
  end
  vim.api.nvim_buf_call(buf, function()
    vim.cmd('silent! edit!')
  end)
  for win, view in pairs(views) do
    pcall(vim.api.nvim_win_call, win, function() vim.fn.winrestview(view) end)
  end
  M.remember(buf)
end

--- Buffers with a merge under way (a landing reported twice, by the action's reply and by
--- the host's event, merges once; one that comes meanwhile merges after it).
local merging = {}

--- Merges what landed in `abs` into modified buffer `buf` (`tries`: typing meanwhile starts
--- it again, a few times).
local function merge(buf, abs, tries)
  local notify = require('cairn.notify')
  local rel = vim.fn.fnamemodify(abs, ':~:.')
  local base = M.disk[buf]
  if not base then
    notify.warn(rel .. ' has unsaved edits and changed on disk: :e! loads it (your edits are lost), :w keeps only yours')
    return
  end
  if merging[buf] then
    merging[buf] = 'again'
    return
  end
  merging[buf] = true
  local tick = vim.api.nvim_buf_get_changedtick(buf)
  local function done()
    local again = merging[buf] == 'again'
    merging[buf] = nil
    if again and vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].modified then
      merge(buf, abs, tries)
    end
  end
  require('cairn.rpc').call_async('merge_buffer', { path = abs, base = base, text = M.text_of(buf) }, function(r, err)
    if err then
      merging[buf] = nil
      return notify.host_error(err)
    end
    if not vim.api.nvim_buf_is_loaded(buf) then
      merging[buf] = nil
      return
    end
    if vim.api.nvim_buf_get_changedtick(buf) ~= tick then
      merging[buf] = nil
      if tries < 3 then
        merge(buf, abs, tries + 1)
      end
      return
    end
    -- The file is what the buffer was read from: nothing landed here (already merged).
    local f = io.open(abs, 'rb')
    local now = f and f:read('*a')
    if f then
      f:close()
    end
    if now == base then
      return done()
    end
    -- Based on the file as it is now (no prompt at :w), holding the merge on top.
    reload(buf)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines_of(buf, r.text))
    if r.conflicts > 0 then
      notify.warn(string.format('%s: what landed conflicts with your unsaved edits in %d place(s), marked <<<<<<< (u undoes the merge)', rel, r.conflicts))
    else
      notify.notify(rel .. ': what landed is merged into your unsaved edits (u undoes the merge)')
    end
    require('cairn.ghost').attach(buf)
    done()
  end)
end

--- The host's `landed` event: absolute paths whose files an accept, hunk accept or undo
--- changed.
function M.landed(paths)
  if not require('cairn.config').values.auto_reload then
    return
  end
  for _, abs in ipairs(paths or {}) do
    local buf = buffer_of(abs)
    if buf then
      if not vim.bo[buf].modified then
        -- Already what is on disk (reloaded for an accept of this Neovim): nothing to do.
        local f = io.open(abs, 'rb')
        local on_disk = f and f:read('*a')
        if f then
          f:close()
        end
        if on_disk == nil or on_disk ~= M.disk[buf] then
          reload(buf)
        end
      else
        merge(buf, abs, 0)
      end
    end
  end
end

local group = vim.api.nvim_create_augroup('cairn_buffers', {})
vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufWritePost', 'FileChangedShellPost' }, {
  group = group,
  callback = function(ev)
    M.remember(ev.buf)
  end,
  desc = 'cairn: the text a buffer was read from (the base of merging what lands under unsaved edits)',
})
vim.api.nvim_create_autocmd('BufWipeout', {
  group = group,
  callback = function(ev)
    M.disk[ev.buf] = nil
  end,
})

return M
