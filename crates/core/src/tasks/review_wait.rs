//! An MCP session's side of the review loop: `review_wait` (the feedback of a revise, or the
//! user's decision), `session_get` with the proposal's revision and feedback, and a revise
//! opening the session again for the next revision.

use super::sessions::{get_session, owned};
use crate::error::Result;
use crate::lifecycle::State;
use crate::project::Project;

/// `session_get`: the session, its proposal's state and revision, and the feedback on it
/// (each piece with whether it was delivered).
pub fn get_with_review(project: &Project, id: &str) -> Result<serde_json::Value> {
    let s = get_session(project, id)?;
    let bin = project.bin()?;
    let rec = bin.get(&s.row.agent)?;
    let mut v = serde_json::to_value(&s)?;
    v["state"] = serde_json::json!(rec.state);
    v["revision"] = serde_json::json!(rec.revision);
    v["feedback"] = serde_json::to_value(bin.feedback_of(&s.row.agent)?)?;
    Ok(v)
}

/// One look for `review_wait`: `Some` once there is something to tell the client (the
/// feedback of a revise, delivered here once; or the user's decision), `None` while its
/// proposal waits for the user.
pub fn review_poll(project: &Project, actor: &str, id: &str) -> Result<Option<serde_json::Value>> {
    let s = owned(project, actor, id)?;
    // The state first, then the feedback: a revise committing in between is seen as a revise.
    let before = project.bin()?.get(&s.agent)?.state;
    let base = |rec: &crate::store::bin::AgentRecord| serde_json::json!({ "session": id, "agent": s.agent, "state": rec.state, "revision": rec.revision });
    if let Some(text) = crate::review::feedback::take(project, &s.agent, "review_wait")? {
        let rec = project.bin()?.get(&s.agent)?;
        let mut v = base(&rec);
        v["decision"] = "revise".into();
        v["feedback"] = text.into();
        v["next"] = "Revise your proposal with the file tools in this same session, then call session_finish and review_wait again.".into();
        return Ok(Some(v));
    }
    let bin = project.bin()?;
    let mut rec = bin.get(&s.agent)?;
    rec.state = before;
    let mut v = base(&rec);
    // A decision that came with reasons or notes not sent yet: the user is about to revise
    // (the last hunk decided ends the agent first), so the wait goes on.
    if rec.state.is_revisable() && bin.reasons_unsent(&s.agent)? {
        return Ok(None);
    }
    match rec.state {
        State::Reviewing | State::Submitting => return Ok(None),
        State::Accepted => v["decision"] = "accepted".into(),
        State::Rejected => v["decision"] = "rejected".into(),
        State::Undone => v["decision"] = "undone".into(),
        State::Errored => v["decision"] = "errored".into(),
        _ => {
            v["decision"] = "working".into();
            v["next"] = "The session is open: make your changes, call session_finish, then review_wait.".into();
        }
    }
    Ok(Some(v))
}
