//! Three-way merge on lines, diff3 style: the agent's change (base → agent) rebased onto the
//! file as it is now (base → current, the user's edits). Pure: no I/O, table-driven tests.
//!
//! Lines keep their terminators (`\n`, `\r\n`, a lone `\r` stays inside its line), so joining
//! the pieces gives back the exact bytes of each side.
//!
//! The two changes are compared region by region of the base. A region only one side changed
//! takes that side; a region both changed the same way takes it once; a region both changed
//! differently, or where their changes touch, is a conflict. As in git, changes to adjacent
//! lines conflict: an edit right next to another is rarely independent of it.

use super::hunks::{lines, ranges};
use std::ops::Range;

/// A piece of the merged file, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Lines as they are now (unchanged, or changed by the user only).
    Current(Vec<&'a [u8]>),
    /// The agent changes `current` lines (as they are now) into `agent` lines.
    Agent { current: Vec<&'a [u8]>, agent: Vec<&'a [u8]> },
    /// Both changed the same base lines differently.
    Conflict { base: Vec<&'a [u8]>, current: Vec<&'a [u8]>, agent: Vec<&'a [u8]> },
}

/// One side's change: base lines `base` become the other side's lines `other`.
#[derive(Debug, Clone)]
struct Edit {
    base: Range<usize>,
    other: Range<usize>,
}

/// The same changed ranges the hunks are made of ([`super::hunks`]).
fn edits(base: &[&[u8]], other: &[&[u8]]) -> Vec<Edit> {
    ranges(base, other).into_iter().map(|(base, other)| Edit { base, other }).collect()
}

/// Merges: the agent's change from `base` rebased onto `current`.
pub fn merge<'a>(base: &'a [u8], current: &'a [u8], agent: &'a [u8]) -> Vec<Piece<'a>> {
    let (b, c, a) = (lines(base), lines(current), lines(agent));
    let (ec, ea) = (edits(&b, &c), edits(&b, &a));
    merge_edits(&b, &c, &a, &ec, &ea)
}

fn merge_edits<'a>(b: &[&'a [u8]], c: &[&'a [u8]], a: &[&'a [u8]], ec: &[Edit], ea: &[Edit]) -> Vec<Piece<'a>> {
    let mut pieces = Vec::new();
    let (mut i, mut j) = (0, 0);
    let mut base_pos = 0; // next base line not yet emitted
    let mut cur_pos = 0; // the matching line in current
    while i < ec.len() || j < ea.len() {
        // Start a cluster with the earliest edit, then absorb every edit of either side that
        // overlaps it or starts right at its end (adjacent changes conflict).
        let start = match (ec.get(i), ea.get(j)) {
            (Some(x), Some(y)) => x.base.start.min(y.base.start),
            (Some(x), None) => x.base.start,
            (None, Some(y)) => y.base.start,
            (None, None) => break,
        };
        let mut end = start;
        let (ci, aj) = (i, j);
        loop {
            let mut grew = false;
            while let Some(x) = ec.get(i).filter(|x| x.base.start <= end) {
                end = end.max(x.base.end);
                i += 1;
                grew = true;
            }
            while let Some(y) = ea.get(j).filter(|y| y.base.start <= end) {
                end = end.max(y.base.end);
                j += 1;
                grew = true;
            }
            if !grew {
                break;
            }
        }
        // Unchanged lines before the cluster.
        let gap = start - base_pos;
        if gap > 0 {
            push_current(&mut pieces, c[cur_pos..cur_pos + gap].to_vec());
        }
        cur_pos += gap;
        // Each side's version of base[start..end].
        let side = |es: &[Edit], other: &[&'a [u8]]| -> Vec<&'a [u8]> {
            let mut out = Vec::new();
            let mut pos = start;
            for e in es {
                out.extend_from_slice(&b[pos..e.base.start]);
                out.extend_from_slice(&other[e.other.clone()]);
                pos = e.base.end;
            }
            out.extend_from_slice(&b[pos..end]);
            out
        };
        let cur_side = side(&ec[ci..i], c);
        let agent_side = side(&ea[aj..j], a);
        let agent_changed = j > aj;
        let user_changed = i > ci;
        cur_pos += cur_side.len();
        if !agent_changed || cur_side == agent_side {
            push_current(&mut pieces, cur_side);
        } else if !user_changed {
            pieces.push(Piece::Agent { current: cur_side, agent: agent_side });
        } else {
            pieces.push(Piece::Conflict { base: b[start..end].to_vec(), current: cur_side, agent: agent_side });
        }
        base_pos = end;
    }
    if cur_pos < c.len() {
        push_current(&mut pieces, c[cur_pos..].to_vec());
    }
    pieces
}

fn push_current<'a>(pieces: &mut Vec<Piece<'a>>, lines: Vec<&'a [u8]>) {
    if lines.is_empty() {
        return;
    }
    if let Some(Piece::Current(prev)) = pieces.last_mut() {
        prev.extend(lines);
    } else {
        pieces.push(Piece::Current(lines));
    }
}

