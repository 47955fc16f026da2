//! `re` for agent scripts on Rust's linear-time `regex` crate: the Python API (`compile`,
//! `search`, `match`, `fullmatch`, `findall`, `finditer`, `sub`, `split`, match objects) in a
//! Python prelude over a few natives. No look-around or backreferences (`re.error`).

use super::module_from_source;
use rustpython_vm::builtins::PyStrRef;
use rustpython_vm::{PyObjectRef, PyResult, VirtualMachine};
use std::cell::RefCell;
use std::collections::HashMap;

const IGNORECASE: u32 = 2;
const MULTILINE: u32 = 8;
const DOTALL: u32 = 16;
const VERBOSE: u32 = 64;
const ASCII: u32 = 256;

thread_local! {
    static CACHE: RefCell<HashMap<(String, u32, u8), regex::Regex>> = RefCell::new(HashMap::new());
}

/// Translates the few Python spellings Rust's regex syntax lacks.
fn translate(pattern: &str) -> Result<String, String> {
    if pattern.contains("(?=") || pattern.contains("(?!") || pattern.contains("(?<=") || pattern.contains("(?<!") || pattern.contains("(?P=") {
        return Err("look-around and backreferences are not supported (cairn's re uses linear-time matching)".into());
    }
    Ok(pattern.replace("\\Z", "\\z"))
}

/// Compiles (cached) `pattern` with Python flags; `anchor` 0 = search, 1 = match, 2 = fullmatch.
fn compiled(pattern: &str, flags: u32, anchor: u8) -> Result<regex::Regex, String> {
    let key = (pattern.to_string(), flags, anchor);
    if let Some(re) = CACHE.with(|c| c.borrow().get(&key).cloned()) {
        return Ok(re);
    }
    let body = translate(pattern)?;
    let full = match anchor {
        1 => format!("\\A(?:{body})"),
        2 => format!("\\A(?:{body})\\z"),
        _ => body,
    };
    let re = regex::RegexBuilder::new(&full)
        .case_insensitive(flags & IGNORECASE != 0)
        .multi_line(flags & MULTILINE != 0)
        .dot_matches_new_line(flags & DOTALL != 0)
        .ignore_whitespace(flags & VERBOSE != 0)
        .unicode(flags & ASCII == 0)
        .size_limit(1 << 22)
        .build()
        .map_err(|e| e.to_string())?;
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() > 256 {
            c.clear();
        }
        c.insert(key, re.clone());
    });
    Ok(re)
}

/// Byte offset of each char index, plus the end.
fn char_to_byte(s: &str) -> Vec<usize> {
    let mut v: Vec<usize> = s.char_indices().map(|(i, _)| i).collect();
    v.push(s.len());
    v
}

/// Matches as lists of group spans in characters (`None` for groups that did not take part).
fn find(pattern: &str, flags: u32, text: &str, pos: usize, endpos: Option<usize>, anchor: u8, all: bool) -> Result<Vec<Vec<Option<(usize, usize)>>>, String> {
    let offsets = char_to_byte(text);
    let nchars = offsets.len() - 1;
    let end_c = endpos.unwrap_or(nchars).min(nchars);
    let pos_c = pos.min(end_c);
    let hay_end = offsets[end_c];
    let re = compiled(pattern, flags, anchor)?;
    let to_char = |b: usize| offsets.partition_point(|&x| x < b);
    let mut out = Vec::new();
    let (hay, base) = if anchor > 0 { (&text[offsets[pos_c]..hay_end], offsets[pos_c]) } else { (&text[..hay_end], 0) };
    let mut at = if anchor > 0 { 0 } else { offsets[pos_c] };
    while at <= hay.len() {
        let Some(caps) = re.captures_at(hay, at) else { break };
        let Some(m0) = caps.get(0) else { break };
        out.push(caps.iter().map(|g| g.map(|m| (to_char(m.start() + base), to_char(m.end() + base)))).collect());
        if !all || anchor > 0 {
            break;
        }
        at = if m0.end() > m0.start() { m0.end() } else { next_boundary(hay, m0.end()) };
    }
    Ok(out)
}

fn next_boundary(s: &str, at: usize) -> usize {
    s[at..].chars().next().map_or(at + 1, |c| at + c.len_utf8())
}

