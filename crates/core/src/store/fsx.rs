//! Symlink-safe file system access inside the project root.
//!
//! Every path is walked component by component with `openat(O_NOFOLLOW)` from a directory
//! descriptor of the root, so neither a symlink nor a `..` can lead a read or a write out of the
//! project, whatever the tree looks like at that instant. Atomic writes build on it
//! (`store/atomic.rs`).

use crate::error::{Error, Result};
use rustix::fs::{self as rfs, AtFlags, Mode, OFlags};
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

pub(super) fn err(root: &Path, rel: &str, e: rustix::io::Errno) -> Error {
    Error::io(root.join(rel), std::io::Error::from(e))
}

fn open_root(root: &Path) -> Result<OwnedFd> {
    rfs::open(root, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| Error::io(root, e.into()))
}

/// Opens the directory `rel` (relative, `/`-separated, already normalized) under `root`,
/// refusing symlinks on the way. With `create`, missing directories are made (mode 0755).
pub fn open_dir(root: &Path, rel: &str, create: bool) -> Result<OwnedFd> {
    let fd = open_root(root)?;
    match open_dir_in(root, fd.as_fd(), rel, create)? {
        Some(dir) => Ok(dir),
        None => Ok(fd),
    }
}

/// [`open_dir`] from `base`, the root already opened; `None` for the root itself.
fn open_dir_in(root: &Path, base: std::os::fd::BorrowedFd<'_>, rel: &str, create: bool) -> Result<Option<OwnedFd>> {
    if rel.split('/').any(|c| c == ".." || c == ".") {
        return Err(Error::InvalidPath(rel.to_string()));
    }
    if rel.split('/').all(str::is_empty) {
        return Ok(None);
    }
    // One walk in the kernel, refusing symlinks and anything outside the root, where openat2
    // exists (Linux 5.6); otherwise, or to create what is missing, one component at a time.
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let beneath = rfs::ResolveFlags::BENEATH | rfs::ResolveFlags::NO_SYMLINKS | rfs::ResolveFlags::NO_MAGICLINKS;
    match rfs::openat2(base, rel, flags, Mode::empty(), beneath) {
        Ok(dir) => return Ok(Some(dir)),
        Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM | rustix::io::Errno::INVAL | rustix::io::Errno::AGAIN | rustix::io::Errno::XDEV) => {}
        Err(rustix::io::Errno::NOENT) if create => {}
        Err(e) => return Err(err(root, rel, e)),
    }
    let mut fd: Option<OwnedFd> = None;
    for comp in rel.split('/').filter(|c| !c.is_empty()) {
        let at = fd.as_ref().map_or(base, |f| f.as_fd());
        let next = match rfs::openat(at, comp, flags, Mode::empty()) {
            Ok(next) => next,
            Err(rustix::io::Errno::NOENT) if create => {
                match rfs::mkdirat(at, comp, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(err(root, rel, e)),
                }
                rfs::openat(at, comp, flags, Mode::empty()).map_err(|e| err(root, rel, e))?
            }
            Err(e) => return Err(err(root, rel, e)),
        };
        fd = Some(next);
    }
    Ok(fd)
}

/// The directory a run of paths lives in, opened once: callers walk paths in order, so
/// neighbours share it (a hundred files in ten directories cost ten walks, not a hundred).
/// The root is opened once per cache (a path walk less for every other directory).
pub struct DirCache<'r> {
    root: &'r Path,
    root_fd: Option<OwnedFd>,
    last: Option<(String, Option<OwnedFd>)>,
}

