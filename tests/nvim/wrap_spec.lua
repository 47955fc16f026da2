-- :CairnWrap runs a command under `cairn wrap` (outside tmux: in a terminal buffer), selects
-- its proposal, and the proposal shows as ghost text in an open buffer; the file on disk is
-- untouched.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')

local root = H.project({ ['notes.txt'] = 'first\n' })

H.test(':CairnWrap runs the command confined and selects its proposal', function()
  vim.env.TMUX = nil
  vim.cmd.edit(root .. '/notes.txt')
  local buf = vim.api.nvim_get_current_buf()
  H.run(10000, function(done) require('cairn').refresh(); require('cairn.rpc').call('ping', nil, done) end, 'the host')
  local id = H.run(20000, function(done) require('cairn').wrap('echo wrapped >> notes.txt; sleep 1', done) end, ':CairnWrap')
  local st = H.run(5000, function(done) require('cairn').status(id, done) end, ':CairnStatus')
  H.eq(st.provider, 'wrap', 'a wrap session')
  vim.api.nvim_set_current_buf(buf)
  H.wait(15000, function()
    require('cairn').refresh()
    return H.hunks(buf) == 1
  end, 'ghost text of the wrap proposal')
  H.ok(vim.tbl_contains(H.virt_text(buf), 'wrapped'), vim.inspect(H.virt_text(buf)))
  H.eq(H.read(root .. '/notes.txt'), 'first\n', 'nothing landed')
end)

H.finish()
