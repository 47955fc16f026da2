//! Exact turn ends for a wrap session whose edge knows when the agent's turn is over (`cairn
//! acp`: `session/prompt` returned), instead of the quiet screen an interactive CLI leaves:
//! the edge asks ([`TurnEnds::end_turn`]) and waits; the session's loop answers at its next
//! look, after syncing what the agent wrote, with its proposal in review.

use std::sync::mpsc::{channel, Sender};
use std::sync::Mutex;

/// The turn ends an edge asked for, not yet served.
#[derive(Debug, Default)]
pub struct TurnEnds {
    /// Waiting edges; `None` once the session is over (nothing serves an ask any more).
    waiting: Mutex<Option<Vec<Sender<Result<(), String>>>>>,
}

impl TurnEnds {
    pub fn new() -> TurnEnds {
        TurnEnds { waiting: Mutex::new(Some(Vec::new())) }
    }

    /// Asks the session to end the agent's turn now (its writes synced, a proposal with changes
    /// to `reviewing`) and waits for it. An error says why it could not (the session is over,
    /// or the end failed).
    pub fn end_turn(&self) -> Result<(), String> {
        let (tx, rx) = channel();
        match self.waiting.lock().map_err(|_| "poisoned".to_string())?.as_mut() {
            Some(w) => w.push(tx),
            None => return Err("the session is over".into()),
        }
        rx.recv().map_err(|_| "the session ended before the turn did".to_string())?
    }

    /// Serves every waiting ask with `end` (run once when any waits).
    pub(crate) fn serve(&self, end: impl FnOnce() -> crate::error::Result<()>) {
        let waiting = match self.waiting.lock() {
            Ok(mut w) => w.as_mut().map(std::mem::take).unwrap_or_default(),
            Err(_) => return,
        };
        if waiting.is_empty() {
            return;
        }
        let r = end().map_err(|e| e.to_string());
        for tx in waiting {
            let _ = tx.send(r.clone());
        }
    }

    /// The session is over: asks waiting and to come fail.
    pub(crate) fn close(&self) {
        if let Ok(mut w) = self.waiting.lock() {
            w.take();
        }
    }
}
