-- The host rows of the bench, in a real Neovim: the ghost-text round trip of the host's
-- payload and its render (extmarks) for a 1,000-line buffer with 50 hunks; `:CairnQueue` of a
-- trivial agent to its ghost text drawn; the host's peak memory. Run by the bench
-- (benches/spec_table/nvim.rs) on its project when CAIRN_BENCH_NVIM is set, and by hand on a
-- small project of its own. Prints `ROW <key> <value>,<value>,...` lines (milliseconds, or MB).
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')
local runs = math.max(7, tonumber(os.getenv('CAIRN_BENCH_RUNS') or '') or 7)
local lines = {}
for i = 0, 999 do
  lines[#lines + 1] = 'line ' .. i .. ' of the ghost bench'
end
local files = {
  ['ghost-nvim.txt'] = table.concat(lines, '\n') .. '\n',
  ['agents/g.pym'] = "t = read_file('ghost-nvim.txt').split('\\n')\nfor i in range(0, 1000, 20):\n    t[i] = t[i] + ' changed'\nwrite_file('ghost-nvim.txt', '\\n'.join(t))\n",
}
local root = os.getenv('CAIRN_BENCH_PROJECT')
if root then
  for path, content in pairs(files) do
    vim.fn.mkdir(vim.fs.dirname(root .. '/' .. path), 'p')
    vim.fn.writefile(vim.split(content, '\n', { plain = true }), root .. '/' .. path, 'b')
  end
  vim.fn.chdir(root)
else
  root = H.project(files)
end

local function row(key, values)
  local out = {}
  for _, v in ipairs(values) do
    out[#out + 1] = string.format('%.3f', v)
  end
  print('ROW ' .. key .. ' ' .. table.concat(out, ','))
end

vim.cmd.edit(root .. '/ghost-nvim.txt')
local buf = vim.api.nvim_get_current_buf()
require('cairn').queue('agents/g.pym', false)
H.wait(120000, function() return H.hunks(buf) == 50 end, '50 hunks')
local rpc, ghost = require('cairn.rpc'), require('cairn.ghost')
local trips, renders = {}, {}
for _ = 1, runs * 3 do
  local t0 = vim.uv.hrtime()
  local payload = rpc.request('ghost')
  local t1 = vim.uv.hrtime()
  ghost.set(payload)
  local t2 = vim.uv.hrtime()
  trips[#trips + 1] = (t1 - t0) / 1e6
  renders[#renders + 1] = (t2 - t1) / 1e6
end
vim.cmd('CairnReject')
H.wait(10000, function() return H.hunks(buf) == 0 end, 'reject the ghost agent')
row('ghost_trip', trips)
row('ghost_render', renders)

-- :CairnQueue of a trivial agent to its ghost text drawn (the host wakes on the new events).
vim.fn.writefile({ 'x = 1' }, root .. '/small-nvim.txt')
vim.cmd.edit(root .. '/small-nvim.txt')
local small = vim.api.nvim_get_current_buf()
local waits = {}
for i = 1, runs + 1 do
  vim.fn.writefile({ "write_file('small-nvim.txt', 'x = " .. (i + 1) .. "\\n')" }, root .. '/agents/s' .. i .. '.pym')
  local t0 = vim.uv.hrtime()
  require('cairn').queue('agents/s' .. i .. '.pym', false)
  H.wait(30000, function()
    return vim.tbl_contains(H.virt_text(small), 'x = ' .. (i + 1))
  end, 'ghost text of agent ' .. i)
  -- The first one also waited for the host's zygote to build its interpreter.
  if i > 1 then
    waits[#waits + 1] = (vim.uv.hrtime() - t0) / 1e6
  end
  -- Drawn while it still runs, maybe: it is rejected once reviewing.
  H.wait(30000, function()
    local p = require('cairn.ghost').payload
    return p and p.agent and p.agent.state == 'reviewing'
  end, 'agent ' .. i .. ' reviewing')
  vim.cmd('CairnReject')
  H.wait(10000, function() return H.hunks(small) == 0 end, 'reject ' .. i)
end
row('run_host', waits)

-- A wrapped agent's write to its ghost text drawn while it still runs (`executing`): the agent
-- writes when the bench changes a gate file (visible to it through its copy-on-write view).
vim.fn.writefile({ '0' }, root .. '/live-gate.txt')
vim.fn.writefile({ 'x = 0' }, root .. '/live-nvim.txt')
vim.cmd.edit(root .. '/live-nvim.txt')
local live = vim.api.nvim_get_current_buf()
local agent = [[last=0; while :; do k=$(cat live-gate.txt); [ "$k" = stop ] && exit 0; if [ "$k" != "$last" ]; then printf 'x = %s\n' "$k" > live-nvim.txt; last=$k; fi; sleep 0.01; done]]
local argv = vim.list_extend(vim.deepcopy(rpc.request('wrap_argv').argv), { '--task', 'live bench', '--', 'sh', '-c', agent })
local job = vim.fn.jobstart(argv, { cwd = root })
local lives = {}
for i = 1, runs + 1 do
  local t0 = vim.uv.hrtime()
  vim.fn.writefile({ tostring(i) }, root .. '/live-gate.txt')
  H.wait(30000, function()
    return vim.tbl_contains(H.virt_text(live), 'x = ' .. i)
  end, 'live ghost text ' .. i)
  if i > 1 then
    lives[#lives + 1] = (vim.uv.hrtime() - t0) / 1e6
  end
end
vim.fn.writefile({ 'stop' }, root .. '/live-gate.txt')
vim.fn.jobwait({ job }, 30000)
vim.cmd('CairnReject')
row('live_ghost', lives)
local status = H.read('/proc/' .. vim.fn.jobpid(rpc.chan) .. '/status') or ''
local hwm = tonumber(status:match('VmHWM:%s*(%d+)') or '')
if hwm then
  row('rss_host', { hwm / 1024 })
end
print('ROW version ' .. tostring(vim.version()))
require('cairn.rpc').stop()
os.exit(0)
