//! Regular expressions in time linear in the matches, not the string.
//!
//! The interpreter's `_sre` (rustpython-vm 0.5) cuts every group out of the string by walking
//! its code points from the start, so `findall`, `sub`, `split` and `m.group()` over a big
//! file took time quadratic in its size (20,000 matches in 520 kB: 2 s; CPython: 3 ms). Here
//! the cutting is done by [`slices`], which maps code-point positions to byte offsets through
//! an index of the string built once (a byte offset every [`STEP`] code points, kept for the
//! last strings cut), and `child/py/_cairn_re.py` puts `Pattern.findall/sub/subn/split` and
//! `Match.group/groups/groupdict` on top of it (the matching itself stays the engine's).

use rustpython_vm::builtins::{PyBytes, PyStr, PyType};
use rustpython_vm::function::FuncArgs;
use rustpython_vm::{AsObject, PyObjectRef, PyResult, VirtualMachine};
use std::cell::RefCell;

/// Code points between two entries of a string's index.
const STEP: usize = 64;

/// How many strings keep their index.
const KEPT: usize = 4;

thread_local! {
    /// The index of the strings cut last: (the string, byte offset of every STEP-th code point).
    static INDEXES: RefCell<Vec<(PyObjectRef, Vec<usize>)>> = const { RefCell::new(Vec::new()) };
}

fn index_of(obj: &PyObjectRef, s: &PyStr) -> Vec<usize> {
    let found = INDEXES.with(|i| i.borrow().iter().find(|(o, _)| o.is(obj)).map(|(_, idx)| idx.clone()));
    if let Some(idx) = found {
        return idx;
    }
    let mut idx = Vec::with_capacity(s.char_len() / STEP + 2);
    for (n, (offset, _)) in s.as_wtf8().code_point_indices().enumerate() {
        if n % STEP == 0 {
            idx.push(offset);
        }
    }
    if s.char_len() % STEP == 0 {
        idx.push(s.byte_len());
    }
    INDEXES.with(|i| {
        let mut i = i.borrow_mut();
        if i.len() >= KEPT {
            i.remove(0);
        }
        i.push((obj.clone(), idx.clone()));
    });
    idx
}

/// The byte offset of code point `cp` (at most the string's length).
fn byte_at(s: &PyStr, idx: &[usize], cp: usize) -> usize {
    let cp = cp.min(s.char_len());
    let (k, rest) = (cp / STEP, cp % STEP);
    let Some(&base) = idx.get(k) else { return s.byte_len() };
    if rest == 0 {
        return base;
    }
    s.as_wtf8()[base..].code_point_indices().nth(rest).map_or(s.byte_len(), |(o, _)| base + o)
}

/// `_slices(string, spans, default)`: the parts of `string` (a `str` or `bytes`) at each
/// code-point span (`spans` flat: start, end, start, end, ...), `default` for a span with a
/// negative start (a group that did not match).
fn slices(args: FuncArgs, vm: &VirtualMachine) -> PyResult {
    let [string, spans, default]: [PyObjectRef; 3] = args.args.try_into().map_err(|_| vm.new_type_error("_slices(string, spans, default)"))?;
    let flat: Vec<isize> = spans.try_to_value(vm)?;
    let spans: Vec<(isize, isize)> = flat.chunks(2).map(|c| (c[0], c.get(1).copied().unwrap_or(c[0]))).collect();
    let mut out = Vec::with_capacity(spans.len());
    if let Some(b) = string.downcast_ref::<PyBytes>() {
        let bytes = b.as_bytes();
        for (a, e) in spans {
            out.push(if a < 0 { default.clone() } else { vm.ctx.new_bytes(bytes[(a as usize).min(bytes.len())..(e.max(a) as usize).min(bytes.len())].to_vec()).into() });
        }
        return Ok(vm.ctx.new_list(out).into());
    }
    let Some(s) = string.downcast_ref::<PyStr>() else { return Err(vm.new_type_error("_slices: str or bytes")) };
    let ascii = s.isascii();
    let idx = if ascii { Vec::new() } else { index_of(&string, s) };
    for (a, e) in spans {
        if a < 0 {
            out.push(default.clone());
            continue;
        }
        let (a, e) = (a as usize, e.max(a) as usize);
        let (x, y) = if ascii { (a.min(s.byte_len()), e.min(s.byte_len())) } else { (byte_at(s, &idx, a), byte_at(s, &idx, e)) };
        out.push(vm.ctx.new_str(s.as_wtf8()[x..y].to_owned()).into());
    }
    Ok(vm.ctx.new_list(out).into())
}

/// Strings at least this long (in code points) get an index for `s[i]`; shorter ones are
/// walked, as cheaply.
const INDEXED: usize = 256;

/// `s[i]` of a long non-ASCII string in constant time (the interpreter walks the string from
/// its start for each index, so a parser's `while i < len(s): s[i]` was quadratic). `None`:
/// not such a string, or `i` out of range (the caller's own path answers).
pub fn char_at(obj: &rustpython_vm::PyObject, i: isize, vm: &VirtualMachine) -> Option<PyObjectRef> {
    let s = obj.downcast_ref::<PyStr>()?;
    if s.isascii() || s.char_len() < INDEXED {
        return None;
    }
    let len = s.char_len() as isize;
    let i = if i < 0 { i + len } else { i };
    if i < 0 || i >= len {
        return None;
    }
    let owned = obj.to_owned();
    let idx = index_of(&owned, s);
    let (a, b) = (byte_at(s, &idx, i as usize), byte_at(s, &idx, i as usize + 1));
    Some(vm.ctx.new_str(s.as_wtf8()[a..b].to_owned()).into())
}

