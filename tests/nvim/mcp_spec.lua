-- A proposal made through `cairn mcp` by the official MCP Python SDK (tests/mcp/client.py,
-- started from this spec) shows as ghost text in an open buffer; :CairnTasks lists its task
-- with the check result; :CairnLog shows the session's tool calls.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')

local root = H.project({ ['src/lib.py'] = 'def a():\n    return 1\n', ['README.md'] = 'hello\n' })
local python = H.repo .. '/.venv/mcp/bin/python'
local cairn = H.repo .. '/target/release/cairn'

H.test('an MCP session shows as ghost text, in :CairnTasks and :CairnLog', function()
  H.ok(vim.fn.executable(python) == 1, 'the MCP Python SDK venv (scripts/test.sh installs it): ' .. python)
  vim.cmd.edit(root .. '/src/lib.py')
  local buf = vim.api.nvim_get_current_buf()
  -- Lines cut at the window's edge rather than wrapped: so is the header, whole in its extmark.
  vim.wo.wrap = false
  -- The host starts with the first call; make sure it runs before the client does.
  H.run(10000, function(done) require('cairn').refresh(); require('cairn.rpc').call('ping', nil, done) end, 'the host')
  local out = vim.system({ python, H.repo .. '/tests/mcp/client.py', cairn, root }, { text = true, env = { CAIRN_HOME = vim.env.CAIRN_HOME } }):wait(60000)
  H.eq(out.code, 0, 'client: ' .. (out.stderr or ''))
  local lines = vim.split(vim.trim(out.stdout), '\n')
  local r = vim.json.decode(lines[#lines])
  H.wait(10000, function() return H.hunks(buf) == 1 end, 'ghost text of the MCP proposal')
  H.ok(vim.tbl_contains(H.virt_text(buf), '    return 2'), vim.inspect(H.virt_text(buf)))
  -- The header carries the task's check results once the client ran them.
  H.wait(5000, function()
    require('cairn').refresh()
    return (H.virt_text(buf)[1] or ''):find('checks ✓', 1, true) ~= nil
  end, 'check results in the ghost header: ' .. tostring(H.virt_text(buf)[1]))
  -- The agent wrote that check itself: its author is shown, and that it does not count.
  H.ok(H.virt_text(buf)[1]:find('✓(' .. r.identity .. ', not counted)', 1, true), 'author in the header: ' .. H.virt_text(buf)[1])

  local got = H.run(5000, function(done) require('cairn').tasks(function(t, b) done({ t, b }) end) end, ':CairnTasks')
  local tasks, tbuf = got[1], got[2]
  local line
  for _, l in ipairs(vim.api.nvim_buf_get_lines(tbuf, 0, -1, false)) do
    if l:find(r.task, 1, true) then line = l end
  end
  H.ok(line and line:find('✓(' .. r.identity .. ', not counted)', 1, true) and line:find(r.agent, 1, true) and line:find('review', 1, true), 'task line: ' .. tostring(line))
  H.ok(#tasks >= 2, 'both tasks listed')

  local st = H.run(5000, function(done) require('cairn').status(r.agent, done) end, ':CairnStatus')
  H.eq(st.for_task.id, r.task, 'status names the task')
  H.eq(st.for_task.checks[1].result, 'pass', 'and its check result')

  local lr = H.run(5000, function(done) require('cairn').log(r.agent, function(x, b) done({ x, b }) end) end, ':CairnLog')
  local text = table.concat(vim.api.nvim_buf_get_lines(lr[2], 0, -1, false), '\n')
  H.ok(text:find('tool_requested', 1, true) and text:find('edit_lines', 1, true) and text:find('reviewing', 1, true), text)
end)

H.finish()
