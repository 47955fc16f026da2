-- Many agents at once, the way a user runs them: a real Neovim in a real tmux window 80
-- columns wide (:CairnWrap's pane below it), two real Claude Code sessions
-- under `cairn wrap` (one from :CairnWrap, one from a shell in another tmux window) and one
-- MCP agent (the official Python SDK), the Claudes' model a scripted API on 127.0.0.1. Two of
-- them change the same `raise` line:
-- - all three proposals are drawn while the agents work, the overlap marked before anything
--   lands; the statusline component and `cairn status --format tmux` show each one's state;
-- - a hunk command acts on the hunk under the cursor whichever agent's it is; accepting one
--   rebases the others: the overlapping one conflicts with that agent (not "your edit");
--   :CairnAcceptHunk on it opens the three-way view, where it is edited and accepted;
-- - Neovim never stops at a hit-enter prompt.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')
local T = dofile(H.repo .. '/tests/nvim/tui.lua')

-- Messages on lines of their own, so that each `ok - ` line starts a line of the log.
vim.notify = function(msg) io.stderr:write(tostring(msg) .. '\n') end

local RAISE = '        raise ValueError("bad")'
local RAISE_A = '        raise ValueError("x must not be negative")'
local RAISE_C = '        raise ValueError(f"bad: {x}")'
local RAISE_BOTH = '        raise ValueError(f"x must not be negative, got {x}")'
local function pkg(raise, ret)
  local lines = { 'def check(x):', '    if x < 0:', raise, '    return x', '', '' }
  for i = 1, 10 do
    table.insert(lines, string.format('VALUE_%d = %d', i, i))
  end
  vim.list_extend(lines, { '', '', 'def other():', ret })
  return table.concat(lines, '\n') .. '\n'
end
local BASE = pkg(RAISE, '    return 1')

local root = H.project({ ['src/pkg.py'] = BASE })
local path = root .. '/src/pkg.py'
local tui = T.new(H, root)
local python = H.repo .. '/.venv/mcp/bin/python'

local port = tui:stub({
  by_prompt = {
    CHECKFIX = {
      { tool = 'Read', input = { file_path = path } },
      { tool = 'Edit', input = { file_path = path, old_string = RAISE, new_string = RAISE_A } },
      { wait = 'a1', text = 'Check done.' },
    },
    OTHERFIX = {
      { tool = 'Read', input = { file_path = path } },
      { tool = 'Edit', input = { file_path = path, old_string = '    return 1', new_string = '    return 2' } },
      { wait = 'b1', text = 'Other done.' },
    },
  },
})
tui:setup(string.format('[wrap]\nhost_ports = [%s]\nturn_quiet_ms = 1500\n', port))

--- The inner Neovim's view of src/pkg.py: its hunks (agent, first added line, conflict),
--- ghost lines, the focused agent, the statusline component.
local function view()
  return tui:remote([[
    local g = require('cairn.ghost')
    local buf = vim.fn.bufnr(...)
    local p = g.payload
    local out = { hunks = {}, virt = {}, statusline = require('cairn').statusline(), lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false), focused = p and p.agent and p.agent.id }
    for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, g.ns, 0, -1, { details = true })) do
      for _, vl in ipairs(m[4].virt_lines or {}) do
        local text = ''
        for _, chunk in ipairs(vl) do text = text .. chunk[1] end
        table.insert(out.virt, text)
      end
    end
    for _, h in ipairs(g.hunk_marks[buf] or {}) do
      table.insert(out.hunks, { agent = h.agent, added = (h.hunk.added or {})[1], old_start = h.hunk.old_start, conflict = h.conflict })
    end
    return out
  ]], path)
end

local function hunk_of(v, added)
  for _, h in ipairs(v.hunks) do
    if h.added == added then
      return h
    end
  end
end

local function has_virt(v, pattern)
  for _, l in ipairs(v.virt) do
    if l:find(pattern, 1, true) then
      return true
    end
  end
  return false
end

local function state(id)
  return tui:cli_json('status', id, '--json').state
end

