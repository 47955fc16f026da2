-- The review loop with a real Claude Code (npm, .venv/agents) under :CairnWrap, in a real
-- Neovim inside a real tmux, its model a scripted Anthropic API on 127.0.0.1
-- (tests/agents/anthropic_stub.py, turns and gates): the proposal shows as ghost text while
-- Claude works, its turn goes to review while it waits at its prompt, a hunk accepted and one
-- rejected with a reason, :CairnRevise types the feedback into Claude's terminal once, its
-- next turn is revision 2 (interdiff, header, 'R' sign), and :CairnAccept lands exactly the
-- accepted hunk and the revised one. The session is named by the first prompt typed to it.
--
-- This spec drives the inner Neovim the way a user does (keys through tmux) and looks into it
-- through its --listen socket (extmarks of the cairn namespace, the ghost payload).
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')

-- Messages on lines of their own, so that each `ok - ` line starts a line of the log.
vim.notify = function(msg) io.stderr:write(tostring(msg) .. '\n') end

local REASON = 'R-TOKEN use another name'

local function file_lines(a, b)
  local lines = { '# settings', a }
  for i = 3, 18 do
    table.insert(lines, string.format('X%d = %d', i, i))
  end
  table.insert(lines, b)
  table.insert(lines, 'DEBUG = False')
  return table.concat(lines, '\n') .. '\n'
end
local A0, A1 = 'NAME = "cairn"', 'NAME = "Cairn"'
local B0, B1, B2 = 'TIMEOUT_S = 30', 'TMP = 30', 'TIMEOUT_SECONDS = 30'
local BASE = file_lines(A0, B0)

local root = H.project({ ['src/settings.py'] = BASE })
local T = dofile(H.repo .. '/tests/nvim/tui.lua')
local tui = T.new(H, root)
local path = root .. '/src/settings.py'
local gates, stub_log = tui.gates, tui.stub_log
local wait_slow = T.wait_slow
local function tmux(args) return tui:tmux(args) end
local function pane(id) return tui:pane(id) end
local function type_into(id, text) tui:type_into(id, text) end
local function cli(...) return tui:cli(...) end
local function cli_json(...) return tui:cli_json(...) end
local function remote(code, ...) return tui:remote(code, ...) end

