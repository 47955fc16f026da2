--- A small test harness for specs run with `nvim --headless -l spec.lua`: fresh projects in
--- temp dirs, assertions, waiting on conditions with a deadline, and a closing
--- `N passed, N failed` line (the exit code is the failure count).
local H = {}

H.repo = vim.env.CAIRN_REPO or vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h')
H.passed, H.failed = 0, 0

vim.opt.rtp:prepend(H.repo)
vim.cmd.runtime('plugin/cairn.lua')
vim.o.swapfile = false
vim.o.shortmess = vim.o.shortmess .. 'AF'

--- Creates a project with `files` ({path = content}) and makes it the cwd; CAIRN_HOME beside it.
function H.project(files)
  local dir = vim.fn.tempname()
  local root = dir .. '/proj'
  vim.fn.mkdir(root, 'p')
  for path, content in pairs(files) do
    local full = root .. '/' .. path
    vim.fn.mkdir(vim.fs.dirname(full), 'p')
    local f = assert(io.open(full, 'w'))
    f:write(content)
    f:close()
  end
  vim.env.CAIRN_HOME = dir .. '/home'
  vim.fn.chdir(root)
  return vim.fn.resolve(root)
end

function H.read(path)
  local f = io.open(path, 'r')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return s
end

function H.eq(got, want, what)
  if not vim.deep_equal(got, want) then
    error(string.format('%s: expected %s, got %s', what or 'value', vim.inspect(want), vim.inspect(got)), 2)
  end
end

function H.ok(cond, what)
  if not cond then
    error(what or 'assertion failed', 2)
  end
end

--- Waits until `cond()` is true, polling, for at most `ms`. `what` names it (a function:
--- called on a timeout, to say what was seen then).
function H.wait(ms, cond, what)
  if not vim.wait(ms, cond, 10) then
    error('timed out waiting for ' .. (type(what) == 'function' and what() or what), 2)
  end
end

--- Runs an asynchronous plugin action `f(done)` and waits for its callback; returns what
--- the action passed to it.
function H.run(ms, f, what)
  local done, result = false, nil
  f(function(r)
    done, result = true, r
  end)
  H.wait(ms, function() return done end, what)
  return result
end

--- Ghost text marks in `buf`: {row, details}, in screen order (on one row, the virtual lines
--- above it first).
function H.marks(buf)
  local out = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, require('cairn.ghost').ns, 0, -1, { details = true })) do
    table.insert(out, { row = m[2], d = m[4], at = #out })
  end
  table.sort(out, function(a, b)
    if a.row ~= b.row then
      return a.row < b.row
    end
    local aa, ba = a.d.virt_lines_above and 0 or 1, b.d.virt_lines_above and 0 or 1
    if aa ~= ba then
      return aa < ba
    end
    return a.at < b.at
  end)
  return out
end

--- The virtual lines shown in `buf`, as text.
function H.virt_text(buf)
  local out = {}
  for _, m in ipairs(H.marks(buf)) do
    for _, vl in ipairs(m.d.virt_lines or {}) do
      local line = ''
      for _, chunk in ipairs(vl) do
        line = line .. chunk[1]
      end
      table.insert(out, line)
    end
  end
  return out
end

function H.hunks(buf)
  return #(require('cairn.ghost').hunk_marks[buf] or {})
end

--- Cairn's messages, whole, while `f(messages)` runs (`messages` fills as they come; what
--- the command line shows is coalesced and cut to its width).
function H.notified(f)
  local notify = require('cairn.notify')
  local messages = {}
  local orig = notify.notify
  notify.notify = function(msg, level)
    table.insert(messages, 'cairn: ' .. tostring(msg))
    return orig(msg, level)
  end
  local ok, err = pcall(f, messages)
  notify.notify = orig
  if not ok then
    error(err, 0)
  end
  return messages
end

function H.test(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    H.passed = H.passed + 1
    io.stdout:write('ok - ' .. name .. '\n')
  else
    H.failed = H.failed + 1
    io.stdout:write('not ok - ' .. name .. '\n' .. tostring(err) .. '\n')
  end
end

function H.finish()
  io.stdout:write(string.format('%d passed, %d failed\n', H.passed, H.failed))
  require('cairn.rpc').stop()
  os.exit(H.failed)
end

return H
