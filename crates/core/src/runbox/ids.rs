//! Who the command is. As an ordinary user: that user, mapped onto itself in the run's user
//! namespace (nothing changes). As root: never host root. The run's user namespace maps
//! inside 0 → host 0 (pid 1, which builds the view) and 65534 → host 65534 (the command,
//! which drops to it before `exec`). So the kernel sees the command as `nobody`: host-wide
//! sysctls, root-only files and the `RLIMIT_NPROC` exemption of uid 0 are out of its reach.
//!
//! Root's own files must still be the command's to use: the project (copy-on-write), the
//! proposal's stage, `read_paths` and a wrapped agent's state. They are attached through
//! *idmapped mounts* ([`idmapped`]), made here by process 1 while it is still host root
//! (only the initial namespace may idmap an ext4/xfs/btrfs mount): on them, files owned by
//! host uid/gid 0 appear owned by 65534. Writes land in the overlay's upper layer as 65534 and
//! come back through the capture, written by Cairn as root. A file system without idmapped
//! mounts (NFS, FUSE, an overlayfs root) is a missing layer, reported, never a fallback to
//! host root.

use super::sys::{check, os_err};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// The command's identity inside when `cairn` runs as root (`nobody`/`nogroup`).
pub const UNPRIVILEGED: u32 = 65534;

const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;

/// The identity of a run, decided by process 1 before it leaves the host's namespaces.
pub struct Ids {
    /// Started as root: the command drops to [`UNPRIVILEGED`].
    pub root: bool,
    /// uid and gid of `cairn`.
    pub uid: u32,
    pub gid: u32,
    /// Host paths already cloned, idmapped (as root): attached by pid 1 instead of bound.
    pub trees: Vec<(PathBuf, OwnedFd)>,
}

impl Ids {
    /// The command's uid and gid inside the run's user namespace.
    pub fn command(&self) -> (u32, u32) {
        if self.root { (UNPRIVILEGED, UNPRIVILEGED) } else { (self.uid, self.gid) }
    }
    /// The idmapped tree of `path`, if one was made.
    pub fn tree(&self, path: &Path) -> Option<&OwnedFd> {
        self.trees.iter().find(|(p, _)| p == path).map(|(_, t)| t)
    }
}

/// Before `unshare`: as root, no supplementary groups, and idmapped clones of `paths` (those
/// that exist). The first (the project, which the command writes) must be idmapped: `Err`
/// names the missing layer. The others fall back to a plain bind where their file system
/// cannot be idmapped: the command then reads them by their permission bits, as `nobody`.
#[allow(unsafe_code)]
pub fn prepare(paths: &[PathBuf]) -> Result<Ids, String> {
    let (uid, gid) = (rustix::process::getuid().as_raw(), rustix::process::getgid().as_raw());
    let root = host_root();
    let mut ids = Ids { root, uid, gid, trees: Vec::new() };
    if !root {
        return Ok(ids);
    }
    // SAFETY: setgroups with an empty list, in this single-threaded process.
    check(unsafe { libc::setgroups(0, std::ptr::null()) } as _, "drop supplementary groups")?;
    let userns = idmap_userns()?;
    for (i, p) in paths.iter().enumerate() {
        if ids.tree(p).is_some() || std::fs::symlink_metadata(p).is_err() {
            continue;
        }
        match idmapped(p, &userns) {
            Ok(tree) => ids.trees.push((p.clone(), tree)),
            Err(e) if i == 0 => return Err(format!("as root, commands run as uid {UNPRIVILEGED} and see root's files through idmapped mounts, which {} does not allow: {e}", p.display())),
            Err(_) => {}
        }
    }
    Ok(ids)
}

/// Is this process host root? Root of a container's user namespace is some host user
/// already: it is treated as an ordinary one.
pub(super) fn host_root() -> bool {
    rustix::process::getuid().is_root() && initial_user_namespace()
}