impl<'r> DirCache<'r> {
    pub fn new(root: &'r Path) -> DirCache<'r> {
        DirCache { root, root_fd: None, last: None }
    }

    /// The directory `rel` as [`open_dir`] opens it; `Ok(None)` when it is absent (missing,
    /// not a directory, or a symlink on the way).
    pub fn get(&mut self, rel: &str) -> Result<Option<&OwnedFd>> {
        if self.last.as_ref().is_none_or(|(d, _)| d != rel) {
            if self.root_fd.is_none() {
                self.root_fd = Some(open_root(self.root)?);
            }
            let base = self.root_fd.as_ref().map(|fd| fd.as_fd()).ok_or_else(|| Error::Internal("the root is not open".into()))?;
            let opened = match open_dir_in(self.root, base, rel, false) {
                Ok(Some(fd)) => Ok(fd),
                Ok(None) => base.try_clone_to_owned().map_err(|e| Error::io(self.root, e)),
                Err(e) => Err(e),
            };
            let fd = match opened {
                Ok(fd) => Some(fd),
                Err(Error::Io { source, .. }) if is_absent(&source) => None,
                Err(e) => return Err(e),
            };
            self.last = Some((rel.to_string(), fd));
        }
        Ok(self.last.as_ref().and_then(|(_, fd)| fd.as_ref()))
    }
}

pub(super) fn split(rel: &str) -> (&str, &str) {
    match rel.rfind('/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => ("", rel),
    }
}

/// Opens a regular file under the root without following symlinks: the file and its status.
/// `Ok(None)` when it does not exist (or a parent is missing, not a directory, or a symlink),
/// or is not a regular file.
fn open_regular(root: &Path, rel: &str) -> Result<Option<(File, rfs::Stat)>> {
    open_regular_in(root, rel, None)
}

pub(super) fn open_regular_in(root: &Path, rel: &str, dir: Option<&OwnedFd>) -> Result<Option<(File, rfs::Stat)>> {
    let (dir_rel, name) = split(rel);
    let opened;
    let dfd = match dir {
        Some(d) => d,
        None => match open_dir(root, dir_rel, false) {
            Ok(d) => {
                opened = d;
                &opened
            }
            Err(Error::Io { source, .. }) if is_absent(&source) => return Ok(None),
            Err(e) => return Err(e),
        },
    };
    // NONBLOCK: a FIFO (or a device) at the path must not hang the open; it is then seen for
    // what it is below and never read. Reads of a regular file ignore the flag.
    let fd = match rfs::openat(dfd, name, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => return Ok(None),
        Err(e) => return Err(err(root, rel, e)),
    };
    let st = rfs::fstat(&fd).map_err(|e| err(root, rel, e))?;
    if rfs::FileType::from_raw_mode(st.st_mode) != rfs::FileType::RegularFile {
        return Ok(None);
    }
    Ok(Some((File::from(fd), st)))
}

/// What a file's status says of its identity and last change: any write, rename over it or
/// `chmod` since a stamp was taken changes it (as far as the file system's timestamp
/// granularity shows, which is why accept also compares contents).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    mode: u32,
    size: i64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    /// The same file with the same content and mode as far as the status shows: all but the
    /// ctime, which moving a file (a rename) changes.
    pub fn same_file(&self, other: &Stamp) -> bool {
        (self.dev, self.ino, self.mode, self.size, self.mtime) == (other.dev, other.ino, other.mode, other.size, other.mtime)
    }

    pub(super) fn of(st: &rfs::Stat) -> Stamp {
        Stamp {
            dev: st.st_dev,
            ino: st.st_ino,
            mode: st.st_mode,
            size: st.st_size,
            mtime: (st.st_mtime, st.st_mtime_nsec as i64),
            ctime: (st.st_ctime, st.st_ctime_nsec as i64),
        }
    }
}

/// The stamp of whatever is at `rel` (not following a symlink there), `None` when nothing is.
pub fn stamp(root: &Path, rel: &str) -> Result<Option<Stamp>> {
    Ok(stat_nofollow(root, rel)?.map(|st| Stamp::of(&st)))
}

/// The status of whatever is at `rel` (not following a symlink there), `None` when nothing is.
pub fn stat_nofollow(root: &Path, rel: &str) -> Result<Option<rfs::Stat>> {
    let (dir, name) = split(rel);
    let dfd = match open_dir(root, dir, false) {
        Ok(d) => d,
        Err(Error::Io { source, .. }) if is_absent(&source) => return Ok(None),
        Err(e) => return Err(e),
    };
    match rfs::statat(&dfd, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(st)),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(err(root, rel, e)),
    }
}

