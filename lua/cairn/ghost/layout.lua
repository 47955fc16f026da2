--- Ghost text laid out for the windows that show it: agent text made safe to draw (controls
--- and invisible characters escaped, tabs expanded), proposed lines cut into as many virtual
--- lines as the narrowest window needs (Neovim never wraps a virtual line), headers cut at
--- the end. Widths are display cells.
local M = {}

local escape = require('cairn.notify').escape
local strwidth = vim.api.nvim_strwidth

--- At most this many virtual lines for one proposed line (an agent's megabyte-long line would
--- otherwise bury the buffer): the last one then says the line goes on.
M.MAX_ROWS = 60

--- The columns before the text in window `win` of `buf` once the ghost text's signs are there:
--- what Neovim last drew, or more where the sign column will appear ('signcolumn' "auto",
--- the default, shows it only for a buffer with signs, and Neovim counts it at its next redraw).
local function text_offset(win, buf, drawn)
  local wo = vim.wo[win]
  if wo.statuscolumn ~= '' then
    return drawn
  end
  local n = 0
  if wo.number or wo.relativenumber then
    n = math.max(wo.numberwidth, #tostring(vim.api.nvim_buf_line_count(buf)) + 1)
  end
  n = n + (tonumber(wo.foldcolumn) or 0)
  if wo.signcolumn:find('^auto') or wo.signcolumn:find('^yes') then
    n = n + 2
  end
  return math.max(drawn, n)
end

--- The width of the text area ghost lines get in `buf`: the narrowest of the windows that
--- show it with 'wrap' set (floating ones aside); nil when none does (then ghost lines are
--- cut at the edge, as the buffer's own lines are).
function M.width(buf)
  local w
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if vim.wo[win].wrap and vim.api.nvim_win_get_config(win).relative == '' then
      local info = vim.fn.getwininfo(win)[1]
      if info then
        local tw = info.width - text_offset(win, buf, info.textoff)
        w = w and math.min(w, tw) or tw
      end
    end
  end
  return w and math.max(w, 1) or nil
end

--- `text` (already safe to draw) cut to `width` cells, ending in `…` when something was cut.
function M.cut(text, width)
  if not width or strwidth(text) <= width then
    return text
  end
  local out, used = {}, 0
  for ch in text:gmatch('[%z\1-\127\194-\244][\128-\191]*') do
    local w = strwidth(ch)
    if used + w > width - 1 then
      break
    end
    out[#out + 1] = ch
    used = used + w
  end
  return table.concat(out) .. '…'
end

--- Lays out one proposed line. `segs`: `{{text, hl}, ...}`, the line's runs as the agent wrote
--- them; `label`: `{text, hl}` put before the first virtual line (the next ones are indented
--- as wide), or nil; `width`: cells per virtual line, or nil for one line whatever its length;
--- `ts`: the tabstop. Returns the virtual lines (each a list of `{text, hl}` chunks), at most
--- `M.MAX_ROWS`.
function M.lines(segs, label, width, ts)
  -- Most lines: printable ASCII, narrower than the window, no label: drawn as they are.
  if not label then
    local n, plain = 0, true
    for _, seg in ipairs(segs) do
      if seg[1]:find('[^\32-\126]') then
        plain = false
        break
      end
      n = n + #seg[1]
    end
    if plain and (not width or n <= width) then
      return { segs }
    end
  end
  local lines, cur, used = {}, {}, 0
  local indent = 0
  if label then
    indent = strwidth(label[1])
    cur[1] = label
    used = indent
  end
  if width and width < indent + 1 then
    width = indent + 1
  end
  local vcol = 0 -- the column in the proposed line itself, for tabs
  local full = false -- no room left: the rest of the line is not laid out
  local function newline()
    if #lines >= M.MAX_ROWS - 2 then
      full = true
      cur = {}
      return
    end
    lines[#lines + 1] = cur
    cur, used = {}, indent
    if indent > 0 then
      cur[1] = { string.rep(' ', indent), label[2] }
    end
  end
  --- Appends `text` (no tab; `ascii`: printable ASCII only, else escaped here, each
  --- character's escape kept on one row) in `hl`, splitting at the width.
  local function put(text, hl, ascii)
    if text == '' then
      return
    end
    if not width then
      local safe = ascii and text or escape(text)
      cur[#cur + 1] = { safe, hl }
      vcol = vcol + (ascii and #text or strwidth(safe))
      return
    end
    if ascii then
      local i = 1
      while i <= #text and not full do
        if used >= width then
          newline()
          if full then
            return
          end
        end
        local n = math.min(width - used, #text - i + 1)
        cur[#cur + 1] = { text:sub(i, i + n - 1), hl }
        used, vcol, i = used + n, vcol + n, i + n
      end
      return
    end
    local run, run_w = {}, 0
    for ch in text:gmatch('[%z\1-\127\194-\244][\128-\191]*') do
      if ch:find('[^\32-\126]') then
        ch = escape(ch)
      end
      local w = strwidth(ch)
      if used + run_w + w > width and used + run_w > indent then
        if #run > 0 then
          cur[#cur + 1] = { table.concat(run), hl }
        end
        newline()
        run, run_w = {}, 0
        if full then
          return
        end
      end
      run[#run + 1] = ch
      run_w, vcol = run_w + w, vcol + w
    end
    if #run > 0 then
      cur[#cur + 1] = { table.concat(run), hl }
      used = used + run_w
    end
  end
  for _, seg in ipairs(segs) do
    local text, hl = seg[1], seg[2]
    local start = 1
    while start <= #text and not full do
      local tab = text:find('\t', start, true)
      local piece = text:sub(start, (tab or #text + 1) - 1)
      if piece ~= '' then
        put(piece, hl, not piece:find('[^\32-\126]'))
      end
      if not tab then
        break
      end
      put(string.rep(' ', ts - vcol % ts), hl, true)
      start = tab + 1
    end
  end
  if full then
    lines[#lines + 1] = { { '… the line goes on (:CairnDiff shows it whole)', 'CairnHeader' } }
  elseif #cur > 0 or #lines == 0 then
    lines[#lines + 1] = cur
  end
  return lines
end

return M
