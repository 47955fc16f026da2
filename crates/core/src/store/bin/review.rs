//! The review loop's rows in `bin.db`: what the user told an agent (reasons, notes on lines,
//! hunk decisions), the revisions of its proposal, and the delivery of each piece of feedback
//! to the agent, exactly once.
//!
//! A piece of feedback is *recorded* with the revision it is about, *sent* by `cairn revise`
//! (which starts the next revision and stamps the feedback with it, in the same transaction
//! as the move back to work) and *delivered* when the agent receives it (typed into its
//! terminal, returned by `review_wait`, put into its prompt): [`Bin::take_feedback`] marks it
//! delivered and returns it in one transaction, so a second taker gets nothing, whatever
//! process restarts in between.

use super::{apply_transition, insert_event, Bin, TransitionExtra};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::lifecycle::State;
use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS feedback(
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    kind TEXT NOT NULL,
    path TEXT,
    line_start INTEGER,
    line_end INTEGER,
    text TEXT NOT NULL,
    ts_ms INTEGER NOT NULL,
    sent_in INTEGER,
    delivered_ms INTEGER,
    delivered_via TEXT,
    reasoned INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS feedback_agent ON feedback(agent_id);
CREATE TABLE IF NOT EXISTS revisions(
    agent_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    ts_ms INTEGER NOT NULL,
    why TEXT NOT NULL,
    PRIMARY KEY(agent_id, revision)
) WITHOUT ROWID;
";

/// Adds the `revision` column to a `bin.db` made before revisions existed.
pub(super) fn migrate(conn: &Connection) -> Result<()> {
    if conn.prepare("SELECT revision FROM agents LIMIT 0").is_err() {
        conn.execute_batch("ALTER TABLE agents ADD COLUMN revision INTEGER NOT NULL DEFAULT 1")?;
        // Undone agents from before the `undone` state were accepted ones with a flag.
        conn.execute("UPDATE agents SET state = ?1 WHERE state = ?2 AND undone = 1", params![State::Undone.as_str(), State::Accepted.as_str()])?;
    }
    Ok(())
}

/// What a piece of feedback is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FeedbackKind {
    /// Why the whole proposal was rejected.
    Reason,
    /// A note on lines of a file (`cairn comment`, `:CairnComment`).
    Comment,
    /// A hunk taken into the project.
    HunkAccepted,
    /// A hunk dropped from the proposal, with the reason when one was given.
    HunkRejected,
}

impl FeedbackKind {
    fn as_str(self) -> &'static str {
        match self {
            FeedbackKind::Reason => "reason",
            FeedbackKind::Comment => "comment",
            FeedbackKind::HunkAccepted => "hunk_accepted",
            FeedbackKind::HunkRejected => "hunk_rejected",
        }
    }
    fn parse(s: &str) -> FeedbackKind {
        match s {
            "comment" => FeedbackKind::Comment,
            "hunk_accepted" => FeedbackKind::HunkAccepted,
            "hunk_rejected" => FeedbackKind::HunkRejected,
            _ => FeedbackKind::Reason,
        }
    }
}

/// One piece of feedback as recorded.
#[derive(Debug, Clone, Serialize)]
pub struct Feedback {
    pub seq: i64,
    /// The revision it is about.
    pub revision: u32,
    pub kind: FeedbackKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// 1-based, inclusive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<(u32, u32)>,
    pub text: String,
    pub ts_ms: i64,
    /// The revision whose start sent it (`None`: not sent yet).
    pub sent_in: Option<u32>,
    /// How it reached the agent (`None`: not yet).
    pub delivered_via: Option<String>,
}

/// A new piece of feedback, before it is recorded.
#[derive(Debug, Clone)]
pub struct NewFeedback<'a> {
    pub kind: FeedbackKind,
    pub path: Option<&'a str>,
    pub lines: Option<(u32, u32)>,
    pub text: &'a str,
    /// The user wrote something for the agent (a reason, a note), beyond a bare decision:
    /// a revise is expected.
    pub reasoned: bool,
}

