//! Mount primitives of the confined side (pid 1, inside the run's user and mount namespaces:
//! nothing here is visible outside): mounts, binds, detached trees, mount attributes, and
//! directories or files to mount over. [`super::view`] composes them.

use super::sys::{check, cstr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

const OPEN_TREE_CLONE: libc::c_uint = 1;
pub(super) const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 4;
pub(super) const RDONLY: u64 = 1;
pub(super) const NOSUID: u64 = 2;
pub(super) const NODEV: u64 = 4;
pub(super) const NOEXEC: u64 = 8;

#[allow(unsafe_code)]
pub(super) fn mount(src: &str, target: &Path, fstype: &str, flags: libc::c_ulong, data: Option<&str>) -> Result<(), String> {
    let (s, t, f) = (cstr(src)?, cstr(target)?, cstr(fstype)?);
    let d = data.map(cstr).transpose()?;
    let dp = d.as_ref().map_or(std::ptr::null(), |d| d.as_ptr() as *const libc::c_void);
    // SAFETY: mount(2) with NUL-terminated strings that live across the call.
    let rc = unsafe { libc::mount(s.as_ptr(), t.as_ptr(), f.as_ptr(), flags, dp) };
    check(rc as _, &format!("mount {fstype} on {}", target.display()))
}

/// A tmpfs at `target` (`mb` 0: the kernel's default size).
pub(super) fn tmpfs(target: &Path, mb: u64, mode: &str, flags: libc::c_ulong) -> Result<(), String> {
    let data = if mb == 0 { format!("mode={mode}") } else { format!("size={mb}m,mode={mode}") };
    mount("tmpfs", target, "tmpfs", libc::MS_NOSUID | libc::MS_NODEV | flags, Some(&data))
}

/// A recursive bind of `src` at `target`.
pub(super) fn bind(src: &Path, target: &Path) -> Result<(), String> {
    mount(&src.to_string_lossy(), target, "", libc::MS_BIND | libc::MS_REC, None)
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

/// Attaches a detached tree at `target`.
#[allow(unsafe_code)]
pub(super) fn attach(tree: &OwnedFd, target: &Path) -> Result<(), String> {
    let (empty, t) = (cstr("")?, cstr(target)?);
    // SAFETY: move_mount of our detached tree onto a path.
    let rc = unsafe { libc::syscall(libc::SYS_move_mount, tree.as_raw_fd(), empty.as_ptr(), libc::AT_FDCWD, t.as_ptr(), MOVE_MOUNT_F_EMPTY_PATH) };
    check(rc, &format!("attach {}", target.display()))
}

/// Adds `attrs` (RDONLY, NOSUID, ...) to the mount at `path` (`recursive`: and every mount
/// below it). Attributes can be added to a locked mount, never taken away.
pub(super) fn set_attrs(path: &Path, attrs: u64, recursive: bool) -> Result<(), String> {
    mount_setattr(libc::AT_FDCWD, path, if recursive { AT_RECURSIVE } else { 0 }, attrs, 0).map_err(|e| format!("mount attributes of {}: {e}", path.display()))
}

/// `mount_setattr(2)`: `attrs` set on `dirfd`/`path` (`userns_fd` for `MOUNT_ATTR_IDMAP`).
#[allow(unsafe_code)]
pub(super) fn mount_setattr(dirfd: i32, path: &Path, flags: libc::c_uint, attrs: u64, userns_fd: u64) -> Result<(), String> {
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    let attr = MountAttr { attr_set: attrs, attr_clr: 0, propagation: 0, userns_fd };
    let p = cstr(path)?;
    // SAFETY: mount_setattr with a correctly sized attribute struct.
    let rc = unsafe { libc::syscall(libc::SYS_mount_setattr, dirfd, p.as_ptr(), flags, &attr as *const MountAttr, std::mem::size_of::<MountAttr>()) };
    check(rc, "mount_setattr")
}

/// A read-only bind of `src` (a directory or a file) at `target` (made if missing).
pub(super) fn bind_read_only(src: &Path, target: &Path, is_dir: bool) -> Result<(), String> {
    if is_dir { make_dirs(target)? } else { make_file(target)? }
    bind(src, target)?;
    set_attrs(target, RDONLY | NOSUID | NODEV, true)
}

/// `mkdir -p` that accepts what exists.
pub(super) fn make_dirs(path: &Path) -> Result<(), String> {
    if path.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(path).map_err(|e| format!("mkdir {}: {e}", path.display()))
}

/// A directory with exactly `mode` (umask aside), made if missing.
pub(super) fn make_dir_mode(path: &Path, mode: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    make_dirs(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(|e| format!("chmod {}: {e}", path.display()))
}

/// An empty file to mount a device or a file over.
pub(super) fn make_file(path: &Path) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        make_dirs(dir)?;
    }
    if path.exists() {
        return Ok(());
    }
    std::fs::File::create(path).map(drop).map_err(|e| format!("create {}: {e}", path.display()))
}

/// Escapes a path for overlayfs's option string.
pub(super) fn layer(path: &Path) -> String {
    let mut out = String::new();
    for c in path.to_string_lossy().chars() {
        if matches!(c, '\\' | ':' | ',') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `path` under `root` (both absolute): where a host path appears in the view being built.
pub(super) fn under(root: &Path, path: &Path) -> std::path::PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}
