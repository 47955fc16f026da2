//! The file system of a run, built by its pid 1 inside the run's own user and mount
//! namespaces (nothing here is visible outside):
//!
//! - the workspace: an overlay whose lower layers are the proposal's stage and the project
//!   root, whose upper layer is on a private size-limited tmpfs, mounted on the project's own
//!   path (so absolute paths in build files keep working), with `.agentfs` and `.grail`
//!   covered;
//! - every other mount of the host read-only, `nosuid`, `nodev`;
//! - empty private tmpfs over the home directory, `/tmp`, `/var/tmp`, `/run`, `$CAIRN_HOME`
//!   and the other masks of the spec; `/dev/null` over secret files;
//! - the user's `read_paths` put back (read-only) inside the masks;
//! - a minimal `/dev` and a `/proc` of the run's own pid namespace.
//!
//! Detached copies (`open_tree`) of what must stay reachable are taken before the masks go
//! on, and attached (`move_mount`) after.

use super::sys::{check, cstr, os_err};
use super::spec::Spec;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

const OPEN_TREE_CLONE: libc::c_uint = 1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 4;
const MOUNT_ATTR_RDONLY: u64 = 1;
const MOUNT_ATTR_NOSUID: u64 = 2;
const MOUNT_ATTR_NODEV: u64 = 4;
/// Device nodes the run's `/dev` gets from the host's.
const DEVICES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

#[allow(unsafe_code)]
fn mount(src: &str, target: &Path, fstype: &str, flags: libc::c_ulong, data: Option<&str>) -> Result<(), String> {
    let (s, t, f) = (cstr(src)?, cstr(target)?, cstr(fstype)?);
    let d = data.map(cstr).transpose()?;
    let dp = d.as_ref().map_or(std::ptr::null(), |d| d.as_ptr() as *const libc::c_void);
    // SAFETY: mount(2) with NUL-terminated strings that live across the call.
    let rc = unsafe { libc::mount(s.as_ptr(), t.as_ptr(), f.as_ptr(), flags, dp) };
    check(rc as _, &format!("mount {fstype} on {}", target.display()))
}

fn tmpfs(target: &Path, mb: u64, mode: &str, flags: libc::c_ulong) -> Result<(), String> {
    let data = format!("size={mb}m,mode={mode}");
    mount("tmpfs", target, "tmpfs", libc::MS_NOSUID | libc::MS_NODEV | flags, Some(&data))
}

/// A detached copy of the mount tree at `path` (`recursive`: with the mounts below it).
#[allow(unsafe_code)]
pub(super) fn clone_tree(path: &Path, recursive: bool) -> Result<OwnedFd, String> {
    let p = cstr(path)?;
    let flags = OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: open_tree returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, p.as_ptr(), flags) };
    check(fd, &format!("open_tree {}", path.display()))?;
    // SAFETY: a descriptor we own from here on.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Detached copies of the host paths that exist among `paths`, each with whether it is a
/// directory (known only now: once masked, the path is gone).
fn clone_all(paths: &[PathBuf]) -> Result<Vec<(PathBuf, bool, OwnedFd)>, String> {
    paths.iter().filter(|p| p.exists()).map(|p| clone_tree(p, true).map(|t| (p.clone(), p.is_dir(), t))).collect()
}

/// Attaches a detached tree at `target`.
#[allow(unsafe_code)]
fn attach(tree: &OwnedFd, target: &Path) -> Result<(), String> {
    let (empty, t) = (cstr("")?, cstr(target)?);
    // SAFETY: move_mount of our detached tree onto a path.
    let rc = unsafe { libc::syscall(libc::SYS_move_mount, tree.as_raw_fd(), empty.as_ptr(), libc::AT_FDCWD, t.as_ptr(), MOVE_MOUNT_F_EMPTY_PATH) };
    check(rc, &format!("attach {}", target.display()))
}

/// Every mount under `/` read-only, nosuid, nodev.
#[allow(unsafe_code)]
fn host_read_only() -> Result<(), String> {
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    let attr = MountAttr { attr_set: MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, attr_clr: 0, propagation: 0, userns_fd: 0 };
    let root = cstr("/")?;
    // SAFETY: mount_setattr with a correctly sized attribute struct.
    let rc = unsafe { libc::syscall(libc::SYS_mount_setattr, libc::AT_FDCWD, root.as_ptr(), AT_RECURSIVE, &attr as *const MountAttr, std::mem::size_of::<MountAttr>()) };
    check(rc, "read-only host (mount_setattr)")
}

/// `mkdir -p` that accepts what exists (on a read-only mount, existing directories are fine).
fn make_dirs(path: &Path) -> Result<(), String> {
    if path.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(path).map_err(|e| format!("mkdir {}: {e}", path.display()))
}

/// An empty file to mount a device or a file over.
fn make_file(path: &Path) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        make_dirs(dir)?;
    }
    if path.exists() {
        return Ok(());
    }
    std::fs::File::create(path).map(drop).map_err(|e| format!("create {}: {e}", path.display()))
}

