//! Symlink-safe file system access inside the project root.
//!
//! Every path is walked component by component with `openat(O_NOFOLLOW)` from a directory
//! descriptor of the root, so neither a symlink nor a `..` can lead a read or a write out of the
//! project, whatever the tree looks like at that instant. Writes are atomic: a temporary file in
//! the same directory, fsynced, renamed over the target, then the directory fsynced.

use crate::error::{Error, Result};
use rustix::fs::{self as rfs, AtFlags, Mode, OFlags};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

fn err(root: &Path, rel: &str, e: rustix::io::Errno) -> Error {
    Error::io(root.join(rel), std::io::Error::from(e))
}

fn open_root(root: &Path) -> Result<OwnedFd> {
    rfs::open(root, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| Error::io(root, e.into()))
}

/// Opens the directory `rel` (relative, `/`-separated, already normalized) under `root`,
/// refusing symlinks on the way. With `create`, missing directories are made (mode 0755).
pub fn open_dir(root: &Path, rel: &str, create: bool) -> Result<OwnedFd> {
    let mut fd = open_root(root)?;
    for comp in rel.split('/').filter(|c| !c.is_empty()) {
        if comp == ".." || comp == "." {
            return Err(Error::InvalidPath(rel.to_string()));
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let next = match rfs::openat(&fd, comp, flags, Mode::empty()) {
            Ok(next) => next,
            Err(rustix::io::Errno::NOENT) if create => {
                match rfs::mkdirat(&fd, comp, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(err(root, rel, e)),
                }
                rfs::openat(&fd, comp, flags, Mode::empty()).map_err(|e| err(root, rel, e))?
            }
            Err(e) => return Err(err(root, rel, e)),
        };
        fd = next;
    }
    Ok(fd)
}

fn split(rel: &str) -> (&str, &str) {
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

fn open_regular_in(root: &Path, rel: &str, dir: Option<&OwnedFd>) -> Result<Option<(File, rfs::Stat)>> {
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
    let fd = match rfs::openat(dfd, name, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty()) {
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
    fn of(st: &rfs::Stat) -> Stamp {
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
    let (dir, name) = split(rel);
    let dfd = match open_dir(root, dir, false) {
        Ok(d) => d,
        Err(Error::Io { source, .. }) if is_absent(&source) => return Ok(None),
        Err(e) => return Err(e),
    };
    match rfs::statat(&dfd, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(Stamp::of(&st))),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(err(root, rel, e)),
    }
}

/// Like [`read`], with the stamp the file had when it was opened (before the read: a write
/// during the read shows as a later change). `dir`: `rel`'s directory when already opened by
/// [`open_dir`].
pub fn read_stamped(root: &Path, rel: &str, dir: Option<&OwnedFd>) -> Result<Option<(Vec<u8>, u32, Stamp)>> {
    let Some((mut file, st)) = open_regular_in(root, rel, dir)? else { return Ok(None) };
    let mut buf = Vec::with_capacity(st.st_size as usize);
    file.read_to_end(&mut buf).map_err(|e| Error::io(root.join(rel), e))?;
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
    let Some((mut file, _)) = open_regular(root, rel)? else { return Ok(None) };
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                hasher.update(&buf[..n]);
                total += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(root.join(rel), e)),
        }
    }
    Ok(Some((*hasher.finalize().as_bytes(), total)))
}

fn is_absent(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR) | Some(libc::ELOOP))
}

/// The mode of a regular file under the root, `None` when absent (symlinks count as absent).
pub fn stat_mode(root: &Path, rel: &str) -> Result<Option<u32>> {
    let (dir, name) = split(rel);
    let dfd = match open_dir(root, dir, false) {
        Ok(d) => d,
        Err(Error::Io { source, .. }) if is_absent(&source) => return Ok(None),
        Err(e) => return Err(e),
    };
    match rfs::statat(&dfd, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if rfs::FileType::from_raw_mode(st.st_mode) == rfs::FileType::RegularFile => Ok(Some(st.st_mode & 0o7777)),
        Ok(_) => Ok(None),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(err(root, rel, e)),
    }
}

/// Atomically replaces (or creates) `rel` with `content` and `mode`: temp file, fsync, rename,
/// fsync of the directory. Parents are created. A symlink at `rel` is replaced, never followed.
pub fn write_atomic(root: &Path, rel: &str, content: &[u8], mode: u32) -> Result<()> {
    prepare(root, rel, content, mode)?.commit()
}

/// A file written and synced under a temporary name beside its target, not yet in place:
/// [`Prepared::commit`] renames it over the target; dropping it uncommitted removes it. Accept
/// prepares every file before the first rename, so an ordinary error (a full disk, a read-only
/// directory) leaves the project untouched.
/// It holds no descriptor (an accept of thousands of files prepares them all at once): the
/// directory is opened again, symlink-safely, to commit or discard.
pub struct Prepared {
    root: std::path::PathBuf,
    dir: String,
    /// The directory, when the caller lent its descriptor (see [`prepare_in`]).
    dfd: Option<OwnedFd>,
    tmp: String,
    name: String,
    written: Written,
    committed: bool,
}

/// The status of a prepared file once written and synced; a rename keeps it, so it is the
/// status the file has in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub mode: u32,
    pub size: u64,
    pub mtime_ns: i64,
}