H.test('three agents at once: all drawn while they work, the overlap marked, accept rebases, three-way resolve, no hit-enter', function()
  H.ok(vim.fn.executable(tui.claude) == 1, 'Claude Code is missing: run `bash scripts/test.sh` (it installs .venv/agents)')
  H.ok(vim.fn.executable(python) == 1, 'the MCP Python SDK venv (scripts/test.sh installs it): ' .. python)
  tui:start(80, 40, 'src/pkg.py')
  H.wait(10000, function() return tui:remote('return vim.api.nvim_buf_get_name(0)') == path end, 'the inner Neovim on the file')
  tui:remote([[vim.o.laststatus = 2; vim.o.statusline = "%{v:lua.require'cairn'.statusline()}"]])

  -- Claude A from :CairnWrap (at 80 columns the window splits top and bottom: Neovim keeps
  -- its 80 columns, Claude below it).
  local known = { tui.nvim_pane }
  tui:type_into(tui.nvim_pane, ':CairnWrap ' .. tui.claude .. ' --allowedTools Read Edit')
  local pane_a = tui:new_pane(known, 'the :CairnWrap pane')
  table.insert(known, pane_a)
  local function geometry(pane)
    local w, top = tui:tmux({ 'display-message', '-p', '-t', pane, '#{pane_width} #{pane_top}' }):match('^(%d+) (%d+)$')
    return { tonumber(w), tonumber(top) }
  end
  local nv, cl = geometry(tui.nvim_pane), geometry(pane_a)
  H.eq({ nv[1], cl[1] }, { 80, 80 }, 'Neovim keeps its 80 columns')
  H.ok(cl[2] > nv[2], 'Claude below Neovim: ' .. vim.inspect({ nv, cl }))
  T.wait_slow(60000, function() return tui:pane(pane_a):find('? for shortcuts', 1, true) ~= nil end, function() return 'Claude A at its prompt:\n' .. tui:pane(pane_a) end)
  tui:prompt(pane_a, 'CHECKFIX: make the error of check() clearer')
  -- Claude B from a shell in another window.
  local bin = require('cairn.rpc').binary()
  tui:tmux({ 'new-window', '-t', 'cairn', '-c', root, bin, '--project-root', root, 'wrap', '--', tui.claude, '--allowedTools', 'Read', 'Edit' })
  local pane_b = tui:new_pane(known, 'the shell window of Claude B')
  T.wait_slow(60000, function() return tui:pane(pane_b):find('? for shortcuts', 1, true) ~= nil end, function() return 'Claude B at its prompt:\n' .. tui:pane(pane_b) end)
  tui:prompt(pane_b, 'OTHERFIX: make other() return 2')
  -- The MCP agent: it edits, then works on until its gate opens.
  local mcp_out = {}
  local mcp = vim.system({ python, H.repo .. '/tests/mcp/edit_wait.py', bin, root, 'src/pkg.py', RAISE, RAISE_C, tui.gates .. '/m1' }, {
    env = { CAIRN_HOME = tui.home },
    stdout = function(_, data) if data then table.insert(mcp_out, data) end end,
  })

  -- All three drawn while they work, each with its agent; the overlap marked on both sides.
  local v
  T.wait_slow(90000, function()
    v = view()
    return hunk_of(v, RAISE_A) and hunk_of(v, RAISE_C) and hunk_of(v, '    return 2')
  end, function() return 'three proposals drawn: ' .. vim.inspect(view()) .. '\nA:\n' .. tui:pane(pane_a) .. '\nB:\n' .. tui:pane(pane_b) end)
  local a, c, b = hunk_of(v, RAISE_A).agent, hunk_of(v, RAISE_C).agent, hunk_of(v, '    return 2').agent
  H.ok(a ~= b and b ~= c and a ~= c, 'three agents: ' .. vim.inspect({ a, b, c }))
  for _, id in ipairs({ a, b, c }) do
    H.eq(state(id), 'executing', 'still at work: ' .. id)
  end
  T.wait_slow(10000, function()
    v = view()
    return has_virt(v, 'overlaps agent ' .. c) and has_virt(v, 'overlaps agent ' .. a)
  end, function() return 'the overlap marked: ' .. vim.inspect(view().virt) end)
  H.ok(not has_virt(v, 'overlaps agent ' .. b), 'B overlaps nothing: ' .. vim.inspect(v.virt))
  -- Each agent's state in the statusline component and in tmux's status line.
  for _, id in ipairs({ a, b, c }) do
    H.ok(v.statusline:find(id:sub(1, 4) .. ' works', 1, true), 'statusline: ' .. v.statusline)
  end
  local line = tui:cli('status', '--format', 'tmux')
  for _, id in ipairs({ a, b, c }) do
    H.ok(line:find(id:sub(1, 4) .. ' works', 1, true), 'status --format tmux: ' .. line)
  end
  H.ok(line:find('⚠', 1, true), 'the overlap in tmux\'s line: ' .. line)
  T.wait_slow(5000, function() return tui:pane(tui.nvim_pane):find('cairn A', 1, true) ~= nil end, function() return 'the statusline drawn:\n' .. tui:pane(tui.nvim_pane) end)
  H.eq(H.read(path), BASE, 'nothing landed')

  -- All three to review.
  for _, g in ipairs({ 'a1', 'b1', 'm1' }) do
    vim.fn.writefile({}, tui.gates .. '/' .. g)
  end
  T.wait_slow(60000, function() return state(a) == 'reviewing' and state(b) == 'reviewing' and state(c) == 'reviewing' end,
    function() return 'all reviewing: ' .. vim.inspect({ state(a), state(b), state(c) }) .. ' mcp: ' .. table.concat(mcp_out) end)
  H.ok(mcp:wait(30000).code == 0, 'the MCP agent finished: ' .. table.concat(mcp_out))
  line = tui:cli('status', '--format', 'tmux')
  H.ok(line:find(a:sub(1, 4) .. ' waits', 1, true) and line:find(c:sub(1, 4) .. ' waits', 1, true), line)

  -- A hunk command acts on the hunk under the cursor, whichever agent's: B's, A focused.
  H.eq(view().focused, a, 'A focused (:CairnWrap selected it)')
  tui:type_into(tui.nvim_pane, ':' .. (hunk_of(view(), '    return 2').old_start + 1))
  tui:type_into(tui.nvim_pane, ':CairnAcceptHunk')
  T.wait_slow(20000, function() return H.read(path) == pkg(RAISE, '    return 2') end, function() return "B's hunk landed: " .. tostring(H.read(path)) end)
  T.wait_slow(10000, function() return state(b) == 'accepted' end, 'B accepted (its only hunk)')
  H.eq(state(a), 'reviewing', 'A untouched')

  -- Accepting A rebases the others: C conflicts with A.
  tui:type_into(tui.nvim_pane, ':CairnAccept ' .. a)
  T.wait_slow(20000, function() return H.read(path) == pkg(RAISE_A, '    return 2') end, function() return 'A landed: ' .. tostring(H.read(path)) end)
  T.wait_slow(20000, function()
    v = view()
    local hc = hunk_of(v, RAISE_C)
    return v.lines[3] == RAISE_A and hc and hc.conflict and has_virt(v, 'conflicts with agent ' .. a)
  end, function() return "C's hunk conflicts with A, the buffer reloaded: " .. vim.inspect(view()) end)
  H.ok(not has_virt(v, 'your edit'), 'not "your edit": ' .. vim.inspect(v.virt))
  H.ok(tui:cli('hunks', c):find('CONFLICT with ' .. a, 1, true), tui:cli('hunks', c))

  -- :CairnAcceptHunk on C's conflicted hunk opens the three-way view; edited, then accepted.
  tui:type_into(tui.nvim_pane, ':' .. (hunk_of(v, RAISE_C).old_start + 1))
  tui:type_into(tui.nvim_pane, ':CairnAcceptHunk')
  T.wait_slow(10000, function()
    return tui:remote('return vim.b.cairn_resolve ~= nil and #vim.api.nvim_tabpage_list_wins(0) == 3')
  end, 'the three-way view')
  local three = tui:remote([[
    local out = {}
    for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
      table.insert(out, vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 2, 3, false)[1])
    end
    return out
  ]])
  H.eq(three, { RAISE, RAISE_A, RAISE_C }, 'base | landed | proposed')
  tui:remote('vim.api.nvim_buf_set_lines(0, 2, 3, false, { ... })', RAISE_BOTH)
  tui:type_into(tui.nvim_pane, ':CairnAccept')
  T.wait_slow(20000, function() return H.read(path) == pkg(RAISE_BOTH, '    return 2') end, function() return 'the resolution landed: ' .. tostring(H.read(path)) end)
  T.wait_slow(10000, function() return state(c) == 'accepted' end, 'C accepted')
  tui:type_into(tui.nvim_pane, ':tabclose')
  T.wait_slow(10000, function() return #view().hunks == 0 end, 'nothing left drawn')
  H.eq(view().lines[3], RAISE_BOTH, 'the buffer followed every landing')
  H.eq(tui.hit_enter, 0, 'times the inner Neovim stopped at "Press ENTER"')
end)

H.test('clean up: the tmux server gone, no process of this run left', function()
  H.ok(tui:stop(), 'no process left: ' .. vim.inspect(tui:processes()))
end)

H.finish()
