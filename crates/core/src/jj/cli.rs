//! Running the user's `jj`: the one place Cairn starts it.
//!
//! Every command gets the same guard rails, whatever the user's configuration says: no pager,
//! no color, no editor (`ui.editor = "false"`: a command that wanted one fails instead of
//! waiting), no signing prompt for the changes Cairn writes, and an operation user that says
//! what Cairn did (`cairn accept 3f2a1c`), so `jj op log` shows which operations are Cairn's
//! and why. The user's own configuration still loads (their identity authors the changes). A
//! command that does not finish in [`TIMEOUT`] is killed.

use crate::error::{Error, Result};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long one jj command may take.
const TIMEOUT: Duration = Duration::from_secs(120);

/// The configuration every command Cairn runs gets.
const GUARDS: &[&str] = &["ui.editor=\"false\"", "signing.behavior=drop"];

/// What commands in Cairn's own scratch workspaces add: every file is tracked, whatever its
/// size, byte for byte (no line-ending conversion) and with its executable bit (an agent's
/// proposal is reviewed, not filtered by the user's snapshot settings); no file monitor.
pub(crate) const SCRATCH: &[&str] = &[
    "snapshot.auto-track=\"all()\"",
    "snapshot.max-new-file-size=4294967296",
    "working-copy.eol-conversion=\"none\"",
    "working-copy.exec-bit-change=\"respect\"",
    "fsmonitor.backend=\"none\"",
];

/// The user's `jj`, as found.
#[derive(Debug, Clone)]
pub struct Cli {
    pub program: PathBuf,
    /// `jj --version`'s numbers, e.g. (0, 45, 1).
    pub version: (u32, u32, u32),
    env: Vec<(String, String)>,
    /// The operation user of what this handle runs (`cairn`, or `cairn <verb> <agent>`).
    who: String,
}

impl Cli {
    /// Asks `program` for its version. `env`: the environment jj runs with (the edge's).
    pub fn probe(program: PathBuf, env: Vec<(String, String)>) -> Result<Cli> {
        let mut cli = Cli { program, version: (0, 0, 0), env, who: "cairn".into() };
        let out = cli.output(None, &["--version"], &[])?;
        cli.version = parse_version(&out).ok_or_else(|| Error::Jj(format!("{} --version said {:?}, not a jj version", cli.program.display(), out.trim())))?;
        Ok(cli)
    }

    /// The same jj, its operations shown as `cairn <what>` in `jj op log`.
    pub fn acting(&self, what: &str) -> Cli {
        Cli { who: format!("cairn {what}"), ..self.clone() }
    }

    /// Runs `jj -R <repo> <args>` with the guards (and `extra` configuration) and returns its
    /// standard output.
    pub fn run(&self, repo: &Path, args: &[&str], extra: &[&str]) -> Result<String> {
        self.output(Some(repo), args, extra)
    }

    /// [`Cli::run`] with `--ignore-working-copy`: a read, or a write that moves no working copy.
    pub fn run_quiet(&self, repo: &Path, args: &[&str]) -> Result<String> {
        self.run_quiet_with(repo, args, &[])
    }

    /// [`Cli::run_quiet`] with `extra` configuration.
    pub fn run_quiet_with(&self, repo: &Path, args: &[&str], extra: &[&str]) -> Result<String> {
        let mut all = vec!["--ignore-working-copy"];
        all.extend_from_slice(args);
        self.output(Some(repo), &all, extra)
    }

    fn output(&self, repo: Option<&Path>, args: &[&str], extra: &[&str]) -> Result<String> {
        let mut cmd = Command::new(&self.program);
        cmd.env_clear().envs(self.env.iter().filter(|(k, _)| !matches!(k.as_str(), "JJ_EDITOR" | "EDITOR" | "VISUAL" | "PAGER" | "JJ_PAGER")).map(|(k, v)| (k, v)));
        if let Some(repo) = repo {
            cmd.arg("-R").arg(repo).args(["--no-pager", "--color", "never"]);
            for c in GUARDS.iter().chain(extra) {
                cmd.arg("--config").arg(c);
            }
            cmd.arg("--config").arg(format!("operation.username={}", self.who));
        }
        cmd.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let what = || format!("jj {}", args.iter().take(3).copied().collect::<Vec<_>>().join(" "));
        let mut child = cmd.spawn().map_err(|e| Error::Jj(format!("cannot run {}: {e}", self.program.display())))?;
        let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Jj(format!("{}: no pipes", what())));
        };
        let pid = child.id();
        // The watchdog kills a command that hangs (a lock held elsewhere, a slow disk); it
        // sleeps on a channel, so a finished command wakes it at once.
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let watchdog = std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(TIMEOUT) {
                if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
                return true;
            }
            false
        });
        let err_reader = std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = stderr.read_to_end(&mut s);
            s
        });
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out);
        let status = child.wait();
        let _ = done.send(());
        let killed = watchdog.join().unwrap_or(false);
        let err = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
        let status = status.map_err(|e| Error::Jj(format!("{}: {e}", what())))?;
        if killed {
            return Err(Error::Jj(format!("{} did not finish within {} s and was killed", what(), TIMEOUT.as_secs())));
        }
        if !status.success() {
            let tail: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).take(6).collect();
            return Err(Error::Jj(format!("{} failed ({status}): {}", what(), crate::display::escape_line(&tail.join(" | ")))));
        }
        String::from_utf8(out).map_err(|_| Error::Jj(format!("{} printed non-UTF-8 output", what())))
    }
}

/// `jj 0.45.1` (or `jj 0.45.1-<hash>`) → (0, 45, 1).
pub(crate) fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let v = text.split_whitespace().nth(1)?;
    let mut nums = v.split(['.', '-', '+']).map(|p| p.parse::<u32>());
    Some((nums.next()?.ok()?, nums.next()?.ok()?, nums.next().and_then(|r| r.ok()).unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::parse_version;

    #[test]
    fn versions_parse() {
        assert_eq!(parse_version("jj 0.45.1\n"), Some((0, 45, 1)));
        assert_eq!(parse_version("jj 0.46.0-abcdef0123"), Some((0, 46, 0)));
        assert_eq!(parse_version("jj 1.2"), Some((1, 2, 0)));
        assert_eq!(parse_version("git version 2.39"), None);
        assert_eq!(parse_version(""), None);
    }
}
