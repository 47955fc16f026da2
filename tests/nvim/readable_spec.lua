-- Review you can read at any width (issue 49), read from the screen of a real Neovim inside a
-- real tmux at 80 columns (`capture-pane -p`, and `-e` for attributes): a 170-character
-- proposed line entirely visible, laid out again when the window narrows; the changed word
-- of a line drawn with other attributes than the unchanged ones, on the removed line and on
-- the proposed one; two agents on one line, each body labelled with its agent's mark, in the
-- order of their headers; the header of an agent at work saying so within 40 columns; and,
-- with line numbers and the default 'signcolumn' (shown once the ghost text's signs are there),
-- the first drawing already laid out for the text area that remains.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')

local socket = 'cairn-readable-' .. vim.fn.getpid()
local function tmux(args)
  local out = vim.fn.system(vim.list_extend({ 'tmux', '-L', socket }, args))
  return (out:gsub('%s+$', '')), vim.v.shell_error
end

-- No blank where a row may end: capture-pane drops a row's trailing blanks.
local COMMENT = '  # ' .. string.rep('why-', 36)
local LONG = '    total = price * count' .. COMMENT
assert(#LONG >= 170, 'the long line is 170 characters at least: ' .. #LONG)
local WIDE = '  # ' .. string.rep('zz-', 50)

local root = H.project({
  ['code.py'] = 'def f(price, count):\n    total = price * count\n    return total\n',
  ['both.txt'] = 'head\nx = 1\ntail\n',
  ['work.txt'] = 'w = 1\n',
  ['wide.txt'] = 'a = 1\nb = 2\n',
  ['agents/wide.pym'] = string.format('write_file("wide.txt", "a = 1%s\\nb = 2\\n")\nsubmit_result("wide", ["wide.txt"])\n', WIDE),
  -- Rewritten in place (never created later): the wrapped command's view sees the new text.
  ['gate.txt'] = 'wait\n',
  ['agents/long.pym'] = string.format([[
text = read_file("code.py")
text = text.replace("    total = price * count\n", %q + "\n")
text = text.replace("return total", "return amount")
write_file("code.py", text)
submit_result("explain the sum", ["code.py"])
]], LONG),
  ['agents/two.pym'] = 'write_file("both.txt", read_file("both.txt").replace("x = 1", "x = 2"))\nsubmit_result("two", ["both.txt"])\n',
  ['agents/three.pym'] = 'write_file("both.txt", read_file("both.txt").replace("x = 1", "x = 3"))\nsubmit_result("three", ["both.txt"])\n',
})
local home = vim.env.CAIRN_HOME

local function screen()
  return tmux({ 'capture-pane', '-p', '-t', 'cairn:0.0' })
end

local function rows()
  return vim.split(screen(), '\n')
end

local function send(keys)
  tmux({ 'send-keys', '-t', 'cairn:0.0', keys, 'Enter' })
end

--- The graphic state of every cell of a row captured with `-e`: `{char, attrs}` per column,
--- `attrs` a string naming the state (same string, same look).
local function cells(line)
  local state = {}
  local out = {}
  local function apply(params)
    local p = vim.split(params == '' and '0' or params, ';', { plain = true })
    local i = 1
    while i <= #p do
      local n = tonumber(p[i]) or 0
      if n == 0 then
        state = {}
      elseif n == 38 or n == 48 or n == 58 then
        local key = n == 38 and 'fg' or (n == 48 and 'bg' or 'ul')
        if p[i + 1] == '5' then
          state[key], i = '5:' .. tostring(p[i + 2]), i + 2
        else
          state[key], i = '2:' .. table.concat({ p[i + 2], p[i + 3], p[i + 4] }, ','), i + 4
        end
      elseif (n >= 30 and n <= 37) or (n >= 90 and n <= 97) then
        state.fg = tostring(n)
      elseif n == 39 then
        state.fg = nil
      elseif (n >= 40 and n <= 47) or (n >= 100 and n <= 107) then
        state.bg = tostring(n)
      elseif n == 49 then
        state.bg = nil
      elseif n >= 1 and n <= 9 then
        state['a' .. n] = true
      elseif n >= 21 and n <= 29 then
        state['a' .. (n - 20)] = nil
        if n == 22 then
          state.a2 = nil
        end
      end
      i = i + 1
    end
  end
  local i = 1
  while i <= #line do
    local params, e = line:match('^\27%[([%d;:]*)m()', i)
    if params then
      apply((params:gsub(':', ';')))
      i = e
    else
      local ch = line:match('^[%z\1-\127\194-\244][\128-\191]*', i)
      local keys = vim.tbl_keys(state)
      table.sort(keys)
      local attrs = {}
      for _, k in ipairs(keys) do
        table.insert(attrs, k .. '=' .. tostring(state[k]))
      end
      table.insert(out, { ch, table.concat(attrs, ' ') })
      i = i + #ch
    end
  end
  return out
end

--- The attributes of the cell where `word` starts on the first screen row (captured with `-e`,
--- its 2 columns of gutter cut off) whose text is `row` (or starts with it, `prefix`).
local function attrs_of(word, row, prefix)
  for _, line in ipairs(vim.split(tmux({ 'capture-pane', '-p', '-e', '-t', 'cairn:0.0' }), '\n')) do
    local cs = cells(line)
    local text = table.concat(vim.tbl_map(function(c) return c[1] end, cs)):sub(3):gsub('%s+$', '')
    if text == row or (prefix and text:find(row, 1, true) == 1) then
      -- A byte offset: the rows here are ASCII.
      local at = text:find(word, 1, true)
      return at and cs[at + 2][2]
    end
  end
  return nil
end

local function start(file)
  local cmd = string.format('env CAIRN_HOME=%s CAIRN_REPO=%s %s -u %s -i NONE -n %s',
    vim.fn.shellescape(home), vim.fn.shellescape(H.repo), vim.fn.shellescape(vim.v.progpath),
    vim.fn.shellescape(H.repo .. '/tests/nvim/tmux_init.lua'), file)
  local _, code = tmux({ 'new-session', '-d', '-s', 'cairn', '-x', '80', '-y', '40', '-c', root, cmd })
  H.eq(code, 0, 'tmux new-session')
  H.wait(10000, function() return screen():find('def f') ~= nil end, 'nvim inside tmux')
end

--- The rows from the one whose text (gutter cut off) starts with `first` to the one before
--- the next that starts with `stop`.
local function rows_from(first, stop)
  local out = {}
  for _, r in ipairs(rows()) do
    local text = r:sub(3)
    if #out > 0 and text:find(stop, 1, true) == 1 then
      break
    end
    if #out > 0 or text:find(first, 1, true) == 1 then
      table.insert(out, (text:gsub('%s+$', '')))
    end
  end
  return out
end

H.test('a 170-character proposed line is entirely visible at 80 columns, and laid out again at 60', function()
  start('code.py')
  send(':CairnQueue agents/long.pym')
  H.wait(15000, function() return screen():find('explain the sum', 1, true) ~= nil end, function() return 'ghost header on screen:\n' .. screen() end)
  -- The removed lines are the buffer's own; the proposed ones follow them, the long one cut
  -- into rows of the text area's width (80 less the 2 columns of the sign column).
  local function long_rows()
    return rows_from('    total = price * count  #', '    return amount')
  end
  local below = long_rows()
  H.eq(table.concat(below, ''), LONG, 'the proposed line, whole, on screen:\n' .. screen())
  H.ok(#below >= 3, 'on three rows at least: ' .. vim.inspect(below))
  H.eq(#below[1], 78, 'the first row as wide as the text area')
  -- Narrower: laid out again for the new width, still whole.
  tmux({ 'resize-window', '-t', 'cairn', '-x', '60', '-y', '40' })
  H.wait(5000, function()
    local b = long_rows()
    return #b > 0 and #b[1] == 58 and table.concat(b, '') == LONG
  end, function() return 'laid out for 58 columns:\n' .. screen() end)
  tmux({ 'resize-window', '-t', 'cairn', '-x', '80', '-y', '40' })
  H.wait(5000, function() return #(long_rows()[1] or '') == 78 end, function() return 'back at 80:\n' .. screen() end)
end)

H.test('the changed word is drawn with other attributes than the unchanged ones', function()
  -- The proposed `return amount` (a virtual line) and the removed `return total` (the
  -- buffer's own line, highlighted as removed): the changed word stands out from `return`.
  local word, kept = attrs_of('amount', '    return amount'), attrs_of('return', '    return amount')
  H.ok(word and kept, 'the proposed line on screen:\n' .. screen())
  H.ok(word ~= kept, string.format('"amount" (%s) drawn unlike "return" (%s)', word, kept))
  local gone, stays = attrs_of('total', '    return total'), attrs_of('return', '    return total')
  H.ok(gone and stays, 'the removed line on screen:\n' .. screen())
  H.ok(gone ~= stays, string.format('removed line: "total" (%s) unlike "return" (%s)', gone, stays))
  -- The long line: its appended comment is the changed run, its start is not.
  local comment = attrs_of('# why', '    total = price * count  #', true)
  local start_of = attrs_of('total', '    total = price * count  #', true)
  H.eq(comment, word, 'the appended comment drawn as a changed word')
  H.ok(start_of == kept and start_of ~= comment, string.format('the long line\'s start (%s) unlike its comment (%s)', tostring(start_of), tostring(comment)))
end)

H.test('two agents on one line: each body labelled with its mark, in the order of the headers', function()
  send(':e both.txt')
  send(':CairnQueue agents/two.pym')
  H.wait(15000, function() return screen():find(': two  (1 hunk)', 1, true) ~= nil end, function() return 'first agent:\n' .. screen() end)
  send(':CairnQueue agents/three.pym')
  H.wait(15000, function() return screen():find('x = 3', 1, true) ~= nil and screen():find('x = 2', 1, true) ~= nil end, function() return 'both agents:\n' .. screen() end)
  local header_rows, label_rows = {}, {}
  for i, r in ipairs(rows()) do
    local text = r:sub(3)
    local mark, summary = text:match('^cairn (%u+) %x+: (%l+)  %(1 hunk%)')
    if mark then
      table.insert(header_rows, { i, mark, summary })
    end
    local lmark, value = text:match('^%[(%u+)%] x = (%d)')
    if lmark then
      table.insert(label_rows, { i, lmark, value })
    end
  end
  H.eq(#header_rows, 2, 'two headers:\n' .. screen())
  H.eq(#label_rows, 2, 'two labelled bodies:\n' .. screen())
  H.ok(header_rows[1][2] ~= header_rows[2][2], 'two marks')
  local by_mark = {}
  for _, h in ipairs(header_rows) do
    by_mark[h[2]] = h[3] == 'two' and '2' or '3'
  end
  for k, l in ipairs(label_rows) do
    H.eq(l[2], header_rows[k][2], 'body ' .. k .. ' in the order of the headers:\n' .. screen())
    H.eq(l[3], by_mark[l[2]], 'the body labelled ' .. l[2] .. ' is its agent\'s')
  end
  -- Headers above the line, bodies below it.
  local line_row
  for i, r in ipairs(rows()) do
    if r:sub(3) == 'x = 1' then
      line_row = i
    end
  end
  H.ok(line_row and header_rows[2][1] < line_row and label_rows[1][1] > line_row, 'headers above, bodies below:\n' .. screen())
end)

H.test('the header of an agent at work says so within 40 columns', function()
  send(':only | e work.txt | vsplit')
  local bin = require('cairn.rpc').binary()
  local script = "printf 'w = 2\\n' > work.txt; while [ \"$(cat gate.txt)\" != go ]; do sleep 0.1; done"
  local err = ''
  local job = vim.fn.jobstart({ bin, '--project-root', root, '--cairn-home', home, 'wrap', '--task', 'slow work', '--', 'sh', '-c', script }, {
    cwd = root,
    env = { TMUX = '' },
    on_stderr = function(_, data) err = err .. table.concat(data, '\n') end,
  })
  H.ok(job > 0, 'cairn wrap started')
  local found
  H.wait(30000, function()
    for _, r in ipairs(rows()) do
      local left = vim.fn.strcharpart(r, 0, 40)
      if left:find('cairn %u+ %[in progress%]') then
        found = left
        return true
      end
    end
    return false
  end, function() return 'the header in the 40-column window:\n' .. screen() .. '\n' .. err end)
  H.ok(found:find('[in progress]', 1, true), found)
  local f = assert(io.open(root .. '/gate.txt', 'w'))
  f:write('go\n')
  f:close()
  H.eq(vim.fn.jobwait({ job }, 30000)[1], 0, 'cairn wrap ended: ' .. err)
end)

H.test('with line numbers and the default sign column, the first drawing fits the text area', function()
  -- 'signcolumn' "auto" shows the sign column once the ghost text's signs are there: the
  -- proposed line is laid out for the text area as it is then, not as it was before.
  send(':only | set signcolumn=auto number | e wide.txt')
  send(':CairnQueue agents/wide.pym')
  H.wait(15000, function() return screen():find(': wide  (1 hunk)', 1, true) ~= nil end, function() return 'the wide proposal:\n' .. screen() end)
  -- Gutter: 2 columns of signs and 4 of line numbers; virtual rows have blanks there.
  local out = {}
  for _, r in ipairs(rows()) do
    local text = r:sub(7):gsub('%s+$', '')
    if #out > 0 and r:find('^%S*%s*2 b = 2') then
      break
    end
    if #out > 0 or (text:find('a = 1  #', 1, true) == 1 and not r:find('^%S*%s*1 ')) then
      table.insert(out, text)
    end
  end
  H.eq(table.concat(out, ''), 'a = 1' .. WIDE, 'the proposed line whole:\n' .. screen())
  H.eq(#out[1], 74, 'its first row as wide as the text area (80 - 6):\n' .. screen())
end)

tmux({ 'kill-server' })
H.finish()
