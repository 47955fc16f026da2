//! One memory and process budget for a run's whole process tree, where the machine gives us a
//! cgroup: process 1 of the confined side makes `cairn-run-<name>` in its own cgroup and joins
//! it before it forks anything. Cgroup v2 where this cgroup may enable `memory` and `pids` for
//! children (root's, or a delegated one): `memory.max` (tmpfs pages count: `/tmp`, home and
//! the written layer are charged to the run) and `pids.max`. Else, as root on a v1 or hybrid
//! host, a v1 `memory` cgroup (`memory.limit_in_bytes`, tmpfs pages charged as well) and a v1
//! `pids` cgroup. Without either (an ordinary user on such a host, a v2 leaf that is not
//! delegated), the budget is split into per-process limits ([`super::budget`]) and `cairn
//! doctor` says so.
//!
//! The cost: making, joining and removing a v1 memory and pids cgroup (moving a process into
//! a v1 memory cgroup makes the kernel synchronize RCU) made a `run_command` of `true` take
//! a median 91 ms instead of 74 ms on the development VM (21 runs each, interleaved, under
//! load); the bench's rows, a bare run workspace: `run_workspace` 31.9 ms with the v1
//! cgroup, `run_workspace_no_cgroup` 24.6 ms (medians, 1,000 files, also under load).
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
    /// The limits the confined side applies (see [`super::budget`]).
    pub shares: super::budget::Shares,
}

const PREFIX: &str = "cairn-run-";

/// Makes the run's cgroup(s), sets the limits and moves this process in; without one (or
/// `skip`: a test's switch, `CAIRN_TEST_NO_CGROUP`), the per-process split.
pub fn join(name: &str, memory_mb: u64, processes: u64, skip: bool) -> Joined {
    let shares = super::budget::split(memory_mb, processes, true);
    let joined = match skip {
        true => Err("switched off for a test".to_string()),
        false => v2(name, shares.cgroup_bytes, processes).or_else(|v2_why| match super::ids::host_root() {
            true => v1(name, shares.cgroup_bytes, processes).map_err(|v1_why| format!("{v2_why}; {v1_why}")),
            false => Err(format!("{v2_why}; no v1 memory cgroup but as root")),
        }),
    };
    match joined {
        Ok((dirs, kind)) => Joined { dirs, how: shares.describe(kind), shares },
        Err(why) => {
            let shares = super::budget::split(memory_mb, processes, false);
            Joined { dirs: Vec::new(), how: format!("{} (no memory cgroup: {why})", shares.describe("")), shares }
        }
    }
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

fn v2(name: &str, bytes: u64, processes: u64) -> Result<(Vec<PathBuf>, &'static str), String> {
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
    Ok((vec![dir], "cgroup v2"))
}

/// As root on a v1 (or hybrid) host: a `memory` and a `pids` cgroup of the run, each under
/// this process's own cgroup of that hierarchy.
fn v1(name: &str, bytes: u64, processes: u64) -> Result<(Vec<PathBuf>, &'static str), String> {
    let all = mounts();
    let point = |ctrl: &str| all.iter().find(|(_, t, o)| t == "cgroup" && o.split(',').any(|x| x == ctrl)).map(|(p, _, _)| p.clone());
    let (memory, pids) = (point("memory").ok_or("no v1 memory cgroup")?, point("pids").ok_or("no v1 pids cgroup")?);
    let mut dirs = Vec::new();
    let made = (|| -> Result<(), String> {
        for (point, ctrl, file, value) in [(memory, "memory", "memory.limit_in_bytes", bytes), (pids, "pids", "pids.max", processes)] {
            let own = own_path(|c| c.split(',').any(|x| x == ctrl)).ok_or_else(|| format!("no v1 {ctrl} path"))?;
            let parent = point.join(own.trim_start_matches('/'));
            sweep(&parent);
            let dir = parent.join(format!("{PREFIX}{name}"));
            std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            dirs.push(dir.clone());
            write(&dir.join(file), &value.to_string())?;
            if ctrl == "memory" {
                // No swap for the run (where the kernel accounts it).
                let _ = write(&dir.join("memory.memsw.limit_in_bytes"), &value.to_string());
            }
            write(&dir.join("cgroup.procs"), &std::process::id().to_string())?;
        }
        Ok(())
    })();
    match made {
        Ok(()) => Ok((dirs, "cgroup v1")),
        Err(e) => {
            // Back where it was, so the directories can go.
            for d in &dirs {
                if let Some(parent) = d.parent() {
                    let _ = write(&parent.join("cgroup.procs"), &std::process::id().to_string());
                }
            }
            remove(&dirs);
            Err(e)
        }
    }
}