/// Escapes a path for overlayfs's option string.
fn layer(path: &Path) -> String {
    let mut out = String::new();
    for c in path.to_string_lossy().chars() {
        if matches!(c, '\\' | ':' | ',') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Builds the run's file system (see the module docs); returns a descriptor of the written
/// layer, for the capture after the command.
#[allow(unsafe_code)]
pub(super) fn build(spec: &Spec) -> Result<OwnedFd, String> {
    mount("none", Path::new("/"), "", libc::MS_REC | libc::MS_PRIVATE, None)?;
    let (rw, merged) = (spec.rw(), spec.merged());
    if spec.wrap.is_none() {
        tmpfs(&rw, spec.max_memory_mb, "0755", 0)?;
    }
    for d in ["upper", "work"] {
        make_dirs(&rw.join(d))?;
    }
    let opts = format!("lowerdir={}:{},upperdir={},workdir={},userxattr", layer(&spec.stage()), layer(&spec.root), layer(&rw.join("upper")), layer(&rw.join("work")));
    mount("overlay", &merged, "overlay", 0, Some(&opts)).map_err(|e| format!("copy-on-write workspace (overlayfs in a user namespace): {e}"))?;
    let upper = std::fs::File::open(rw.join("upper")).map_err(|e| format!("upper layer: {e}"))?;
    let workspace = clone_tree(&merged, false)?;
    let reads = clone_all(&spec.read_paths)?;
    let writable = match &spec.wrap {
        Some(w) => clone_all(&w.writable)?,
        None => Vec::new(),
    };
    // A wrap session keeps the user's terminal: the host's pseudo-terminals stay visible.
    let host_pts = match spec.wrap {
        Some(_) => clone_tree(Path::new("/dev/pts"), true).ok(),
        None => None,
    };
    let devices: Vec<(&str, OwnedFd)> = DEVICES.iter().filter(|d| Path::new("/dev").join(d).exists()).filter_map(|d| clone_tree(&Path::new("/dev").join(d), false).ok().map(|t| (*d, t))).collect();
    for f in spec.hidden_files.iter().filter(|f| f.is_file()) {
        mount("/dev/null", f, "", libc::MS_BIND, None)?;
    }
    host_read_only()?;
    for m in spec.masks.iter().filter(|m| m.is_dir()) {
        tmpfs(m, spec.max_memory_mb, "0755", 0)?;
    }
    build_dev(&devices, host_pts.as_ref())?;
    mount("proc", Path::new("/proc"), "proc", libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC, None).map_err(|e| format!("a private /proc: {e}"))?;
    make_dirs(&spec.root)?;
    attach(&workspace, &spec.root)?;
    for m in spec.workspace_masks.iter().filter(|m| m.is_dir()) {
        tmpfs(m, 1, "0555", libc::MS_RDONLY)?;
    }
    for (path, dir, tree) in reads.iter().chain(&writable) {
        if *dir { make_dirs(path)? } else { make_file(path)? }
        attach(tree, path)?;
    }
    for path in spec.wrap.iter().flat_map(|w| &w.read_only).filter(|p| p.exists()) {
        mount(&path.to_string_lossy(), path, "", libc::MS_BIND | libc::MS_REC, None)?;
        mount("none", path, "", libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV, None)?;
    }
    let host = cstr("cairn-run")?;
    // SAFETY: sethostname in the run's own uts namespace.
    unsafe { libc::sethostname(host.as_ptr(), 9) };
    if !spec.host_network {
        loopback_up()?;
    }
    Ok(upper.into())
}

/// A minimal `/dev`: the host's harmless devices, `/dev/shm`, `/dev/pts` where allowed, and
/// the usual links.
fn build_dev(devices: &[(&str, OwnedFd)], host_pts: Option<&OwnedFd>) -> Result<(), String> {
    let dev = Path::new("/dev");
    tmpfs(dev, 64, "0755", libc::MS_NOEXEC)?;
    for (name, tree) in devices {
        make_file(&dev.join(name))?;
        attach(tree, &dev.join(name))?;
    }
    for (link, target) in [("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2"), ("ptmx", "pts/ptmx")] {
        let _ = std::os::unix::fs::symlink(target, dev.join(link));
    }
    make_dirs(&dev.join("shm"))?;
    make_dirs(&dev.join("pts"))?;
    match host_pts {
        Some(pts) => attach(pts, &dev.join("pts"))?,
        // A terminal is a convenience (some test runners want one); its absence is no error.
        None => {
            let _ = mount("devpts", &dev.join("pts"), "devpts", libc::MS_NOSUID | libc::MS_NOEXEC, Some("newinstance,ptmxmode=0666,mode=620"));
        }
    }
    Ok(())
}

/// Brings up `lo` in the run's network namespace.
#[allow(unsafe_code)]
fn loopback_up() -> Result<(), String> {
    // SAFETY: a datagram socket for the interface ioctls, closed by OwnedFd.
    let sock = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    check(sock as _, "loopback socket")?;
    // SAFETY: we own the new descriptor.
    let sock = unsafe { OwnedFd::from_raw_fd(sock) };
    // SAFETY: ifreq is plain data; zeroed is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (i, b) in b"lo".iter().enumerate() {
        req.ifr_name[i] = *b as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS on a valid socket and ifreq.
    unsafe {
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) < 0 {
            return Err(os_err("loopback flags"));
        }
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) < 0 {
            return Err(os_err("loopback up"));
        }
    }
    Ok(())
}
