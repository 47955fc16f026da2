//! Which agent a request acts on when it names none: the shown one (ghost text), the selected
//! one, the one feedback is for; and `:CairnReject [id] [reason]`'s words.

use super::wire::Args;
use super::Handler;
use cairn_core::command;
use cairn_core::error::{Error, Result};
use cairn_core::lifecycle::State;

impl Handler {
    /// The agent to act on: the given id (prefix), else the selected one, else the latest
    /// reviewing one.
    pub(super) fn target(&self, given: Option<String>) -> Result<String> {
        if let Some(id) = given.filter(|s| !s.is_empty()) {
            return command::resolve(&self.project, &id);
        }
        self.shown_agent()?.ok_or(Error::NothingReviewing)
    }

    /// `:CairnReject [id] [-- reason]`: the first word must name an agent (its id, any unique
    /// prefix), or be `--`, after which everything is the reason for the shown agent. Nothing
    /// is guessed: a word that is no agent's id refuses the reject (a typo would otherwise
    /// reject the shown agent with the typo as its reason). `id`/`reason` arguments are taken
    /// as they are.
    pub(super) fn reject_words(&self, args: &Args) -> Result<(String, Option<String>)> {
        let Some(words) = args.str("words").filter(|w| !w.trim().is_empty()) else {
            return Ok((self.target(args.str("id"))?, args.str("reason")));
        };
        let reason = |r: &str| Some(r.trim().trim_start_matches("--").trim().to_string()).filter(|r| !r.is_empty());
        let words = words.trim();
        if let Some(rest) = words.strip_prefix("--") {
            return Ok((self.target(None)?, reason(rest)));
        }
        let (first, rest) = words.split_once(char::is_whitespace).unwrap_or((words, ""));
        match command::resolve(&self.project, first) {
            Ok(id) => Ok((id, reason(rest))),
            Err(Error::UnknownAgent(_)) => Err(Error::Usage(format!(
                "nothing rejected: '{}' is no agent's id. Name the agent first (:CairnReject ID reason), or give the shown agent a reason after --: :CairnReject -- {}",
                cairn_core::display::escape_line(first),
                cairn_core::display::escape_line(words)
            ))),
            Err(e) => Err(e),
        }
    }

    /// The latest decision `:CairnUndo` takes back without an id: an accept, or the reject of
    /// a proposal under review whose overlay is kept.
    pub(super) fn last_decision(&self) -> Result<String> {
        let bin = self.project.bin()?;
        let mut decided = bin.in_state(State::Accepted)?;
        for r in bin.in_state(State::Rejected)? {
            if cairn_core::review::undo::can_unreject(&self.project, &bin, &r.id)? {
                decided.push(r);
            }
        }
        decided.into_iter().max_by_key(|r| r.state_changed_ms).map(|r| r.id).ok_or_else(|| Error::Usage("nothing was accepted or rejected that can be undone".into()))
    }

    /// The agent feedback is for: the given id, else the selected agent whatever it became
    /// (its last hunk decided ends it accepted or rejected), else the one you last gave
    /// feedback to and did not send yet, else the shown one.
    pub(super) fn feedback_target(&self, given: Option<String>) -> Result<String> {
        if let Some(id) = given.filter(|s| !s.is_empty()) {
            return command::resolve(&self.project, &id);
        }
        let bin = self.project.bin()?;
        let selected = self.state.lock().ok().and_then(|s| s.selected.clone());
        if let Some(id) = selected.filter(|id| bin.get(id).is_ok_and(|r| r.state.is_revisable() || r.state.is_running())) {
            return Ok(id);
        }
        if let Some(id) = bin.last_unsent_feedback()? {
            return Ok(id);
        }
        self.target(None)
    }

    /// The agent whose proposal is shown.
    pub(super) fn shown_agent(&self) -> Result<Option<String>> {
        let bin = self.project.bin()?;
        let selected = self.state.lock().ok().and_then(|s| s.selected.clone());
        // Reviewable proposals and live ones: executing (ghost text grows as the agent works)
        // or submitting (between its run and its review: still the one shown, and the one an
        // id-less command means, never another behind it).
        let live = |s: State| matches!(s, State::Executing | State::Submitting);
        if let Some(id) = selected {
            if bin.get(&id).map(|r| r.state.is_reviewable() || live(r.state)).unwrap_or(false) {
                return Ok(Some(id));
            }
        }
        // A live agent that has written nothing yet does not hide one under review.
        let wrote = |id: &str| self.project.existing_overlay(id).ok().flatten().is_some_and(|o| o.changed_count().unwrap_or(0) > 0);
        let states = [State::Reviewing, State::Undone, State::Executing, State::Submitting];
        let mut candidates: Vec<_> = states.into_iter().map(|s| bin.in_state(s)).collect::<Result<Vec<_>>>()?.into_iter().flatten().filter(|r| !live(r.state) || wrote(&r.id)).collect();
        candidates.sort_by_key(|r| r.seq);
        Ok(candidates.last().map(|r| r.id.clone()))
    }
}
