//! Edits by text, as coding agents are trained to make them: `edit_file(path, edits, dry_run)`
//! replaces each `old_text` (exactly once, or every time with `replace_all`) and answers with
//! the unified diff; `move_file(src, dst)` renames. Both go through `write_file`'s checks,
//! limits and audit.

use super::args::{arg, type_name};
use super::{raise, CallError, Host};
use crate::view::Node;
use serde_json::{json, Value};

/// Most edits in one `edit_file` call.
pub const MAX_EDITS: usize = 100;

/// One replacement of an `edit_file` call.
#[derive(Debug, serde::Deserialize)]
struct Edit {
    #[serde(alias = "oldText", alias = "old_string")]
    old_text: String,
    #[serde(alias = "newText", alias = "new_string")]
    new_text: String,
    #[serde(default, alias = "replaceAll")]
    replace_all: bool,
}

/// The text shortened for an error message (one line, at most 80 characters).
fn brief(text: &str) -> String {
    let one: String = text.trim().chars().take(80).collect::<String>().replace('\n', "\\n");
    if text.trim().chars().count() > 80 {
        format!("{one}…")
    } else {
        one
    }
}

/// 1-based line numbers of byte offsets `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// The lines of `text` most like the first non-blank line of `wanted`, with their numbers.
fn closest(text: &str, wanted: &str) -> String {
    let needle = wanted.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let mut scored: Vec<(f32, usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (similar::TextDiff::from_chars(needle, l.trim()).ratio(), i + 1, l))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let best: Vec<String> = scored.iter().take(3).filter(|s| s.0 > 0.3).map(|(_, n, l)| format!("{n}: {}", brief(l))).collect();
    if best.is_empty() {
        "no similar line".into()
    } else {
        format!("closest lines: {}", best.join(" | "))
    }
}

/// Byte ranges in `text` of `old` matched line by line, ignoring line endings and trailing
/// whitespace (the tolerant match, tried only when the exact one finds nothing).
fn tolerant_ranges(text: &str, old: &str) -> Vec<(usize, usize)> {
    let want: Vec<&str> = old.lines().map(str::trim_end).collect();
    if want.iter().all(|l| l.is_empty()) {
        return Vec::new();
    }
    let mut starts = Vec::new();
    let mut at = 0;
    for l in text.split_inclusive('\n') {
        starts.push((at, l));
        at += l.len();
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i + want.len() <= starts.len() {
        if want.iter().enumerate().all(|(k, w)| starts[i + k].1.trim_end() == *w) {
            let (s, _) = starts[i];
            let (last, l) = starts[i + want.len() - 1];
            // Keep the last line's own ending when `old` had none.
            let end = if old.ends_with('\n') { last + l.len() } else { last + l.trim_end_matches(['\n', '\r']).len() };
            out.push((s, end));
            i += want.len();
        } else {
            i += 1;
        }
    }
    out
}

/// Applies `edits` in order to `text`: the new text and whether a tolerant match was used.
fn apply(rel: &str, text: &str, edits: &[Edit]) -> Result<(String, bool), CallError> {
    let mut cur = text.to_string();
    let mut tolerant = false;
    for (n, e) in edits.iter().enumerate() {
        let which = if edits.len() > 1 { format!("edits[{n}]: ") } else { String::new() };
        if e.old_text.is_empty() {
            return Err(raise("ValueError", format!("{which}old_text is empty; to create or replace a whole file use write_file")));
        }
        let mut ranges: Vec<(usize, usize)> = cur.match_indices(&e.old_text).map(|(i, m)| (i, i + m.len())).collect();
        if ranges.is_empty() {
            ranges = tolerant_ranges(&cur, &e.old_text);
            tolerant |= !ranges.is_empty();
        }
        if ranges.is_empty() {
            return Err(raise("ValueError", format!("{which}old_text not found in {rel}: \"{}\"; {}. Copy the text exactly from read_file (whitespace included)", brief(&e.old_text), closest(&cur, &e.old_text))));
        }
        if ranges.len() > 1 && !e.replace_all {
            let lines: Vec<String> = ranges.iter().take(10).map(|r| line_of(&cur, r.0).to_string()).collect();
            return Err(raise(
                "ValueError",
                format!("{which}old_text matches {} times in {rel} (lines {}); add surrounding lines to make it unique, or set replace_all", ranges.len(), lines.join(", ")),
            ));
        }
        for (s, end) in ranges.into_iter().rev() {
            cur.replace_range(s..end, &e.new_text);
        }
    }
    Ok((cur, tolerant))
}

/// A unified diff of one file's change (paths as git shows them).
pub(crate) fn file_diff(rel: &str, old: &str, new: &str) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    let text = diff.unified_diff().context_radius(3).header(&format!("a/{rel}"), &format!("b/{rel}")).to_string();
    crate::display::escape(&text).into_owned()
}

