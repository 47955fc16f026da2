//! Pure hunk math on lines: the hunks (no context) between two versions of a file, accepting
//! one into the old version and dropping one from the new. No I/O and no project here, so
//! every case is a table row in the tests below.
//!
//! Byte-exact: lines keep their terminators (`\n`, `\r\n`; a lone `\r` stays inside its line),
//! and accepting or dropping a hunk splices the other version's exact bytes. So CRLF, mixed
//! endings, a missing final newline, a BOM and non-UTF-8 text all round-trip. A [`Hunk`]
//! carries display text (terminators stripped, invalid UTF-8 replaced) for ghost text and to
//! name the hunk; it is matched against the hunks computed from the bytes, never applied as
//! text.

use serde::{Deserialize, Serialize};
use similar::{capture_diff_slices, Algorithm, DiffOp};
use std::ops::Range;

/// One hunk of a file's proposal: at 0-based line `old_start` of the current version,
/// `removed` lines are replaced by `added` lines (display text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hunk {
    pub old_start: usize,
    pub removed: Vec<String>,
    pub added: Vec<String>,
}

/// Line `line` (1-based) of the old side, in the new side: moved by the hunks above it; a
/// line a hunk removes maps to where the hunk's new lines start.
pub fn map_line(hunks: &[Hunk], line: usize) -> usize {
    let at = line.saturating_sub(1);
    let mut shift: isize = 0;
    for h in hunks {
        if at < h.old_start {
            break;
        }
        if at < h.old_start + h.removed.len() {
            return ((h.old_start as isize + shift).max(0) as usize) + 1;
        }
        shift += h.added.len() as isize - h.removed.len() as isize;
    }
    ((at as isize + shift).max(0) as usize) + 1
}

/// Lines with their terminators (a last line without one is kept).
pub(super) fn lines(text: &[u8]) -> Vec<&[u8]> {
    text.split_inclusive(|&b| b == b'\n').collect()
}

/// A line as shown: without its terminator.
fn display(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\n").map(|l| l.strip_suffix(b"\r").unwrap_or(l)).unwrap_or(line);
    String::from_utf8_lossy(line).into_owned()
}

/// The changed line ranges `(old, new)` between two versions, in order; adjacent changes
/// form one range.
pub(super) fn ranges(old: &[&[u8]], new: &[&[u8]]) -> Vec<(Range<usize>, Range<usize>)> {
    let mut out: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    for op in capture_diff_slices(Algorithm::Myers, old, new) {
        let (o, n) = match op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete { old_index, old_len, new_index } => (old_index..old_index + old_len, new_index..new_index),
            DiffOp::Insert { old_index, new_index, new_len } => (old_index..old_index, new_index..new_index + new_len),
            DiffOp::Replace { old_index, old_len, new_index, new_len } => (old_index..old_index + old_len, new_index..new_index + new_len),
        };
        match out.last_mut() {
            Some(last) if last.0.end == o.start && last.1.end == n.start => {
                last.0.end = o.end;
                last.1.end = n.end;
            }
            _ => out.push((o, n)),
        }
    }
    out
}

fn hunk(old: &[&[u8]], new: &[&[u8]], (o, n): &(Range<usize>, Range<usize>)) -> Hunk {
    Hunk { old_start: o.start, removed: old[o.clone()].iter().map(|l| display(l)).collect(), added: new[n.clone()].iter().map(|l| display(l)).collect() }
}

/// The hunks (no context) turning `old` into `new`.
pub fn hunks_between(old: &[u8], new: &[u8]) -> Vec<Hunk> {
    let (o, n) = (lines(old), lines(new));
    ranges(&o, &n).iter().map(|r| hunk(&o, &n, r)).collect()
}

/// The ranges of `wanted` among the hunks between `old` and `new`.
fn find(o: &[&[u8]], n: &[&[u8]], wanted: &Hunk) -> Option<(Range<usize>, Range<usize>)> {
    ranges(o, n).into_iter().find(|r| hunk(o, n, r) == *wanted)
}

fn splice(outer: &[&[u8]], range: Range<usize>, inner: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    outer[..range.start].iter().chain(inner).chain(&outer[range.end..]).for_each(|l| out.extend_from_slice(l));
    out
}

/// `old` with hunk `wanted` (one of `hunks_between(old, new)`) taken from `new`, byte for
/// byte; `None` when it is not one of them.
pub fn accept_hunk(old: &[u8], new: &[u8], wanted: &Hunk) -> Option<Vec<u8>> {
    let (o, n) = (lines(old), lines(new));
    let (or, nr) = find(&o, &n, wanted)?;
    Some(splice(&o, or, &n[nr]))
}

