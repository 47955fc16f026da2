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

/// Opens a regular file under the root without following symlinks: the file, its size and
/// mode. `Ok(None)` when it does not exist (or a parent is missing, not a directory, or a
/// symlink), or is not a regular file.
fn open_regular(root: &Path, rel: &str) -> Result<Option<(File, u64, u32)>> {
    let (dir, name) = split(rel);
    let dfd = match open_dir(root, dir, false) {
        Ok(d) => d,
        Err(Error::Io { source, .. }) if is_absent(&source) => return Ok(None),
        Err(e) => return Err(e),
    };
    let fd = match rfs::openat(&dfd, name, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty()) {
        Ok(fd) => fd,
        Err(e) if matches!(e, rustix::io::Errno::NOENT | rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
            return Ok(None)
        }
        Err(e) => return Err(err(root, rel, e)),
    };
    let st = rfs::fstat(&fd).map_err(|e| err(root, rel, e))?;
    if rfs::FileType::from_raw_mode(st.st_mode) != rfs::FileType::RegularFile {
        return Ok(None);
    }
    Ok(Some((File::from(fd), st.st_size as u64, st.st_mode & 0o7777)))
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
    let Some((file, size, mode)) = open_regular(root, rel)? else { return Ok(None) };
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
    let Some((mut file, _, _)) = open_regular(root, rel)? else { return Ok(None) };
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
    tmp: String,
    name: String,
    committed: bool,
}

/// Writes `content` with `mode` under a fresh temporary name in `rel`'s directory (created if
/// missing), synced, ready to [`Prepared::commit`].
pub fn prepare(root: &Path, rel: &str, content: &[u8], mode: u32) -> Result<Prepared> {
    let (dir, name) = split(rel);
    if name.is_empty() {
        return Err(Error::InvalidPath(rel.to_string()));
    }
    let dfd = open_dir(root, dir, true)?;
    let tmp = temp_name();
    // O_EXCL: never write through anything already at that name (a planted link included).
    let fd = rfs::openat(
        &dfd,
        tmp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode & 0o777),
    )
    .map_err(|e| err(root, rel, e))?;
    let prepared = Prepared { root: root.to_path_buf(), dir: dir.to_string(), tmp, name: name.to_string(), committed: false };
    // The umask may have narrowed the mode (or it has bits open() ignores): set it exactly,
    // only then (a needless chmod is one more metadata change for the fsync to commit).
    let st = rfs::fstat(&fd).map_err(|e| err(root, rel, e))?;
    if st.st_mode & 0o7777 != mode & 0o7777 {
        rfs::fchmod(&fd, Mode::from_raw_mode(mode & 0o7777)).map_err(|e| err(root, rel, e))?;
    }
    let mut file = File::from(fd);
    file.write_all(content).and_then(|_| file.sync_all()).map_err(|e| Error::io(root.join(rel), e))?;
    Ok(prepared)
}

impl Prepared {
    /// Puts the file in place: rename over the target, then fsync of the directory.
    pub fn commit(mut self) -> Result<()> {
        let rel = if self.dir.is_empty() { self.name.clone() } else { format!("{}/{}", self.dir, self.name) };
        let dfd = open_dir(&self.root, &self.dir, false)?;
        rfs::renameat(&dfd, self.tmp.as_str(), &dfd, self.name.as_str()).map_err(|e| err(&self.root, &rel, e))?;
        self.committed = true;
        rfs::fsync(&dfd).map_err(|e| err(&self.root, &rel, e))
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if !self.committed {
            if let Ok(dfd) = open_dir(&self.root, &self.dir, false) {
                let _ = rfs::unlinkat(&dfd, self.tmp.as_str(), AtFlags::empty());
            }
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
