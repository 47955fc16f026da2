//! One memory and process budget for a run's whole process tree, where the machine gives us a
//! cgroup v2: process 1 of the confined side makes `cairn-run-<name>` in its own cgroup (where
//! that cgroup may enable `memory` and `pids` for children: root's, or a delegated one), sets
//! `memory.max` (tmpfs pages count: `/tmp`, home and the written layer are charged to the
//! run) and `pids.max`, and joins it before it forks anything. Without one, the budget is per
//! process (`RLIMIT_AS`, `RLIMIT_NPROC`, memfd and System V segments refused) plus the one
//! tmpfs, and `cairn doctor` says so.
//!
//! Not cgroup v1 (hybrid hosts, as root): moving a process into a v1 memory cgroup took 12 ms
//! on the development VM (the kernel synchronizes RCU on every migration), more than the
//! whole run's budget of 20 ms (`scripts/bench.sh`, `run_workspace`).
//!
//! The parent removes the directories when the run has ended ([`remove`]); directories left by
//! a killed `cairn` are removed by the next run in the same cgroup (an empty one only: the
//! kernel refuses to remove a cgroup with processes).

use std::path::{Path, PathBuf};

/// The cgroups a run joined, and how its budget is held (for the run's report).
#[derive(Debug, Default)]
pub struct Joined {
    pub dirs: Vec<PathBuf>,
    pub how: String,
}

const PREFIX: &str = "cairn-run-";

/// Makes the run's cgroup(s), sets the limits and moves this process in.
pub fn join(name: &str, memory_mb: u64, processes: u64) -> Joined {
    let bytes = memory_mb.saturating_mul(1024 * 1024);
    v2(name, bytes, processes).unwrap_or_else(|why| Joined { dirs: Vec::new(), how: format!("no cgroup ({why}): memory bounded per process") })
}

/// Removes what [`join`] made (after every process in it has ended).
pub fn remove(dirs: &[PathBuf]) {
    for d in dirs {
        // Its last processes may still be on their way out: a few tries.
        for _ in 0..50 {
            if std::fs::remove_dir(d).is_ok() || !d.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// Mount points of cgroup file systems: `(mount point, fstype, super options)`.
fn mounts() -> Vec<(PathBuf, String, String)> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    info.lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let point = left.split_whitespace().nth(4)?;
            let mut r = right.split_whitespace();
            let fstype = r.next()?.to_string();
            let opts = r.nth(1).unwrap_or("").to_string();
            fstype.starts_with("cgroup").then(|| (PathBuf::from(point.replace("\\040", " ")), fstype, opts))
        })
        .collect()
}

/// This process's cgroup path in the hierarchy whose `/proc/self/cgroup` line matches.
fn own_path(matches: impl Fn(&str) -> bool) -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        matches(ctrls).then(|| path.to_string())
    })
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| format!("{}: {e}", path.display()))
}

/// Removes the empty run cgroups a killed `cairn` left in `parent`.
fn sweep(parent: &Path) {
    for e in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        if e.file_name().to_string_lossy().starts_with(PREFIX) {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

fn v2(name: &str, bytes: u64, processes: u64) -> Result<Joined, String> {
    let (point, _, _) = mounts().into_iter().find(|(_, t, _)| t == "cgroup2").ok_or("no cgroup v2")?;
    let own = own_path(|c| c.is_empty()).ok_or("no cgroup v2 path")?;
    let parent = point.join(own.trim_start_matches('/'));
    let controllers = std::fs::read_to_string(parent.join("cgroup.controllers")).unwrap_or_default();
    if !(controllers.split_whitespace().any(|c| c == "memory") && controllers.split_whitespace().any(|c| c == "pids")) {
        return Err("cgroup v2 without memory and pids controllers here".into());
    }
    let subtree = parent.join("cgroup.subtree_control");
    let enabled = std::fs::read_to_string(&subtree).unwrap_or_default();
    if !(enabled.contains("memory") && enabled.contains("pids")) {
        // Allowed only where the cgroup holds no process itself (the root, or a delegated
        // cgroup that is not a leaf); else the kernel says EBUSY and there is no budget here.
        write(&subtree, "+memory +pids").map_err(|e| format!("cgroup v2 not delegated ({e})"))?;
    }
    sweep(&parent);
    let dir = parent.join(format!("{PREFIX}{name}"));
    std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let set = || -> Result<(), String> {
        write(&dir.join("memory.max"), &bytes.to_string())?;
        let _ = write(&dir.join("memory.swap.max"), "0");
        write(&dir.join("pids.max"), &processes.to_string())?;
        write(&dir.join("cgroup.procs"), &std::process::id().to_string())
    };
    if let Err(e) = set() {
        let _ = std::fs::remove_dir(&dir);
        return Err(e);
    }
    Ok(Joined { dirs: vec![dir], how: "cgroup v2 (memory.max, pids.max) for the whole run".into() })
}