/// Writes `content` with `mode` under a fresh temporary name in `rel`'s directory (created if
/// missing), synced, ready to [`Prepared::commit`].
pub fn prepare(root: &Path, rel: &str, content: &[u8], mode: u32) -> Result<Prepared> {
    prepare_in(root, rel, None, content, mode)
}

/// [`prepare`] in `rel`'s directory as already opened by [`open_dir`] (`None`: open it,
/// creating what is missing). The [`Prepared`] keeps that descriptor to commit through: the
/// caller bounds how many it holds at once.
pub fn prepare_in(root: &Path, rel: &str, dfd: Option<OwnedFd>, content: &[u8], mode: u32) -> Result<Prepared> {
    let (dir, name) = split(rel);
    if name.is_empty() {
        return Err(Error::InvalidPath(rel.to_string()));
    }
    let (dfd, keep) = match dfd {
        Some(d) => (d, true),
        None => (open_dir(root, dir, true)?, false),
    };
    let tmp = temp_name();
    // O_EXCL: never write through anything already at that name (a planted link included).
    let fd = rfs::openat(
        &dfd,
        tmp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode & 0o777),
    )
    .map_err(|e| err(root, rel, e))?;
    let written = Written { mode: mode & 0o7777, size: content.len() as u64, mtime_ns: 0 };
    let mut prepared = Prepared { root: root.to_path_buf(), dir: dir.to_string(), dfd: None, tmp, name: name.to_string(), written, committed: false };
    // The umask may have narrowed the mode (or it has bits open() ignores): set it exactly,
    // only then (a needless chmod is one more metadata change for the fsync to commit).
    let st = rfs::fstat(&fd).map_err(|e| err(root, rel, e))?;
    if st.st_mode & 0o7777 != mode & 0o7777 {
        rfs::fchmod(&fd, Mode::from_raw_mode(mode & 0o7777)).map_err(|e| err(root, rel, e))?;
    }
    let mut file = File::from(fd);
    file.write_all(content).and_then(|_| file.sync_all()).map_err(|e| Error::io(root.join(rel), e))?;
    let st = rfs::fstat(&file).map_err(|e| err(root, rel, e))?;
    prepared.written.mtime_ns = st.st_mtime * 1_000_000_000 + st.st_mtime_nsec as i64;
    prepared.dfd = keep.then_some(dfd);
    Ok(prepared)
}

impl Prepared {
    /// The file's status once in place.
    pub fn written(&self) -> Written {
        self.written
    }

    fn rel(&self) -> String {
        if self.dir.is_empty() { self.name.clone() } else { format!("{}/{}", self.dir, self.name) }
    }

    /// Runs `f` on its directory: the descriptor it was lent, or opened again symlink-safely.
    fn in_dir<T>(&self, f: impl FnOnce(std::os::fd::BorrowedFd<'_>) -> T) -> Result<T> {
        match &self.dfd {
            Some(d) => Ok(f(d.as_fd())),
            None => open_dir(&self.root, &self.dir, false).map(|d| f(d.as_fd())),
        }
    }

    /// The stamp of what is at the target path now (see [`stamp`]).
    pub fn target_stamp(&self) -> Result<Option<Stamp>> {
        match self.in_dir(|d| rfs::statat(d, self.name.as_str(), AtFlags::SYMLINK_NOFOLLOW))? {
            Ok(st) => Ok(Some(Stamp::of(&st))),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(err(&self.root, &self.rel(), e)),
        }
    }

    /// Puts the file in place: rename over the target, then fsync of the directory.
    pub fn commit(mut self) -> Result<()> {
        let (renamed, synced) = self.in_dir(|d| match rfs::renameat(d, self.tmp.as_str(), d, self.name.as_str()) {
            Ok(()) => (true, rfs::fsync(d)),
            Err(e) => (false, Err(e)),
        })?;
        self.committed = renamed;
        synced.map_err(|e| err(&self.root, &self.rel(), e))
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if !self.committed {
            let _ = self.in_dir(|d| rfs::unlinkat(d, self.tmp.as_str(), AtFlags::empty()));
        }
    }
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

/// A fresh temporary name for [`write_atomic`]: short whatever the target's name (it must fit
/// NAME_MAX next to a 255-byte name) and random (two writers never share one).
pub fn temp_name() -> String {
    format!(".{:016x}{TEMP_SUFFIX}", rand::random::<u64>())
}

fn is_temp_name(name: &str) -> bool {
    name.len() == 17 + TEMP_SUFFIX.len() && name.starts_with('.') && name.ends_with(TEMP_SUFFIX) && name[1..17].bytes().all(|b| b.is_ascii_hexdigit())
}

/// Suffix of cairn's temporary files; the watcher and the scanner skip such names.
pub const TEMP_SUFFIX: &str = ".cairn-tmp";

/// Removes the temporary files a killed [`write_atomic`] may have left in directory `dir`
/// (relative; `""` is the root). Only under the review lock, before any write of this
/// process: no other writer is running then.
pub fn remove_temps(root: &Path, dir: &str) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else { return Ok(()) };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_temp_name(&name) {
            remove(root, &if dir.is_empty() { name } else { format!("{dir}/{name}") })?;
        }
    }
    Ok(())
}
