//! Is a project file held open for writing by some process? A file replaced by rename while
//! so held takes that process's later writes with it (they go to the unlinked file): accept,
//! undo and hunk accept ask here first.
//!
//! The kernel answers through a read lease, refused exactly when the file is open for
//! writing or mapped writable anywhere. Where it cannot (the caller neither owns the file nor
//! has `CAP_LEASE`; a file system without leases), `/proc` answers for the processes this user
//! may see: a descriptor on the file open for writing, or a shared writable mapping of it.

use super::fsx::{open_regular_in, stat_nofollow};
use crate::error::Result;
use std::os::fd::AsRawFd;
use std::path::Path;

/// The paths of `rels` (project-relative) held open for writing, each with who holds it
/// (`pid N (name)`, as far as `/proc` shows; empty when it does not).
pub fn held(root: &Path, rels: &[String]) -> Result<Vec<(String, Vec<String>)>> {
    held_leased(root, rels).map(|(held, _)| held)
}

/// [`held`], and the read leases it took on the free ones, kept: whoever opens one of those
/// files for writing from now on waits on the lease (the kernel's lease break) until it is
/// dropped, and [`Lease::breaking`] says so. Accept and undo keep them from the last look
/// through each path's rename, so a writer that comes in between is seen and the old file put
/// back for it, instead of its later writes going to a replaced file (as many leases as the
/// descriptor limit allows; the rest are looked at only).
pub fn held_leased(root: &Path, rels: &[String]) -> Result<(Vec<(String, Vec<String>)>, Leases)> {
    let room = descriptors_for_leases();
    let leases = crate::par::map(rels, crate::par::io_threads(rels.len()), "held files", |rel| lease(root, rel))?;
    let mut held = Vec::new();
    let mut unknown = Vec::new();
    let mut kept = Leases::default();
    for (rel, l) in rels.iter().zip(leases) {
        match l? {
            (LeaseState::Free, Some(file)) if kept.0.len() < room => kept.0.push((rel.clone(), Lease(file))),
            (LeaseState::Free, _) => {}
            (LeaseState::Held, _) => held.push(rel.clone()),
            (LeaseState::Unknown, _) => unknown.push(rel.clone()),
        }
    }
    let mut named = writers(root, &held.iter().chain(&unknown).cloned().collect::<Vec<_>>());
    // Held by the kernel's word stays held even if `/proc` shows nobody (another user's).
    for rel in held {
        if !named.iter().any(|(p, _)| *p == rel) {
            named.push((rel, Vec::new()));
        }
    }
    Ok((named, kept))
}

/// The read leases [`held_leased`] keeps, by path; dropped, they are released.
#[derive(Default)]
pub struct Leases(Vec<(String, Lease)>);

impl Leases {
    /// The lease on `rel`, if one is kept.
    pub fn get(&self, rel: &str) -> Option<&Lease> {
        self.0.iter().find(|(p, _)| p == rel).map(|(_, l)| l)
    }
}

/// A read lease on a file, kept on its descriptor.
pub struct Lease(std::fs::File);

impl Lease {
    /// Is someone opening the leased file for writing (or truncating it) right now: the
    /// lease is being broken, and their open waits until it is released. The file they get
    /// is the one leased, wherever it is by then.
    #[allow(unsafe_code)]
    pub fn breaking(&self) -> bool {
        // SAFETY: fcntl on our own descriptor. During a break, F_GETLEASE answers the type the
        // lease is being broken to (F_UNLCK for a read lease).
        unsafe { libc::fcntl(self.0.as_raw_fd(), libc::F_GETLEASE) != libc::F_RDLCK }
    }
}

/// How many leases one process may keep at once: its soft descriptor limit raised to the
/// hard one (at most 65,536), less room for everything else it opens. Raised once per process.
fn descriptors_for_leases() -> usize {
    use rustix::process::{getrlimit, setrlimit, Resource};
    static ROOM: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *ROOM.get_or_init(|| {
        let mut lim = getrlimit(Resource::Nofile);
        let want = lim.maximum.unwrap_or(65_536).min(65_536);
        if lim.current.is_some_and(|cur| cur < want) {
            lim.current = Some(want);
            let _ = setrlimit(Resource::Nofile, lim);
        }
        (getrlimit(Resource::Nofile).current.unwrap_or(1024) as usize).saturating_sub(512)
    })
}

enum LeaseState {
    Free,
    Held,
    Unknown,
}