const RE_PRELUDE: &str = r#"
class error(ValueError):
    pass

IGNORECASE = I = 2
MULTILINE = M = 8
DOTALL = S = 16
VERBOSE = X = 64
ASCII = A = 256
UNICODE = U = 0
NOFLAG = 0

class Match:
    def __init__(self, pattern, string, spans, pos, endpos):
        self.re = pattern
        self.string = string
        self.regs = spans
        self.pos = pos
        self.endpos = endpos
        self.lastindex = None
        for i in range(len(spans) - 1, 0, -1):
            if spans[i] is not None:
                self.lastindex = i
                break

    def _index(self, g):
        if isinstance(g, str):
            if g not in self.re.groupindex:
                raise IndexError("no such group")
            return self.re.groupindex[g]
        if g < 0 or g >= len(self.regs):
            raise IndexError("no such group")
        return g

    def group(self, *groups):
        if not groups:
            groups = (0,)
        vals = []
        for g in groups:
            span = self.regs[self._index(g)]
            vals.append(None if span is None else self.string[span[0]:span[1]])
        return vals[0] if len(vals) == 1 else tuple(vals)

    def __getitem__(self, g):
        return self.group(g)

    def groups(self, default=None):
        return tuple(default if s is None else self.string[s[0]:s[1]] for s in self.regs[1:])

    def groupdict(self, default=None):
        return {name: self.group(i) if self.regs[i] is not None else default for name, i in self.re.groupindex.items()}

    def start(self, g=0):
        s = self.regs[self._index(g)]
        return -1 if s is None else s[0]

    def end(self, g=0):
        s = self.regs[self._index(g)]
        return -1 if s is None else s[1]

    def span(self, g=0):
        return (self.start(g), self.end(g))

    def expand(self, template):
        return _expand(self, template)

    def __bool__(self):
        return True

    def __repr__(self):
        return "<re.Match object; span=%r, match=%r>" % (self.span(), self.group(0))


