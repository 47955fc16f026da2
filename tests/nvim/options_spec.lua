-- Options of the original design: `cairn_home` in setup() is the host's home (its logs, its
-- config.toml), whatever $CAIRN_HOME says; :CairnStart starts agents held by
-- `auto_spawn = false`; a project's .cairn.toml key ignored until trusted is said once.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')

local root = H.project({ ['a.txt'] = 'a\n', ['agents/b.pym'] = 'write_file("b.txt", "b\\n")\n', ['.cairn.toml'] = '[wrap]\nnetwork = "host"\n' })
local home = vim.fn.fnamemodify(vim.env.CAIRN_HOME, ':h') .. '/chosen-home'
vim.fn.mkdir(home, 'p')
local f = assert(io.open(home .. '/config.toml', 'w'))
f:write('[orchestrator]\nauto_spawn = false\npoll_interval_ms = 20\n')
f:close()
require('cairn').setup({ cairn_home = home })

H.test('a project file\'s key ignored until trusted is said when the host starts', function()
  local messages = H.notified(function(messages)
    H.run(20000, function(d) require('cairn.rpc').call('ping', nil, d) end, 'ping')
    H.wait(10000, function()
      return vim.iter(messages):any(function(m) return m:find('cairn config trust', 1, true) ~= nil end)
    end, 'the warning')
  end)
  H.ok(vim.iter(messages):any(function(m) return m:find('wrap.network', 1, true) ~= nil end), table.concat(messages, '\n'))
end)

H.test('cairn_home is the host\'s home', function()
  local r = H.run(20000, function(d) require('cairn.rpc').call('ping', nil, d) end, 'ping')
  H.eq(vim.fs.normalize(r.home), vim.fs.normalize(home), 'the home the host uses')
  H.wait(10000, function() return vim.fn.filereadable(home .. '/logs/cairn.log') == 1 end, 'its log in that home')
  H.ok(vim.fn.isdirectory(vim.env.CAIRN_HOME .. '/logs') == 0, '$CAIRN_HOME left alone')
end)

H.test(':CairnStart starts an agent its config.toml holds (auto_spawn = false)', function()
  local q = H.run(10000, function(d) require('cairn').queue('agents/b.pym', false, d) end, ':CairnQueue')
  local id = q.id
  local bin = require('cairn.rpc').binary()
  local function state()
    -- (stdout alone: the CLI warns on stderr about the project file's untrusted key.)
    return vim.json.decode(vim.system({ bin, '--project-root', root, '--cairn-home', home, 'status', id, '--json' }, { text = true }):wait().stdout).state
  end
  H.eq(state(), 'queued', 'held')
  vim.cmd('CairnStart ' .. id)
  H.wait(30000, function() return state() == 'reviewing' end, 'the started agent reaching review')
end)

H.finish()