/// Is this process in the host's own user namespace (its uid map the identity of all ids)?
fn initial_user_namespace() -> bool {
    std::fs::read_to_string("/proc/self/uid_map").is_ok_and(|m| m.split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"])
}

/// A detached recursive clone of `path` on which host uid/gid 0 appear as 65534.
fn idmapped(path: &Path, userns: &OwnedFd) -> Result<OwnedFd, String> {
    use super::mounts::{clone_tree, mount_setattr, AT_RECURSIVE};
    let tree = clone_tree(path, true)?;
    let flags = libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE;
    mount_setattr(tree.as_raw_fd(), Path::new(""), flags, MOUNT_ATTR_IDMAP, userns.as_raw_fd() as u64).map_err(|e| format!("idmapped mount: {e}"))?;
    Ok(tree)
}

/// A user namespace mapping inside 0 → host 65534 (uid and gid), held by its descriptor: a
/// child enters it and waits; this process writes its maps, opens it and ends the child.
#[allow(unsafe_code)]
fn idmap_userns() -> Result<OwnedFd, String> {
    let map = format!("0 {UNPRIVILEGED} 1\n");
    let child = fork_in_new_userns()?;
    let result = (|| {
        write_maps(child.pid, &map, &map, false)?;
        std::fs::File::open(format!("/proc/{}/ns/user", child.pid)).map(OwnedFd::from).map_err(|e| format!("user namespace of the idmap: {e}"))
    })();
    drop(child);
    result
}

/// A child process that entered a new user namespace and waits (killed and reaped on drop).
struct Waiting {
    pid: libc::pid_t,
}

impl Drop for Waiting {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: killing and reaping our own child.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            libc::waitpid(self.pid, std::ptr::null_mut(), 0);
        }
    }
}

#[allow(unsafe_code)]
fn fork_in_new_userns() -> Result<Waiting, String> {
    let (r, w) = super::sys::pipe()?;
    let parent = rustix::process::getpid();
    // SAFETY: fork in a single-threaded process; the child only makes syscalls.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(os_err("fork"));
    }
    if pid == 0 {
        // SAFETY: in the child: unshare, say so, wait to be killed (by the parent, or by the
        // parent-death signal: armed after the unshare, which may clear it; a parent already
        // gone by then is seen in the parent pid).
        unsafe {
            let ok = libc::unshare(libc::CLONE_NEWUSER) == 0;
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if rustix::process::getppid() != Some(parent) {
                libc::_exit(0);
            }
            libc::write(w.as_raw_fd(), [ok as u8].as_ptr() as *const libc::c_void, 1);
            loop {
                libc::pause();
            }
        }
    }
    drop(w);
    let waiting = Waiting { pid };
    let mut b = [0u8; 1];
    // SAFETY: reading one byte from our pipe.
    let n = unsafe { libc::read(r.as_raw_fd(), b.as_mut_ptr() as *mut libc::c_void, 1) };
    if n != 1 || b[0] != 1 {
        return Err("user namespaces (unshare)".into());
    }
    Ok(waiting)
}

/// Writes the id maps of process `pid` (`deny`: refuse `setgroups` in it first, as an
/// unprivileged writer must).
pub fn write_maps(pid: libc::pid_t, uid_map: &str, gid_map: &str, deny: bool) -> Result<(), String> {
    let write = |file: &str, text: &str| std::fs::write(format!("/proc/{pid}/{file}"), text).map_err(|e| format!("user namespace ({file}): {e}"));
    if deny {
        write("setgroups", "deny")?;
    }
    write("uid_map", uid_map)?;
    write("gid_map", gid_map)
}

/// Starts a child in new namespaces (`flags` holds `CLONE_NEWUSER`): `fork` with them, so
/// that this process stays in the host's (and can write the child's id maps, see [`map`]).
/// Returns 0 in the child, its pid here.
#[allow(unsafe_code)]
pub fn clone_into(flags: libc::c_int) -> Result<libc::pid_t, String> {
    // SAFETY: clone without a new stack or shared memory is fork (the child runs on a copy
    // of this stack), in a single-threaded process. Unlike glibc's fork it leaves the
    // outer's tid in the child's thread descriptor: pid 1 takes no pthread mutex and starts
    // no thread, and glibc (>= 2.34) asks the kernel for the tid where it signals itself.
    let pid = unsafe { libc::syscall(libc::SYS_clone, (flags | libc::SIGCHLD) as libc::c_ulong, 0usize, 0usize, 0usize, 0usize) };
    if pid < 0 {
        return Err(os_err("user namespaces (clone)"));
    }
    Ok(pid as libc::pid_t)
}

/// Writes the id maps of the child `pid` from [`clone_into`]: as an ordinary user, itself
/// onto itself (`setgroups` denied first, as an unprivileged writer must); as root, 0 → 0 and
/// 65534 → 65534 (only a writer outside the namespace may map more than its own id).
pub fn map(ids: &Ids, pid: libc::pid_t) -> Result<(), String> {
    if ids.root {
        let map = format!("0 0 1\n{UNPRIVILEGED} {UNPRIVILEGED} 1\n");
        return write_maps(pid, &map, &map, false);
    }
    write_maps(pid, &format!("{} {} 1\n", ids.uid, ids.uid), &format!("{} {} 1\n", ids.gid, ids.gid), true)
}
