-- The ghost text's pure parts, table by table: the word diff inside a line (`cairn.ghost.words`:
-- which lines of a hunk pair up, which runs changed, when a line is shown whole) and the layout
-- (`cairn.ghost.layout`: proposed lines cut into virtual lines of a width, labels, tabs, wide
-- characters, hostile bytes escaped, the cap on rows; headers cut with `…`). Then the drawing
-- of a payload with no host: the header's order, the word highlights and the labels' order.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')
local words = require('cairn.ghost.words')
local layout = require('cairn.ghost.layout')

--- `{s, e}` byte ranges as the substrings they cover.
local function cover(s, ranges)
  return ranges and vim.tbl_map(function(r) return s:sub(r[1] + 1, r[2]) end, ranges) or 'whole'
end

H.test('word diff: the changed runs of a line, whole words, blanks between them joined', function()
  for _, case in ipairs({
    -- removed, added, deleted runs, inserted runs ('whole': no word diff, the line is the change)
    { 'x = 1', 'x = 2', { '1' }, { '2' } },
    { 'total = price * count', 'total = price * amount', { 'count' }, { 'amount' } },
    { 'foo(1)', 'foo(1)  # why', {}, { '  # why' } },
    { 'the quick brown fox', 'the slow red fox', { 'quick brown' }, { 'slow red' } },
    { 'a = f(x, y)', 'b = f(x, z)', { 'a', 'y' }, { 'b', 'z' } },
    { 'counter += 1', 'counters += 1', { 'counter' }, { 'counters' } },
    { 'café = 1', 'cafés = 1', { 'café' }, { 'cafés' } },
    { 'return x', 'print(y)', 'whole', 'whole' },
    { 'abc', '', 'whole', 'whole' },
  }) do
    local ra, rb = words.ranges(case[1], case[2])
    H.eq({ cover(case[1], ra), cover(case[2], rb) }, { case[3], case[4] }, case[1] .. ' -> ' .. case[2])
  end
  local long = string.rep('word ', 2000)
  local ra, rb = words.ranges(long .. 'a', long .. 'b')
  H.eq({ cover(long .. 'a', ra), cover(long .. 'b', rb) }, { { 'a' }, { 'b' } }, 'a change at the end of a long line')
end)

H.test('word diff: which removed line each added line edits', function()
  H.eq(words.pairs({ 'x = 1' }, { 'x = 2' }), { { 1, 1 } }, 'one for one')
  H.eq(words.pairs({ 'a = 1', 'b = 2' }, { 'a = 10', 'new line', 'b = 20' }), { { 1, 1 }, { 2, 3 } }, 'a line inserted between')
  H.eq(words.pairs({ 'alpha beta' }, { 'zzz', 'alpha gamma', 'qqq' }), { { 1, 2 } }, 'the similar one')
  H.eq(words.pairs({}, { 'new' }), {}, 'an insertion pairs nothing')
  H.eq(words.pairs({ 'gone' }, {}), {}, 'a deletion pairs nothing')
end)

--- Virtual lines as `text|hl` strings joined, one per line.
local function show(lines)
  return vim.tbl_map(function(l)
    return table.concat(vim.tbl_map(function(c) return c[1] .. '|' .. tostring(c[2]) end, l), ' ')
  end, lines)
end

