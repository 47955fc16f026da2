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

---@param msg string
---@param level integer?
function M.notify(msg, level)
  vim.notify('cairn: ' .. M.escape(msg), level or vim.log.levels.INFO, { title = 'cairn' })
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