--- The model's requests so far (the stub's log), and those of the main conversation
--- (offering tools; not the CLI's side queries).
local function requests()
  local all, main = {}, {}
  for _, line in ipairs(vim.split(H.read(stub_log) or '', '\n', { trimempty = true })) do
    local ok, r = pcall(vim.json.decode, line)
    if ok and type(r) == 'table' then
      table.insert(all, r)
      if r.tools and r.path:match('^/v1/messages') and not r.path:find('count_tokens', 1, true) then
        table.insert(main, r)
      end
    end
  end
  return all, main
end

local function text_of(message)
  if type(message.content) == 'string' then
    return message.content
  end
  local out = {}
  for _, b in ipairs(message.content or {}) do
    if b.type == 'text' then
      table.insert(out, b.text)
    elseif b.type == 'tool_result' then
      table.insert(out, type(b.content) == 'string' and b.content or vim.json.encode(b.content))
    end
  end
  return table.concat(out, '\n')
end

local function has_tool_result(message)
  if type(message.content) ~= 'table' then
    return false
  end
  for _, b in ipairs(message.content) do
    if b.type == 'tool_result' then
      return true
    end
  end
  return false
end

--- The user messages of a request that hold `s`.
local function user_messages_with(r, s)
  local n = 0
  for _, m in ipairs(r.messages) do
    if m.role == 'user' and text_of(m):find(s, 1, true) then
      n = n + 1
    end
  end
  return n
end

--- How many tool results a request holds.
local function results_in(r)
  local n = 0
  for _, m in ipairs(r.messages) do
    if type(m.content) == 'table' then
      for _, b in ipairs(m.content) do
        if b.type == 'tool_result' then
          n = n + 1
        end
      end
    end
  end
  return n
end

-- The scripted model: turn 1 edits A, stops at gate g1 (Claude busy), edits B; turn 2 (the
-- feedback) stops at gate g2 before it reads and edits B another way.
local script = {
  gate_dir = gates,
  turns = {
    {
      { tool = 'Read', input = { file_path = path } },
      { tool = 'Edit', input = { file_path = path, old_string = A0, new_string = A1 } },
      { wait = 'g1', tool = 'Edit', input = { file_path = path, old_string = B0, new_string = B1 } },
      { text = 'Turn one done.' },
    },
    {
      { wait = 'g2', tool = 'Read', input = { file_path = path } },
      { tool = 'Edit', input = { file_path = path, old_string = B1, new_string = B2 } },
      { text = 'Turn two done.' },
    },
  },
}
tui:stub(script)
-- No read_paths: :CairnWrap runs `cairn wrap -- sh -c CMD`, and wrap makes the installation of
-- the program CMD starts visible (Claude Code lives outside the system's directories).
tui:setup(string.format('[wrap]\nhost_ports = [%s]\nturn_quiet_ms = 1500\n', tui.port))

local nvim_pane, claude_pane
local id

--- The inner Neovim's view of the proposal: the cairn extmarks of the file's buffer (their
--- count, header, ghost lines, signs), its hunks and the ghost payload's agent.
local function view()
  return remote([[
    local g = require('cairn.ghost')
    local buf = vim.fn.bufnr(...)
    local out = { marks = 0, virt = {}, signs = {}, hunks = {}, cursor = vim.api.nvim_win_get_cursor(0)[1] }
    if buf > 0 then
      for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, g.ns, 0, -1, { details = true })) do
        out.marks = out.marks + 1
        for _, vl in ipairs(m[4].virt_lines or {}) do
          local text = ''
          for _, chunk in ipairs(vl) do text = text .. chunk[1] end
          if vl[1] and vl[1][2] == 'CairnHeader' then out.header = text else table.insert(out.virt, text) end
        end
        if m[4].sign_text then table.insert(out.signs, { row = m[2], sign = vim.trim(m[4].sign_text) }) end
      end
      for _, h in ipairs(g.hunk_marks[buf] or {}) do
        table.insert(out.hunks, { old_start = h.hunk.old_start, added = h.hunk.added or {} })
      end
    end
    local a = g.payload and g.payload.agent
    if a then out.agent = { id = a.id, state = a.state, in_progress = a.in_progress, revision = a.revision } end
    return out
  ]], path)
end

local function status()
  return cli_json('status', id, '--json')
end

--- Is `line` among the ghost lines the inner Neovim shows?
local function shows(v, line)
  return vim.tbl_contains(v.virt, line)
end

