--- Word diff inside a line: which runs of a removed line and of the added line that replaces
--- it changed. Pure: strings in, byte ranges out; no buffer, no window. A hunk's removed and
--- added lines are first paired (the lines that are one line edited, found by Neovim's
--- linematch), then each pair is diffed by words: runs of letters, digits, `_` and multibyte
--- characters, runs of blanks, and every other character on its own.
local M = {}

local diff = (vim.text and vim.text.diff) or vim.diff

--- Hunks up to this many lines (removed plus added), and this many bytes, are paired by
--- linematch; larger ones only line by line when both sides have as many lines.
local LINEMATCH_MAX = 40
local LINEMATCH_BYTES = 16384

--- Larger hunks (a rewritten file) are shown without a word diff.
local PAIRS_MAX = 500

--- A changed middle longer than this (bytes, both sides) is one run, not diffed by words.
local MIDDLE_MAX = 4096

--- The tokens of `s`, in order (their concatenation is `s`).
function M.tokens(s)
  local out, i, n = {}, 1, #s
  while i <= n do
    local _, e = s:find('^[%w_\128-\255]+', i)
    if not e then
      _, e = s:find('^%s+', i)
    end
    e = e or i
    out[#out + 1] = s:sub(i, e)
    i = e + 1
  end
  return out
end

--- `{removed index, added index}` for each removed line that is an added line edited.
function M.pairs(removed, added)
  local out = {}
  local nr, na = #removed, #added
  if nr == 0 or na == 0 then
    return out
  end
  if nr == 1 and na == 1 then
    return { { 1, 1 } }
  end
  local a, b = table.concat(removed, '\n') .. '\n', table.concat(added, '\n') .. '\n'
  if nr + na <= LINEMATCH_MAX and #a + #b <= LINEMATCH_BYTES then
    local ok, hunks = pcall(diff, a, b, { result_type = 'indices', linematch = LINEMATCH_MAX })
    if ok and type(hunks) == 'table' then
      for _, h in ipairs(hunks) do
        if h[2] == h[4] then
          for k = 0, h[2] - 1 do
            out[#out + 1] = { h[1] + k, h[3] + k }
          end
        end
      end
      return out
    end
  end
  if nr == na and nr <= PAIRS_MAX then
    for k = 1, nr do
      out[k] = { k, k }
    end
  end
  return out
end

--- Byte offsets (0-based) where each token starts, and one past the end; from `base`.
local function offsets(tokens, base)
  local at, out = base, {}
  for i, t in ipairs(tokens) do
    out[i] = at
    at = at + #t
  end
  out[#tokens + 1] = at
  return out
end

local function blank(t)
  return t:find('^%s+$') ~= nil
end

--- Adds the token run `s`..`e` (1-based, inclusive) to `ranges` as bytes, joined to the
--- previous run when only blanks lie between them.
local function add_run(ranges, tokens, off, s, e)
  local last = ranges[#ranges]
  if last then
    local gap = true
    for k = last.tok + 1, s - 1 do
      if not blank(tokens[k]) then
        gap = false
        break
      end
    end
    if gap then
      last[2], last.tok = off[e + 1], e
      return
    end
  end
  ranges[#ranges + 1] = { off[s], off[e + 1], tok = e }
end

--- Is `m` one token (or nothing): all word bytes, or all blanks?
local function one_token(m)
  return m == '' or not m:find('[^%w_\128-\255]') or not m:find('%S')
end

local function word_byte(s, i)
  local c = s:byte(i)
  return c ~= nil and (c >= 128 or c == 95 or (c >= 48 and c <= 57) or (c >= 65 and c <= 90) or (c >= 97 and c <= 122))
end

--- The bytes `a` and `b` share at their start and at their end, as whole words (a change
--- inside a word changes the word): `p`, `s`; and as bytes: `p0`, `s0`.
local function common_ends(a, b)
  local n = math.min(#a, #b)
  local p0 = 0
  while p0 < n and a:byte(p0 + 1) == b:byte(p0 + 1) do
    p0 = p0 + 1
  end
  local s0 = 0
  while s0 < n - p0 and a:byte(#a - s0) == b:byte(#b - s0) do
    s0 = s0 + 1
  end
  local p, s = p0, s0
  while p > 0 and word_byte(a, p) and (word_byte(a, p + 1) or word_byte(b, p + 1)) do
    p = p - 1
  end
  while s > 0 and word_byte(a, #a - s + 1) and (word_byte(a, #a - s) or word_byte(b, #b - s)) do
    s = s - 1
  end
  return p, s, p0, s0
end

--- The changed runs of the middles `ma` of `a` and `mb` of `b` (both from byte `p`): one each
--- when either is a single word or nothing (or both are long), else the words' diff.
local function middle_runs(ma, mb, p)
  local function whole()
    return ma ~= '' and { { p, p + #ma } } or {}, mb ~= '' and { { p, p + #mb } } or {}
  end
  if #ma + #mb > MIDDLE_MAX or one_token(ma) or one_token(mb) then
    return whole()
  end
  local ta, tb = M.tokens(ma), M.tokens(mb)
  local ok, hunks = pcall(diff, table.concat(ta, '\n') .. '\n', table.concat(tb, '\n') .. '\n', { result_type = 'indices' })
  if not ok or type(hunks) ~= 'table' then
    return nil
  end
  local oa, ob = offsets(ta, p), offsets(tb, p)
  local ra, rb = {}, {}
  for _, h in ipairs(hunks) do
    if h[2] > 0 then
      add_run(ra, ta, oa, h[1], h[1] + h[2] - 1)
    end
    if h[4] > 0 then
      add_run(rb, tb, ob, h[3], h[3] + h[4] - 1)
    end
  end
  for _, r in ipairs(ra) do
    r.tok = nil
  end
  for _, r in ipairs(rb) do
    r.tok = nil
  end
  return ra, rb
end

--- Bytes of `s` after its indentation.
local function indent(s)
  return (s:find('%S') or #s + 1) - 1
end

--- The changed byte ranges `{{s, e}, ...}` (0-based, end exclusive) of `a` (deleted) and of
--- `b` (inserted), or nil when the lines share too little for a word diff to help: then the
--- whole line is the change.
function M.ranges(a, b)
  if a == '' or b == '' then
    return nil
  end
  local p, s, p0, s0 = common_ends(a, b)
  local ra, rb = middle_runs(a:sub(p + 1, #a - s), b:sub(p + 1, #b - s), p)
  if not ra then
    return nil
  end
  local changed = 0
  for _, r in ipairs(ra) do
    changed = changed + r[2] - r[1]
  end
  -- What both keep, indentation aside (counted by bytes: the part of a changed word that
  -- stays is kept), must be a third of the shorter line at least, else they are two lines.
  local ia, ib = indent(a), indent(b)
  local kept = #a - changed + (p0 - p) + (s0 - s) - math.min(ia, ib, p0)
  if kept * 3 < math.min(#a - ia, #b - ib) then
    return nil
  end
  return ra, rb
end

return M