/// The merged bytes with the agent's side taken only inside its own hunks: in a conflict,
/// each of the agent's edits replaces what the project now has at its lines, and every other
/// line stays as it is now (what `--force`, a forced hunk accept and a resolution's proposed
/// side land). Nothing of another change that merely sits next to the agent's is reverted.
pub fn agent_side(pieces: &[Piece<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in pieces {
        match p {
            Piece::Current(l) | Piece::Agent { agent: l, .. } => l.iter().for_each(|l| out.extend_from_slice(l)),
            Piece::Conflict { base, current, agent } => forced(base, current, agent).iter().for_each(|l| out.extend_from_slice(l)),
        }
    }
    out
}

/// Where a base position lands in the current side, for one end of an agent's edit.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// The first line an edit replaces: after the user's insertions at that point.
    Start,
    /// Just past the last line it replaces: before the user's insertions there.
    Stop,
    /// Where an edit that replaces nothing inserts: after the user's lines at that point.
    Insert,
}

/// Base position `p` mapped into the current side through the user's edits `ec`. Inside a
/// user's edit of as many lines as it replaced, line by line; inside one that changed the
/// count, its edge (the agent's edit then takes that whole edit's lines: the journal keeps
/// them for undo).
fn map_pos(ec: &[Edit], p: usize, end: End) -> usize {
    let mut at = p;
    for c in ec {
        let (bs, be) = (c.base.start, c.base.end);
        if bs < p && p < be {
            return if be - bs == c.other.len() {
                c.other.start + (p - bs)
            } else if end == End::Start {
                c.other.start
            } else {
                c.other.end
            };
        }
        let before = be < p || (be == p && (bs < p || end != End::Stop));
        if !before {
            break;
        }
        at = c.other.end + (p - be);
    }
    at
}

/// One conflict region with the agent's edits laid over the current lines.
fn forced<'a>(base: &[&'a [u8]], current: &[&'a [u8]], agent: &[&'a [u8]]) -> Vec<&'a [u8]> {
    let (ec, ea) = (edits(base, current), edits(base, agent));
    let mut laid: Vec<(Range<usize>, Vec<&'a [u8]>)> = Vec::new();
    for e in &ea {
        let range = if e.base.is_empty() {
            let at = map_pos(&ec, e.base.start, End::Insert);
            at..at
        } else {
            map_pos(&ec, e.base.start, End::Start)..map_pos(&ec, e.base.end, End::Stop)
        };
        let lines = agent[e.other.clone()].to_vec();
        match laid.last_mut() {
            // Two edits inside one user's edit that changed the line count meet at its edges.
            Some((prev, prev_lines)) if range.start < prev.end => {
                prev.end = prev.end.max(range.end);
                prev_lines.extend(lines);
            }
            _ => laid.push((range, lines)),
        }
    }
    let mut out = Vec::with_capacity(current.len());
    let mut pos = 0;
    for (range, lines) in laid {
        out.extend_from_slice(&current[pos..range.start.max(pos)]);
        out.extend(lines);
        pos = pos.max(range.end);
    }
    out.extend_from_slice(&current[pos.min(current.len())..]);
    out
}

/// The merged bytes with both sides wherever the two conflict, between git-style markers
/// (`<<<<<<< {current}`, `||||||| base`, `=======`, `>>>>>>> {agent}`): nothing of either side
/// is dropped. A side without a final newline gets one before a marker.
pub fn with_markers(pieces: &[Piece<'_>], current_label: &str, agent_label: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let put = |out: &mut Vec<u8>, lines: &[&[u8]]| {
        for l in lines {
            out.extend_from_slice(l);
        }
    };
    let marker = |out: &mut Vec<u8>, text: String| {
        if !out.is_empty() && !out.ends_with(b"\n") {
            out.push(b'\n');
        }
        out.extend_from_slice(text.as_bytes());
    };
    for p in pieces {
        match p {
            Piece::Current(l) => put(&mut out, l),
            Piece::Agent { agent, .. } => put(&mut out, agent),
            Piece::Conflict { base, current, agent } => {
                marker(&mut out, format!("<<<<<<< {current_label}\n"));
                put(&mut out, current);
                marker(&mut out, "||||||| base\n".into());
                put(&mut out, base);
                marker(&mut out, "=======\n".into());
                put(&mut out, agent);
                marker(&mut out, format!(">>>>>>> {agent_label}\n"));
            }
        }
    }
    out
}

