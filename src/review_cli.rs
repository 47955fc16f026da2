//! The review loop's subcommands (`cairn comment`, `cairn revise`, `cairn log`): clap's side,
//! mapped to the one command model like every other subcommand.

use cairn_core::command::Command;
use cairn_core::error::Result;
use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum ReviewCmd {
    /// Attach a note to lines of a file for the agent's next revision (`cairn revise` sends it).
    Comment {
        /// Agent id (any unique prefix).
        id: String,
        /// PATH:LINE or PATH:LINE-LINE (1-based, inclusive).
        place: String,
        /// The note.
        text: String,
    },
    /// Send the reasons, notes and hunk decisions since the last revision to the agent and put
    /// its proposal back to work (the next revision).
    Revise {
        /// Agent id (any unique prefix).
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// The revisions of a proposal with the feedback each one sent.
    Log {
        /// Agent id (any unique prefix).
        id: String,
        #[arg(long)]
        json: bool,
    },
}

/// The command and whether to print JSON.
pub fn command(cmd: ReviewCmd) -> Result<(Command, bool)> {
    Ok(match cmd {
        ReviewCmd::Comment { id, place, text } => {
            let (path, lines) = cairn_core::review::feedback::parse_place(&place)?;
            (Command::Comment { id, path, lines, text }, false)
        }
        ReviewCmd::Revise { id, json } => (Command::Revise { id }, json),
        ReviewCmd::Log { id, json } => (Command::Log { id }, json),
    })
}