def _expand(m, template):
    out = []
    i = 0
    n = len(template)
    while i < n:
        c = template[i]
        if c == "\\" and i + 1 < n:
            d = template[i + 1]
            if d.isdigit():
                j = i + 1
                while j < n and template[j].isdigit() and j < i + 3:
                    j += 1
                out.append(m.group(int(template[i + 1:j])) or "")
                i = j
                continue
            if d == "g" and i + 2 < n and template[i + 2] == "<":
                close = template.index(">", i + 3)
                name = template[i + 3:close]
                out.append(m.group(int(name) if name.isdigit() else name) or "")
                i = close + 1
                continue
            out.append({"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}.get(d, "\\" + d))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


class Pattern:
    def __init__(self, pattern, flags=0):
        if isinstance(pattern, Pattern):
            flags = flags | pattern.flags
            pattern = pattern.pattern
        try:
            self.groupindex = _groupindex(pattern, flags)
        except ValueError as e:
            raise error(str(e))
        self.pattern = pattern
        self.flags = flags
        self.groups = _groupcount(pattern, flags)

    def _find(self, string, pos, endpos, anchor, all):
        try:
            return _find(self.pattern, self.flags, string, pos, endpos, anchor, all)
        except ValueError as e:
            raise error(str(e))

    def _one(self, string, pos, endpos, anchor):
        found = self._find(string, pos, endpos, anchor, False)
        return Match(self, string, found[0], pos, len(string) if endpos is None else endpos) if found else None

    def search(self, string, pos=0, endpos=None):
        return self._one(string, pos, endpos, 0)

    def match(self, string, pos=0, endpos=None):
        return self._one(string, pos, endpos, 1)

    def fullmatch(self, string, pos=0, endpos=None):
        return self._one(string, pos, endpos, 2)

    def finditer(self, string, pos=0, endpos=None):
        end = len(string) if endpos is None else endpos
        return iter([Match(self, string, s, pos, end) for s in self._find(string, pos, endpos, 0, True)])

    def findall(self, string, pos=0, endpos=None):
        out = []
        for m in self.finditer(string, pos, endpos):
            if self.groups == 0:
                out.append(m.group(0))
            elif self.groups == 1:
                out.append(m.group(1) or "")
            else:
                out.append(tuple(g or "" for g in m.groups()))
        return out

    def subn(self, repl, string, count=0):
        pieces = []
        last = 0
        n = 0
        for m in self.finditer(string):
            if count and n >= count:
                break
            pieces.append(string[last:m.start()])
            pieces.append(repl(m) if callable(repl) else _expand(m, repl))
            last = m.end()
            n += 1
        pieces.append(string[last:])
        return ("".join(pieces), n)

    def sub(self, repl, string, count=0):
        return self.subn(repl, string, count)[0]

    def split(self, string, maxsplit=0):
        out = []
        last = 0
        n = 0
        for m in self.finditer(string):
            if maxsplit and n >= maxsplit:
                break
            if m.end() == m.start() and m.start() in (0, len(string)):
                continue
            out.append(string[last:m.start()])
            out.extend(m.groups())
            last = m.end()
            n += 1
        out.append(string[last:])
        return out

    def __repr__(self):
        return "re.compile(%r)" % (self.pattern,)


def compile(pattern, flags=0):
    if isinstance(pattern, Pattern) and not flags:
        return pattern
    return Pattern(pattern, flags)

def search(pattern, string, flags=0):
    return compile(pattern, flags).search(string)

def match(pattern, string, flags=0):
    return compile(pattern, flags).match(string)

def fullmatch(pattern, string, flags=0):
    return compile(pattern, flags).fullmatch(string)

def findall(pattern, string, flags=0):
    return compile(pattern, flags).findall(string)

def finditer(pattern, string, flags=0):
    return compile(pattern, flags).finditer(string)

def sub(pattern, repl, string, count=0, flags=0):
    return compile(pattern, flags).sub(repl, string, count)

def subn(pattern, repl, string, count=0, flags=0):
    return compile(pattern, flags).subn(repl, string, count)

def split(pattern, string, maxsplit=0, flags=0):
    return compile(pattern, flags).split(string, maxsplit)

def escape(pattern):
    special = set("()[]{}?*+-|^$\\.&~# \t\n\r\v\f")
    return "".join("\\" + c if c in special else c for c in pattern)
"#;

/// The `re` module.
pub fn module(vm: &VirtualMachine) -> PyResult<PyObjectRef> {
    let find_fn = vm.new_function(
        "_find",
        |pattern: PyStrRef, flags: u32, text: PyStrRef, pos: usize, endpos: Option<usize>, anchor: u8, all: bool, vm: &VirtualMachine| -> PyResult {
            let found = find(&pattern.to_string_lossy(), flags, &text.to_string_lossy(), pos, endpos, anchor, all).map_err(|e| vm.new_value_error(e))?;
            let list: Vec<PyObjectRef> = found
                .into_iter()
                .map(|groups| {
                    let spans: Vec<PyObjectRef> = groups
                        .into_iter()
                        .map(|g| match g {
                            Some((a, b)) => vm.new_tuple((a, b)).into(),
                            None => vm.ctx.none(),
                        })
                        .collect();
                    vm.ctx.new_list(spans).into()
                })
                .collect();
            Ok(vm.ctx.new_list(list).into())
        },
    );
    let groupindex = vm.new_function("_groupindex", |pattern: PyStrRef, flags: u32, vm: &VirtualMachine| -> PyResult {
        let re = compiled(&pattern.to_string_lossy(), flags, 0).map_err(|e| vm.new_value_error(e))?;
        let dict = vm.ctx.new_dict();
        for (i, name) in re.capture_names().enumerate() {
            if let Some(n) = name {
                dict.set_item(n, vm.new_pyobj(i), vm)?;
            }
        }
        Ok(dict.into())
    });
    let groupcount = vm.new_function("_groupcount", |pattern: PyStrRef, flags: u32, vm: &VirtualMachine| -> PyResult<usize> {
        Ok(compiled(&pattern.to_string_lossy(), flags, 0).map_err(|e| vm.new_value_error(e))?.captures_len() - 1)
    });
    module_from_source(
        vm,
        "re",
        RE_PRELUDE,
        &[("_find", find_fn.into()), ("_groupindex", groupindex.into()), ("_groupcount", groupcount.into())],
    )
}
