--- Messages to the user: one prefix, one place. Debug details go to the host's log file.
local M = {}

--- Code points shown as escapes besides controls: bidirectional marks and overrides,
--- zero-width and other invisible format characters (the list of `display.rs`).
local INVISIBLE = {
  { 0xAD, 0xAD }, { 0x34F, 0x34F }, { 0x61C, 0x61C }, { 0x115F, 0x1160 }, { 0x17B4, 0x17B5 },
  { 0x180B, 0x180F }, { 0x200B, 0x200F }, { 0x2028, 0x202E }, { 0x2060, 0x206F }, { 0x3164, 0x3164 },
  { 0xFE00, 0xFE0F }, { 0xFEFF, 0xFEFF }, { 0xFFA0, 0xFFA0 }, { 0xFFF9, 0xFFFB }, { 0x1D173, 0x1D17A },
  { 0xE0000, 0xE0FFF }, { 0x80, 0x9F },
}

local function invisible(cp)
  for _, r in ipairs(INVISIBLE) do
    if cp >= r[1] and cp <= r[2] then
      return true
    end
  end
  return false
end

--- Agent-controlled text (summaries, paths, errors) shown, never obeyed: control characters
--- but newline and tab, DEL, C1 controls, bidirectional overrides and invisible format
--- characters become visible escapes.
---@param s string
---@return string
function M.escape(s)
  s = tostring(s):gsub('[%z\1-\8\11-\31\127]', function(c)
    return string.format('\\x%02x', c:byte())
  end)
  return (s:gsub('[\194-\244][\128-\191]*', function(seq)
    local ok, cp = pcall(vim.fn.char2nr, seq, true)
    if ok and cp and invisible(cp) then
      return string.format('\\u{%x}', cp)
    end
    return seq
  end))
end

--- Every message of the last minutes, whole (`:CairnMessages`): what a line had to cut.
---@type {level: integer, msg: string, at: string}[]
M.history = {}

--- Messages waiting to be shown together.
local pending

--- `vim.notify` as Neovim ships it (a notification plugin replaces it: then messages go to it
--- whole, each on its own).
local builtin = vim.notify

--- Cuts `text` to the command line's width so it never stops Neovim at a hit-enter prompt.
function M.fit(text)
  text = text:gsub('\n', ' ')
  local width = math.max(1, vim.v.echospace - 1)
  if vim.fn.strdisplaywidth(text) > width then
    local cut = text
    while vim.fn.strdisplaywidth(cut) > width - 1 do
      cut = vim.fn.strcharpart(cut, 0, vim.fn.strchars(cut) - math.max(1, math.floor((vim.fn.strdisplaywidth(cut) - width) / 2)))
    end
    text = cut .. '…'
  end
  return text
end

local function show(msgs, level)
  if vim.notify ~= builtin then
    for _, m in ipairs(msgs) do
      vim.notify('cairn: ' .. m, level, { title = 'cairn' })
    end
    return
  end
  builtin(M.fit('cairn: ' .. table.concat(msgs, ' · ')), level, { title = 'cairn' })
end

--- A message was shown a moment ago: the next ones wait, then show together.
local busy = false

local function release()
  if pending then
    local p = pending
    pending = nil
    show(p.msgs, p.level)
    vim.defer_fn(release, 30)
  else
    busy = false
  end
end

--- Shows a message. One that comes alone shows at once; those that follow within a moment
--- (an accept, then what it did to the other proposals) show together on one line at the
--- highest level. Every line is cut to the command line's width: a Cairn message never stops
--- Neovim at a hit-enter prompt. `M.history` keeps them whole.
---@param msg string
---@param level integer?
function M.notify(msg, level)
  level = level or vim.log.levels.INFO
  msg = M.escape(msg)
  table.insert(M.history, { level = level, msg = 'cairn: ' .. msg, at = os.date('%H:%M:%S') })
  if #M.history > 200 then
    table.remove(M.history, 1)
  end
  if busy then
    pending = pending or { level = level, msgs = {} }
    pending.level = math.max(pending.level, level)
    table.insert(pending.msgs, msg)
    return
  end
  busy = true
  show({ msg }, level)
  vim.defer_fn(release, 30)
end

--- Several lines the user asked for (`:CairnStatus`): a floating window by the cursor that
--- closes when the cursor moves, instead of a message that would need Enter.
---@param lines string[]
function M.float(lines)
  local width = 1
  for i, l in ipairs(lines) do
    lines[i] = M.escape(l)
    width = math.max(width, vim.fn.strdisplaywidth(lines[i]))
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].bufhidden = 'wipe'
  local win = vim.api.nvim_open_win(buf, false, {
    relative = 'cursor', row = 1, col = 0, style = 'minimal', border = 'single',
    width = math.min(width, math.max(20, vim.o.columns - 4)), height = math.min(#lines, math.max(1, vim.o.lines - 4)),
  })
  vim.api.nvim_create_autocmd({ 'CursorMoved', 'CursorMovedI', 'BufLeave', 'InsertEnter' }, {
    once = true,
    callback = function()
      pcall(vim.api.nvim_win_close, win, true)
    end,
  })
  return win
end

function M.error(msg)
  M.notify(msg, vim.log.levels.ERROR)
end

function M.warn(msg)
  M.notify(msg, vim.log.levels.WARN)
end

--- Renders a host error `{code, message, hint}`.
function M.host_error(err)
  local msg = type(err) == 'table' and (err.message or vim.inspect(err)) or tostring(err)
  if type(err) == 'table' and err.hint and err.hint ~= vim.NIL then
    msg = msg .. ' (' .. err.hint .. ')'
  end
  M.error(msg)
end

return M
