//! The agent lifecycle of SPEC §3 as pure data: states, priorities and the legal moves, and
//! the other closed sets of an agent's record: how it failed ([`ErrorKind`]) and where its
//! code came from ([`Provider`]).
//! No I/O here; [`crate::store::bin`] persists what this module allows.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Where an agent is in its life. Lowercase on every surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Queued,
    Generating,
    Executing,
    Submitting,
    Reviewing,
    Accepted,
    Rejected,
    Errored,
    /// Accepted, then undone: its change is out of the project again and can be reviewed and
    /// accepted again.
    Undone,
}

impl State {
    /// Every state, in lifecycle order.
    pub const ALL: [State; 9] = [
        State::Queued,
        State::Generating,
        State::Executing,
        State::Submitting,
        State::Reviewing,
        State::Accepted,
        State::Rejected,
        State::Errored,
        State::Undone,
    ];

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Queued => "queued",
            State::Generating => "generating",
            State::Executing => "executing",
            State::Submitting => "submitting",
            State::Reviewing => "reviewing",
            State::Accepted => "accepted",
            State::Rejected => "rejected",
            State::Errored => "errored",
            State::Undone => "undone",
        }
    }

    /// Accepted and rejected are final; errored only moves on to rejected (discard).
    pub fn is_terminal(self) -> bool {
        matches!(self, State::Accepted | State::Rejected | State::Errored)
    }

    /// A proposal in these states can be reviewed: accepted, rejected, hunk by hunk.
    pub fn is_reviewable(self) -> bool {
        matches!(self, State::Reviewing | State::Undone)
    }

    /// A revise (`cairn revise`) can send the agent back to work from these states (and
    /// reopen a decided one for review: only [`crate::store::bin::Bin::start_revision`]
    /// makes that move, never a plain transition, so a late submit cannot undo a reject).
    pub fn is_revisable(self) -> bool {
        matches!(self, State::Reviewing | State::Undone | State::Accepted | State::Rejected)
    }

    /// A worker owns the agent in these states (they count against the concurrency limit).
    pub fn is_running(self) -> bool {
        matches!(self, State::Generating | State::Executing | State::Submitting)
    }

    /// Is `self -> to` a legal move?
    pub fn can_move_to(self, to: State) -> bool {
        use State::*;
        matches!(
            (self, to),
            (Queued, Generating)
                | (Generating, Executing)
                | (Executing, Submitting)
                | (Submitting, Reviewing)
                | (Reviewing, Accepted)
                // `cairn wrap --agent`: the same proposal, worked on again.
                | (Reviewing, Executing)
                | (Reviewing, Rejected)
                | (Queued, Rejected)
                | (Errored, Rejected)
                // A wrap session that ends having proposed nothing.
                | (Executing, Rejected)
                // `cairn undo`, and the undone proposal decided again.
                | (Accepted, Undone)
                | (Undone, Accepted)
                | (Undone, Rejected)
                // `cairn undo` of a reject: the proposal back under review.
                | (Rejected, Reviewing)
        ) || (to == Errored && !self.is_terminal())
            // `cairn revise`: the next revision of the same proposal, worked on by a live
            // agent (executing), re-run (queued) or reopened for `cairn wrap --agent`.
            || (self.is_revisable() && matches!(to, Executing | Queued))
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for State {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        State::ALL.into_iter().find(|st| st.as_str() == s).ok_or_else(|| format!("unknown state '{s}'"))
    }
}

/// Queue priority; higher runs first, FIFO within one priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    Low = 0,
    #[default]
    Normal = 1,
    High = 2,
    Urgent = 3,
}

impl Priority {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
            Priority::Urgent => "urgent",
        }
    }

    pub(crate) fn from_i64(v: i64) -> Priority {
        match v {
            0 => Priority::Low,
            2 => Priority::High,
            3 => Priority::Urgent,
            _ => Priority::Normal,
        }
    }
}

impl FromStr for Priority {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "low" => Ok(Priority::Low),
            "normal" => Ok(Priority::Normal),
            "high" => Ok(Priority::High),
            "urgent" => Ok(Priority::Urgent),
            _ => Err(format!("unknown priority '{s}' (low, normal, high, urgent)")),
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

closed_set! {
    /// Why an agent ended `errored`.
    ErrorKind, "error kind" {
        /// The code provider failed (missing script, LLM error).
        Provider = "provider",
        /// The pre-flight check refused the script.
        Check = "check",
        /// The script did not compile in the interpreter.
        Syntax = "syntax",
        /// The script raised an exception it did not catch.
        Exception = "exception",
        /// The wall-clock limit passed.
        Timeout = "timeout",
        /// The heap cap was reached.
        Memory = "memory",
        /// The recursion limit was reached.
        Recursion = "recursion",
        /// A parent-side limit (bytes or files written, log size, message size).
        Limit = "limit",
        /// The sandbox child died or sent something it should not.
        Crash = "crash",
        /// Its worker stopped twice mid-run.
        Interrupted = "interrupted",
        /// Cairn itself failed (storage, I/O) while running it.
        Host = "host",
        /// A bug in cairn (a panic at the dispatch edge, an unreadable record).
        Internal = "internal",
    }
}

closed_set! {
    /// Where an agent's code comes from (SPEC §5).
    Provider, "provider" {
        /// A `.pym` file of the project.
        File = "file",
        /// The reference is the code itself.
        Inline = "inline",
        /// Generated by the configured LLM from a task in words.
        Llm = "llm",
        /// An MCP session's agent (`cairn mcp`): its changes come from the session's tool
        /// calls, not from a script; it is never queued.
        Mcp = "mcp",
        /// A wrap session's agent (`cairn wrap`): its changes are what an agent CLI wrote in
        /// its confined copy-on-write view; it is never queued.
        Wrap = "wrap",
    }
}

#[cfg(test)]
mod tests {
    use super::State::*;
    use super::*;

    #[test]
    fn legal_moves_are_exactly_spec_3() {
        let legal = [
            (Queued, Generating),
            (Generating, Executing),
            (Executing, Submitting),
            (Submitting, Reviewing),
            (Reviewing, Accepted),
            (Reviewing, Rejected),
            (Reviewing, Executing),
            (Queued, Rejected),
            (Errored, Rejected),
            (Queued, Errored),
            (Generating, Errored),
            (Executing, Errored),
            (Submitting, Errored),
            (Reviewing, Errored),
            (Executing, Rejected),
            (Accepted, Undone),
            (Undone, Accepted),
            (Undone, Rejected),
            (Rejected, Reviewing),
            (Undone, Errored),
            (Reviewing, Queued),
            (Accepted, Executing),
            (Accepted, Queued),
            (Rejected, Executing),
            (Rejected, Queued),
            (Undone, Executing),
            (Undone, Queued),
        ];
        for from in State::ALL {
            for to in State::ALL {
                assert_eq!(from.can_move_to(to), legal.contains(&(from, to)), "{from} -> {to}");
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for s in State::ALL {
            assert_eq!(s.as_str().parse::<State>().unwrap(), s);
        }
        assert!("Queued".parse::<State>().is_err());
        assert!(Priority::Urgent > Priority::High && Priority::Normal > Priority::Low);
        for k in ErrorKind::ALL {
            assert_eq!(k.as_str().parse::<ErrorKind>().unwrap(), *k);
        }
        assert!("nope".parse::<Provider>().unwrap_err().contains("file, inline, llm"));
    }
}
