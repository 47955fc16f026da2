--- Messages to the user: one prefix, one place. Debug details go to the host's log file.
local M = {}

--- Agent-controlled text (summaries, paths, errors) shown, never obeyed: control characters
--- but newline and tab, DEL, C1 controls and bidirectional overrides become visible escapes.
---@param s string
---@return string
function M.escape(s)
  s = tostring(s):gsub('[%z\1-\8\11-\31\127]', function(c)
    return string.format('\\x%02x', c:byte())
  end)
  s = s:gsub('\194([\128-\159])', function(c)
    return string.format('\\u{%x}', c:byte())
  end)
  s = s:gsub('\226\128([\142\143\170-\174])', function(c)
    return string.format('\\u{20%x}', c:byte() - 128)
  end)
  s = s:gsub('\226\129([\166-\169])', function(c)
    return string.format('\\u{20%x}', c:byte() - 128 + 64)
  end)
  return s
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
