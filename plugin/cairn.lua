-- cairn.nvim: commands, <Plug> mappings and highlight links. Everything else loads on first use.
if vim.g.loaded_cairn then
  return
end
vim.g.loaded_cairn = true

local function cairn()
  return require('cairn')
end

local function ids(arglead)
  return cairn().complete_ids(arglead)
end

local cmd = vim.api.nvim_create_user_command
cmd('CairnQueue', function(o) cairn().queue(o.args, o.bang) end, { nargs = '+', bang = true, complete = 'file', desc = 'Queue an agent (! = high priority)' })
cmd('CairnStart', function(o) cairn().start(o.args) end, { nargs = '?', complete = ids, desc = 'Start agents held by auto_spawn = false (all, or this one)' })
cmd('CairnAccept', function(o) cairn().accept(o.args) end, { nargs = '?', complete = ids, desc = 'Accept an agent' })
cmd('CairnReject', function(o) cairn().reject(o.args) end, { nargs = '*', complete = ids, desc = 'Reject an agent: [id] [reason for the agent], or -- reason for the shown agent' })
cmd('CairnRevise', function(o) cairn().revise(o.args) end, { nargs = '?', complete = ids, desc = 'Send your reasons, notes and hunk decisions to the agent: its next revision' })
cmd('CairnComment', function(o) cairn().comment(o.line1, o.line2, o.args) end, { nargs = '+', range = true, desc = 'Note on these lines for the agent (sent by :CairnRevise)' })
cmd('CairnPreview', function(o)
  -- `[id] [port ...]`: numbers are ports of the view forwarded to the host's loopback.
  local id, ports = nil, nil
  for _, a in ipairs(o.fargs) do
    local n = tonumber(a)
    if n and n >= 1 and n <= 65535 and n == math.floor(n) then
      ports = ports or {}
      table.insert(ports, n)
    elseif not id then
      id = a
    end
  end
  cairn().preview(id, nil, { amend = o.bang, ports = ports })
end, { nargs = '*', bang = true, complete = ids, desc = "Open the agent's version in a confined view: [id] [port ...] (! = what you write joins the proposal)" })
cmd('CairnListTasks', function() cairn().list() end, { desc = 'List agents and select one' })
cmd('CairnSelect', function(o) cairn().select(o.args) end, { nargs = 1, complete = ids, desc = 'Show this agent as ghost text' })
cmd('CairnStatus', function(o) cairn().status(o.args) end, { nargs = '?', complete = ids, desc = 'Show an agent' })
cmd('CairnDiff', function(o) cairn().diff(o.args) end, { nargs = '?', complete = ids, desc = "Show an agent's diff" })
cmd('CairnUndo', function(o) cairn().undo(o.args) end, { nargs = '?', complete = ids, desc = 'Undo an accept (default: the latest)' })
cmd('CairnAcceptHunk', function(o) cairn().accept_hunk(nil, o.bang) end, { bang = true, desc = 'Accept the hunk under the cursor (a conflicted one opens :CairnResolve; ! lands it anyway)' })
cmd('CairnResolve', function() require('cairn.review').resolve() end, { desc = 'Three-way view (base, landed, proposed) of the conflicted hunk under the cursor' })
cmd('CairnRejectHunk', function(o) cairn().reject_hunk(nil, o.args) end, { nargs = '*', desc = 'Reject the hunk under the cursor: [reason for the agent]' })
cmd('CairnHunks', function(o) cairn().hunks(o.bang) end, { bang = true, desc = "The shown agent's pending hunks in the quickfix list (! = every agent's)" })
cmd('CairnNextHunk', function() cairn().next_hunk() end, { desc = 'Go to the next cairn hunk' })
cmd('CairnPrevHunk', function() cairn().prev_hunk() end, { desc = 'Go to the previous cairn hunk' })
cmd('CairnTasks', function() cairn().tasks() end, { desc = 'List tasks; <CR> shows the task agent\'s ghost text' })
cmd('CairnLog', function(o) cairn().log(o.args) end, { nargs = '?', complete = ids, desc = "Show an agent's timeline" })
cmd('CairnWrap', function(o) cairn().wrap(o.args) end, { nargs = '+', complete = 'shellcmd', desc = 'Run an agent CLI under cairn wrap; its writes become a proposal' })
cmd('CairnRefresh', function() cairn().refresh() end, { desc = 'Recompute the ghost text against the files as they are now' })

local map = vim.keymap.set
map('n', '<Plug>(cairn-accept)', function() cairn().accept('') end, { desc = 'cairn: accept' })
map('n', '<Plug>(cairn-reject)', function() cairn().reject('') end, { desc = 'cairn: reject' })
map('n', '<Plug>(cairn-preview)', function() cairn().preview('') end, { desc = 'cairn: preview' })
map('n', '<Plug>(cairn-accept-hunk)', function() cairn().accept_hunk() end, { desc = 'cairn: accept hunk' })
map('n', '<Plug>(cairn-reject-hunk)', function() cairn().reject_hunk() end, { desc = 'cairn: reject hunk' })
map('n', '<Plug>(cairn-next-hunk)', function() cairn().next_hunk() end, { desc = 'cairn: next hunk' })
map('n', '<Plug>(cairn-prev-hunk)', function() cairn().prev_hunk() end, { desc = 'cairn: previous hunk' })

local function highlights()
  local hl = vim.api.nvim_set_hl
  hl(0, 'CairnAdd', { link = 'DiffAdd', default = true })
  hl(0, 'CairnDelete', { link = 'DiffDelete', default = true })
  hl(0, 'CairnHeader', { link = 'Comment', default = true })
  hl(0, 'CairnConflict', { link = 'DiffText', default = true })
  -- Changed words inside a line (0.12 names the added side's text DiffTextAdd).
  hl(0, 'CairnAddWord', { link = vim.fn.hlexists('DiffTextAdd') == 1 and 'DiffTextAdd' or 'DiffText', default = true })
  hl(0, 'CairnDeleteWord', { link = 'DiffText', default = true })
  hl(0, 'CairnLabel', { link = 'CairnHeader', default = true })
end
highlights()
vim.api.nvim_create_autocmd('ColorScheme', { group = vim.api.nvim_create_augroup('cairn_highlights', {}), callback = highlights, desc = 'cairn: default highlight links' })

-- The host starts when a file of a Cairn project opens; status lines follow the status.
require('cairn.live').install()
require('cairn.attention').install()

-- Default mappings unless setup({ keymaps = false }) ran first or vim.g.cairn_keymaps is false.
if vim.g.cairn_keymaps ~= false then
  require('cairn.config').apply_keymaps()
end
