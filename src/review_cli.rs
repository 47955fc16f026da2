//! The review loop's subcommands (`cairn comment`, `cairn revise`, `cairn log`, `cairn
//! resolve`): clap's side,
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
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Resolve a conflicted file of a proposal: FILE's content (`-` for stdin) becomes the
    /// agent's version of PATH, on top of the project as it is now. Without FILE, print the
    /// three versions (base, landed, proposed) as JSON.
    Resolve {
        /// Agent id (any unique prefix).
        id: String,
        /// The project file.
        path: String,
        /// The resolved content.
        #[arg(long)]
        from: Option<std::path::PathBuf>,
    },
    /// The revisions of a proposal with the feedback each one sent.
    Log {
        /// Agent id (any unique prefix).
        id: String,
        /// Print JSON instead of text.
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
        ReviewCmd::Resolve { id, path, from: None } => (Command::ThreeWay { id, path }, true),
        ReviewCmd::Resolve { id, path, from: Some(file) } => {
            let content = if file.as_os_str() == "-" {
                let mut buf = Vec::new();
                std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf).map_err(|e| cairn_core::error::Error::io("stdin", e))?;
                buf
            } else {
                std::fs::read(&file).map_err(|e| cairn_core::error::Error::io(&file, e))?
            };
            (Command::Resolve { id, path, content }, false)
        }
    })
}
