-- A real tmux server with Neovim inside: the screen shows the ghost text (expected-screen
-- captures for modify, delete, add and the buffer end), and :CairnPreview opens a second pane
-- running the preview session (the agent's version in a confined copy-on-write view) at the
-- same file and line, reused by the next preview.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')

local socket = 'cairn-test-' .. vim.fn.getpid()
local function tmux(args)
  local out = vim.fn.system(vim.list_extend({ 'tmux', '-L', socket }, args))
  return (out:gsub('%s+$', '')), vim.v.shell_error
end

local root = H.project({
  ['notes.txt'] = 'one\ntwo\nthree\nfour\nfive\n',
  ['agents/edit.pym'] = [[
text = read_file("notes.txt")
text = text.replace("two", "TWO").replace("four\n", "") + "six\n"
write_file("notes.txt", text)
submit_result("edit notes", ["notes.txt"])
]],
  ['agents/top.pym'] = 'write_file("notes.txt", "zero\\n" + read_file("notes.txt"))\nsubmit_result("add at top", ["notes.txt"])\n',
})
local home = vim.env.CAIRN_HOME

local function screen(target)
  local out = tmux({ 'capture-pane', '-p', '-t', target or 'cairn:0.0' })
  -- Agent ids (and marks) differ per run.
  return (out:gsub('cairn %u+ %x%x%x%x%x%x:', 'cairn M ID:'))
end

local function send(keys)
  tmux({ 'send-keys', '-t', 'cairn:0.0', keys, 'Enter' })
end

local function start()
  local cmd = string.format('env CAIRN_HOME=%s CAIRN_REPO=%s %s -u %s -i NONE -n notes.txt',
    vim.fn.shellescape(home), vim.fn.shellescape(H.repo), vim.fn.shellescape(vim.v.progpath),
    vim.fn.shellescape(H.repo .. '/tests/nvim/tmux_init.lua'))
  local _, code = tmux({ 'new-session', '-d', '-s', 'cairn', '-x', '80', '-y', '20', '-c', root, cmd })
  H.eq(code, 0, 'tmux new-session')
  H.wait(10000, function() return screen():find('one') ~= nil end, 'nvim inside tmux')
end

local function top_rows(n)
  local rows = vim.split(screen(), '\n')
  local out = {}
  for i = 1, n do
    out[i] = (rows[i] or ''):gsub('%s+$', '')
  end
  return out
end

H.test('ghost text on screen: modify, delete, add at the buffer end', function()
  start()
  send(':CairnQueue agents/edit.pym')
  H.wait(15000, function() return screen():find('cairn M ID: edit notes') ~= nil end, 'ghost header on screen')
  H.eq(top_rows(9), {
    '  one',
    '  cairn M ID: edit notes  (3 hunks)',
    '~ two',
    '  TWO',
    '  three',
    '- four',
    '+ five',
    '  six',
    '~',
  }, 'screen')
end)

H.test('ghost text on screen: insertion before the first line', function()
  send(':CairnReject')
  H.wait(5000, function() return not screen():find('cairn M ID:') end, 'ghost cleared after reject')
  send(':CairnQueue agents/top.pym')
  H.wait(15000, function() return screen():find('ID: add at top') ~= nil end, 'second ghost')
  H.eq(top_rows(4), {
    '  cairn M ID: add at top  (1 hunk)',
    '  zero',
    '+ one',
    '  two',
  }, 'screen')
end)

H.test(':CairnPreview opens a pane running the preview session at the same file, at the line the diff maps to; the next reuses it', function()
  send(':3')
  send(':CairnPreview')
  -- tmux learns a new pane's working directory a moment after creating it: wait for both.
  local id, path
  H.wait(10000, function()
    local panes = vim.split(tmux({ 'list-panes', '-t', 'cairn:0', '-F', '#{pane_id} #{pane_current_path}' }), '\n')
    if #panes ~= 2 then return false end
    id, path = panes[2]:match('^(%S+) (.+)$')
    return path ~= nil
  end, 'a second pane with its working directory')
  H.ok(path:find(root, 1, true), 'the session runs at the project root (its view): ' .. path)
  H.wait(10000, function() return screen(id):find('zero') ~= nil end, 'preview nvim shows the agent\'s version')
  -- At the line the diff maps line 3 to: the agent added a line above it.
  H.wait(5000, function() return screen(id):find('4,1') ~= nil end, 'preview at line 4: ' .. screen(id))
  local pid_before = tmux({ 'display-message', '-p', '-t', id, '#{pane_pid}' })
  send(':CairnPreview')
  -- Reuse restarts the editor in the same pane: its process changes, the pane does not.
  H.wait(10000, function() return tmux({ 'display-message', '-p', '-t', id, '#{pane_pid}' }) ~= pid_before end, 'the pane respawned')
  local after = vim.split(tmux({ 'list-panes', '-t', 'cairn:0', '-F', '#{pane_id}' }), '\n')
  H.eq(#after, 2, 'still two panes')
  H.eq(after[2], id, 'same pane reused')
end)

tmux({ 'kill-server' })
H.finish()
