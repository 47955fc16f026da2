//! A running wrap session's review loop: each look syncs the written layer, ends a turn (a
//! still screen, or exactly where `cairn acp` says), names the session from the first task
//! typed, and types waiting feedback into the agent's terminal.

use super::*;

/// A running session's review loop.
pub(super) struct Live {
    /// The layer's entries as last synced.
    pub(super) seen: BTreeMap<String, Stamp>,
    /// The agent's output mark when its last turn went to review (a turn ends once per burst
    /// of output).
    pub(super) turn_mark: Option<i64>,
    /// The session has its name (else the first task line the user types gives it one).
    pub(super) named: bool,
    /// Where turns end exactly (`cairn acp`: a prompt's answer), instead of a still screen.
    pub(super) turns: Option<std::sync::Arc<TurnEnds>>,
}

impl Live {
    /// One look at the session: its writes into the proposal (a decided proposal starts its
    /// next revision first), its turn's end, feedback to type.
    pub(super) fn step(&mut self, project: &Project, agent: &str, staged: &Staged, dir: &Path, console: &runbox::pty::Console) -> Result<()> {
        let wrote = sync(project, agent, staged, dir, &mut self.seen, true)?;
        if let Some(turns) = &self.turns {
            turns.serve(|| match project.bin()?.get(agent)?.state {
                State::Executing if !project.existing_overlay(agent)?.is_some_and(|o| o.changed_count().unwrap_or(0) > 0) => Ok(()),
                State::Executing | State::Submitting => turn_ended(project, agent),
                _ => Ok(()),
            });
        }
        if !console.is_pty() {
            return Ok(());
        }
        let typed = console.take_typed();
        if let Some(line) = typed.iter().find(|l| !self.named && name::is_task(l)) {
            // Best effort: a name is never worth failing the session for.
            if let Err(e) = name::rename(project, agent, line) {
                tracing::warn!(agent, "naming the session: {e}");
            }
            self.named = true;
        }
        let quiet = console.quiet_for();
        // Feedback first, once the agent has drawn its screen and gone still: what it answers is
        // its next turn (the turn so far does not end on the silence before it).
        if console.output_mark() > 0 && quiet >= FEEDBACK_QUIET {
            let bin = project.bin()?;
            let taken = bin.take_feedback(agent, "terminal")?;
            if !taken.is_empty() {
                // The turn goes on until the agent answers: its output after Enter (taken after
                // typing, a fast answer's whole output would pass for the silence before it).
                match console.type_message(&crate::review::feedback::render(&taken)) {
                    Some(before) => self.turn_mark = Some(before),
                    None => {
                        tracing::warn!(agent, "the feedback could not be typed into the agent's terminal; it waits for the next way to reach the agent");
                        bin.untake_feedback(agent, &taken)?;
                    }
                }
                return Ok(());
            }
        }
        let turn_quiet = Duration::from_millis(project.config.wrap.turn_quiet_ms);
        let state = project.bin()?.get(agent)?.state;
        let mark = console.output_mark();
        // An end that failed halfway (`submitting`) is finished at the next look.
        let ended = state == State::Submitting || (state == State::Executing && !wrote && project.config.wrap.turn_quiet_ms > 0 && quiet >= turn_quiet && self.turn_mark != Some(mark));
        if ended {
            // Only a turn with changes ends here: a write this look's sync missed (the agent
            // wrote while a slow step ran) ends it at the next look.
            if state == State::Submitting || project.existing_overlay(agent)?.is_some_and(|o| o.changed_count().unwrap_or(0) > 0) {
                // Spent once the turn is in review: a failed end is tried again at the next look.
                turn_ended(project, agent)?;
                self.turn_mark = Some(mark);
            }
        }
        Ok(())
    }
}

/// How long the agent's screen must be still before feedback is typed into it.
const FEEDBACK_QUIET: Duration = Duration::from_millis(500);