H.test('Claude Code under :CairnWrap: live ghost text, turn to review, hunk decisions, revise typed once, revision 2, accept', function()
  H.ok(vim.fn.executable(tui.claude) == 1, 'Claude Code is missing: run `bash scripts/test.sh` (it installs .venv/agents)')
  tui:start(220, 50, 'src/settings.py')
  nvim_pane = tui.nvim_pane
  H.wait(10000, function() return remote('return vim.api.nvim_buf_get_name(0)') == path end, 'the inner Neovim on the file')

  -- :CairnWrap: Claude Code in a split pane, its proposal selected.
  type_into(nvim_pane, ':CairnWrap ' .. tui.claude .. ' --allowedTools Read Edit')
  wait_slow(20000, function()
    for _, p in ipairs(vim.split(tmux({ 'list-panes', '-t', 'cairn:0', '-F', '#{pane_id}' }), '\n')) do
      if p ~= nvim_pane then
        claude_pane = p
      end
    end
    return claude_pane ~= nil
  end, 'the Claude pane')
  wait_slow(60000, function() return pane(claude_pane):find('? for shortcuts', 1, true) ~= nil end, function() return 'Claude at its prompt:\n' .. pane(claude_pane) end)
  wait_slow(20000, function()
    local a = view().agent
    id = a and a.state == 'executing' and a.id
    return id
  end, 'the wrap agent selected in the inner Neovim')
  local agents = cli_json('list-agents', '--json')
  H.eq(#agents, 1, 'one agent: ' .. vim.inspect(agents))
  H.eq(agents[1].id, id, 'the selected agent is the session')

  -- Turn 1: A lands in the proposal while Claude waits on the model (the stub holds g1).
  tui:prompt(claude_pane, 'Tidy up src/settings.py')
  wait_slow(60000, function()
    local _, main = requests()
    return #main > 0 and results_in(main[#main]) == 2
  end, function() return 'the request held at g1; Claude:\n' .. pane(claude_pane) end)
  wait_slow(20000, function() local v = view() return #v.hunks == 1 and shows(v, A1) end, function() return 'hunk A as ghost text: ' .. vim.inspect(view()) end)
  local st = status()
  H.eq({ st.state, st.in_progress }, { 'executing', true }, 'cairn status while Claude works')
  -- Named by the first prompt typed to Claude (the relay reads it back), in the ghost header too.
  H.eq(st.task, 'Tidy up src/settings.py', 'the session\'s name')
  wait_slow(10000, function()
    local h = view().header
    return h ~= nil and h:find(': Tidy up src/settings.py', 1, true) ~= nil
  end, function() return 'the name in the header: ' .. tostring(view().header) end)
  local v = view()
  H.ok(v.marks > 0, 'extmarks of the cairn namespace')
  H.eq(v.hunks[1].old_start, 1, 'hunk A on line 2')
  H.ok(v.header and v.header:find('[in progress', 1, true) and v.header:find(' ' .. id .. ':', 1, true), 'header: ' .. tostring(v.header))
  H.eq({ v.agent.state, v.agent.in_progress, v.agent.revision }, { 'executing', true, 1 }, 'payload.agent while Claude works')
  H.eq(H.read(path), BASE, 'the file on disk untouched')

  -- g1: B, the final text, then Claude idles at its prompt: the turn goes to review.
  vim.fn.writefile({}, gates .. '/g1')
  wait_slow(60000, function() return status().state == 'reviewing' end, function() return 'reviewing after turn 1; Claude:\n' .. pane(claude_pane) end)
  local screen = pane(claude_pane)
  H.ok(screen:find('Turn one done.', 1, true) and screen:find('? for shortcuts', 1, true), 'Claude at its prompt:\n' .. screen)
  H.eq(tmux({ 'display-message', '-p', '-t', claude_pane, '#{pane_dead}' }), '0', 'Claude\'s pane still running')
  H.eq(status().revision, 1, 'revision 1')
  wait_slow(10000, function()
    v = view()
    return #v.hunks == 2 and v.agent ~= nil and v.agent.state == 'reviewing' and v.header ~= nil and not v.header:find('[in progress', 1, true)
  end, function() return 'both hunks in review: ' .. vim.inspect(view()) end)
  H.ok(shows(v, A1) and shows(v, B1), vim.inspect(v.virt))
  H.eq(H.read(path), BASE, 'the file on disk untouched')

  -- Hunk A accepted, hunk B rejected with a reason, all from the inner Neovim's command line.
  type_into(nvim_pane, ':2')
  wait_slow(5000, function() return view().cursor == 2 end, 'the cursor on hunk A')
  type_into(nvim_pane, ':CairnAcceptHunk')
  wait_slow(10000, function() return #view().hunks == 1 end, function() return 'one hunk left: ' .. vim.inspect(view()) end)
  H.eq(H.read(path), file_lines(A1, B0), 'hunk A landed')
  wait_slow(5000, function() return remote('return vim.api.nvim_buf_get_lines(0, 1, 2, true)[1]') == A1 end, 'the buffer reloaded')
  type_into(nvim_pane, ':19')
  wait_slow(5000, function() return view().cursor == 19 end, 'the cursor on hunk B')
  type_into(nvim_pane, ':CairnRejectHunk ' .. REASON)
  wait_slow(10000, function() return #view().hunks == 0 end, function() return 'no hunk left: ' .. vim.inspect(view()) end)
  H.eq(H.read(path), file_lines(A1, B0), 'the rejected hunk left out')

  -- :CairnRevise: the feedback typed into Claude's terminal, its next turn held at g2.
  local _, before = requests()
  type_into(nvim_pane, ':CairnRevise')
  wait_slow(15000, function() return status().revision == 2 end, function()
    local said = vim.split(remote("return vim.fn.execute('messages')"), '\n', { trimempty = true })
    return 'revision 2 after :CairnRevise: ' .. vim.inspect(status()) .. '; the inner Neovim said: ' .. (said[#said] or '')
  end)
  wait_slow(60000, function()
    local _, main = requests()
    return #main > #before
  end, function() return 'a request after :CairnRevise; Claude:\n' .. pane(claude_pane) end)
  local _, main = requests()
  local first = main[#before + 1]
  local last_user
  for _, m in ipairs(first.messages) do
    if m.role == 'user' then
      last_user = m
    end
  end
  H.ok(not has_tool_result(last_user) and text_of(last_user):find(REASON, 1, true), 'the reason in the first request\'s last user message: ' .. vim.inspect(last_user))
  H.eq(results_in(first) - results_in(before[#before]), 0, 'the first request of turn 2 (no tool result yet)')
  st = status()
  H.eq({ st.state, st.revision }, { 'executing', 2 }, 'revision 2 executing while Claude works')
  local delivered = {}
  for _, fb in ipairs(cli_json('log', id, '--json').feedback or {}) do
    if fb.delivered_via == 'terminal' then
      table.insert(delivered, fb.kind)
    end
  end
  table.sort(delivered)
  H.eq(delivered, { 'hunk_accepted', 'hunk_rejected' }, 'the hunk decisions delivered through the terminal')

  -- g2: B another way; revision 2 in review, its interdiff, the ghost text says so.
  vim.fn.writefile({}, gates .. '/g2')
  wait_slow(60000, function()
    local s = status()
    return s.state == 'reviewing' and s.revision == 2
  end, function() return 'revision 2 in review: ' .. vim.inspect(status()) .. '\nClaude:\n' .. pane(claude_pane) end)
  H.ok(pane(claude_pane):find('Turn two done.', 1, true), 'Claude\'s turn 2:\n' .. pane(claude_pane))
  local inter = cli('diff', id, '--since-review')
  -- Against the proposal as the user left it: the rejected B1 is no removal to review again.
  H.ok(inter:find('\n-' .. B0, 1, true) and inter:find('\n+' .. B2, 1, true) and not inter:find(B1, 1, true), 'the interdiff:\n' .. inter)
  H.ok(not inter:find(A1, 1, true), 'hunk A is not in the interdiff:\n' .. inter)
  wait_slow(10000, function()
    v = view()
    return v.agent ~= nil and v.agent.revision == 2 and v.agent.state == 'reviewing' and #v.hunks == 1
  end, function() return 'revision 2 in the inner Neovim: ' .. vim.inspect(view()) end)
  H.ok(shows(v, B2), vim.inspect(v.virt))
  H.ok(v.header:find('revision 2, 1 changed since your review', 1, true), 'header: ' .. v.header)
  local revised = vim.tbl_filter(function(s) return s.sign == 'R' end, v.signs)
  H.eq(#revised, 1, 'the revised hunk\'s sign: ' .. vim.inspect(v.signs))
  H.eq(revised[1].row, 18, 'the R sign on hunk B')

  -- The reason was typed once: in the final request, one user message holds it.
  _, main = requests()
  H.eq(user_messages_with(main[#main], 'R-TOKEN'), 1, 'user messages with the reason in the last request')

  -- :CairnAccept: hunk A and the revised B, not the rejected B.
  type_into(nvim_pane, ':CairnAccept')
  wait_slow(10000, function() return H.read(path) == file_lines(A1, B2) end, function() return 'the accepted file:\n' .. tostring(H.read(path)) end)
  wait_slow(10000, function() return status().state == 'accepted' end, function() return 'accepted: ' .. vim.inspect(status()) end)
  wait_slow(10000, function() return view().marks == 0 end, 'ghost text cleared')
  -- Events that come together show as one line that fits: never a hit-enter prompt.
  H.eq(tui.hit_enter, 0, 'times the inner Neovim stopped at "Press ENTER"')
  -- Claude quits: its pane stays, with its last screen and how it ended, until a key.
  tmux({ 'send-keys', '-t', claude_pane, 'C-c' })
  tmux({ 'send-keys', '-t', claude_pane, 'C-c' })
  wait_slow(15000, function() return pane(claude_pane):find('press Enter to close', 1, true) ~= nil end, function() return 'the held pane:\n' .. pane(claude_pane) end)
end)

H.test('clean up: the tmux server gone, no process of this run left', function()
  -- The check sees them while they run (Neovim, cairn wrap, Claude Code...).
  H.ok(#tui:processes() > 0, 'the processes of this run found while they run')
  H.ok(tui:stop(), 'no process left: ' .. vim.inspect(tui:processes()))
end)

H.finish()
