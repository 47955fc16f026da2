-- The review loop in Neovim: a wrap session's proposal shows as ghost text while the agent is
-- still executing (header "[in progress"), a hunk rejected with a reason and a note on lines
-- are recorded for the agent, :CairnRevise sends them (the CLI's `cairn log --json` shows
-- them), `cairn wrap --agent` delivers them once on its command line, and after `cairn undo`
-- the ghost text is back, marked undone.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')

-- Messages on lines of their own, so that each `ok - ` line starts a line of the log.
vim.notify = function(msg) io.stderr:write(tostring(msg) .. '\n') end

local BASE = 'a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\ng = 7\nh = 8\ni = 9\nj = 10\n'
local PROPOSED = { 'a = 1', 'b = 200', 'c = 3', 'd = 4', 'e = 5', 'f = 6', 'g = 7', 'h = 8', 'i = 900', 'j = 10' }
local root = H.project({
  ['src/x.py'] = BASE,
  -- The wrapped command waits until this file says `go`. It exists from the start and is
  -- rewritten in place: a file created on the host after the command looked it up is not
  -- seen through its copy-on-write view (the overlay keeps the negative lookup).
  ['gate.txt'] = 'wait\n',
})
local home = vim.env.CAIRN_HOME
local path = root .. '/src/x.py'
local id -- the wrap session's agent
local wrap_job -- the `cairn wrap` job of the first test

local function bin()
  return require('cairn.rpc').binary()
end

--- `cairn ARGS... --json` on this project, decoded.
local function cli_json(...)
  local out = vim.fn.system(vim.list_extend({ bin(), '--project-root', root, '--cairn-home', home }, { ... }))
  H.eq(vim.v.shell_error, 0, 'cairn ' .. table.concat({ ... }, ' ') .. ': ' .. out)
  return vim.json.decode(out)
end

local function write(rel, text)
  local f = assert(io.open(root .. '/' .. rel, 'w'))
  f:write(text)
  f:close()
end

--- Waits on a condition that runs the CLI: polls every 100 ms.
local function wait_cli(ms, cond, what)
  if not vim.wait(ms, cond, 100) then
    error('timed out waiting for ' .. what, 2)
  end
end

--- The ghost header of `buf` (the virtual line highlighted CairnHeader), or nil.
local function header(buf)
  for _, m in ipairs(H.marks(buf)) do
    for _, vl in ipairs(m.d.virt_lines or {}) do
      local hl = vl[1] and vl[1][2]
      if hl == 'CairnHeader' or (type(hl) == 'table' and vim.tbl_contains(hl, 'CairnHeader')) then
        local text = ''
        for _, chunk in ipairs(vl) do
          text = text .. chunk[1]
        end
        return text
      end
    end
  end
  return nil
end

local function agent()
  local p = require('cairn.ghost').payload
  return p and p.agent
end

--- Starts `cairn wrap ARGS...` on this project as a job (pipes, no pty); returns
--- `{job, out, err, code}` (`code` set on exit).
local function start_wrap(args)
  local r = H.run(10000, function(done) require('cairn.rpc').call('wrap_argv', nil, done) end, 'wrap_argv')
  local w = { out = '', err = '' }
  w.job = vim.fn.jobstart(vim.list_extend(vim.deepcopy(r.argv), args), {
    cwd = root,
    on_stdout = function(_, data) w.out = w.out .. table.concat(data, '\n') end,
    on_stderr = function(_, data) w.err = w.err .. table.concat(data, '\n') end,
    on_exit = function(_, code) w.code = code end,
  })
  H.ok(w.job > 0, 'cairn wrap started: ' .. tostring(w.job))
  return w
end

local notified = H.notified

local function log()
  return cli_json('log', id, '--json')
end

local function feedback_of(kind)
  local out = {}
  for _, f in ipairs(log().feedback or {}) do
    if f.kind == kind then
      table.insert(out, f)
    end
  end
  return out
end

