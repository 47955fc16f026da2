-- Ghost text on a 1,000-line buffer with 50 hunks, in a real Neovim: the RPC round trip of the
-- host's payload and the time to render it (extmarks). Run by scripts/bench.sh.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')
local lines = {}
for i = 0, 999 do
  lines[#lines + 1] = 'line ' .. i .. ' of the ghost bench'
end
local root = H.project({
  ['ghost.txt'] = table.concat(lines, '\n') .. '\n',
  ['agents/g.pym'] = "t = read_file('ghost.txt').split('\\n')\nfor i in range(0, 1000, 20):\n    t[i] = t[i] + ' changed'\nwrite_file('ghost.txt', '\\n'.join(t))\n",
})
vim.cmd.edit(root .. '/ghost.txt')
local buf = vim.api.nvim_get_current_buf()
require('cairn').queue('agents/g.pym', false)
H.wait(15000, function() return H.hunks(buf) == 50 end, '50 hunks')
local rpc, ghost = require('cairn.rpc'), require('cairn.ghost')
local trips, renders = {}, {}
for _ = 1, 30 do
  local t0 = vim.uv.hrtime()
  local payload = rpc.request('ghost')
  local t1 = vim.uv.hrtime()
  ghost.set(payload)
  local t2 = vim.uv.hrtime()
  trips[#trips + 1] = (t1 - t0) / 1e6
  renders[#renders + 1] = (t2 - t1) / 1e6
end
table.sort(trips)
table.sort(renders)
print(string.format('ghost 1000 lines / 50 hunks: round trip (host computes + RPC) median %.2f ms, render median %.2f ms (%s)',
  trips[15], renders[15], tostring(vim.version())))

-- :CairnQueue of a trivial agent to its ghost text drawn (the host wakes on the new events).
vim.fn.writefile({ 'x = 1' }, root .. '/small.txt')
vim.cmd.edit(root .. '/small.txt')
local small = vim.api.nvim_get_current_buf()
local waits = {}
for i = 1, 9 do
  vim.fn.writefile({ "write_file('small.txt', 'x = " .. (i + 1) .. "\\n')" }, root .. '/agents/s' .. i .. '.pym')
  local t0 = vim.uv.hrtime()
  require('cairn').queue('agents/s' .. i .. '.pym', false)
  H.wait(10000, function()
    return vim.tbl_contains(H.virt_text(small), 'x = ' .. (i + 1))
  end, 'ghost text of agent ' .. i)
  waits[#waits + 1] = (vim.uv.hrtime() - t0) / 1e6
  vim.cmd('CairnReject')
  H.wait(5000, function() return H.hunks(small) == 0 end, 'reject ' .. i)
end
table.sort(waits)
print(string.format('ghost :CairnQueue -> ghost text drawn (trivial agent): median %.2f ms, min %.2f, max %.2f (%s)',
  waits[5], waits[1], waits[9], tostring(vim.version())))
require('cairn.rpc').stop()
os.exit(0)