/// `s[start:stop]` (step 1) of a long non-ASCII string in time proportional to the slice, as
/// [`char_at`] for one index. `None`: not such a string or slice.
pub fn substring(obj: &rustpython_vm::PyObject, slice: &rustpython_vm::builtins::PySlice, vm: &VirtualMachine) -> Option<PyObjectRef> {
    let s = obj.downcast_ref::<PyStr>()?;
    if s.isascii() || s.char_len() < INDEXED {
        return None;
    }
    let bound = |o: Option<&PyObjectRef>| -> Option<Option<isize>> {
        match o {
            None => Some(None),
            Some(o) if vm.is_none(o) => Some(None),
            Some(o) => o.downcast_ref_if_exact::<rustpython_vm::builtins::PyInt>(vm).and_then(|i| i.try_to_primitive::<isize>(vm).ok()).map(Some),
        }
    };
    if !matches!(bound(slice.step.as_ref())?, None | Some(1)) {
        return None;
    }
    let len = s.char_len() as isize;
    let clamp = |v: Option<isize>, default: isize| -> usize {
        match v {
            None => default as usize,
            Some(v) if v < 0 => (v + len).max(0) as usize,
            Some(v) => v.min(len) as usize,
        }
    };
    let (a, b) = (clamp(bound(slice.start.as_ref())?, 0), clamp(bound(Some(&slice.stop))?, len));
    if a >= b {
        return Some(vm.ctx.new_str("").into());
    }
    let owned = obj.to_owned();
    let idx = index_of(&owned, s);
    let (x, y) = (byte_at(s, &idx, a), byte_at(s, &idx, b));
    Some(vm.ctx.new_str(s.as_wtf8()[x..y].to_owned()).into())
}

/// After `re` is imported: its `Pattern` and `Match` types get the linear methods.
pub fn patch_re(vm: &VirtualMachine, re: &PyObjectRef) -> PyResult<()> {
    let pattern = re.get_attr("Pattern", vm)?;
    let matched = re.get_attr("Match", vm)?;
    let (Some(pattern_type), Some(match_type)) = (pattern.downcast_ref::<PyType>(), matched.downcast_ref::<PyType>()) else { return Ok(()) };
    let natives = [
        ("_slices", vm.new_function("_slices", slices).into()),
        ("_spans", vm.new_function("_spans", spans).into()),
        ("_sre", vm.import("_sre", 0)?),
        ("_finditer", pattern.get_attr("finditer", vm)?),
        ("_native_findall", pattern.get_attr("findall", vm)?),
        ("_native_subn", pattern.get_attr("subn", vm)?),
        ("_native_split", pattern.get_attr("split", vm)?),
        ("_parse_template", re.get_attr("_parser", vm)?.get_attr("parse_template", vm)?),
    ];
    let helpers = super::module_from_source(vm, "_cairn_re", include_str!("../py/_cairn_re.py"), &natives)?;
    for name in ["findall", "sub", "subn", "split"] {
        pattern_type.set_attr(vm.ctx.intern_str(name), helpers.get_attr(name, vm)?);
    }
    for (name, with) in [("group", "group"), ("groups", "groups"), ("groupdict", "groupdict")] {
        match_type.set_attr(vm.ctx.intern_str(name), helpers.get_attr(with, vm)?);
    }
    Ok(())
}

/// `_spans(code, string, pos, endpos, groups, limit)`: every match of the compiled `code` in
/// `string` (str or bytes) from `pos` to `endpos`, at most `limit` (0: all), as flat spans:
/// for each match its whole span then each group's (-1, -1 when it did not match). One search
/// state walks the string once, as CPython's `findall` does.
fn spans(args: FuncArgs, vm: &VirtualMachine) -> PyResult {
    let [code, string, pos, endpos, groups, limit]: [PyObjectRef; 6] = args.args.try_into().map_err(|_| vm.new_type_error("_spans(code, string, pos, endpos, groups, limit)"))?;
    let code: Vec<u32> = code.try_to_value(vm)?;
    let clamp = |o: PyObjectRef| -> PyResult<usize> { Ok(o.try_to_value::<isize>(vm)?.max(0) as usize) };
    let (pos, endpos, groups, limit) = (clamp(pos)?, clamp(endpos)?, clamp(groups)?, clamp(limit)?);
    let out = if let Some(s) = string.downcast_ref::<PyStr>() {
        search_all(s.as_wtf8(), &code, pos, endpos, groups, limit)
    } else if let Some(b) = string.downcast_ref::<PyBytes>() {
        search_all(b.as_bytes(), &code, pos, endpos, groups, limit)
    } else {
        return Err(vm.new_type_error("_spans: str or bytes"));
    };
    Ok(vm.ctx.new_list(out.into_iter().map(|n| vm.ctx.new_int(n).into()).collect()).into())
}

fn search_all<S: rustpython_sre_engine::StrDrive>(string: S, code: &[u32], pos: usize, endpos: usize, groups: usize, limit: usize) -> Vec<isize> {
    let req = rustpython_sre_engine::Request::new(string, pos, endpos, code, false);
    let mut iter = rustpython_sre_engine::SearchIter { req, state: rustpython_sre_engine::State::default() };
    let mut out = Vec::new();
    let mut found = 0;
    while (limit == 0 || found < limit) && iter.next().is_some() {
        found += 1;
        let state = &iter.state;
        out.extend([state.start as isize, state.cursor.position as isize]);
        let marks = state.marks.raw();
        for g in 0..groups {
            match (marks.get(2 * g), marks.get(2 * g + 1)) {
                (Some(a), Some(b)) if a.is_some() && b.is_some() => out.extend([a.unpack() as isize, b.unpack() as isize]),
                _ => out.extend([-1, -1]),
            }
        }
    }
    out
}