H.test('ghost text shows while the wrap agent is still executing, marked in progress', function()
  vim.env.TMUX = nil
  vim.cmd.edit(vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  H.run(10000, function(done) require('cairn').refresh(); require('cairn.rpc').call('ping', nil, done) end, 'the host')
  local script = "printf '%s\\n' " .. table.concat(vim.tbl_map(function(l) return "'" .. l .. "'" end, PROPOSED), ' ') .. ' > src/x.py'
    .. '; while [ "$(cat gate.txt)" != go ]; do sleep 0.1; done'
  wrap_job = start_wrap({ '--task', 'two numbers bigger', '--', 'sh', '-c', script })
  H.wait(20000, function() id = wrap_job.err:match('wrap session (%x+):') return id ~= nil end, 'the session id: ' .. wrap_job.err)
  H.wait(20000, function() return #H.marks(buf) > 0 end, 'ghost text while the agent works')
  -- The command is still blocked on the gate: the agent is executing right now.
  local st = cli_json('status', id, '--json')
  H.eq(st.state, 'executing', 'cairn status while the ghost text shows')
  H.eq(st.in_progress, true, 'cairn status: in progress')
  H.eq(wrap_job.code, nil, 'cairn wrap still running')
  H.wait(5000, function() return H.hunks(buf) == 2 end, 'both hunks of the live proposal')
  local a = agent()
  H.eq({ a.id, a.state, a.in_progress, a.revision }, { id, 'executing', true, 1 }, 'payload.agent while executing')
  local head = header(buf)
  H.ok(head and head:find('[in progress', 1, true), 'header: ' .. tostring(head) .. ' / ' .. vim.inspect(H.virt_text(buf)))
  H.ok(head:find('^cairn %u+ %[in progress%] ' .. id .. ':'), 'header leads with mark and state, then names the agent: ' .. head)
  local virt = H.virt_text(buf)
  H.ok(vim.tbl_contains(virt, 'b = 200') and vim.tbl_contains(virt, 'i = 900'), vim.inspect(virt))
  H.eq(H.read(path), BASE, 'the file on disk untouched')
  -- Let the command end: the proposal goes to review.
  write('gate.txt', 'go\n')
  H.wait(20000, function() return wrap_job.code ~= nil end, 'cairn wrap to end')
  H.eq(wrap_job.code, 0, 'cairn wrap exit code (stderr: ' .. wrap_job.err .. ')')
  H.wait(10000, function()
    local ag = agent()
    return ag and ag.id == id and ag.state == 'reviewing' and ag.in_progress == false
  end, 'payload.agent reviewing: ' .. vim.inspect(agent()))
  H.eq(cli_json('status', id, '--json').state, 'reviewing', 'cairn status after the command ended')
  H.wait(5000, function()
    local h = header(buf)
    return H.hunks(buf) == 2 and h ~= nil and not h:find('[in progress', 1, true)
  end, 'the header without "in progress": ' .. tostring(header(buf)))
  H.eq(H.read(path), BASE, 'the file on disk untouched')
end)

-- Should the first test have failed midway, the session still ends, so the rest can run.
if wrap_job and wrap_job.code == nil then
  write('gate.txt', 'go\n')
  vim.wait(20000, function() return wrap_job.code ~= nil end, 50)
end

H.test(':CairnRejectHunk with a reason, then :CairnRevise: `cairn log --json` has the feedback', function()
  local buf = vim.fn.bufnr(path)
  vim.api.nvim_set_current_buf(buf)
  H.eq(H.hunks(buf), 2, 'two hunks before')
  vim.api.nvim_win_set_cursor(0, { 2, 0 }) -- on `b = 2`, the first hunk
  local found = require('cairn.ghost').hunk_at_cursor(buf)
  H.ok(found and found.hunk.old_start == 1, 'the cursor on the first hunk: ' .. vim.inspect(found))
  vim.cmd('CairnRejectHunk b must stay small')
  H.wait(10000, function() return H.hunks(buf) == 1 end, 'one hunk left after the reject')
  H.ok(not vim.tbl_contains(H.virt_text(buf), 'b = 200') and vim.tbl_contains(H.virt_text(buf), 'i = 900'), vim.inspect(H.virt_text(buf)))
  H.eq(H.read(path), BASE, 'a rejected hunk does not touch the file')
  -- Recorded before any revise: on revision 1, not sent.
  local fb = feedback_of('hunk_rejected')
  H.eq(#fb, 1, 'one hunk_rejected: ' .. vim.inspect(log()))
  H.ok(fb[1].text:find('b must stay small', 1, true), 'the reason in the text: ' .. fb[1].text)
  H.ok(fb[1].text:find('b = 200', 1, true), 'the hunk described: ' .. fb[1].text)
  H.eq({ fb[1].path, fb[1].lines, fb[1].revision, fb[1].sent_in }, { 'src/x.py', { 2, 2 }, 1, vim.NIL }, 'where and when')
  H.eq(fb[1].delivered_via, vim.NIL, 'not delivered yet')
  -- :CairnRevise itself, its reply seen on the way (the host's `revise` result).
  local rpc = require('cairn.rpc')
  local orig_call, revised = rpc.call, nil
  local messages = notified(function()
    rpc.call = function(method, args, on_done)
      if method ~= 'revise' then
        return orig_call(method, args, on_done)
      end
      return orig_call(method, args, function(r)
        revised = r
        if on_done then on_done(r) end
      end)
    end
    local ok, err = pcall(function()
      vim.cmd('CairnRevise')
      H.wait(10000, function() return revised ~= nil end, 'the reply to :CairnRevise')
    end)
    rpc.call = orig_call
    if not ok then
      error(err, 0)
    end
  end)
  H.eq({ revised.id, revised.revision, revised.sent, revised.delivery, revised.state }, { id, 2, 1, 'command line', 'reviewing' }, 'the revise of an ended wrap session')
  local l = log()
  H.eq(l.state, 'reviewing', 'an ended wrap session stays in review until re-run')
  H.eq(#l.revisions, 1, 'one revision after the first: ' .. vim.inspect(l.revisions))
  H.eq(l.revisions[1].revision, 2, 'revision 2 recorded')
  H.eq(#l.feedback, 1, 'the one piece of feedback: ' .. vim.inspect(l.feedback))
  local f = l.feedback[1]
  H.eq({ f.kind, f.revision, f.sent_in, f.delivered_via }, { 'hunk_rejected', 1, 2, vim.NIL }, 'sent with revision 2, delivered at the next `cairn wrap --agent`')
  H.ok(f.text:find('b must stay small', 1, true), f.text)
  local said = table.concat(messages, '\n')
  H.ok(said:find(id .. ': revision 2, 1 piece(s) of feedback', 1, true) and said:find('cairn wrap --agent ' .. id, 1, true), said)
  H.wait(5000, function() local a = agent() return a and a.revision == 2 end, 'payload.agent.revision 2: ' .. vim.inspect(agent()))
end)

H.test(":'<,'>CairnComment records a note on those lines", function()
  local buf = vim.fn.bufnr(path)
  vim.api.nvim_set_current_buf(buf)
  vim.cmd('4,6CairnComment keep these three as they are')
  wait_cli(10000, function() return #feedback_of('comment') == 1 end, 'the comment in `cairn log`')
  local c = feedback_of('comment')[1]
  H.eq({ c.path, c.lines, c.text, c.revision, c.sent_in, c.delivered_via }, { 'src/x.py', { 4, 6 }, 'keep these three as they are', 2, vim.NIL, vim.NIL }, 'the comment')
  -- A visual range, as the command is meant to be used.
  vim.api.nvim_win_set_cursor(0, { 9, 0 })
  vim.cmd('normal! Vj' .. vim.keycode('<Esc>'))
  H.eq({ vim.fn.line("'<"), vim.fn.line("'>") }, { 9, 10 }, 'the visual marks')
  vim.cmd("'<,'>CairnComment nine and ten")
  wait_cli(10000, function() return #feedback_of('comment') == 2 end, 'the second comment in `cairn log`')
  local c2 = feedback_of('comment')[2]
  H.eq({ c2.path, c2.lines, c2.text }, { 'src/x.py', { 9, 10 }, 'nine and ten' }, 'the comment from a visual range')
end)

H.test('`cairn wrap --agent ID` delivers the sent feedback once, on its command line', function()
  -- A prompt given with `-p`, as `claude -p`, `gemini -p` take theirs: the feedback follows it.
  local w = start_wrap({ '--agent', id, '--', 'echo', '-p', 'FEEDBACK:' })
  H.wait(20000, function() return w.code ~= nil end, 'the re-run to end')
  H.eq(w.code, 0, 'exit code (stderr: ' .. w.err .. ')')
  H.ok(w.out:find('FEEDBACK:', 1, true) and w.out:find('b must stay small', 1, true), 'the feedback on its command line: ' .. w.out)
  H.ok(not w.out:find('keep these three', 1, true), 'unsent notes not delivered: ' .. w.out)
  local rejected = feedback_of('hunk_rejected')[1]
  H.eq(rejected.delivered_via, 'command line', 'delivered_via')
  for _, c in ipairs(feedback_of('comment')) do
    H.eq({ c.sent_in, c.delivered_via }, { vim.NIL, vim.NIL }, 'a note not sent yet stays undelivered')
  end
  -- Delivered once: a second re-run gets nothing appended.
  local again = start_wrap({ '--agent', id, '--', 'echo', '-p', 'AGAIN:' })
  H.wait(20000, function() return again.code ~= nil end, 'the second re-run to end')
  H.ok(again.out:find('AGAIN:', 1, true) and not again.out:find('must stay small', 1, true), again.out)
  H.wait(10000, function() local a = agent() return a and a.id == id and a.state == 'reviewing' end, 'reviewing again: ' .. vim.inspect(agent()))
end)

H.test('after `cairn undo` the agent is undone and its ghost text is back', function()
  local buf = vim.fn.bufnr(path)
  vim.api.nvim_set_current_buf(buf)
  H.wait(10000, function() return H.hunks(buf) == 1 end, 'the remaining hunk shown')
  H.run(10000, function(d) require('cairn').accept(id, d) end, 'accepted')
  local accepted = BASE:gsub('i = 9\n', 'i = 900\n')
  H.eq(H.read(path), accepted, 'the accepted file (the rejected hunk left out)')
  H.wait(5000, function() return #H.marks(buf) == 0 end, 'ghost text cleared on accept')
  local out = vim.fn.system({ bin(), '--project-root', root, '--cairn-home', home, 'undo', id })
  H.eq(vim.v.shell_error, 0, 'cairn undo: ' .. out)
  H.eq(H.read(path), BASE, 'the file restored')
  H.eq(cli_json('status', id, '--json').state, 'undone', 'cairn status after undo')
  vim.cmd('checktime')
  H.wait(10000, function()
    local a = agent()
    return a and a.id == id and a.state == 'undone' and H.hunks(buf) == 1
  end, 'the undone proposal shown again: ' .. vim.inspect(agent()))
  local head = header(buf)
  H.ok(head and head:find('[undone', 1, true), 'header: ' .. tostring(head))
  H.ok(vim.tbl_contains(H.virt_text(buf), 'i = 900'), vim.inspect(H.virt_text(buf)))
end)

H.test(':CairnUndo without an id undoes the latest accept', function()
  local buf = vim.fn.bufnr(path)
  H.run(10000, function(d) require('cairn').accept(id, d) end, 'accepted again')
  H.eq(H.read(path), (BASE:gsub('i = 9\n', 'i = 900\n')), 'accepted again')
  vim.cmd('CairnUndo')
  wait_cli(10000, function() return cli_json('status', id, '--json').state == 'undone' end, 'undone by :CairnUndo')
  H.eq(H.read(path), BASE, 'the file restored')
  H.wait(10000, function() return H.hunks(buf) == 1 end, 'its ghost text back')
end)

if wrap_job and wrap_job.code == nil then
  vim.fn.jobstop(wrap_job.job)
end
H.finish()
