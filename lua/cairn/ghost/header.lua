--- The ghost header's words: one line per agent and file, leading with what a narrow window
--- must not lose (the agent's mark, its state, its revision), then its id, summary, hunk count,
--- checks, jj change and auto-run warning; cut at the end when the window is narrower. Also the
--- check marks `:CairnStatus` shows.
local M = {}

local MARKS = { pass = '✓', fail = '✗', pending = '…' }

--- The mark of one check: `✓`, `✗` or `…`, and for a check an agent wrote, its author and
--- whether it counts for the gates: `✓(agent:x, not counted)`. `c` is a result string or a
--- check table (`{result, by, counts}` from the host, or a task's `{result, author,
--- approved_by}`).
function M.check_mark(c)
  if type(c) ~= 'table' then
    return MARKS[c] or '?'
  end
  local mark = MARKS[c.result] or '?'
  local by = c.by
  if by == nil and type(c.author) == 'string' and not c.author:match('^human') then
    by = c.author
  end
  if type(by) ~= 'string' then
    return mark
  end
  local counts = c.counts
  if counts == nil then
    counts = type(c.approved_by) == 'string'
  end
  return string.format('%s(%s%s)', mark, require('cairn.notify').escape(by), counts == true and ', approved' or ', not counted')
end

--- `  checks ✓✗…` for the agent's task checks ('' without any).
function M.checks_text(checks)
  if type(checks) ~= 'table' or #checks == 0 then
    return ''
  end
  local marks = {}
  for _, c in ipairs(checks) do
    table.insert(marks, M.check_mark(c))
  end
  return '  checks ' .. table.concat(marks, ' ')
end

--- What the header says of the agent's state: at work (the proposal is still growing), undone,
--- its revision and how many hunks changed since the user last reviewed: `[in progress]`,
--- `[undone; revision 2, 1 changed since your review]`, or '' when there is nothing to say.
function M.state_text(agent, file)
  local parts = {}
  if agent.in_progress == true then
    table.insert(parts, 'in progress')
  elseif agent.state == 'undone' then
    table.insert(parts, 'undone')
  end
  if type(agent.revision) == 'number' and agent.revision > 1 then
    local changed = 0
    for _, r in ipairs(type(file.revised) == 'table' and file.revised or {}) do
      if r == true then
        changed = changed + 1
      end
    end
    table.insert(parts, string.format('revision %d, %d changed since your review', agent.revision, changed))
  end
  return #parts > 0 and ('[' .. table.concat(parts, '; ') .. ']') or ''
end

--- The header of `agent`'s hunks in `file`, safe to draw:
--- `cairn A [in progress] 3f2a91: summary  (2 hunks)  checks ✓  jj kxyz  ! why`.
function M.text(agent, file)
  local lead = { 'cairn' }
  if type(agent.mark) == 'string' and agent.mark ~= '' then
    table.insert(lead, agent.mark)
  end
  local state = M.state_text(agent, file)
  if state ~= '' then
    table.insert(lead, state)
  end
  local n = #(file.hunks or {})
  local jj = (type(agent.jj) == 'string' and agent.jj ~= '') and ('  jj ' .. agent.jj) or ''
  local s = string.format('%s %s: %s  (%d hunk%s)%s%s', table.concat(lead, ' '), tostring(agent.id), type(agent.summary) == 'string' and agent.summary or '', n, n == 1 and '' or 's', M.checks_text(agent.checks), jj)
  if type(file.runs_by_itself) == 'string' then
    s = s .. '  ! ' .. file.runs_by_itself
  end
  return require('cairn.notify').escape(s)
end

return M