/// What a read lease on `rel` says, and the file holding it when one was taken. A lease break
/// while it is held (someone opening the file for writing) signals SIGURG, ignored by
/// default, not SIGIO, which would end this process; closing the file releases the lease.
#[allow(unsafe_code)]
fn lease(root: &Path, rel: &str) -> Result<(LeaseState, Option<std::fs::File>)> {
    // `F_SETSIG` (Linux, <fcntl.h>): the signal a lease break sends.
    const F_SETSIG: libc::c_int = 10;
    let file = match open_regular_in(root, rel, None) {
        Ok(Some((file, _))) => file,
        Ok(None) => return Ok((LeaseState::Free, None)),
        // A lease someone else holds for writing (a file server's): the open would wait for
        // it to break; with O_NONBLOCK it says so at once.
        Err(crate::Error::Io { source, .. }) if source.raw_os_error() == Some(libc::EWOULDBLOCK) => return Ok((LeaseState::Held, None)),
        Err(e) => return Err(e),
    };
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on our own descriptor.
    let taken = unsafe {
        libc::fcntl(fd, F_SETSIG, libc::SIGURG);
        libc::fcntl(fd, libc::F_SETLEASE, libc::F_RDLCK)
    };
    Ok(match (taken, std::io::Error::last_os_error().raw_os_error()) {
        (0.., _) => (LeaseState::Free, Some(file)),
        (_, Some(libc::EAGAIN) | Some(libc::EBUSY)) => (LeaseState::Held, None),
        _ => (LeaseState::Unknown, None),
    })
}

/// The processes `/proc` shows holding each of `rels` for writing: a descriptor open for
/// writing (its `fdinfo` flags), or a shared writable mapping. One pass over `/proc` for all.
fn writers(root: &Path, rels: &[String]) -> Vec<(String, Vec<String>)> {
    use std::os::unix::fs::MetadataExt;
    let files: Vec<(&String, u64, u64)> = rels.iter().filter_map(|r| stat_nofollow(root, r).ok().flatten().map(|st| (r, st.st_dev, st.st_ino))).collect();
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    if files.is_empty() {
        return out;
    }
    for p in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<u32>().ok()).filter(|pid| *pid != std::process::id()) else { continue };
        let mut hit: Vec<&String> = Vec::new();
        for fd in std::fs::read_dir(p.path().join("fd")).into_iter().flatten().flatten() {
            let Ok(m) = std::fs::metadata(fd.path()) else { continue };
            if let Some((rel, _, _)) = files.iter().find(|(_, dev, ino)| m.dev() == *dev && m.ino() == *ino) {
                if open_for_writing(&p.path(), &fd.file_name()) && !hit.contains(rel) {
                    hit.push(rel);
                }
            }
        }
        for line in std::fs::read_to_string(p.path().join("maps")).unwrap_or_default().lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(perms), Some(dev), Some(ino)) = (f.get(1), f.get(3), f.get(4).and_then(|i| i.parse::<u64>().ok())) else { continue };
            if !(perms.contains('w') && perms.contains('s')) {
                continue;
            }
            if let Some((rel, _, _)) = files.iter().find(|(_, d, i)| *i == ino && same_dev(dev, *d)) {
                if !hit.contains(rel) {
                    hit.push(rel);
                }
            }
        }
        let name = std::fs::read_to_string(p.path().join("comm")).unwrap_or_default();
        for rel in hit {
            let who = format!("pid {pid} ({})", crate::display::escape_line(name.trim()));
            match out.iter_mut().find(|(p, _)| p == rel) {
                Some((_, list)) if list.len() < 3 => list.push(who),
                Some(_) => {}
                None => out.push((rel.clone(), vec![who])),
            }
        }
    }
    out
}

/// Is descriptor `fd` of process `proc` open for writing (`fdinfo`'s octal flags)?
fn open_for_writing(proc: &Path, fd: &std::ffi::OsStr) -> bool {
    let info = std::fs::read_to_string(proc.join("fdinfo").join(fd)).unwrap_or_default();
    let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).and_then(|f| u32::from_str_radix(f.trim(), 8).ok());
    flags.is_some_and(|f| f & libc::O_ACCMODE as u32 != libc::O_RDONLY as u32)
}

/// Is `maps`' device field (`major:minor`, hex) the device `dev`?
fn same_dev(field: &str, dev: u64) -> bool {
    let Some((maj, min)) = field.split_once(':') else { return false };
    let (Ok(maj), Ok(min)) = (u32::from_str_radix(maj, 16), u32::from_str_radix(min, 16)) else { return false };
    libc::makedev(maj, min) == dev
}