H.test('layout: proposed lines cut to the width, labels, tabs, wide characters, hostile bytes', function()
  H.eq(show(layout.lines({ { 'short', 'A' } }, nil, 10, 8)), { 'short|A' }, 'a line that fits')
  H.eq(show(layout.lines({ { 'abcdefghij', 'A' }, { 'KLMNOPQRST', 'W' }, { 'uvw', 'A' } }, nil, 8, 8)),
    { 'abcdefgh|A', 'ij|A KLMNOP|W', 'QRST|W uvw|A' }, 'runs keep their highlight across rows')
  H.eq(show(layout.lines({ { 'abcdefghij', 'A' } }, { '[A] ', 'L' }, 8, 8)),
    { '[A] |L abcd|A', '    |L efgh|A', '    |L ij|A' }, 'a label, the next rows indented as wide')
  H.eq(show(layout.lines({ { '\tx\ty', 'A' } }, nil, 20, 4)), { '    |A x|A    |A y|A' }, 'tabs to the next stop')
  H.eq(show(layout.lines({ { '日本語テキスト', 'A' } }, nil, 5, 8)), { '日本|A', '語テ|A', 'キス|A', 'ト|A' }, 'a wide character never split')
  H.eq(show(layout.lines({ { 'a\27[31mb\r', 'A' } }, nil, 6, 8)), { 'a\\x1b[|A', '31mb|A', '\\x0d|A' }, 'controls escaped, each escape whole on one row')
  H.eq(show(layout.lines({ { 'a\u{202e}b', 'A' } }, nil, nil, 8)), { 'a\\u{202e}b|A' }, 'an invisible character escaped')
  H.eq(show(layout.lines({ { string.rep('x', 100), 'A' } }, nil, nil, 8)), { string.rep('x', 100) .. '|A' }, 'no width: one line')
  local huge = layout.lines({ { string.rep('x', 1000000), 'A' } }, nil, 78, 8)
  H.ok(#huge <= layout.MAX_ROWS, 'a megabyte line stays within ' .. layout.MAX_ROWS .. ' rows: ' .. #huge)
  H.eq(huge[#huge][1][1], '… the line goes on (:CairnDiff shows it whole)', 'and says it goes on')
  H.eq(layout.cut('cairn A [in progress] 1a2b3c: a long summary', 20), 'cairn A [in progres…', 'a header cut at the end')
  H.eq(layout.cut('short', 20), 'short', 'a header that fits')
end)

H.test('drawn with no host: the header leads with mark and state; words highlighted; bodies labelled in the order of the headers', function()
  local root = H.project({ ['x.txt'] = 'one\nx = 1\nthree\n' })
  vim.cmd.edit(root .. '/x.txt')
  local buf = vim.api.nvim_get_current_buf()
  local path = vim.fn.fnamemodify(root .. '/x.txt', ':p')
  local function file(added, over)
    return { path = 'x.txt', hunks = { { old_start = 1, removed = { 'x = 1' }, added = { added } } }, overlaps = { over } }
  end
  require('cairn.ghost').set({
    agent = { id = 'bbbbbb', mark = 'B', summary = 'three', state = 'executing', in_progress = true, revision = 1 },
    files = { [path] = file('x = 3', { 'aaaaaa' }) },
    others = { { agent = { id = 'aaaaaa', mark = 'A', summary = 'two', state = 'reviewing', revision = 2 }, files = { [path] = vim.tbl_extend('force', file('x = 2', { 'bbbbbb' }), { revised = { true } }) } } },
    status = { text = '', agents = {}, order = {} },
  })
  H.eq(H.virt_text(buf), {
    'cairn B [in progress] bbbbbb: three  (1 hunk)',
    'cairn A [revision 2, 1 changed since your review] aaaaaa: two  (1 hunk)',
    '[B] overlaps agent aaaaaa (both change these lines)',
    '[B] x = 3',
    '[A] overlaps agent bbbbbb (both change these lines)',
    '[A] x = 2',
  }, 'headers above the line, bodies below it, in the same order')
  local word_hl = {}
  for _, m in ipairs(H.marks(buf)) do
    if m.d.hl_group == 'CairnDeleteWord' then
      table.insert(word_hl, { m.row, m.d.end_col })
    end
    for _, l in ipairs(m.d.virt_lines or {}) do
      for _, c in ipairs(l) do
        if c[2] == 'CairnAddWord' then
          table.insert(word_hl, c[1])
        end
      end
    end
  end
  table.sort(word_hl, function(a, b) return vim.inspect(a) < vim.inspect(b) end)
  H.eq(word_hl, { '2', '3', { 1, 5 }, { 1, 5 } }, 'the changed words: `1` on the removed line (once per agent), `2` and `3` proposed')
  require('cairn.ghost').set({ status = { text = '', agents = {}, order = {} } })
  H.eq(H.virt_text(buf), {}, 'cleared')
end)

H.finish()
