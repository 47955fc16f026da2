//! What the user tells an agent about its proposal, and how the agent is told: reasons,
//! notes on lines and hunk decisions are recorded in `bin.db` as they are made
//! ([`record`], [`comment`]), sent by `cairn revise` and delivered once ([`take`]) as one
//! message ([`render`]) whatever the channel: typed into a wrapped CLI's terminal, returned by
//! MCP's `review_wait`, put into a re-run's prompt, appended to a re-run command line.

use super::Hunk;
use crate::error::{Error, Result};
use crate::project::Project;
use crate::store::bin::{Feedback, FeedbackKind, NewFeedback};

/// The longest reason or note kept (longer ones are refused, not cut).
pub const MAX_TEXT: usize = 8 * 1024;

fn checked(text: &str) -> Result<&str> {
    let t = text.trim();
    if t.len() > MAX_TEXT {
        return Err(Error::Usage(format!("the text is {} bytes; at most {MAX_TEXT}", t.len())));
    }
    Ok(t)
}

/// Records a hunk decision (with the reason, when the user gave one).
pub fn record_hunk(project: &Project, id: &str, path: &str, hunk: &Hunk, accepted: bool, reason: Option<&str>) -> Result<()> {
    let reason = checked(reason.unwrap_or(""))?;
    let first = hunk.old_start as u32 + 1;
    let last = first + (hunk.removed.len().max(1) as u32) - 1;
    let kind = if accepted { FeedbackKind::HunkAccepted } else { FeedbackKind::HunkRejected };
    let text = if reason.is_empty() { describe_hunk(hunk) } else { format!("{} — {reason}", describe_hunk(hunk)) };
    project.bin()?.add_feedback(id, &NewFeedback { kind, path: Some(path), lines: Some((first, last)), text: &text, reasoned: !reason.is_empty() })
}

/// A hunk in one line: what it removes and adds (agent bytes, escaped).
fn describe_hunk(h: &Hunk) -> String {
    let side = |lines: &[String]| {
        let joined = lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ⏎ ");
        let short: String = joined.chars().take(120).collect();
        crate::display::escape_line(&short)
    };
    // Quoted as text, never as code: the agent's own bytes go back to it.
    match (h.removed.is_empty(), h.added.is_empty()) {
        (true, _) => format!("adding «{}»", side(&h.added)),
        (_, true) => format!("removing «{}»", side(&h.removed)),
        _ => format!("«{}» → «{}»", side(&h.removed), side(&h.added)),
    }
}

/// Records why the whole proposal was rejected.
pub fn record_reason(project: &Project, id: &str, reason: &str) -> Result<()> {
    let reason = checked(reason)?;
    if reason.is_empty() {
        return Ok(());
    }
    project.bin()?.add_feedback(id, &NewFeedback { kind: FeedbackKind::Reason, path: None, lines: None, text: reason, reasoned: true })
}

/// `cairn comment ID PATH:LINE[-LINE] TEXT`: a note on lines of a file (1-based, inclusive).
pub fn comment(project: &Project, id: &str, path: &str, lines: (u32, u32), text: &str) -> Result<()> {
    let text = checked(text)?;
    if text.is_empty() {
        return Err(Error::Usage("a comment needs text".into()));
    }
    if lines.0 == 0 || lines.1 < lines.0 {
        return Err(Error::Usage(format!("lines {}-{}: lines count from 1 and the range goes forward", lines.0, lines.1)));
    }
    let path = crate::paths::normalize(path, &project.root)?;
    let rec = project.bin()?.get(id)?;
    if !rec.state.is_revisable() && !rec.state.is_running() {
        return Err(Error::IllegalTransition { id: id.to_string(), from: rec.state.to_string(), action: "comment (a proposal under review)".into() });
    }
    project.bin()?.add_feedback(id, &NewFeedback { kind: FeedbackKind::Comment, path: Some(&path), lines: Some(lines), text, reasoned: true })
}

/// Parses `PATH:LINE` or `PATH:LINE-LINE`.
pub fn parse_place(place: &str) -> Result<(String, (u32, u32))> {
    let bad = || Error::Usage(format!("{place:?}: expected PATH:LINE or PATH:LINE-LINE"));
    let (path, range) = place.rsplit_once(':').ok_or_else(bad)?;
    let (a, b) = range.split_once('-').unwrap_or((range, range));
    let (a, b) = (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
    Ok((path.to_string(), (a, b)))
}

/// Takes the feedback sent to `id` and not delivered yet (marked delivered `via`), rendered;
/// `None` when there is none. Each piece is returned once, ever.
pub fn take(project: &Project, id: &str, via: &str) -> Result<Option<String>> {
    let fb = project.bin()?.take_feedback(id, via)?;
    if fb.is_empty() {
        return Ok(None);
    }
    Ok(Some(render(&fb)))
}

/// The feedback as one message to the agent, newest revision's view: what was accepted,
/// rejected (why), noted, and what to do.
pub fn render(fb: &[Feedback]) -> String {
    let mut out = String::from("Review of your proposed changes:\n");
    for f in fb {
        let at = match (&f.path, f.lines) {
            (Some(p), Some((a, b))) if a == b => format!("{p} line {a}"),
            (Some(p), Some((a, b))) => format!("{p} lines {a}-{b}"),
            (Some(p), None) => p.clone(),
            _ => String::new(),
        };
        let line = match f.kind {
            FeedbackKind::Reason => format!("- The whole proposal was rejected: {}", f.text),
            FeedbackKind::Comment => format!("- Note on {at}: {}", f.text),
            FeedbackKind::HunkAccepted => format!("- Accepted (keep it): the change at {at}, {}", f.text),
            FeedbackKind::HunkRejected => format!("- Rejected (it was dropped; do not repeat it as is): the change at {at}, {}", f.text),
        };
        out.push_str(&crate::display::escape_line(&line));
        out.push('\n');
    }
    out.push_str("Please revise your changes accordingly.");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is typed into an agent's terminal carries no byte a terminal obeys: the agent's
    /// own lines (in a hunk) and the user's reason are escaped, on one line each, so neither
    /// can end the bracketed paste early, press Enter or set the clipboard. (The text is never
    /// given to a shell: see `wrap::argv::takes_prompt`.)
    #[test]
    fn the_message_to_the_agent_carries_no_control_bytes() {
        let hunk = Hunk { old_start: 2, removed: vec!["a\x1b[201~\rrm -rf ~\r".into()], added: vec!["\x1b]52;c;SGk=\x07`touch x`".into()] };
        let piece = |kind, text: String| Feedback { seq: 1, revision: 1, kind, path: Some("f\x1b.py".into()), lines: Some((3, 3)), text, ts_ms: 0, sent_in: Some(2), delivered_via: None };
        let text = render(&[piece(FeedbackKind::HunkRejected, format!("{} — no\rway", describe_hunk(&hunk))), piece(FeedbackKind::Comment, "two\nlines\u{202e}".into())]);
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text:?}");
        assert!(!text.contains('\u{202e}') && text.contains("«a\\x1b[201~"), "{text:?}");
        assert_eq!(text.lines().count(), 4, "a header, one line per piece, the request: {text:?}");
    }
}
