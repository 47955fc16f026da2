//! What the parent tells the confined side (`cairn-confine`, [`super::launch`]): a JSON
//! document on a pipe; and what that side leaves in the run's directory for the parent.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// File names in the run's directory.
pub const CAPTURE: &str = "capture";
pub const RESULT: &str = "result.json";

/// Everything the confined side needs to build the boundary and start the command.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spec {
    /// The `cairn` process that started the run: the confined side leaves if it is gone.
    pub parent_pid: i32,
    /// The project root (canonical): the lower layer, and where the workspace appears.
    pub root: PathBuf,
    /// The run's directory under `$CAIRN_HOME/runs/` (the files below live in it).
    pub dir: PathBuf,
    /// The command, run as `sh -c <cmd>`.
    pub cmd: String,
    /// The working directory (absolute, inside the workspace).
    pub cwd: PathBuf,
    /// The command's whole environment (already reduced to the allow-list).
    pub env: Vec<(String, String)>,
    /// System directories shown read-only at their own paths (missing ones skipped).
    pub system: Vec<PathBuf>,
    /// The command's home: an empty private directory (`HOME`).
    pub home: PathBuf,
    /// Directories of the view covered by an empty read-only directory (`/etc/ssh`,
    /// `$CAIRN_HOME`, credential stores).
    pub hidden_dirs: Vec<PathBuf>,
    /// Files covered by `/dev/null` (`/etc/shadow`, ...).
    pub hidden_files: Vec<PathBuf>,
    /// Host paths shown read-only besides the system (`[run] read_paths`).
    pub read_paths: Vec<PathBuf>,
    /// Paths inside the workspace covered by an empty read-only tmpfs (`.agentfs`, `.grail`).
    pub workspace_masks: Vec<PathBuf>,
    /// The host's network (`[run] network = "host"`) instead of a private loopback.
    pub host_network: bool,
    pub timeout_ms: u64,
    pub max_memory_mb: u64,
    pub max_processes: u64,
    /// No cgroup even where one could be made: the per-process split (a test's switch,
    /// `CAIRN_TEST_NO_CGROUP`, to try the fallback as root).
    #[serde(default)]
    pub no_cgroup: bool,
    /// Stream the written layer back (`capture` file) after the command ends.
    pub capture: bool,
    /// Bounds of the capture, by apparent and on-disk size, before a byte is read: larger
    /// files are reported, not read ([`super::Written::TooLarge`]).
    pub capture_limits: super::capture::Limits,
    /// `cairn wrap`: the rest of this section.
    #[serde(default)]
    pub wrap: Option<Wrap>,
}

/// What a wrap session (`cairn wrap`) changes in the boundary: an agent CLI that needs its
/// terminal, its model (the network), its own config and session state, and whose writes
/// must outlive a crash of `cairn wrap`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Wrap {
    /// Run this argv (looked up on `PATH`) instead of `sh -c <cmd>`.
    pub argv: Vec<String>,
    /// Paths inside the workspace that are read-only (`.git`, `.jj`, `.cairn.toml`).
    pub read_only: Vec<PathBuf>,
    /// Stdin is a pty of the session's own: the command makes it its controlling terminal.
    pub pty: bool,
    /// The home as the agent sees it (see `home`).
    pub home: Option<super::home::Plan>,
    /// The network namespace's listeners handed to the parent (`network = "proxy"`).
    pub listen: Option<super::net::Listen>,
    /// Ports of the view's loopback the parent may connect to through the dialer (a preview's
    /// `[preview] ports`, see [`super::dial`]).
    #[serde(default)]
    pub dial: Vec<u16>,
    /// The view's tmpfs (`/tmp`, `/var/tmp`, `/dev/shm`), in MiB (`[wrap] max_tmp_mb`).
    #[serde(default)]
    pub max_tmp_mb: u64,
}

impl Spec {
    /// The proposal's layer (lower, above the project).
    pub fn stage(&self) -> PathBuf {
        self.dir.join("stage")
    }
    /// Where the written layer lives: a private tmpfs mounted here for a run; the directory
    /// itself, on disk, for a wrap session (its writes outlive a crash of `cairn wrap`).
    pub fn rw(&self) -> PathBuf {
        self.dir.join("rw")
    }
    /// The written layer, streamed back (see [`super::capture`]).
    pub fn capture_file(&self) -> PathBuf {
        self.dir.join(CAPTURE)
    }
    /// How the command ended ([`Ended`] as JSON).
    pub fn result_file(&self) -> PathBuf {
        self.dir.join(RESULT)
    }
}

/// How the command ended, as the confined side saw it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Ended {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// The boundary could not be built: the command never ran.
    pub setup_error: Option<String>,
    /// The command ran, but what it wrote could not be read back.
    #[serde(default)]
    pub capture_error: Option<String>,
    /// How the run's memory and processes were bounded (see `cgroup`).
    #[serde(default)]
    pub budget: String,
    /// The cgroups the run was in, removed by the parent once it has ended.
    #[serde(default)]
    pub cgroups: Vec<PathBuf>,
}

impl Ended {
    /// How the command ended, as a run reports it.
    pub fn exit(&self) -> super::Exit {
        use super::Exit;
        match (self.timed_out, self.code, self.signal) {
            (true, _, _) => Exit::TimedOut,
            (false, Some(c), _) => Exit::Code(c),
            (false, None, s) => Exit::Signal(s.unwrap_or(libc::SIGKILL)),
        }
    }
}
