//! `/dev` and `/proc` of a view, as container runtimes make them (runc's defaults):
//!
//! - `/dev`: `null`, `zero`, `full`, `random`, `urandom` from the host (each checked to be
//!   the device it names, so a planted file cannot stand in), a private `devpts` (no host
//!   terminal is there: `TIOCSTI` has nothing to type into), `/dev/shm` on the view's
//!   tmpfs, the usual links. `/dev/tty` only for wrap sessions (the node opens the caller's
//!   controlling terminal, which there is the session's own pty or none); never the host's
//!   `/dev/pts`.
//! - `/proc`: the run's own pid namespace. `/proc/sys`, `/proc/sysrq-trigger`, `/proc/irq`,
//!   `/proc/bus` and `/proc/fs` read-only; `/proc/kcore`, `/proc/keys`, `/proc/timer_list` and
//!   the other files that show the host's kernel state covered by `/dev/null`; `/proc/acpi`,
//!   `/proc/asound` and `/proc/scsi` covered by an empty read-only directory. Masks go on
//!   before the command's nested user namespace locks them.

use super::mounts::{bind, make_dir_mode, make_dirs, make_file, mount, set_attrs, tmpfs, NODEV, NOEXEC, NOSUID, RDONLY};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

/// Device nodes (name, major, minor) the view's `/dev` gets from the host's.
const DEVICES: [(&str, u32, u32); 5] = [("null", 1, 3), ("zero", 1, 5), ("full", 1, 7), ("random", 1, 8), ("urandom", 1, 9)];
/// `/proc` files covered by `/dev/null`.
pub const PROC_MASKED_FILES: [&str; 10] = ["kcore", "keys", "key-users", "timer_list", "timer_stats", "sched_debug", "latency_stats", "kallsyms", "kmsg", "config.gz"];
/// `/proc` directories covered by an empty read-only directory.
pub const PROC_MASKED_DIRS: [&str; 3] = ["acpi", "asound", "scsi"];
/// `/proc` paths made read-only.
pub const PROC_READ_ONLY: [&str; 5] = ["sys", "sysrq-trigger", "irq", "bus", "fs"];

/// Is the host's `/dev/<name>` the character device it should be?
fn is_device(path: &Path, major: u32, minor: u32) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_char_device() && libc::major(m.rdev()) == major && libc::minor(m.rdev()) == minor)
}

pub(super) fn dev(dev: &Path, tty: bool) -> Result<(), String> {
    make_dir_mode(dev, 0o755)?;
    let mut names: Vec<(&str, bool)> = DEVICES.iter().map(|(n, ma, mi)| (*n, is_device(&Path::new("/dev").join(n), *ma, *mi))).collect();
    if tty {
        names.push(("tty", is_device(Path::new("/dev/tty"), 5, 0)));
    }
    for (name, ok) in names {
        if !ok {
            continue;
        }
        let target = dev.join(name);
        make_file(&target)?;
        mount(&format!("/dev/{name}"), &target, "", libc::MS_BIND, None)?;
        set_attrs(&target, NOSUID | NOEXEC, false)?;
    }
    for (link, to) in [("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2"), ("ptmx", "pts/ptmx")] {
        let _ = std::os::unix::fs::symlink(to, dev.join(link));
    }
    let shm = dev.join("shm");
    make_dir_mode(&shm, 0o1777)?;
    bind(&shm, &shm)?;
    let pts = dev.join("pts");
    make_dirs(&pts)?;
    // A private devpts: terminals the command makes for itself (some test runners want one);
    // its absence is no error.
    let _ = mount("devpts", &pts, "devpts", libc::MS_NOSUID | libc::MS_NOEXEC, Some("newinstance,ptmxmode=0666,mode=620"));
    Ok(())
}

/// The run's own `/proc` (`wrap`: a wrap session's, whose per-user limits are larger).
pub(super) fn proc(proc: &Path, wrap: bool) -> Result<(), String> {
    make_dirs(proc)?;
    mount("proc", proc, "proc", libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC, None).map_err(|e| format!("a private /proc: {e}"))?;
    // Before `/proc/sys` turns read-only: the run's own per-user kernel limits.
    user_limits(&proc.join("sys/user"), wrap)?;
    for name in PROC_READ_ONLY {
        let p = proc.join(name);
        if p.exists() {
            bind(&p, &p)?;
            set_attrs(&p, RDONLY | NOSUID | NODEV | NOEXEC, true)?;
        }
    }
    for name in PROC_MASKED_FILES {
        let p = proc.join(name);
        if p.is_file() {
            mount("/dev/null", &p, "", libc::MS_BIND, None)?;
        }
    }
    for name in PROC_MASKED_DIRS {
        let p = proc.join(name);
        if p.is_dir() {
            tmpfs(&p, 1, "0555", libc::MS_RDONLY)?;
        }
    }
    Ok(())
}

/// System V shared memory of the run's own IPC namespace within the memory budget (its
/// defaults are unbounded, and its segments belong to no process's limits).
pub(super) fn ipc_limits(memory_mb: u64) {
    let bytes = memory_mb.saturating_mul(1024 * 1024);
    for (name, value) in [("shmmax", bytes), ("shmall", bytes / 4096), ("shmmni", 64)] {
        let _ = std::fs::write(format!("/proc/sys/kernel/{name}"), value.to_string());
    }
}

/// TCP buffers of the run's own network namespace at most a socket's default (as its budget
/// counts one, see `budget`; the defaults of other families are the host's, and their size
/// requests are ignored by the filter).
pub(super) fn socket_limits() {
    for (name, value) in [("ipv4/tcp_rmem", "4096 131072 212992"), ("ipv4/tcp_wmem", "4096 16384 212992")] {
        let _ = std::fs::write(format!("/proc/sys/net/{name}"), value);
    }
}

/// The namespace kinds' per-user limits (`/proc/sys/user`).
const NAMESPACE_LIMITS: [&str; 8] = ["max_user_namespaces", "max_mnt_namespaces", "max_pid_namespaces", "max_net_namespaces", "max_ipc_namespaces", "max_uts_namespaces", "max_cgroup_namespaces", "max_time_namespaces"];

/// The per-user kernel limits of the run's user namespace, lowered before `/proc/sys` is
/// locked: a run (or a wrap session) counts against its owner's limits on the host (as root:
/// root's, so systemd and udev would be refused an inotify instance), and takes at most these.
/// Runs: 16 inotify instances, 16,384 watches, 8 namespaces of each kind; a wrap session
/// (an agent CLI that watches the project, and may sandbox its own tools): 64, 65,536, 256.
fn user_limits(dir: &Path, wrap: bool) -> Result<(), String> {
    let (instances, watches, namespaces) = if wrap { (64, 65_536, 256) } else { (16, 16_384, 8) };
    let mut limits = vec![("max_inotify_instances", instances), ("max_inotify_watches", watches), ("max_fanotify_groups", instances), ("max_fanotify_marks", watches)];
    limits.extend(NAMESPACE_LIMITS.iter().map(|n| (*n, namespaces)));
    for (name, value) in limits {
        let path = dir.join(name);
        // A kernel without the limit has no file: nothing to lower.
        if path.exists() {
            std::fs::write(&path, value.to_string()).map_err(|e| format!("the run's own limit {name}: {e}"))?;
        }
    }
    Ok(())
}
