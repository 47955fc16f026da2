-- Walking a review at 80 columns, as a user does (issue 49). A real Neovim in a real tmux
-- pane 80 columns wide, agents run from a shell before and after it started, the screen read
-- with capture-pane and no key pressed:
-- - proposals pending when Neovim started are drawn and the statusline component filled;
-- - a shell accept changes the statusline, and the other agents keep their marks;
-- - an agent that starts waiting while the user is in another tmux window is announced there
--   (tmux display-message on the attached client, the bell flag of Neovim's window), not
--   while Neovim is on screen, and never with `attention = false`;
-- - :CairnWrap stacks its pane below Neovim's at 80 columns.
-- Then, in this (headless) Neovim: :CairnHunks[!] fills the quickfix list; :CairnResolve lays
-- the three versions out for the width and starts at the first conflict.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')

local function lines(n, edits)
  local out = {}
  for i = 1, n do
    out[i] = (edits or {})[i] or ('l' .. i)
  end
  return table.concat(out, '\n') .. '\n'
end

--- An agent script replacing line `n` of `file` with `text` for each `{file, n, text}`.
local function script(summary, edits)
  local code = {}
  for _, e in ipairs(edits) do
    table.insert(code, string.format('t = read_file(%q)\nwrite_file(%q, t.replace("l%d\\n", "%s\\n", 1))', e[1], e[1], e[2], e[3]))
  end
  table.insert(code, string.format('submit_result(%q, [])', summary))
  return table.concat(code, '\n') .. '\n'
end

local root = H.project({
  ['notes.txt'] = lines(8),
  ['other.txt'] = lines(8),
  ['third.txt'] = lines(8),
  ['agents/notes.pym'] = script('edit notes', { { 'notes.txt', 2, 'TWO-PROPOSED' } }),
  ['agents/other.pym'] = script('edit other', { { 'other.txt', 3, 'O3' } }),
  ['agents/third.pym'] = script('edit third', { { 'third.txt', 4, 'T4' } }),
  ['agents/late.pym'] = script('late', { { 'third.txt', 7, 'LATE7' } }),
  ['agents/later.pym'] = script('later', { { 'other.txt', 7, 'LATER7' } }),
  ['agents/last.pym'] = script('last', { { 'notes.txt', 7, 'LAST7' } }),
})
local home = vim.env.CAIRN_HOME
local work = vim.fn.fnamemodify(home, ':h')
local sock = work .. '/tmux.sock'
local nvim_sock = work .. '/nvim.sock'

--- The cairn CLI on the project (from a shell, as a user): its output and exit code.
local function cli(...)
  local bin = require('cairn.rpc').binary()
  local out = vim.fn.system(vim.list_extend({ bin, '--project-root', root, '--cairn-home', home }, { ... }))
  return out, vim.v.shell_error
end

local function cli_json(...)
  local out, code = cli(...)
  H.eq(code, 0, 'cairn ' .. table.concat({ ... }, ' ') .. ': ' .. out)
  return vim.json.decode(out)
end

--- Runs agent script `name` to review from the shell; its id.
local function run(name)
  local s = cli_json('run', 'agents/' .. name .. '.pym', '--json')
  H.eq(s.state, 'reviewing', 'agent ' .. name .. ': ' .. vim.inspect(s))
  return s.id
end

local function tmux(args)
  local out = vim.fn.system(vim.list_extend({ 'tmux', '-S', sock }, args))
  return (out:gsub('%s+$', '')), vim.v.shell_error
end

local function screen()
  return (tmux({ 'capture-pane', '-p', '-t', 'walk:0.0' }))
end

--- The last line of Neovim's pane with text: its status line.
local function statusline()
  local rows = vim.split(screen(), '\n')
  for i = #rows, 1, -1 do
    if rows[i]:find('cairn ', 1, true) then
      return rows[i]
    end
  end
  return ''
end

local ids = {}

H.test('a proposal pending before Neovim started is drawn, and the statusline filled, with no key pressed', function()
  cli('init')
  ids.notes, ids.other, ids.third = run('notes'), run('other'), run('third')
  local marks = {}
  for _, id in ipairs({ ids.notes, ids.other, ids.third }) do
    table.insert(marks, cli_json('status', id, '--json').mark)
  end
  H.eq(marks, { 'A', 'B', 'C' }, 'marks in the order the agents started')
  -- The inner Neovim: the plugin, a statusline of the component alone, nothing else.
  local init = work .. '/init.lua'
  local f = assert(io.open(init, 'w'))
  f:write([[
vim.opt.rtp:prepend(vim.env.CAIRN_REPO)
vim.cmd.runtime('plugin/cairn.lua')
vim.o.swapfile = false
vim.o.signcolumn = 'yes:1'
vim.o.laststatus = 2
vim.o.statusline = "%{v:lua.require'cairn'.statusline()}"
vim.o.shortmess = vim.o.shortmess .. 'AFI'
vim.cmd('highlight clear')
]])
  f:close()
  local cmd = string.format('env CAIRN_HOME=%s CAIRN_REPO=%s %s --listen %s -u %s -i NONE -n notes.txt', vim.fn.shellescape(home),
    vim.fn.shellescape(H.repo), vim.fn.shellescape(vim.v.progpath), vim.fn.shellescape(nvim_sock), vim.fn.shellescape(init))
  local _, code = tmux({ 'new-session', '-d', '-s', 'walk', '-x', '80', '-y', '20', '-c', root, cmd })
  H.eq(code, 0, 'tmux new-session')
  H.wait(20000, function() return screen():find('TWO-PROPOSED', 1, true) ~= nil end, function() return 'the proposal drawn:\n' .. screen() end)
  local want = string.format('cairn A %s waits  B %s waits  C %s waits', ids.notes:sub(1, 4), ids.other:sub(1, 4), ids.third:sub(1, 4))
  H.wait(10000, function() return statusline():find(want, 1, true) ~= nil end, function() return want .. ' in the statusline:\n' .. screen() end)
end)

H.test('a shell accept changes the statusline with no key pressed; the others keep their marks', function()
  -- other.txt is in no window: nothing but the status line has anything to redraw.
  cli('accept', ids.other)
  local want = string.format('cairn A %s waits  C %s waits', ids.notes:sub(1, 4), ids.third:sub(1, 4))
  H.wait(10000, function() return statusline():find(want, 1, true) ~= nil end, function() return want .. ' in the statusline:\n' .. screen() end)
  H.eq(cli_json('status', ids.third, '--json').mark, 'C', 'C after B landed')
  H.eq(cli_json('status', ids.notes, '--json').mark, 'A', 'A after B landed')
  cli('reject', ids.notes)
  H.eq(cli_json('status', ids.third, '--json').mark, 'C', 'C after A was rejected')
end)

-- The inner Neovim (its socket), for what a test sets up there.
local chan
local function remote(code, ...)
  if not chan then
    chan = vim.fn.sockconnect('pipe', nvim_sock, { rpc = true })
  end
  return vim.rpcrequest(chan, 'nvim_exec_lua', code, { ... })
end

--- What the inner Neovim decided about agent `id` starting to wait (`nil` until it did).
local function decided(id)
  local d = remote('for _, d in ipairs(require("cairn.attention").decided) do if d.id == ... then return d end end', id)
  return d ~= vim.NIL and d or nil
end

H.test('an agent that starts waiting while you are in another tmux window is announced there', function()
  -- A client on the session, as a user's terminal: tmux shows display-message on it.
  local seen = {}
  local client = vim.fn.jobstart({ 'tmux', '-S', sock, 'attach', '-t', 'walk' }, {
    pty = true, width = 80, height = 24,
    on_stdout = function(_, data) table.insert(seen, table.concat(data, '\n')) end,
  })
  H.ok(client > 0, 'a tmux client')
  local function client_saw(text)
    return (table.concat(seen):gsub('%s+', ' ')):find(text, 1, true) ~= nil
  end
  H.wait(10000, function() return tmux({ 'display-message', '-p', '-t', 'walk', '#{session_attached}' }) == '1' end, 'the client attached')
  tmux({ 'new-window', '-t', 'walk' })
  H.eq(tmux({ 'display-message', '-p', '-t', 'walk:0', '#{window_bell_flag}' }), '0', 'no bell yet')
  ids.late = run('late')
  H.wait(20000, function() return decided(ids.late) ~= nil end, 'the inner Neovim deciding about the late agent')
  H.eq(decided(ids.late).told, true, 'told: Neovim is in a window not on screen')
  H.wait(10000, function() return client_saw('waits for your review') end, 'the message on the tmux client')
  H.ok(client_saw(ids.late), 'the message names the agent')
  H.wait(10000, function() return tmux({ 'display-message', '-p', '-t', 'walk:0', '#{window_bell_flag}' }) == '1' end, "the bell flag of Neovim's window")

  -- Neovim on screen again: nothing to tell.
  tmux({ 'select-window', '-t', 'walk:0' })
  ids.later = run('later')
  H.wait(20000, function() return decided(ids.later) ~= nil end, 'the inner Neovim deciding about the later agent')
  H.eq(decided(ids.later).told, false, 'not told: Neovim is on screen')

  -- Off by a setting.
  remote('require("cairn").setup({ attention = false })')
  tmux({ 'select-window', '-t', 'walk:1' })
  ids.last = run('last')
  H.wait(20000, function() return decided(ids.last) ~= nil end, 'the inner Neovim deciding about the last agent')
  H.eq(decided(ids.last).told, false, 'not told: attention = false')
  H.ok(not client_saw(ids.later) and not client_saw(ids.last), 'the client showed nothing of them')
  vim.fn.jobstop(client)
  tmux({ 'select-window', '-t', 'walk:0' })
end)

H.test(':CairnWrap stacks its pane below Neovim at 80 columns', function()
  remote('require("cairn").wrap("echo wrapped >> notes.txt; sleep 60")')
  local panes
  H.wait(20000, function()
    panes = vim.split(tmux({ 'list-panes', '-t', 'walk:0', '-F', '#{pane_left} #{pane_top} #{pane_width}' }), '\n')
    return #panes == 2
  end, 'a second pane')
  local l1, t1, w1 = panes[1]:match('^(%d+) (%d+) (%d+)$')
  local l2, t2, w2 = panes[2]:match('^(%d+) (%d+) (%d+)$')
  H.eq({ l1, l2, w1, w2 }, { '0', '0', '80', '80' }, 'both panes span the 80 columns: ' .. vim.inspect(panes))
  H.ok(tonumber(t2) > tonumber(t1), 'the agent below Neovim: ' .. vim.inspect(panes))
end)

if chan then
  pcall(vim.fn.chanclose, chan)
end
tmux({ 'kill-server' })

-- Headless from here: this Neovim, projects of its own.
H.test('a file open before its project is initialized: a shell run draws its proposal with no command', function()
  root = H.project({ ['fresh.txt'] = lines(5), ['agents/fresh.pym'] = script('fresh', { { 'fresh.txt', 3, 'FRESH3' } }) })
  home = vim.env.CAIRN_HOME
  vim.cmd.edit(root .. '/fresh.txt')
  local buf = vim.api.nvim_get_current_buf()
  H.wait(5000, function() return require('cairn.live').watching() end, 'the root watched for its initialization')
  H.eq(require('cairn.rpc').chan, nil, 'no host: the project has no .agentfs/ yet')
  -- From a shell: the project initialized, an agent run to review.
  cli('init')
  run('fresh')
  H.wait(20000, function() return vim.tbl_contains(H.virt_text(buf), 'FRESH3') end, function() return 'the proposal drawn: ' .. vim.inspect(H.virt_text(buf)) end)
  require('cairn.rpc').stop()
  vim.cmd('bwipeout!')
end)

local conflicted = H.project({
  ['a.txt'] = lines(60),
  ['agents/a.pym'] = script('A edits', { { 'a.txt', 40, 'A40' }, { 'a.txt', 50, 'A50' } }),
  ['agents/b.pym'] = script('B edits', { { 'a.txt', 3, 'B3' }, { 'a.txt', 40, 'B40' } }),
})
root, home = conflicted, vim.env.CAIRN_HOME
cli('init')
local a, b = run('a'), run('b')

local function qf()
  local out = {}
  for _, it in ipairs(vim.fn.getqflist()) do
    table.insert(out, { vim.fn.fnamemodify(vim.fn.bufname(it.bufnr), ':t'), it.lnum, it.text })
  end
  return out
end

H.test(':CairnHunks fills the quickfix list with the shown agent\'s hunks; ! with every agent\'s', function()
  -- Opening the file starts the host: no command needed.
  vim.cmd.edit(root .. '/a.txt')
  local buf = vim.api.nvim_get_current_buf()
  H.wait(20000, function() return H.hunks(buf) == 4 end, 'both proposals drawn')
  H.run(10000, function(done) require('cairn.hunks').fill(false, done) end, ':CairnHunks')
  H.eq(qf(), {
    { 'a.txt', 3, 'B ' .. b .. ': + B3' },
    { 'a.txt', 40, 'B ' .. b .. ': + B40' },
  }, 'the shown (newest) agent\'s hunks')
  -- Through unsaved edits: two lines added above move every hunk down two.
  vim.api.nvim_buf_set_lines(buf, 0, 0, false, { 'mine 1', 'mine 2' })
  vim.cmd('CairnHunks!')
  H.wait(10000, function() return #vim.fn.getqflist() == 4 end, ':CairnHunks!')
  H.eq(qf(), {
    { 'a.txt', 5, 'B ' .. b .. ': + B3' },
    { 'a.txt', 42, 'A ' .. a .. ': + A40' },
    { 'a.txt', 42, 'B ' .. b .. ': + B40' },
    { 'a.txt', 52, 'A ' .. a .. ': + A50' },
  }, 'every agent\'s hunks, by line')
  vim.cmd('silent! undo')
  vim.cmd('cclose')
  H.eq(vim.bo[buf].modified, false, 'the buffer as on disk again')
end)

--- Opens :CairnResolve on B's conflicted hunk at `columns`; the window layout and where the
--- cursor is (the proposal's window and line).
local function resolve_at(columns)
  vim.o.columns = columns
  local buf = vim.fn.bufnr(root .. '/a.txt')
  vim.api.nvim_set_current_buf(buf)
  vim.api.nvim_win_set_cursor(0, { 40, 0 })
  local tabs = #vim.api.nvim_list_tabpages()
  H.run(10000, function(done) require('cairn.review').resolve(done) end, ':CairnResolve')
  H.eq(#vim.api.nvim_list_tabpages(), tabs + 1, 'a tab of its own')
  local layout = vim.fn.winlayout()
  local function shape(l)
    if l[1] == 'leaf' then
      return 'leaf'
    end
    local kids = {}
    for _, k in ipairs(l[2]) do
      table.insert(kids, shape(k))
    end
    return { l[1], kids }
  end
  local out = { layout = shape(layout), resolving = vim.b.cairn_resolve ~= nil, line = vim.api.nvim_win_get_cursor(0)[1] }
  local widths = {}
  for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    table.insert(widths, vim.api.nvim_win_get_width(w))
  end
  out.narrowest = math.min(unpack(widths))
  vim.cmd('tabclose!')
  return out
end

H.test(':CairnResolve lays the three versions out for the width and starts at the first conflict', function()
  cli('accept', a)
  local buf = vim.fn.bufnr(root .. '/a.txt')
  H.wait(20000, function()
    for _, m in ipairs(require('cairn.ghost').hunk_marks[buf] or {}) do
      if m.conflict then return true end
    end
    return false
  end, "B's hunk conflicting with A")
  local narrow = resolve_at(80)
  H.eq(narrow.layout, { 'col', { 'leaf', 'leaf', 'leaf' } }, 'stacked at 80 columns')
  H.eq(narrow.narrowest, 80, 'each version as wide as the screen')
  H.ok(narrow.resolving, 'the cursor in the proposal')
  H.eq(narrow.line, 40, 'at the first conflict (line 3 is a change before it, not a conflict)')
  H.eq(resolve_at(130).layout, { 'col', { 'leaf', { 'row', { 'leaf', 'leaf' } } } }, 'base above, landed | proposed at 130 columns')
  local wide = resolve_at(200)
  H.eq(wide.layout, { 'row', { 'leaf', 'leaf', 'leaf' } }, 'side by side at 200 columns')
  H.eq(wide.line, 40, 'at the first conflict')
  vim.o.columns = 80
end)

H.finish()
