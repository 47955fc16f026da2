//! How one run's budget (`[run] max_memory_mb`, `max_processes`) is split between what the
//! kernel lets a process tree hold: its processes' memory, the one tmpfs (`/tmp`, home, the
//! written layer), and kernel buffers behind descriptors (sockets, pipes), which no
//! per-process limit and no v1 cgroup counts.
//!
//! With a memory cgroup ([`super::cgroup`]) the cgroup holds the processes and the tmpfs
//! together (tmpfs pages are charged to it); descriptors (sockets, pipes) keep their own
//! share, ⅛, outside it. Without one, every share is a per-process limit derived from the
//! total, so that the whole tree stays within it: the tmpfs gets ⅛, descriptors ⅛, and the
//! rest is split into slices for at most [`FALLBACK_PROCESSES`] processes (`RLIMIT_NPROC`),
//! each its stack and data (`RLIMIT_STACK`, `RLIMIT_DATA`: private writable memory; shared
//! anonymous memory, memfd and System V segments are refused without a cgroup). Address
//! space only reserved is no memory: `RLIMIT_AS` is the whole budget. A socket holds at
//! most the kernel's default buffer (its size requests are
//! ignored, see `confine::filter`), a pipe its default 16 pages (resizing refused): each is
//! counted as [`PER_DESCRIPTOR`], and `RLIMIT_NOFILE` is what makes the descriptors' share.

use serde::{Deserialize, Serialize};

const MIB: u64 = 1024 * 1024;
/// The most processes a run without a memory cgroup may run at once (its memory is split
/// between them). `RLIMIT_NPROC` counts threads too: a runtime's worker threads take slots
/// (`npm test` is some twenty tasks), and a thread costs no slice of its own (its stack is
/// in its process's data).
pub const FALLBACK_PROCESSES: u64 = 32;
/// Each process's stack (`RLIMIT_STACK`, and glibc's default for a thread's), within its
/// slice.
pub const STACK: u64 = 2 * MIB;
/// The smallest slice the fallback gives a process while it can (a Python starts in 12 MiB
/// of address space).
const MIN_SLICE: u64 = 16 * MIB;
/// What one descriptor may hold in the kernel: a socket's default buffers (`wmem_default`,
/// 208 KiB, and the skb overhead) or a pipe's 16 pages.
pub const PER_DESCRIPTOR: u64 = 256 * 1024;
/// Bounds of `RLIMIT_NOFILE`.
const FILES: (u64, u64) = (32, 1024);

/// One run's limits, as the confined side applies them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Shares {
    /// Processes at once (`pids.max`, else `RLIMIT_NPROC`).
    pub processes: u64,
    /// Each process's slice (stack and data), without a cgroup (0: none, the cgroup holds
    /// memory).
    pub per_process: u64,
    /// The cgroup's memory limit (with one).
    pub cgroup_bytes: u64,
    /// The view's tmpfs, in MiB.
    pub tmpfs_mb: u64,
    /// `RLIMIT_NOFILE`.
    pub files: u64,
}

/// Splits `memory_mb` and `processes` for a run with (`cgroup`) or without a memory cgroup.
pub fn split(memory_mb: u64, processes: u64, cgroup: bool) -> Shares {
    let total = memory_mb.saturating_mul(MIB);
    let descriptors = total / 8;
    if cgroup {
        let files = files_for(descriptors, FALLBACK_PROCESSES.min(processes.max(1)));
        return Shares { processes, per_process: 0, cgroup_bytes: total - descriptors, tmpfs_mb: memory_mb, files };
    }
    let tmpfs = total / 8;
    let rest = total - tmpfs - descriptors;
    // As many slices as fit, and as many processes as the descriptors' share holds at the
    // lowest `RLIMIT_NOFILE`; never fewer than a shell pipeline needs.
    let fit = (rest / MIN_SLICE).min((descriptors / (FILES.0 * PER_DESCRIPTOR)).saturating_sub(1)).max(3);
    let n = processes.clamp(1, FALLBACK_PROCESSES).min(fit);
    Shares { processes: n, per_process: rest / n, cgroup_bytes: 0, tmpfs_mb: (tmpfs / MIB).max(1), files: files_for(descriptors, n) }
}

/// `RLIMIT_NOFILE` such that `processes` processes (and as many descriptors in flight) hold
/// at most `share` in buffers, within [`FILES`].
fn files_for(share: u64, processes: u64) -> u64 {
    (share / ((processes + 1) * PER_DESCRIPTOR)).clamp(FILES.0, FILES.1)
}

impl Shares {
    /// The most the run's process tree may hold in all, as these limits bound it (with a
    /// cgroup: its limit, the tmpfs inside it).
    pub fn bound_bytes(&self) -> u64 {
        let buffers = (self.processes.min(FALLBACK_PROCESSES) + 1) * self.files * PER_DESCRIPTOR;
        match self.per_process {
            0 => self.cgroup_bytes + buffers,
            p => p * self.processes + self.tmpfs_mb * MIB + buffers,
        }
    }

    /// How the budget holds, for the run's report (`cairn doctor`, `:checkhealth`).
    pub fn describe(&self, cgroup: &str) -> String {
        let mib = |b: u64| b / MIB;
        match self.per_process {
            0 => format!(
                "{cgroup} budget: {} MiB for the whole run, {} processes; {} descriptors per process for sockets and pipes",
                mib(self.cgroup_bytes),
                self.processes,
                self.files
            ),
            p => format!(
                "per-process only ({} MiB × {} processes; a {} MiB tmpfs; {} descriptors per process; at most {} MiB in all)",
                mib(p),
                self.processes,
                self.tmpfs_mb,
                self.files,
                mib(self.bound_bytes())
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_keeps_the_whole_tree_within_the_budget() {
        let s = split(4096, 512, false);
        assert_eq!((s.per_process / MIB, s.processes, s.tmpfs_mb), (96, 32, 512));
        assert!(s.bound_bytes() <= 4096 * MIB, "{s:?}: {}", s.bound_bytes() / MIB);
        for mb in [256, 300, 512, 777, 1024, 2048, 4096, 16384] {
            let s = split(mb, 512, false);
            assert!(s.bound_bytes() <= mb * MIB, "{mb}: {s:?} holds {} MiB", s.bound_bytes() / MIB);
        }
        // Few processes asked: fewer slices, each larger.
        assert_eq!(split(4096, 4, false).processes, 4);
        let c = split(4096, 512, true);
        assert_eq!((c.processes, c.per_process, c.tmpfs_mb), (512, 0, 4096));
        assert_eq!(c.cgroup_bytes, 4096 * MIB - 4096 * MIB / 8);
    }
}
