//! `cairn config trust`: the user vouches for the project's `.cairn.toml` as it is now, so that
//! its keys that reach past the confinement take effect (see `cairn_core::config::trust`).

use cairn_core::config::trust;
use cairn_core::error::{Error, Result};
use cairn_core::project::Project;
use clap::Subcommand;
use std::path::Path;

#[derive(Subcommand, Debug)]
pub enum ConfigCmd {
    /// Trust the project's .cairn.toml as it is now: its keys that run commands on your
    /// machine or widen what agents reach take effect (read it first). An edit untrusts it.
    Trust {
        /// Withdraw the trust instead.
        #[arg(long)]
        revoke: bool,
    },
}

/// Runs `cmd` for the project at `root` (or the one around the current directory).
pub fn run(root: Option<&Path>, home: &Path, cmd: ConfigCmd) -> Result<i32> {
    let ConfigCmd::Trust { revoke } = cmd;
    let root = match root {
        Some(r) => r.to_path_buf(),
        None => Project::discover(&std::env::current_dir().map_err(|e| Error::io(".", e))?)?,
    };
    let file = trust::set(home, &root, !revoke)?;
    if revoke {
        outln!("{}: no longer trusted", file.display());
        return Ok(0);
    }
    let set = trust::host_keys_in(&std::fs::read_to_string(&file).unwrap_or_default());
    match set.is_empty() {
        true => outln!("{}: trusted (it sets no key that reaches past the project)", cairn_core::display::escape_line(&file.display().to_string())),
        false => outln!("{}: trusted; these keys now take effect:\n  {}", cairn_core::display::escape_line(&file.display().to_string()), set.join("\n  ")),
    }
    Ok(0)
}
