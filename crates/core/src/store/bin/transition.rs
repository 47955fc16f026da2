//! Lifecycle moves: each checked against [`State::can_move_to`] inside one IMMEDIATE
//! transaction, written with its event.

use super::{insert_event, AgentRecord, Bin, TransitionExtra};
use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::lifecycle::{Provider, State};
use rusqlite::{params, OptionalExtension, TransactionBehavior};

impl Bin {
    /// Moves `id` to `to` if the move is legal from its current state; `action` names the
    /// operation for the error message. Returns the updated record.
    pub fn transition(&mut self, id: &str, to: State, action: &str, extra: TransitionExtra) -> Result<AgentRecord> {
        self.transitions(id, action, [(to, extra)])
    }

    /// [`Bin::transition`] through each of `moves` in turn, in one transaction: no reader sees
    /// the states in between.
    pub fn transitions<'a>(&mut self, id: &str, action: &str, moves: impl IntoIterator<Item = (State, TransitionExtra<'a>)>) -> Result<AgentRecord> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let (cur, pending): (String, i64) = tx
            .query_row("SELECT state, accept_pending FROM agents WHERE id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?
            .ok_or_else(|| Error::UnknownAgent(id.to_string()))?;
        if pending != 0 {
            return Err(Error::IllegalTransition {
                id: id.to_string(),
                from: "being accepted (the accept was interrupted)".into(),
                action: format!("{action}; run `cairn accept {id}` again to finish"),
            });
        }
        let mut from: State = cur.parse().map_err(|e| Error::Internal(format!("bin.db: {e}")))?;
        for (to, extra) in moves {
            if !from.can_move_to(to) {
                return Err(Error::IllegalTransition { id: id.to_string(), from: from.to_string(), action: action.to_string() });
            }
            apply_transition(&tx, id, to, &extra)?;
            from = to;
        }
        tx.commit()?;
        self.get(id)
    }
}

/// Writes the move of `id` to `to` (and its event) inside the caller's transaction, unchecked.
pub(super) fn apply_transition(tx: &rusqlite::Transaction, id: &str, to: State, extra: &TransitionExtra) -> Result<()> {
    let now = crate::time::now_ms();
    tx.execute("UPDATE agents SET state = ?2, state_changed_ms = ?3 WHERE id = ?1", params![id, to.as_str(), now])?;
    // A pending agent holds a mark: one back from a decision (an undo, a revise) gets its own
    // again, or a free one if a pending agent took it meanwhile.
    if !to.is_terminal() {
        super::marks::claim(tx, id)?;
    }
    if let Some((kind, msg)) = extra.error {
        tx.execute("UPDATE agents SET error_kind = ?2, error = ?3 WHERE id = ?1", params![id, kind.as_str(), msg])?;
    }
    if let Some(sub) = extra.submission {
        tx.execute("UPDATE agents SET submission = ?2 WHERE id = ?1", params![id, sub.to_string()])?;
    }
    if let Some(res) = extra.result {
        tx.execute("UPDATE agents SET result = ?2 WHERE id = ?1", params![id, res.to_string()])?;
    }
    // A wrap session keeps its worker (`cairn wrap`) through the reviews of its turns: the
    // session releases it when it ends.
    if to.is_terminal() || to == State::Reviewing {
        tx.execute("UPDATE agents SET worker_pid = NULL, worker_start = NULL WHERE id = ?1 AND provider != ?2", params![id, Provider::Wrap.as_str()])?;
    }
    let message = match (extra.message, extra.error) {
        (Some(m), _) => m.to_string(),
        (None, Some((_, e))) => e.to_string(),
        (None, None) => extra
            .submission
            .and_then(|s| s.get("summary"))
            .and_then(|s| s.as_str())
            .unwrap_or("")
            .to_string(),
    };
    insert_event(tx, id, to, &EventKind::StateChanged { message })?;
    Ok(())
}