/// One revision of a proposal.
#[derive(Debug, Clone, Serialize)]
pub struct Revision {
    pub revision: u32,
    pub ts_ms: i64,
    /// Why it started (the feedback sent, or the agent writing again after its turn).
    pub why: String,
}

const FEEDBACK_COLS: &str = "seq, revision, kind, path, line_start, line_end, text, ts_ms, sent_in, delivered_via";

fn feedback_row(r: &rusqlite::Row) -> rusqlite::Result<Feedback> {
    let lines = match (r.get::<_, Option<u32>>(4)?, r.get::<_, Option<u32>>(5)?) {
        (Some(a), Some(b)) => Some((a, b)),
        _ => None,
    };
    Ok(Feedback {
        seq: r.get(0)?,
        revision: r.get(1)?,
        kind: FeedbackKind::parse(&r.get::<_, String>(2)?),
        path: r.get(3)?,
        lines,
        text: r.get(6)?,
        ts_ms: r.get(7)?,
        sent_in: r.get(8)?,
        delivered_via: r.get(9)?,
    })
}

/// The feedback sent with revision `revision` and not delivered yet.
fn sent_with(conn: &Connection, id: &str, revision: u32) -> Result<Vec<Feedback>> {
    let mut st = conn.prepare(&format!("SELECT {FEEDBACK_COLS} FROM feedback WHERE agent_id = ?1 AND sent_in = ?2 AND delivered_via IS NULL ORDER BY seq"))?;
    let rows = st.query_map(params![id, revision], feedback_row)?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

impl Bin {
    /// The revision agent `id`'s proposal is at (1 for the first).
    pub fn revision(&self, id: &str) -> Result<u32> {
        self.conn.query_row("SELECT revision FROM agents WHERE id = ?1", [id], |r| r.get(0)).optional()?.ok_or_else(|| Error::UnknownAgent(id.to_string()))
    }

    /// Records feedback on agent `id`'s current revision (and its event).
    pub fn add_feedback(&self, id: &str, fb: &NewFeedback) -> Result<()> {
        let tx = self.write_tx()?;
        let (state, revision): (String, u32) = tx.query_row("SELECT state, revision FROM agents WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?))).optional()?.ok_or_else(|| Error::UnknownAgent(id.to_string()))?;
        let (a, b) = fb.lines.map_or((None, None), |(a, b)| (Some(a), Some(b)));
        // Recorded once: an action re-run after a kill records the same piece again.
        let same = tx
            .query_row(
                "SELECT 1 FROM feedback WHERE agent_id = ?1 AND revision = ?2 AND kind = ?3 AND path IS ?4 AND line_start IS ?5 AND line_end IS ?6 AND text = ?7 AND sent_in IS NULL",
                params![id, revision, fb.kind.as_str(), fb.path, a, b, fb.text],
                |_| Ok(()),
            )
            .optional()?;
        if same.is_some() {
            return Ok(());
        }
        tx.execute(
            "INSERT INTO feedback(agent_id, revision, kind, path, line_start, line_end, text, ts_ms, reasoned) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![id, revision, fb.kind.as_str(), fb.path, a, b, fb.text, crate::time::now_ms(), fb.reasoned],
        )?;
        let state = state.parse().unwrap_or(State::Reviewing);
        let event = EventKind::Feedback { kind: fb.kind.as_str().to_string(), path: fb.path.map(str::to_string), lines: fb.lines, text: fb.text.to_string() };
        insert_event(&tx, id, state, &event)?;
        tx.commit()?;
        Ok(())
    }

    /// Every piece of feedback on `id`, oldest first.
    pub fn feedback_of(&self, id: &str) -> Result<Vec<Feedback>> {
        let mut st = self.conn.prepare_cached(&format!("SELECT {FEEDBACK_COLS} FROM feedback WHERE agent_id = ?1 ORDER BY seq"))?;
        let rows = st.query_map([id], feedback_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Sends the unsent feedback with the current revision (a revise of an agent already at
    /// work: a live session that went on by itself). Returns what was sent.
    pub fn send_feedback(&self, id: &str) -> Result<Vec<Feedback>> {
        let tx = self.write_tx()?;
        let revision: u32 = tx.query_row("SELECT revision FROM agents WHERE id = ?1", [id], |r| r.get(0))?;
        tx.execute("UPDATE feedback SET sent_in = ?2 WHERE agent_id = ?1 AND sent_in IS NULL", params![id, revision])?;
        let sent = sent_with(&tx, id, revision)?;
        tx.commit()?;
        Ok(sent)
    }

    /// Feedback recorded and not sent yet (what the next revise sends).
    pub fn unsent_feedback(&self, id: &str) -> Result<Vec<Feedback>> {
        Ok(self.feedback_of(id)?.into_iter().filter(|f| f.sent_in.is_none()).collect())
    }

    /// Does `id` have reasons or notes not sent yet (a revise is expected)?
    pub fn reasons_unsent(&self, id: &str) -> Result<bool> {
        Ok(self.conn.query_row("SELECT EXISTS(SELECT 1 FROM feedback WHERE agent_id = ?1 AND sent_in IS NULL AND reasoned)", [id], |r| r.get(0))?)
    }

    /// The agent that last got feedback not sent yet, if any.
    pub fn last_unsent_feedback(&self) -> Result<Option<String>> {
        Ok(self.conn.query_row("SELECT agent_id FROM feedback WHERE sent_in IS NULL ORDER BY seq DESC LIMIT 1", [], |r| r.get(0)).optional()?)
    }

    /// Sent and not delivered yet.
    pub fn undelivered_feedback(&self, id: &str) -> Result<Vec<Feedback>> {
        Ok(self.feedback_of(id)?.into_iter().filter(|f| f.sent_in.is_some() && f.delivered_via.is_none()).collect())
    }

    /// Starts revision N+1 of `id`: with `send` (a revise), the unsent feedback is sent with
    /// it; the agent moves to `to` (executing, queued, or reviewing for a session that is
    /// re-run by hand) and an MCP session of it is open again, all in one transaction.
    /// Returns the new revision and the feedback sent.
    pub fn start_revision(&mut self, id: &str, to: State, why: &str, send: bool) -> Result<(u32, Vec<Feedback>)> {
        let tx = self.write_tx()?;
        let (state, pending, revision): (String, i64, u32) = tx
            .query_row("SELECT state, accept_pending, revision FROM agents WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?
            .ok_or_else(|| Error::UnknownAgent(id.to_string()))?;
        let from: State = state.parse().map_err(|e| Error::Internal(format!("bin.db: {e}")))?;
        let reopen = to == State::Reviewing && from.is_revisable();
        if pending != 0 || !from.is_revisable() || !(from.can_move_to(to) || from == to || reopen) {
            return Err(Error::IllegalTransition { id: id.to_string(), from: state, action: "revise (a proposal that was reviewed: reviewing, accepted, rejected or undone)".into() });
        }
        let next = revision + 1;
        tx.execute("UPDATE agents SET revision = ?2, undone = 0 WHERE id = ?1", params![id, next])?;
        if send {
            tx.execute("UPDATE feedback SET sent_in = ?2 WHERE agent_id = ?1 AND sent_in IS NULL", params![id, next])?;
        }
        tx.execute("UPDATE sessions SET status = 'active', heartbeat_ms = ?2 WHERE agent_id = ?1 AND status = 'finished'", params![id, crate::time::now_ms()])?;
        tx.execute("INSERT OR REPLACE INTO revisions(agent_id, revision, ts_ms, why) VALUES (?1, ?2, ?3, ?4)", params![id, next, crate::time::now_ms(), why])?;
        let message = format!("revision {next}: {why}");
        if from != to {
            apply_transition(&tx, id, to, &TransitionExtra { message: Some(&message), ..Default::default() })?;
        }
        insert_event(&tx, id, to, &EventKind::Revised { revision: next, why: why.to_string() })?;
        let sent = sent_with(&tx, id, next)?;
        tx.commit()?;
        Ok((next, sent))
    }

    /// The feedback sent to `id` and not delivered yet, marked delivered (`via`) in the same
    /// transaction: each piece is returned once, ever.
    pub fn take_feedback(&self, id: &str, via: &str) -> Result<Vec<Feedback>> {
        // A live session looks every quarter second: a read first, the write lock only when
        // there is something to take.
        let waiting: bool = self.conn.query_row("SELECT EXISTS(SELECT 1 FROM feedback WHERE agent_id = ?1 AND sent_in IS NOT NULL AND delivered_via IS NULL)", [id], |r| r.get(0))?;
        if !waiting {
            return Ok(Vec::new());
        }
        let tx = self.write_tx()?;
        let rows = {
            let mut st = tx.prepare(&format!("SELECT {FEEDBACK_COLS} FROM feedback WHERE agent_id = ?1 AND sent_in IS NOT NULL AND delivered_via IS NULL ORDER BY seq"))?;
            let rows = st.query_map([id], feedback_row)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()?
        };
        if rows.is_empty() {
            return Ok(rows);
        }
        tx.execute("UPDATE feedback SET delivered_ms = ?2, delivered_via = ?3 WHERE agent_id = ?1 AND sent_in IS NOT NULL AND delivered_via IS NULL", params![id, crate::time::now_ms(), via])?;
        let state: String = tx.query_row("SELECT state FROM agents WHERE id = ?1", [id], |r| r.get(0))?;
        insert_event(&tx, id, state.parse().unwrap_or(State::Executing), &EventKind::FeedbackDelivered { via: via.to_string(), count: rows.len() })?;
        tx.commit()?;
        Ok(rows)
    }

    /// Feedback [`Bin::take_feedback`] returned whose delivery failed (the agent's terminal
    /// was gone): undelivered again, for the next way it can reach the agent.
    pub fn untake_feedback(&self, id: &str, taken: &[Feedback]) -> Result<()> {
        let tx = self.write_tx()?;
        for f in taken {
            tx.execute("UPDATE feedback SET delivered_ms = NULL, delivered_via = NULL WHERE agent_id = ?1 AND seq = ?2", params![id, f.seq])?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Every revision after the first, oldest first.
    pub fn revisions_of(&self, id: &str) -> Result<Vec<Revision>> {
        let mut st = self.conn.prepare_cached("SELECT revision, ts_ms, why FROM revisions WHERE agent_id = ?1 ORDER BY revision")?;
        let rows = st.query_map([id], |r| Ok(Revision { revision: r.get(0)?, ts_ms: r.get(1)?, why: r.get(2)? }))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// An undone agent: `undone`, its accept's journal and accepted hunks cleared (their
    /// changes are out of the project again), so accepting it again starts afresh.
    /// `paths`: the files the undo restored or removed (open buffers follow them).
    pub fn mark_undone(&mut self, id: &str, paths: Vec<String>) -> Result<()> {
        let tx = self.write_tx()?;
        tx.execute("DELETE FROM journal WHERE agent_id = ?1", [id])?;
        tx.execute("DELETE FROM hunk_decisions WHERE agent_id = ?1 AND accepted", [id])?;
        // The move to `undone` is reported by its one `undone` event.
        tx.execute("UPDATE agents SET undone = 1, state = ?2, state_changed_ms = ?3 WHERE id = ?1", params![id, State::Undone.as_str(), crate::time::now_ms()])?;
        insert_event(&tx, id, State::Undone, &EventKind::Undone { paths })?;
        tx.commit()?;
        self.forget_old(id);
        Ok(())
    }

    /// Gives agent `id` back to `worker` (a live `cairn wrap` whose turn ended and went to
    /// review keeps the session).
    pub fn keep_worker(&self, id: &str, worker: super::Worker) -> Result<()> {
        self.conn.execute("UPDATE agents SET worker_pid = ?2, worker_start = ?3 WHERE id = ?1", params![id, worker.pid, worker.start])?;
        Ok(())
    }

    /// Releases agent `id`'s worker (its session ended).
    pub fn release_worker(&self, id: &str) -> Result<()> {
        self.conn.execute("UPDATE agents SET worker_pid = NULL, worker_start = NULL WHERE id = ?1", [id])?;
        Ok(())
    }
}
