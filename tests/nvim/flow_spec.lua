-- queue -> ghost text (also in a buffer opened later) -> accept / reject / one hunk of two,
-- live updates from the CLI, :checkhealth, :help, RPC robustness.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')

local APP = 'a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\n'
local root = H.project({
  ['src/app.py'] = APP,
  ['src/other.py'] = 'x = 1\n',
  ['agents/two.pym'] = [[
c = await read_file("src/app.py")
await write_file("src/app.py", c.replace("a = 1", "a = 100").replace("f = 6", "f = 600\ng = 7"))
await write_file("src/other.py", "x = 2\n")
await submit_result("two hunks", ["src/app.py", "src/other.py"])
]],
  ['agents/new.pym'] = "write_file('src/brand_new.py', 'print(1)\\nprint(2)\\n')\n",
  ['agents/first.pym'] = "write_file('src/first.py', 'one = 1\\n')\n",
  ['agents/later.pym'] = "write_file('src/later.py', 'two = 2\\n')\n",
  ['agents/del.pym'] = 'c = read_file("src/app.py")\nwrite_file("src/app.py", c.replace("c = 3\\n", ""))\nsubmit_result("drop c", ["src/app.py"])\n',
})

local function open(rel)
  vim.cmd.edit(vim.fn.fnameescape(root .. '/' .. rel))
  return vim.api.nvim_get_current_buf()
end

H.test('queue shows ghost text in a loaded buffer and in one opened later', function()
  local buf = open('src/app.py')
  require('cairn').queue('agents/two.pym', false)
  -- The ghost text shows while the agent still runs ("[in progress]"); its summary once it
  -- submitted.
  H.wait(10000, function() return H.hunks(buf) == 2 and (H.virt_text(buf)[1] or ''):match('^cairn %u+ %x+: two hunks') ~= nil end, 'two ghost hunks, submitted')
  local virt = H.virt_text(buf)
  H.ok(vim.tbl_contains(virt, 'a = 100') and vim.tbl_contains(virt, 'f = 600') and vim.tbl_contains(virt, 'g = 7'), vim.inspect(virt))
  H.ok(virt[1]:match('^cairn %u+ %x+: two hunks'), 'header leads with the mark, names the agent: ' .. virt[1])
  local deleted = 0
  for _, m in ipairs(H.marks(buf)) do
    if m.d.line_hl_group == 'CairnDelete' then
      deleted = deleted + 1
    end
  end
  H.eq(deleted, 2, 'removed lines highlighted')
  local other = open('src/other.py')
  H.wait(2000, function() return H.hunks(other) == 1 end, 'ghost in a buffer opened later')
  H.ok(vim.tbl_contains(H.virt_text(other), 'x = 2'))
  H.eq(H.read(root .. '/src/app.py'), APP, 'disk untouched before accept')
end)

H.test('preview outside tmux runs the session in a terminal tab with a notice', function()
  vim.env.TMUX = nil
  open('src/app.py')
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  local tabs = #vim.api.nvim_list_tabpages()
  local messages = H.notified(function()
    H.run(10000, function(d) require('cairn').preview('', d) end, 'preview')
  end)
  H.eq(#vim.api.nvim_list_tabpages(), tabs + 1, 'a new tab')
  local buf = vim.api.nvim_get_current_buf()
  H.eq(vim.bo[buf].buftype, 'terminal', 'the session runs in a terminal')
  local function shown()
    return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
  end
  H.wait(20000, function() return shown():find('a = 100', 1, true) ~= nil end, "the agent's version in the preview: " .. shown())
  H.ok(table.concat(messages, '\n'):find('not inside tmux'), table.concat(messages, ' | '))
  H.eq(vim.fn.isdirectory(vim.env.CAIRN_HOME .. '/workspaces/' .. 'nothing-copied'), 0)
  vim.fn.jobstop(vim.bo[buf].channel)
  vim.cmd('tabclose!')
end)

H.test('accept one hunk of two keeps the other shown and correct', function()
  local buf = open('src/app.py')
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  H.run(5000, function(d) require('cairn').accept_hunk(d) end, 'hunk accepted')
  H.eq(H.read(root .. '/src/app.py'), 'a = 100\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\n', 'disk after one hunk')
  H.wait(3000, function() return H.hunks(buf) == 1 end, 'one hunk left')
  H.eq(vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1], 'a = 100', 'buffer reloaded')
  local virt = H.virt_text(buf)
  H.ok(vim.tbl_contains(virt, 'f = 600') and not vim.tbl_contains(virt, 'a = 100'), vim.inspect(virt))
end)