impl Host<'_> {
    /// `edit_file(path, edits, dry_run=False)`: all edits apply together or none does.
    pub(super) fn edit_file(&mut self, rel: &str, edits: Option<&Value>, dry_run: bool) -> Result<Value, CallError> {
        let edits: Vec<Edit> = match edits {
            Some(v @ Value::Array(items)) if !items.is_empty() && items.len() <= MAX_EDITS => {
                serde_json::from_value(v.clone()).map_err(|e| raise("ValueError", format!("edit_file(): edits: each is {{old_text, new_text, replace_all?}}: {e}")))?
            }
            Some(Value::Array(items)) => return Err(raise("ValueError", format!("edit_file(): edits must hold 1 to {MAX_EDITS} edits, not {}", items.len()))),
            Some(other) => return Err(raise("TypeError", format!("edit_file(): edits must be a list of {{old_text, new_text}}, not {}", type_name(other)))),
            None => return Err(raise("TypeError", "edit_file(): missing required argument 'edits'")),
        };
        super::files::refuse_protected(rel)?;
        let Value::String(text) = self.read_file(rel)? else { return Err(raise("ValueError", format!("not a text file: {rel}"))) };
        let (new, tolerant) = apply(rel, &text, &edits)?;
        if !dry_run && new != text {
            self.write_file(rel, &new)?;
        }
        let mut out = json!({ "path": rel, "diff": file_diff(rel, &text, &new), "edits": edits.len(), "dry_run": dry_run });
        if tolerant {
            out["note"] = json!("an old_text matched only when line endings and trailing whitespace were ignored");
        }
        Ok(out)
    }

    /// `move_file(src, dst)`: the content and mode of `src` at `dst` (which must not exist),
    /// and `src` deleted; the review shows a rename.
    pub(super) fn move_file(&mut self, src: &str, dst: &str) -> Result<Value, CallError> {
        super::files::refuse_protected(src)?;
        super::files::refuse_protected(dst)?;
        match self.view.node(src)? {
            Node::File => {}
            Node::Dir => return Err(raise("IsADirectoryError", format!("move_file(): src {src} is a directory; move its files one by one"))),
            Node::Absent => return Err(raise("FileNotFoundError", format!("move_file(): no such file: {src}"))),
        }
        if self.view.node(dst)? != Node::Absent {
            return Err(raise("FileExistsError", format!("move_file(): dst {dst} exists; delete it first or choose another path")));
        }
        let Some((bytes, mode)) = self.view.read_capped(src, super::files::MAX_READ_FILE_BYTES)?.and_then(|c| match c {
            crate::store::fsx::Capped::Content(b, m) => Some((b, m)),
            crate::store::fsx::Capped::TooLarge(_) => None,
        }) else {
            return Err(raise("ValueError", format!("move_file(): {src} is larger than {} bytes", super::files::MAX_READ_FILE_BYTES)));
        };
        self.charge_read(bytes.len() as u64)?;
        self.write_bytes(dst, &bytes, Some(mode))?;
        self.delete_file(src)?;
        Ok(json!({ "from": src, "to": dst }))
    }
}

/// `dry_run` as a bool argument (absent: false).
pub(super) fn flag(args: &[Value], kwargs: &serde_json::Map<String, Value>, i: usize, name: &str) -> Result<bool, CallError> {
    match arg(args, kwargs, i, name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(raise("TypeError", format!("{name} must be a bool, not {}", type_name(other)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(old: &str, new: &str, all: bool) -> Edit {
        Edit { old_text: old.into(), new_text: new.into(), replace_all: all }
    }

    #[test]
    fn exact_ambiguous_missing_and_tolerant() {
        let text = "def a():\n    return 1\n\ndef b():\n    return 1\n";
        assert!(matches!(apply("x.py", text, &[e("return 1", "return 2", false)]), Err(CallError::Raise { message, .. }) if message.contains("2 times") && message.contains("lines 2, 5")));
        let (all, _) = apply("x.py", text, &[e("return 1", "return 2", true)]).ok().unwrap();
        assert_eq!(all.matches("return 2").count(), 2);
        let (one, tol) = apply("x.py", text, &[e("def b():\n    return 1", "def b():\n    return 3", false)]).ok().unwrap();
        assert!(one.ends_with("return 3\n") && !tol);
        assert!(matches!(apply("x.py", text, &[e("def c():", "x", false)]), Err(CallError::Raise { message, .. }) if message.contains("closest lines: 1: def a():") ));
        let (t, tol) = apply("x.py", "a  \r\nb\r\n", &[e("a\nb\n", "c\n", false)]).ok().unwrap();
        assert!(tol);
        assert_eq!(t, "c\n");
        // All or nothing: the second edit fails, so nothing of the first is kept by the caller.
        assert!(apply("x.py", text, &[e("def a", "def z", false), e("nope", "x", false)]).is_err());
    }
}