/// Like [`read`], with the stamp the file had when it was opened (before the read: a write
/// during the read shows as a later change). `dir`: `rel`'s directory when already opened by
/// [`open_dir`].
pub fn read_stamped(root: &Path, rel: &str, dir: Option<&OwnedFd>) -> Result<Option<(Vec<u8>, u32, Stamp)>> {
    let Some((file, st)) = open_regular_in(root, rel, dir)? else { return Ok(None) };
    let mut buf = Vec::with_capacity(st.st_size as usize);
    // Through `take`: the size is known, and `File`'s own read_to_end would ask again.
    file.take(u64::MAX).read_to_end(&mut buf).map_err(|e| Error::io(root.join(rel), e))?;
    Ok(Some((buf, st.st_mode & 0o7777, Stamp::of(&st))))
}

/// Reads a regular file under the root without following symlinks. `Ok(None)` when it does not
/// exist (or a parent is missing, not a directory, or a symlink).
pub fn read(root: &Path, rel: &str) -> Result<Option<(Vec<u8>, u32)>> {
    match read_at_most(root, rel, u64::MAX)? {
        Some(Capped::Content(bytes, mode)) => Ok(Some((bytes, mode))),
        Some(Capped::TooLarge(_)) | None => Ok(None),
    }
}

/// A read bounded in size.
#[derive(Debug)]
pub enum Capped {
    /// The whole content and the mode.
    Content(Vec<u8>, u32),
    /// The file is larger than the cap (its size; nothing was read).
    TooLarge(u64),
}

/// Like [`read`], but never holds more than `max` bytes: a larger file (or one that grows
/// past `max` while being read) is [`Capped::TooLarge`].
pub fn read_at_most(root: &Path, rel: &str, max: u64) -> Result<Option<Capped>> {
    let Some((file, st)) = open_regular(root, rel)? else { return Ok(None) };
    let (size, mode) = (st.st_size as u64, st.st_mode & 0o7777);
    if size > max {
        return Ok(Some(Capped::TooLarge(size)));
    }
    let mut buf = Vec::with_capacity(size as usize);
    file.take(max.saturating_add(1)).read_to_end(&mut buf).map_err(|e| Error::io(root.join(rel), e))?;
    if buf.len() as u64 > max {
        return Ok(Some(Capped::TooLarge(buf.len() as u64)));
    }
    Ok(Some(Capped::Content(buf, mode)))
}

/// Hashes a regular file under the root as it streams by (never held whole): its hash and
/// the number of bytes hashed.
pub fn hash(root: &Path, rel: &str) -> Result<Option<(crate::store::Hash, u64)>> {
    hash_in(root, rel, None)
}

/// [`hash`] through `dir`, the open directory of `rel` when the caller has it (a scan of
/// that directory): one open per file instead of a walk from the root.
pub fn hash_in(root: &Path, rel: &str, dir: Option<&OwnedFd>) -> Result<Option<(crate::store::Hash, u64)>> {
    Ok(hash_stat_in(root, rel, dir)?.map(|(hash, n, _)| (hash, n)))
}

/// [`hash_in`], with the file's status as opened (a scan meeting a new file needs no stat
/// of its own).
pub fn hash_stat_in(root: &Path, rel: &str, dir: Option<&OwnedFd>) -> Result<Option<(crate::store::Hash, u64, rfs::Stat)>> {
    let Some((mut file, st)) = open_regular_in(root, rel, dir)? else { return Ok(None) };
    let size = st.st_size as u64;
    // One buffer per thread: a million small files would otherwise zero 64 KiB each.
    thread_local! {
        static BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; 64 * 1024]);
    }
    BUF.with(|buf| {
        let mut buf = buf.borrow_mut();
        let mut hasher = blake3::Hasher::new();
        let mut total = 0u64;
        loop {
            match file.read(&mut buf[..]) {
                Ok(0) => break,
                Ok(n) => {
                    hasher.update(&buf[..n]);
                    total += n as u64;
                    // A short read at the size stat'ed is the end (one read call fewer per
                    // small file); a file that grew goes on being read.
                    if n < buf.len() && total >= size {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(root.join(rel), e)),
            }
        }
        Ok(Some((*hasher.finalize().as_bytes(), total, st)))
    })
}

fn is_absent(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR) | Some(libc::ELOOP))
}