H.test('accept writes disk, reloads without prompt, clears ghost', function()
  local buf = open('src/app.py')
  local other = vim.fn.bufnr(root .. '/src/other.py')
  H.run(5000, function(d) require('cairn').accept('', d) end, 'accepted')
  H.eq(H.read(root .. '/src/app.py'), 'a = 100\nb = 2\nc = 3\nd = 4\ne = 5\nf = 600\ng = 7\n', 'disk after accept')
  H.eq(vim.api.nvim_buf_get_lines(buf, 5, -1, false), { 'f = 600', 'g = 7' }, 'buffer reloaded')
  H.eq(vim.bo[buf].modified, false, 'buffer not modified')
  H.wait(3000, function() return #H.marks(buf) == 0 and #H.marks(other) == 0 end, 'ghost cleared')
end)

H.test('reject clears ghost and leaves disk alone', function()
  local buf = open('src/app.py')
  local before = H.read(root .. '/src/app.py')
  require('cairn').queue('agents/del.pym', true)
  H.wait(10000, function() return H.hunks(buf) == 1 end, 'ghost of the delete')
  H.run(5000, function(d) require('cairn').reject('', d) end, 'rejected')
  H.wait(3000, function() return #H.marks(buf) == 0 end, 'ghost cleared')
  H.eq(H.read(root .. '/src/app.py'), before, 'disk unchanged')
end)

H.test('an agent run from the CLI shows up live; accepted from a shell under unsaved edits, the buffer holds both and :w keeps both', function()
  local buf = open('src/app.py')
  local bin = require('cairn.rpc').binary()
  local id = vim.trim(vim.fn.system({ bin, '--project-root', root, 'run', 'agents/del.pym' }))
  H.eq(vim.v.shell_error, 0, 'cairn run')
  H.wait(2000, function() return H.hunks(buf) == 1 end, 'ghost from an agent run outside Neovim')
  vim.api.nvim_buf_set_lines(buf, 0, 0, false, { '# my unsaved edit' })
  local messages = H.notified(function(messages)
    vim.fn.system({ bin, '--project-root', root, 'accept', id })
    H.eq(vim.v.shell_error, 0, 'cairn accept from a shell')
    H.wait(5000, function() return table.concat(messages, '\n'):find('merged into your unsaved edits') ~= nil end, 'the landed change merged')
  end)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  H.eq(lines[1], '# my unsaved edit', 'the unsaved edit kept')
  H.ok(not vim.tbl_contains(lines, 'c = 3'), "the agent's change (c = 3 dropped) in the buffer: " .. table.concat(lines, '|'))
  H.eq(vim.bo[buf].modified, true, 'still modified: the user decides to write')
  H.ok(table.concat(messages, '\n'):find('merged'), table.concat(messages, ' | '))
  vim.cmd('write')
  local disk = H.read(root .. '/src/app.py')
  H.ok(disk:find('^# my unsaved edit\n') and not disk:find('c = 3'), ':w keeps both: ' .. disk)
  -- Back to the accepted content (the undo test below undoes that accept).
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, {})
  vim.cmd('silent write')
end)

H.test(':CairnQueue with a task in words and no LLM configured says so', function()
  local queued = false
  H.notified(function(messages)
    require('cairn').queue('add docstrings to utils.py', false, function() queued = true end)
    H.wait(5000, function() return table.concat(messages, '\n'):find('no LLM is configured') ~= nil end, 'the no-LLM message: ' .. table.concat(messages, ' | '))
  end)
  H.eq(queued, false, 'nothing queued')
end)

H.test('with several reviewing agents the latest shows; :CairnSelect and :CairnListTasks switch', function()
  local buf = open('src/app.py')
  vim.cmd('edit!')
  local bin = require('cairn.rpc').binary()
  local first = vim.trim(vim.fn.system({ bin, '--project-root', root, 'run', '--provider', 'inline', "write_file('src/app.py', 'first version\\n')" }))
  local second = vim.trim(vim.fn.system({ bin, '--project-root', root, 'run', '--provider', 'inline', "write_file('src/app.py', 'second version\\n')" }))
  local function focused()
    local p = require('cairn.ghost').payload
    return p and p.agent and p.agent.id
  end
  -- Where two agents' proposals meet, each body is labelled with its agent's mark.
  local function label(id)
    for _, a in ipairs(require('cairn').status().agents) do
      if a.id == id then
        return '[' .. a.mark .. '] '
      end
    end
    return '[?] '
  end
  H.wait(3000, function() return focused() == second end, 'the latest agent focused')
  -- Both proposals are drawn at once, each with its agent's mark.
  H.wait(3000, function()
    local v = H.virt_text(buf)
    return vim.tbl_contains(v, label(second) .. 'second version') and vim.tbl_contains(v, label(first) .. 'first version')
  end, function() return 'both agents drawn, each body labelled with its mark: ' .. vim.inspect(H.virt_text(buf)) end)
  -- The status snapshot: both agents, waiting, overlapping each other; `User CairnStatus`.
  H.wait(3000, function()
    local st = require('cairn').status()
    return #st.agents == 2 and #st.agents[1].overlaps == 1 and st.agents[1].waits == true
  end, 'the status snapshot: ' .. vim.inspect(require('cairn').status()))
  -- Marks are the agents' for their life: these two follow the agents of the tests before.
  local marks = {}
  for _, a in ipairs(require('cairn').status().agents) do
    marks[a.id] = a.mark
  end
  local want = string.format('%s %s waits ⚠%s', marks[first], first:sub(1, 4), marks[second])
  H.ok(require('cairn').statusline():find(want, 1, true), want .. ' in ' .. require('cairn').statusline())
  H.ok(vim.tbl_contains(H.virt_text(buf), label(second) .. 'overlaps agent ' .. first .. ' (both change these lines)'), vim.inspect(H.virt_text(buf)))
  local fired = 0
  vim.api.nvim_create_autocmd('User', { pattern = 'CairnStatus', callback = function(ev) fired = #ev.data.agents end })
  -- An unsaved edit the proposals touch is marked too.
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, { 'a = 1 # unsaved' })
  vim.api.nvim_exec_autocmds('TextChanged', { buffer = buf })
  H.ok(vim.tbl_contains(H.virt_text(buf), label(second) .. 'overlaps your unsaved edit'), vim.inspect(H.virt_text(buf)))
  vim.cmd('silent edit!')
  vim.cmd('CairnSelect ' .. first:sub(1, 4))
  H.wait(3000, function() return focused() == first end, 'the selected agent focused')
  H.ok(vim.tbl_contains(H.virt_text(buf), label(second) .. 'second version'), 'the other one still drawn')
  local shown
  local orig = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    shown = vim.tbl_map(opts.format_item, items)
    for _, it in ipairs(items) do
      if it.id == second then
        return on_choice(it)
      end
    end
  end
  vim.cmd('CairnListTasks')
  H.wait(5000, function() return shown ~= nil end, 'the agent list')
  vim.ui.select = orig
  H.ok(shown and #shown >= 2 and table.concat(shown, '\n'):find(first, 1, true), vim.inspect(shown))
  H.wait(3000, function() return focused() == second end, 'chosen from the list')
  vim.cmd('CairnDiff')
  H.wait(5000, function() return vim.bo.filetype == 'diff' end, 'the diff tab')
  H.ok(vim.bo.filetype == 'diff' and table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n'):find('+second version', 1, true), 'diff tab')
  vim.cmd('tabclose')
  local st = H.run(5000, function(d) require('cairn').status(first, d) end, 'status')
  H.eq(st.state, 'reviewing', 'status')
  H.run(5000, function(d) require('cairn').reject(first, d) end, 'rejected first')
  H.wait(3000, function() return fired == 1 end, 'User CairnStatus with the one agent left')
  H.run(5000, function(d) require('cairn').reject(second, d) end, 'rejected second')
  H.wait(3000, function() return #H.marks(buf) == 0 end, 'cleared')
end)

H.test('a file the agent creates shows as ghost text when opened', function()
  require('cairn').queue('agents/new.pym', false)
  H.wait(10000, function()
    local p = require('cairn.ghost').payload
    return p and p.files and p.files[root .. '/src/brand_new.py'] ~= nil
  end, 'a proposal with the new file')
  local buf = open('src/brand_new.py')
  H.wait(2000, function() return vim.tbl_contains(H.virt_text(buf), 'print(2)') end, 'ghost in the new buffer')
  H.eq(vim.fn.line('w0'), 1, 'top of the buffer')
  local r = H.run(5000, function(d) require('cairn').reject('', d) end, 'rejected')
  H.wait(10000, function() return #H.marks(buf) == 0 end, function()
    local p = require('cairn.ghost').payload or {}
    return 'cleared (rejected ' .. vim.inspect(r and r.id) .. '; shown now: ' .. vim.inspect(p.agent) .. ')'
  end)
end)

H.test(':checkhealth cairn', function()
  vim.cmd('checkhealth cairn')
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  H.ok(text:find('RPC handshake: host'), text)
  H.ok(text:find('binary: '), text)
  H.ok(text:find('is writable'), text)
  H.ok(text:find('seccomp allow%-list installed'), text)
  H.ok(text:find('forbidden syscalls denied'), text)
  -- Which memory bound holds for runs: a cgroup, or limits per process.
  H.ok(text:find('memory: cgroup v') or text:find('memory: per%-process only'), text)
  H.ok(not text:find('ERROR'), text)
  vim.cmd('bwipeout')
end)

H.test(':help cairn', function()
  vim.cmd('helptags ' .. vim.fn.fnameescape(H.repo .. '/doc'))
  vim.cmd('help cairn')
  H.ok(vim.api.nvim_buf_get_name(0):match('doc/cairn%.txt$'), vim.api.nvim_buf_get_name(0))
  vim.cmd('help :CairnAcceptHunk')
  H.ok(vim.api.nvim_get_current_line():find('CairnAcceptHunk'), vim.api.nvim_get_current_line())
  vim.cmd('help cairn-config-ui.keymaps')
  vim.cmd('close')
end)

H.test('a message always fits the command line, however narrow the window', function()
  local columns = vim.o.columns
  for _, width in ipairs({ 80, 40, 21, 12 }) do
    vim.o.columns = width
    local text = require('cairn.notify').fit('cairn: agent 3f2a9c reviewing: rename the retry helper and its callers ✓\nsecond line')
    H.ok(vim.fn.strdisplaywidth(text) < math.max(2, vim.v.echospace), width .. ' columns: ' .. text)
    H.ok(not text:find('\n'), 'one line')
  end
  vim.o.columns = columns
end)

H.test('garbage and unknown methods get an error reply; the host keeps serving', function()
  local chan = require('cairn.rpc').chan
  local cases = {
    { 'no_such_method', vim.empty_dict() },
    { 'accept', 42 },
    { 'queue', { task = { 1, 2 } } },
    { 'accept_hunk', { path = 'src/app.py', hunk = 'not a hunk' } },
    { 'select', { id = string.rep('z', 5000) } },
  }
  for _, c in ipairs(cases) do
    local ok, err = pcall(vim.rpcrequest, chan, c[1], c[2])
    local reply_error = ok and type(err) == 'table' and err.ok == false
    H.ok((not ok and tostring(err):find('cairn')) or reply_error, c[1] .. ': ' .. vim.inspect(err))
  end
  pcall(vim.rpcnotify, chan, 'garbage', { 1, 2, 3 })
  local pong = require('cairn.rpc').request('ping')
  H.ok(pong and pong.version, 'host still answers')
end)

H.test('undo restores the exact content and reloads the buffer', function()
  local buf = open('src/app.py')
  local accepted
  for _, s in ipairs(require('cairn.rpc').request('list').agents) do
    if s.state == 'accepted' and s.task == 'agents/del.pym' then
      accepted = s.id
    end
  end
  H.ok(accepted, 'the accepted del.pym agent')
  H.ok(not H.read(root .. '/src/app.py'):find('c = 3'), 'its change is on disk')
  H.run(5000, function(d) require('cairn').undo(accepted, d) end, 'undone')
  local before = 'a = 100\nb = 2\nc = 3\nd = 4\ne = 5\nf = 600\ng = 7\n'
  H.eq(H.read(root .. '/src/app.py'), before, 'disk restored byte for byte')
  H.wait(3000, function() return vim.api.nvim_buf_get_lines(buf, 2, 3, false)[1] == 'c = 3' end, 'buffer reloaded')
  H.eq(vim.bo[buf].modified, false, 'buffer not modified')
  -- Accepted again from a shell: the unmodified buffer follows.
  vim.fn.system({ require('cairn.rpc').binary(), '--project-root', root, 'accept', accepted })
  H.eq(vim.v.shell_error, 0, 'cairn accept from a shell')
  H.wait(5000, function() return vim.api.nvim_buf_get_lines(buf, 2, 3, false)[1] == 'd = 4' end, 'buffer reloaded after a shell accept')
  H.eq(vim.bo[buf].modified, false, 'buffer not modified')
end)

H.test('an agent between its run and its review is still the one an id-less command acts on', function()
  local function state_of(id)
    for _, s in ipairs(require('cairn.rpc').request('list').agents) do
      if s.id == id then
        return s.state
      end
    end
  end
  local function reviewing(task)
    require('cairn').queue(task, false)
    local id
    H.wait(10000, function()
      for _, s in ipairs(require('cairn.rpc').request('list').agents) do
        if s.task == task and s.state == 'reviewing' then
          id = s.id
        end
      end
      return id ~= nil
    end, task .. ' under review')
    return id
  end
  local first, later = reviewing('agents/first.pym'), reviewing('agents/later.pym')
  -- `later` as it is for a moment after its run, while its submission is stored (a long
  -- moment when a jj change is recorded): shown, and the one an id-less reject means. Its
  -- worker is a live process (this Neovim), so that no recovery re-queues it meanwhile.
  local set = 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("UPDATE agents SET state = \'submitting\', worker_pid = ?, worker_start = 0 WHERE id = ?", (int(sys.argv[3]), sys.argv[2])); c.commit()'
  vim.fn.system({ 'python3', '-c', set, root .. '/.agentfs/bin.db', later, tostring(vim.fn.getpid()) })
  H.eq(vim.v.shell_error, 0, 'python3 sets the state')
  local r = H.run(5000, function(d) require('cairn').reject('', d) end, 'rejected')
  H.eq(r and r.id, later, 'the agent rejected')
  H.eq(state_of(later), 'rejected', 'its state')
  H.eq(state_of(first), 'reviewing', 'the other one, untouched')
  H.run(5000, function(d) require('cairn').reject(first, d) end, 'the other one rejected')
end)

H.finish()
