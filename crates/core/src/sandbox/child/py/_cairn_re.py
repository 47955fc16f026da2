"""`re.Pattern.findall/sub/subn/split` and `re.Match.group/groups/groupdict` as CPython's, in
time linear in the matches: the engine finds them all in one pass (`_spans`, native, over
the code `_sre.compile` was given; `_finditer` for a pattern compiled before this module),
`_slices` (native,
`modules/text.rs`) cuts all their parts out of the string at once (spans flat: start, end,
start, end, ...). Strings other than `str`
and `bytes` (bytearray, memoryview, mmap-likes) take the interpreter's own methods."""

_MAX = 2 ** 63 - 1
_templates = {}


def _plain(string):
    return type(string) is str or type(string) is bytes


_codes = {}
_native_compile = _sre.compile


def _compile(pattern, flags, code, *rest):
    """`_sre.compile`, keeping each pattern's code for `_spans`."""
    p = _native_compile(pattern, flags, code, *rest)
    if len(_codes) > 4096:
        _codes.clear()
    _codes[id(p)] = (p, list(code))
    return p


_sre.compile = _compile


def _matches(self, string, pos, endpos, limit):
    """Flat spans of every match (whole match, then each group), at most `limit` (0: all)."""
    entry = _codes.get(id(self))
    if entry is not None and entry[0] is self:
        return _spans(entry[1], string, pos, endpos, self.groups, limit)
    g, flat, n = self.groups, [], 0
    for m in _finditer(self, string, pos, endpos):
        if 0 < limit <= n:
            break
        n += 1
        for i in range(g + 1):
            flat += m.span(i)
    return flat


def findall(self, string, pos=0, endpos=_MAX):
    if not _plain(string):
        return _native_findall(self, string, pos, endpos)
    g = self.groups
    flat = _matches(self, string, pos, endpos, 0)
    if g == 0:
        return _slices(string, flat, string[:0])
    stride = 2 * (g + 1)
    groups_only = [x for k in range(0, len(flat), stride) for x in flat[k + 2:k + stride]]
    parts = _slices(string, groups_only, string[:0])
    if g == 1:
        return parts
    return [tuple(parts[k:k + g]) for k in range(0, len(parts), g)]


def _template(pattern, repl):
    key = (pattern, repl)
    t = _templates.get(key)
    if t is None:
        if len(_templates) > 256:
            _templates.clear()
        t = _templates[key] = _parse_template(repl, pattern)
    return t


def subn(self, repl, string, count=0):
    if not _plain(string) or not (callable(repl) or type(repl) is type(string)):
        return _native_subn(self, repl, string, count)
    if callable(repl):
        return _subn_call(self, repl, string, count)
    template = _template(self, repl)
    g = self.groups
    stride = 2 * (g + 1)
    flat = _matches(self, string, 0, _MAX, max(count, 0))
    n = len(flat) // stride
    if n == 0:
        return string, 0
    spans, last = [], 0
    for k in range(0, len(flat), stride):
        spans += (last, flat[k])
        for group in template[1::2]:
            spans += flat[k + 2 * group:k + 2 * group + 2]
        last = flat[k + 1]
    spans += (last, len(string))
    parts = _slices(string, spans, string[:0])
    out, i = [], 0
    for _ in range(n):
        out.append(parts[i])
        i += 1
        for j, piece in enumerate(template):
            if j % 2 == 0:
                out.append(piece)
            else:
                out.append(parts[i])
                i += 1
    out.append(parts[i])
    return string[:0].join(out), n


def _subn_call(self, repl, string, count):
    matches = []
    for m in _finditer(self, string):
        if 0 < count <= len(matches):
            break
        matches.append(m)
    if not matches:
        return string, 0
    spans, last = [], 0
    for m in matches:
        a, b = m.span()
        spans += (last, a)
        last = b
    spans += (last, len(string))
    parts = _slices(string, spans, string[:0])
    out = []
    for k, m in enumerate(matches):
        out.append(parts[k])
        out.append(repl(m))
    out.append(parts[-1])
    return string[:0].join(out), len(matches)


def sub(self, repl, string, count=0):
    return subn(self, repl, string, count)[0]


def split(self, string, maxsplit=0):
    if not _plain(string):
        return _native_split(self, string, maxsplit)
    if maxsplit < 0:
        return [string]
    g = self.groups
    stride = 2 * (g + 1)
    flat = _matches(self, string, 0, _MAX, maxsplit)
    spans, last = [], 0
    for k in range(0, len(flat), stride):
        spans += (last, flat[k])
        spans += flat[k + 2:k + stride]
        last = flat[k + 1]
    spans += (last, len(string))
    return _slices(string, spans, None)


def group(self, *groups):
    if not groups:
        groups = (0,)
    spans = [self.span(g) for g in groups]
    if _plain(self.string):
        parts = _slices(self.string, [x for span in spans for x in span], None)
    else:
        parts = [self.string[a:b] if a >= 0 else None for a, b in spans]
    return parts[0] if len(groups) == 1 else tuple(parts)


def groups(self, default=None):
    n = self.re.groups
    if n == 0:
        return ()
    spans = [self.span(i) for i in range(1, n + 1)]
    if _plain(self.string):
        return tuple(_slices(self.string, [x for span in spans for x in span], default))
    return tuple(self.string[a:b] if a >= 0 else default for a, b in spans)


def groupdict(self, default=None):
    names = list(self.re.groupindex)
    values = groups(self, None)
    index = self.re.groupindex
    return {name: (default if values[index[name] - 1] is None else values[index[name] - 1]) for name in names}