/// `new` with hunk `wanted` (one of `hunks_between(old, new)`) given back to `old`'s bytes:
/// the proposal without that hunk. `None` when it is not one of them.
pub fn drop_hunk(old: &[u8], new: &[u8], wanted: &Hunk) -> Option<Vec<u8>> {
    let (o, n) = (lines(old), lines(new));
    let (or, nr) = find(&o, &n, wanted)?;
    Some(splice(&n, nr, &o[or]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(old_start: usize, removed: &[&str], added: &[&str]) -> Hunk {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        Hunk { old_start, removed: v(removed), added: v(added) }
    }

    #[test]
    fn lines_map_through_the_hunks_above_them() {
        // Old: a b c d e. New: a X Y c e (b → X Y; d removed).
        let hunks = [h(1, &["b"], &["X", "Y"]), h(3, &["d"], &[])];
        let cases = [(1, 1), (2, 2), (3, 4), (4, 5), (5, 5), (9, 9)];
        for (old, new) in cases {
            assert_eq!(map_line(&hunks, old), new, "line {old}");
        }
        // An insertion above moves the line down.
        assert_eq!(map_line(&[h(0, &[], &["new"])], 1), 2);
    }

    #[test]
    fn hunks_between_texts() {
        let cases: &[(&str, &str, Vec<Hunk>)] = &[
            ("a\nb\nc\n", "a\nb\nc\n", vec![]),
            ("a\nb\nc\n", "a\nB\nc\n", vec![h(1, &["b"], &["B"])]),
            ("a\nb\nc\n", "x\na\nb\nc\n", vec![h(0, &[], &["x"])]),
            ("a\nb\nc\n", "a\nb\nc\nd\n", vec![h(3, &[], &["d"])]),
            ("a\nb\nc\n", "a\nc\n", vec![h(1, &["b"], &[])]),
            ("", "a\n", vec![h(0, &[], &["a"])]),
            ("a\nb\nc\nd\ne\n", "A\nb\nc\nd\nE\n", vec![h(0, &["a"], &["A"]), h(4, &["e"], &["E"])]),
            ("a\r\nb\r\n", "a\r\nB\r\n", vec![h(1, &["b"], &["B"])]),
            // A lone CR stays inside its line: it shifts nothing.
            ("a\rb\nc\n", "a\rb\nC\n", vec![h(1, &["c"], &["C"])]),
            // Only the final newline differs: one hunk, and it settles once accepted.
            ("a\nb", "a\nb\n", vec![h(1, &["b"], &["b"])]),
        ];
        for (old, new, want) in cases {
            assert_eq!(&hunks_between(old.as_bytes(), new.as_bytes()), want, "{old:?} -> {new:?}");
        }
    }

    /// Accepting every hunk in turn reaches the new bytes exactly; dropping every hunk gives
    /// back the old bytes exactly; and no hunk is left over (nothing phantom).
    #[test]
    fn every_hunk_round_trips_byte_for_byte() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"a\nb\nc\n", b"a\nB\nc\nd\n"),
            (b"", b"x\ny\n"),
            (b"a\nb\n", b""),
            (b"1\n2\n3\n4\n5\n6\n7\n", b"0\n1\n2\n3\n5\n6\n7\n8\n"),
            (b"one\r\ntwo\r\nthree\r\n", b"one\r\nTWO\r\nthree\r\nfour\r\n"),
            (b"mixed\r\nends\nhere\r\n", b"mixed\r\nENDS\nhere\r\n"),
            (b"lone\rcr\nline\n", b"lone\rcr\nLINE\n"),
            (b"no final\nnewline", b"no final\nnewline\nmore"),
            (b"a\nb", b"a\nb\n"),
            (b"\xef\xbb\xbfbom\nx\n", b"\xef\xbb\xbfbom\ny\n"),
            (b"caf\xe9\nna\xefve\n", b"caf\xe9\nNA\xefVE\n"),
        ];
        for (old, new) in cases {
            let mut text = old.to_vec();
            while let Some(first) = hunks_between(&text, new).first().cloned() {
                text = accept_hunk(&text, new, &first).expect("applies");
            }
            assert_eq!(text, *new, "accepting all of {old:?} -> {new:?}");
            let mut proposal = new.to_vec();
            while let Some(first) = hunks_between(old, &proposal).first().cloned() {
                proposal = drop_hunk(old, &proposal, &first).expect("drops");
            }
            assert_eq!(proposal, *old, "dropping all of {old:?} -> {new:?}");
        }
    }

    #[test]
    fn a_hunk_that_is_not_there_is_refused() {
        assert_eq!(accept_hunk(b"a\nb\n", b"a\nB\n", &h(1, &["x"], &["y"])), None);
        assert_eq!(drop_hunk(b"a\n", b"b\n", &h(5, &["a"], &[])), None);
    }
}
