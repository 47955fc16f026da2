//! Hashline edits: line-addressed edits that fail closed when the file moved underneath.
//!
//! A tagged read shows each line as `{tag}|{text}`, where the tag is the line's number and a
//! short hash of its text (`12:a3f9c1`). An edit names the lines it changes by tag; before
//! anything is applied every tag is checked against the file as it is now, and one that is
//! missing or stale (the line changed, moved or vanished) fails the whole edit with a
//! structured error naming it: nothing is applied partially.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One edit operation. Tags are those of a tagged read of the file as it is now; `0:` in
/// `insert_after` means "before the first line".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Replaces the lines from `tag` through `end` (default: `tag` alone) with `lines`.
    Replace { tag: String, #[serde(default)] end: Option<String>, lines: Vec<String> },
    /// Inserts `lines` after the line `tag`.
    InsertAfter { tag: String, lines: Vec<String> },
    /// Deletes the lines from `tag` through `end` (default: `tag` alone).
    Delete { tag: String, #[serde(default)] end: Option<String> },
}

/// Why an edit was refused (nothing was applied).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum EditError {
    /// The tag is not of the form `N:hash`, or names no line of the file.
    #[error("tag {tag:?} names no line of the file ({lines} lines): read it again with tags")]
    Missing { tag: String, lines: usize },
    /// Line N is there but its text changed since the read.
    #[error("stale tag {tag}: line {line} is now {current}; read the file again with tags")]
    Stale { tag: String, line: usize, current: String },
    /// Two operations touch the same line, or a range ends before it starts.
    #[error("operations overlap or are out of order at line {line}")]
    Overlap { line: usize },
}

/// The tag of line `number` (1-based) with text `text` (without its line break).
pub fn tag(number: usize, text: &str) -> String {
    let h = blake3::hash(text.as_bytes());
    format!("{number}:{}", &h.to_hex()[..6])
}

/// The file with every line prefixed by its tag and `|`.
pub fn tagged(content: &str) -> String {
    let mut out = String::with_capacity(content.len() + content.len() / 4);
    for (i, line) in lines(content).iter().enumerate() {
        let text = strip_break(line);
        out.push_str(&tag(i + 1, text));
        out.push('|');
        out.push_str(line);
    }
    out
}

/// Lines with their breaks (the last may have none).
fn lines(content: &str) -> Vec<&str> {
    content.split_inclusive('\n').collect()
}

fn strip_break(line: &str) -> &str {
    line.strip_suffix('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).unwrap_or(line)
}

/// Resolves a tag to its 1-based line number (0 for `0:` where `allow_zero`), checking the
/// hash against the file as it is now.
fn resolve(tag_text: &str, current: &[&str], allow_zero: bool) -> Result<usize, EditError> {
    let missing = || EditError::Missing { tag: tag_text.to_string(), lines: current.len() };
    let (n, _) = tag_text.split_once(':').ok_or_else(missing)?;
    let n: usize = n.trim().parse().map_err(|_| missing())?;
    if n == 0 && allow_zero {
        return Ok(0);
    }
    let line = current.get(n.wrapping_sub(1)).ok_or_else(missing)?;
    let text = strip_break(line);
    if tag(n, text) != tag_text.trim() {
        let current: String = text.chars().take(120).collect();
        return Err(EditError::Stale { tag: tag_text.to_string(), line: n, current: format!("{current:?}") });
    }
    Ok(n)
}

/// What happens at one line: it is replaced (by zero or more lines) and/or followed by new
/// lines.
#[derive(Default)]
struct At {
    replaced: Option<Vec<String>>,
    after: Vec<String>,
}

/// Applies `ops` to `content`, or refuses them all.
pub fn apply(content: &str, ops: &[Op]) -> Result<String, EditError> {
    let current = lines(content);
    let brk = if content.contains("\r\n") { "\r\n" } else { "\n" };
    let mut plan: BTreeMap<usize, At> = BTreeMap::new();
    for op in ops {
        let (first_tag, end, new) = match op {
            Op::Replace { tag, end, lines } => (tag, end, clean(lines)),
            Op::Delete { tag, end } => (tag, end, Vec::new()),
            Op::InsertAfter { tag, lines } => {
                let n = resolve(tag, &current, true)?;
                plan.entry(n).or_default().after.extend(clean(lines));
                continue;
            }
        };
        let first = resolve(first_tag, &current, false)?;
        let last = match end {
            Some(e) => resolve(e, &current, false)?,
            None => first,
        };
        if last < first {
            return Err(EditError::Overlap { line: first });
        }
        for n in first..=last {
            let at = plan.entry(n).or_default();
            if at.replaced.is_some() {
                return Err(EditError::Overlap { line: n });
            }
            at.replaced = Some(if n == first { new.clone() } else { Vec::new() });
        }
    }
    let mut out = String::with_capacity(content.len());
    let push = |out: &mut String, text: &str| {
        out.push_str(text);
        out.push_str(brk);
    };
    if let Some(at) = plan.get(&0) {
        at.after.iter().for_each(|l| push(&mut out, l));
    }
    for (i, line) in current.iter().enumerate() {
        let n = i + 1;
        match plan.get(&n) {
            None => out.push_str(line),
            Some(at) => {
                match &at.replaced {
                    Some(new) => new.iter().for_each(|l| push(&mut out, l)),
                    None => {
                        out.push_str(line);
                        if !line.ends_with('\n') && !at.after.is_empty() {
                            out.push_str(brk);
                        }
                    }
                }
                at.after.iter().for_each(|l| push(&mut out, l));
            }
        }
    }
    Ok(out)
}

/// New lines as given, without line breaks of their own.
fn clean(lines: &[String]) -> Vec<String> {
    lines.iter().map(|l| strip_break(l).to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(content: &str, n: usize) -> String {
        tag(n, strip_break(lines(content)[n - 1]))
    }

    #[test]
    fn replace_insert_delete_and_stale_tags() {
        let src = "a\nb\nc\n";
        let ops = vec![
            Op::Replace { tag: t(src, 2), end: None, lines: vec!["B".into(), "B2".into()] },
            Op::InsertAfter { tag: "0:".into(), lines: vec!["top".into()] },
            Op::Delete { tag: t(src, 3), end: None },
        ];
        assert_eq!(apply(src, &ops).unwrap(), "top\na\nB\nB2\n");
        assert!(tagged(src).starts_with(&format!("{}|a\n", t(src, 1))));
        // The same tags on a changed file: refused, naming the tag, nothing applied.
        let err = apply("a\nX\nc\n", &ops).unwrap_err();
        assert!(matches!(err, EditError::Stale { line: 2, .. }), "{err:?}");
        assert!(matches!(apply(src, &[Op::Delete { tag: "9:abcdef".into(), end: None }]), Err(EditError::Missing { .. })));
        let twice = [Op::Delete { tag: t(src, 1), end: None }, Op::Replace { tag: t(src, 1), end: None, lines: vec![] }];
        assert!(matches!(apply(src, &twice), Err(EditError::Overlap { line: 1 })));
        let range = [Op::Replace { tag: t(src, 1), end: Some(t(src, 2)), lines: vec!["ab".into()] }];
        assert_eq!(apply(src, &range).unwrap(), "ab\nc\n");
        assert_eq!(apply("x", &[Op::InsertAfter { tag: tag(1, "x"), lines: vec!["y".into()] }]).unwrap(), "x\ny\n");
    }
}
