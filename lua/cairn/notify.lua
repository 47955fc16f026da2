--- Messages to the user: one prefix, one place. Debug details go to the host's log file.
local M = {}

---@param msg string
---@param level integer?
function M.notify(msg, level)
  vim.notify('cairn: ' .. msg, level or vim.log.levels.INFO, { title = 'cairn' })
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
