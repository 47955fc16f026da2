//! The Neovim RPC host (`cairn nvim`). Tracked by its own issue; until it lands, starting it
//! reports that clearly instead of speaking a broken protocol.

use crate::error::{Error, Result};
use crate::project::Project;

/// Runs the RPC host on stdin/stdout until Neovim closes the channel.
pub fn run(_project: Project) -> Result<()> {
    Err(Error::Rpc("the Neovim host is not built yet in this version".into()))
}
