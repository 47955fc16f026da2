//! `cairn hunks`, `cairn accept-hunk`, `cairn reject-hunk` (clap's side): a hunk named by its
//! number in its file, as `cairn hunks` shows them, becomes the core's hunk command.

use cairn_core::command::{self, Command, Output};
use cairn_core::error::{Error, Result};
use cairn_core::project::Project;

#[derive(clap::Subcommand, Debug)]
pub enum HunkCmd {
    /// List the hunks of a proposal, numbered per file (conflicts marked).
    Hunks {
        /// Agent id (any unique prefix).
        id: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Accept one hunk (numbered as `cairn hunks` shows them) into the project.
    AcceptHunk {
        /// Agent id (any unique prefix).
        id: String,
        /// The file, relative to the project root.
        path: String,
        /// 1-based number of the hunk in that file.
        number: usize,
        /// Accept it even where it conflicts with your edits (your version is journaled).
        #[arg(long)]
        force: bool,
    },
    /// Drop one hunk from the proposal; the project is not touched.
    RejectHunk {
        /// Agent id (any unique prefix).
        id: String,
        /// The file, relative to the project root.
        path: String,
        /// 1-based number of the hunk in that file.
        number: usize,
        /// Why, for the agent (sent by `cairn revise`).
        #[arg(long)]
        reason: Option<String>,
    },
}

/// The command and whether to print JSON; `open` opens the project (to number its hunks).
pub fn command(cmd: HunkCmd, open: impl Fn() -> Result<Project>) -> Result<(Command, bool)> {
    Ok(match cmd {
        HunkCmd::Hunks { id, json } => (Command::Hunks { id }, json),
        HunkCmd::AcceptHunk { id, path, number, force } => {
            let hunk = numbered_hunk(&open()?, &id, &path, number)?;
            (Command::AcceptHunk { id, path, hunk, force }, false)
        }
        HunkCmd::RejectHunk { id, path, number, reason } => {
            let hunk = numbered_hunk(&open()?, &id, &path, number)?;
            (Command::RejectHunk { id, path, hunk, reason }, false)
        }
    })
}

/// Hunk `number` (1-based) of `path` in agent `id`'s proposal as it is now.
fn numbered_hunk(project: &Project, id: &str, path: &str, number: usize) -> Result<cairn_core::review::Hunk> {
    let Output::Hunks { files, .. } = command::execute(project, Command::Hunks { id: id.to_string() })? else {
        return Err(Error::Internal("hunks: unexpected output".into()));
    };
    let file = files.into_iter().find(|f| f.path == path).ok_or_else(|| Error::Hunk(format!("agent {id} proposes no text change to {path}")))?;
    let count = file.hunks.len();
    file.hunks.into_iter().nth(number.wrapping_sub(1)).ok_or_else(|| Error::Hunk(format!("{path} has {count} hunk(s); there is no hunk {number}")))
}