/// Line ranges (0-based, in the current file) of the conflicts.
pub fn conflicts(pieces: &[Piece<'_>]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut line = 0;
    for p in pieces {
        let n = match p {
            Piece::Current(l) | Piece::Agent { current: l, .. } => l.len(),
            Piece::Conflict { current, .. } => {
                out.push(line..line + current.len());
                current.len()
            }
        };
        line += n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(base: &str, current: &str, agent: &str) -> (String, usize) {
        let pieces = merge(base.as_bytes(), current.as_bytes(), agent.as_bytes());
        // Whatever the merge, the current side must give back the current bytes exactly.
        let mut cur = Vec::new();
        for p in &pieces {
            let l = match p {
                Piece::Current(l) | Piece::Agent { current: l, .. } | Piece::Conflict { current: l, .. } => l,
            };
            l.iter().for_each(|x| cur.extend_from_slice(x));
        }
        assert_eq!(String::from_utf8(cur).unwrap(), current, "current side of {base:?} {current:?} {agent:?}");
        (String::from_utf8(agent_side(&pieces)).unwrap(), conflicts(&pieces).len())
    }

    #[test]
    fn table() {
        let base = "a\nb\nc\nd\ne\nf\ng\n";
        // (current, agent, merged, conflicts)
        let rows = [
            // agent only
            (base, "a\nB\nc\nd\ne\nf\ng\n", "a\nB\nc\nd\ne\nf\ng\n", 0),
            // user only: nothing of the agent's, the user's edit stays
            ("a\nb\nc\nd\ne\nf\nG\n", base, "a\nb\nc\nd\ne\nf\nG\n", 0),
            // far apart: both land
            ("a\nb\nc\nd\ne\nf\nG\n", "a\nB\nc\nd\ne\nf\ng\n", "a\nB\nc\nd\ne\nf\nG\n", 0),
            // the same change on both sides
            ("a\nB\nc\nd\ne\nf\ng\n", "a\nB\nc\nd\ne\nf\ng\n", "a\nB\nc\nd\ne\nf\ng\n", 0),
            // overlapping: conflict, agent side in the merged text
            ("a\nX\nc\nd\ne\nf\ng\n", "a\nY\nc\nd\ne\nf\ng\n", "a\nY\nc\nd\ne\nf\ng\n", 1),
            // adjacent lines conflict; forced, each keeps its own line
            ("a\nB\nc\nd\ne\nf\ng\n", "a\nb\nC\nd\ne\nf\ng\n", "a\nB\nC\nd\ne\nf\ng\n", 1),
            // insertions in different places
            ("top\na\nb\nc\nd\ne\nf\ng\n", "a\nb\nc\nd\ne\nf\ng\nend\n", "top\na\nb\nc\nd\ne\nf\ng\nend\n", 0),
            // user deletes a line far away, agent edits
            ("a\nb\nc\nd\ne\ng\n", "A\nb\nc\nd\ne\nf\ng\n", "A\nb\nc\nd\ne\ng\n", 0),
            // agent deletes everything, user untouched
            (base, "", "", 0),
            // the user rewrites b-d line for line, the agent changes c: forced, only c is the agent's
            ("a\nB1\nC1\nD1\ne\nf\ng\n", "a\nb\nC2\nd\ne\nf\ng\n", "a\nB1\nC2\nD1\ne\nf\ng\n", 1),
            // the user folds b-d into one line, the agent changes c: that line is the agent's
            ("a\nBCD\ne\nf\ng\n", "a\nb\nC2\nd\ne\nf\ng\n", "a\nC2\ne\nf\ng\n", 1),
            // the agent inserts next to a line the user changed: both stay
            ("a\nB\nc\nd\ne\nf\ng\n", "a\nb\nnew\nc\nd\ne\nf\ng\n", "a\nB\nnew\nc\nd\ne\nf\ng\n", 1),
            // both insert at the same point differently: conflict; forced, the user's first
            ("a\nb\nc\nX\nd\ne\nf\ng\n", "a\nb\nc\nY\nd\ne\nf\ng\n", "a\nb\nc\nX\nY\nd\ne\nf\ng\n", 1),
        ];
        for (i, (current, agent, merged, n)) in rows.iter().enumerate() {
            assert_eq!(run(base, current, agent), (merged.to_string(), *n), "row {i}");
        }
    }

    #[test]
    fn markers_keep_both_sides() {
        let pieces = merge(b"a\nb\nc\n", b"a\nmine\nc\n", b"a\ntheirs\nc\nd\n");
        let text = String::from_utf8(with_markers(&pieces, "yours", "landed")).unwrap();
        assert_eq!(text, "a\n<<<<<<< yours\nmine\n||||||| base\nb\n=======\ntheirs\n>>>>>>> landed\nc\nd\n");
        let clean = merge(b"a\nb\nc\nd\ne\n", b"A\nb\nc\nd\ne\n", b"a\nb\nc\nd\nE\n");
        assert_eq!(with_markers(&clean, "yours", "landed"), b"A\nb\nc\nd\nE\n");
    }

    #[test]
    fn line_endings_survive() {
        // CRLF, a lone CR inside a line, no final newline: bytes come back exactly.
        let base = "a\r\nb\r\nc\r\nd\r\ne";
        assert_eq!(run(base, "a\r\nb\r\nc\r\nd\r\nE", "A\r\nb\r\nc\r\nd\r\ne"), ("A\r\nb\r\nc\r\nd\r\nE".into(), 0));
        assert_eq!(run("x\ry\nz\n", "x\ry\nz\n", "x\ry\nZ\n"), ("x\ry\nZ\n".into(), 0));
        assert_eq!(run("", "", "new\n"), ("new\n".into(), 0));
        assert_eq!(run("", "mine\n", "theirs\n"), ("mine\ntheirs\n".into(), 1));
    }
}