/// The mode of a regular file under the root, `None` when absent (symlinks count as absent).
pub fn stat_mode(root: &Path, rel: &str) -> Result<Option<u32>> {
    Ok(stat_nofollow(root, rel)?.filter(|st| rfs::FileType::from_raw_mode(st.st_mode) == rfs::FileType::RegularFile).map(|st| st.st_mode & 0o7777))
}

/// Removes the file `rel` (not following symlinks; a symlink itself is removed). Absent is fine.
pub fn remove(root: &Path, rel: &str) -> Result<()> {
    let (dir, name) = split(rel);
    let dfd = match open_dir(root, dir, false) {
        Ok(d) => d,
        Err(Error::Io { source, .. }) if is_absent(&source) => return Ok(()),
        Err(e) => return Err(e),
    };
    match rfs::unlinkat(&dfd, name, AtFlags::empty()) {
        Ok(()) => rfs::fsync(dfd.as_fd()).map_err(|e| err(root, rel, e)),
        Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(e) => Err(err(root, rel, e)),
    }
}

/// Removes `name` in `dir` and, for a directory, everything below it, never through a symlink
/// (a link is removed, not followed): what is there may be written by a confined command,
/// maybe still at work. A directory its owner cannot list or empty (overlayfs's work directory
/// has no permissions) is opened up through its own descriptor first. Absent is fine.
pub fn remove_tree_at(dir: std::os::fd::BorrowedFd<'_>, name: &std::ffi::OsStr) -> std::io::Result<()> {
    remove_below(dir, name, 0)
}

fn remove_below(dir: std::os::fd::BorrowedFd<'_>, name: &std::ffi::OsStr, depth: usize) -> std::io::Result<()> {
    use rustix::io::Errno;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    match rfs::unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => return Ok(()),
        // A directory (EISDIR on Linux).
        Err(Errno::ISDIR | Errno::PERM) => {}
        Err(e) => return Err(e.into()),
    }
    if depth > 4096 {
        return Err(std::io::Error::other("nested too deep to remove"));
    }
    let at = match rfs::openat(dir, name, OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    // Its owner's rights, through the descriptor: this directory's mode changes, whatever is
    // at the name by now.
    if rfs::fstat(&at).is_ok_and(|st| st.st_mode & 0o700 != 0o700) {
        let _ = std::fs::set_permissions(format!("/proc/self/fd/{}", at.as_raw_fd()), std::os::unix::fs::PermissionsExt::from_mode(0o700));
    }
    let sub = rfs::openat(&at, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
    drop(at);
    let mut names = Vec::new();
    for e in rfs::Dir::read_from(&sub)? {
        let n = e?.file_name().to_bytes().to_vec();
        if n != b"." && n != b".." {
            names.push(n);
        }
    }
    for n in names {
        remove_below(sub.as_fd(), std::ffi::OsStr::from_bytes(&n), depth + 1)?;
    }
    match rfs::unlinkat(dir, name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    /// A tree with a directory its owner may not list and symlinks to what is outside: it goes
    /// whole, and what the links point at stays.
    #[test]
    fn a_tree_is_removed_without_following_its_links() {
        use std::os::unix::fs::PermissionsExt;
        let t = std::path::Path::new("/tmp").join(format!("cairn-fsx-test-{}", std::process::id()));
        let (tree, outside) = (t.join("tree"), t.join("outside"));
        std::fs::create_dir_all(tree.join("a/locked/deep")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("keep"), "keep").unwrap();
        std::fs::write(tree.join("a/locked/deep/f"), "f").unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("a/link")).unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("a/locked/link")).unwrap();
        std::fs::set_permissions(tree.join("a/locked"), std::fs::Permissions::from_mode(0)).unwrap();
        let mode = std::fs::metadata(&outside).unwrap().permissions().mode();
        let parent = std::fs::File::open(&t).unwrap();
        super::remove_tree_at(std::os::fd::AsFd::as_fd(&parent), "tree".as_ref()).unwrap();
        assert!(!tree.exists());
        assert_eq!(std::fs::read_to_string(outside.join("keep")).unwrap(), "keep");
        assert_eq!(std::fs::metadata(&outside).unwrap().permissions().mode(), mode, "a link's target kept its mode");
        let _ = std::fs::remove_dir_all(&t);
    }
}
