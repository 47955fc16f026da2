//! Pure hunk math on lines: the hunks (no context) between two texts and applying one. No I/O
//! and no project here, so every case is a table row in the tests below.

use serde::{Deserialize, Serialize};

/// One hunk of a file's proposal: at 0-based line `old_start` of the project's version,
/// `removed` lines are replaced by `added` lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hunk {
    pub old_start: usize,
    pub removed: Vec<String>,
    pub added: Vec<String>,
}

fn split_lines(s: &str) -> Vec<String> {
    s.lines().map(str::to_string).collect()
}

/// The hunks (no context) turning `old` into `new`.
pub fn hunks_between(old: &str, new: &str) -> Vec<Hunk> {
    let diff = similar::TextDiff::from_lines(old, new);
    let (old_lines, new_lines) = (split_lines(old), split_lines(new));
    diff.grouped_ops(0)
        .into_iter()
        .filter_map(|group| {
            let first = group.first()?;
            let last = group.last()?;
            let old_range = first.old_range().start..last.old_range().end;
            let new_range = first.new_range().start..last.new_range().end;
            Some(Hunk {
                old_start: old_range.start,
                removed: old_lines.get(old_range).map(<[String]>::to_vec).unwrap_or_default(),
                added: new_lines.get(new_range).map(<[String]>::to_vec).unwrap_or_default(),
            })
        })
        .collect()
}

/// Applies `hunk` to `text` (whose lines at `old_start` must be `removed`).
pub(crate) fn apply_hunk(text: &str, hunk: &Hunk) -> Option<String> {
    let mut lines = split_lines(text);
    let end = hunk.old_start + hunk.removed.len();
    if lines.get(hunk.old_start..end)? != hunk.removed.as_slice() {
        return None;
    }
    lines.splice(hunk.old_start..end, hunk.added.iter().cloned());
    let mut out = lines.join("\n");
    // A text with lines keeps (or, when it was empty, gets) a final newline; no lines at all
    // is the empty text, not "\n".
    if !lines.is_empty() && (text.ends_with('\n') || text.is_empty()) {
        out.push('\n');
    }
    Some(out)
}


#[cfg(test)]
mod tests {
    use super::*;

    fn h(old_start: usize, removed: &[&str], added: &[&str]) -> Hunk {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        Hunk { old_start, removed: v(removed), added: v(added) }
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
        ];
        for (old, new, want) in cases {
            assert_eq!(&hunks_between(old, new), want, "{old:?} -> {new:?}");
        }
    }

    #[test]
    fn applying_each_hunk_in_turn_reaches_the_new_text() {
        let cases = [("a\nb\nc\n", "a\nB\nc\nd\n"), ("", "x\ny\n"), ("a\nb\n", ""), ("1\n2\n3\n4\n5\n6\n7\n", "0\n1\n2\n3\n5\n6\n7\n8\n")];
        for (old, new) in cases {
            let mut text = old.to_string();
            // Apply from the last hunk back so earlier line numbers stay valid.
            for hunk in hunks_between(old, new).iter().rev() {
                text = apply_hunk(&text, hunk).expect("applies");
            }
            assert_eq!(text, new, "{old:?} -> {new:?}");
        }
    }

    #[test]
    fn a_hunk_that_does_not_match_is_refused() {
        assert_eq!(apply_hunk("a\nb\n", &h(1, &["x"], &["y"])), None);
        assert_eq!(apply_hunk("a\n", &h(5, &["a"], &[])), None);
    }
}
