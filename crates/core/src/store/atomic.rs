//! Atomic file replacement inside the project root: the new content is written and fsynced
//! as a temporary file in the target's directory, renamed over the target, then the directory
//! is fsynced. A reader sees the whole old file or the whole new one, never a mix.
//!
//! A temporary is either *named* (`.<16 hex>.cairn-tmp`, skipped by the watcher and the
//! scanner, removed by [`remove_temps`] after a crash) or *unnamed* (`O_TMPFILE`: no name
//! until [`Prepared::name`], so a crash before leaves nothing behind). Accept writes unnamed
//! ones ahead, before its journal exists, while review still runs, and names them once the
//! journal is on disk. An unnamed file is written with its writeback only started: a writer
//! of many files writes them all, then syncs them ([`Prepared::sync`]), so the disk gets them
//! together (a name is given only to a synced file).

use super::fsx::{err, open_dir, remove, split, Stamp};

mod over;
pub use over::{remove_over, Over};
use crate::error::{Error, Result};
use rustix::fs::{self as rfs, AtFlags, Mode, OFlags};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;

/// Atomically replaces (or creates) `rel` with `content` and `mode`. Parents are created. A
/// symlink at `rel` is replaced, never followed.
pub fn write_atomic(root: &Path, rel: &str, content: &[u8], mode: u32) -> Result<()> {
    prepare(root, rel, content, mode)?.commit()
}

/// A file written and synced beside its target, not yet in place: [`Prepared::commit`] puts
/// it there; dropping it uncommitted removes it. Accept prepares every file before the first
/// rename, so an ordinary error (a full disk, a read-only directory) leaves the project as it
/// was. Unless the caller lent it its directory's descriptor, it holds none (an accept of
/// thousands of files prepares them all at once): the directory is opened again,
/// symlink-safely, to commit or discard.
pub struct Prepared {
    root: std::path::PathBuf,
    dir: String,
    dfd: Option<OwnedFd>,
    temp: Temp,
    name: String,
    written: Written,
    /// False while an unnamed file's content may still be on its way to the disk.
    synced: bool,
    committed: bool,
}

/// Where the content waits: under a temporary name, or in an unnamed file (its descriptor)
/// until it is named.
enum Temp {
    Named(String),
    Unnamed(OwnedFd),
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
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rfs::openat(&dfd, tmp.as_str(), flags, Mode::from_raw_mode(mode & 0o777)).map_err(|e| err(root, rel, e))?;
    // From here on, dropping `prepared` removes the temporary.
    let mut prepared = Prepared::new(root, rel, Temp::Named(tmp), mode, content);
    prepared.written.mtime_ns = fill(root, rel, fd, content, mode, true)?;
    prepared.dfd = keep.then_some(dfd);
    Ok(prepared)
}

/// [`prepare_in`] as an unnamed file (`O_TMPFILE`) in `rel`'s directory `dfd`, which it keeps,
/// written but not yet synced: its writeback is started, and [`Prepared::sync`] (or naming
/// it, or committing it) waits for it. A writer of many files writes them all before it syncs
/// any, so the disk sees them together. `Ok(None)` when the file system or the kernel cannot
/// make unnamed files, or `/proc` (which names one at commit) is missing: the caller prepares
/// a named one instead.
pub fn write_unnamed(root: &Path, rel: &str, dfd: OwnedFd, content: &[u8], mode: u32) -> Result<Option<Prepared>> {
    static PROC: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if !*PROC.get_or_init(|| Path::new("/proc/self/fd").is_dir()) {
        return Ok(None);
    }
    let fd = match rfs::openat(&dfd, ".", OFlags::WRONLY | OFlags::TMPFILE | OFlags::CLOEXEC, Mode::from_raw_mode(mode & 0o777)) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::OPNOTSUPP | rustix::io::Errno::ISDIR | rustix::io::Errno::INVAL | rustix::io::Errno::NOENT) => return Ok(None),
        Err(e) => return Err(err(root, rel, e)),
    };
    let kept = fd.try_clone().map_err(|e| Error::io(root.join(rel), e))?;
    let mut prepared = Prepared::new(root, rel, Temp::Unnamed(kept), mode, content);
    prepared.written.mtime_ns = fill(root, rel, fd, content, mode, false)?;
    prepared.dfd = Some(dfd);
    prepared.synced = false;
    Ok(Some(prepared))
}

/// Sets the mode of a fresh temporary and writes it; then syncs it, or (`sync` false) only
/// starts its writeback. Its mtime (a sync does not move it).
fn fill(root: &Path, rel: &str, fd: OwnedFd, content: &[u8], mode: u32, sync: bool) -> Result<i64> {
    // The umask may have narrowed the mode (or it has bits open() ignores): set it exactly,
    // only then (a needless chmod is one more metadata change for the fsync to commit).
    let st = rfs::fstat(&fd).map_err(|e| err(root, rel, e))?;
    if st.st_mode & 0o7777 != mode & 0o7777 {
        rfs::fchmod(&fd, Mode::from_raw_mode(mode & 0o7777)).map_err(|e| err(root, rel, e))?;
    }
    let mut file = File::from(fd);
    file.write_all(content).map_err(|e| Error::io(root.join(rel), e))?;
    if sync {
        file.sync_all().map_err(|e| Error::io(root.join(rel), e))?;
    } else {
        start_writeback(&file);
    }
    let st = rfs::fstat(&file).map_err(|e| err(root, rel, e))?;
    Ok(st.st_mtime * 1_000_000_000 + st.st_mtime_nsec as i64)
}

/// Starts writing `file`'s dirty pages out, without waiting. Only a hint (the sync that
/// follows is what counts): its failure changes nothing.
#[allow(unsafe_code)]
fn start_writeback(file: &File) {
    // SAFETY: a plain system call on a descriptor `file` keeps open; no memory is passed.
    let _ = unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
}

impl Prepared {
    fn new(root: &Path, rel: &str, temp: Temp, mode: u32, content: &[u8]) -> Prepared {
        let (dir, name) = split(rel);
        let written = Written { mode: mode & 0o7777, size: content.len() as u64, mtime_ns: 0 };
        Prepared { root: root.to_path_buf(), dir: dir.to_string(), dfd: None, temp, name: name.to_string(), written, synced: true, committed: false }
    }

    /// Was it prepared in directory `dir` (the same directory, not just the same path)?
    pub fn is_in(&self, dir: &OwnedFd) -> bool {
        let id = |st: rfs::Stat| (st.st_dev, st.st_ino);
        match (&self.dfd, rfs::fstat(dir)) {
            (Some(mine), Ok(theirs)) => rfs::fstat(mine).is_ok_and(|st| id(st) == id(theirs)),
            _ => false,
        }
    }

    /// The file's status once in place.
    pub fn written(&self) -> Written {
        self.written
    }

    /// The target's path, relative to the project.
    pub fn rel(&self) -> String {
        if self.dir.is_empty() { self.name.clone() } else { format!("{}/{}", self.dir, self.name) }
    }

    /// Runs `f` on its directory: the descriptor it was lent, or opened again symlink-safely.
    fn in_dir<T>(&self, f: impl FnOnce(BorrowedFd<'_>) -> T) -> Result<T> {
        match &self.dfd {
            Some(d) => Ok(f(d.as_fd())),
            None => open_dir(&self.root, &self.dir, false).map(|d| f(d.as_fd())),
        }
    }

    /// The stamp of what is at the target path now (see [`super::fsx::stamp`]).
    pub fn target_stamp(&self) -> Result<Option<Stamp>> {
        match self.in_dir(|d| rfs::statat(d, self.name.as_str(), AtFlags::SYMLINK_NOFOLLOW))? {
            Ok(st) => Ok(Some(Stamp::of(&st))),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(err(&self.root, &self.rel(), e)),
        }
    }

    /// Waits until the content is on disk (a file [`write_unnamed`] wrote; any other is).
    pub fn sync(&mut self) -> Result<()> {
        if let (false, Temp::Unnamed(fd)) = (self.synced, &self.temp) {
            rfs::fsync(fd).map_err(|e| err(&self.root, &self.rel(), e))?;
            self.synced = true;
        }
        Ok(())
    }

    /// Has it a name (a temporary one, until commit)?
    pub fn is_named(&self) -> bool {
        matches!(self.temp, Temp::Named(_))
    }

    /// Gives an unnamed file its temporary name (a named one has it already), once its content
    /// is on disk, and lets its descriptor go. Only once the accept's journal is on disk: from
    /// then on a crash leaves a name that resuming removes.
    pub fn name(&mut self) -> Result<()> {
        self.sync()?;
        if let Temp::Unnamed(fd) = &self.temp {
            let tmp = temp_name();
            let dfd = self.dfd.as_ref().ok_or_else(|| Error::Internal("an unnamed temporary without its directory".into()))?;
            // Linking a descriptor needs a privilege before Linux 6.10 (or none, for the
            // descriptor's own opener, since); `/proc` needs none.
            let from = format!("/proc/self/fd/{}", fd.as_raw_fd());
            rfs::linkat(fd, "", dfd, tmp.as_str(), AtFlags::EMPTY_PATH)
                .or_else(|_| rfs::linkat(rfs::CWD, from.as_str(), dfd, tmp.as_str(), AtFlags::SYMLINK_FOLLOW))
                .map_err(|e| err(&self.root, &self.rel(), e))?;
            self.temp = Temp::Named(tmp);
        }
        Ok(())
    }

    /// Puts the file in place: rename over the target, then fsync of the directory. An
    /// unnamed file is first named ([`Prepared::name`]).
    pub fn commit(mut self) -> Result<()> {
        self.name()?;
        let Temp::Named(tmp) = &self.temp else { return Err(Error::Internal("an unnamed temporary was not linked".into())) };
        let tmp = tmp.clone();
        let (renamed, synced) = self.in_dir(|d| match rfs::renameat(d, tmp.as_str(), d, self.name.as_str()) {
            Ok(()) => (true, rfs::fsync(d)),
            Err(e) => (false, Err(e)),
        })?;
        self.committed = renamed;
        synced.map_err(|e| err(&self.root, &self.rel(), e))
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        // An unnamed file never linked goes with its descriptor.
        if let Temp::Named(tmp) = &self.temp {
            let _ = self.in_dir(|d| rfs::unlinkat(d, tmp.as_str(), AtFlags::empty()));
        }
    }
}

/// A fresh temporary name: short whatever the target's name (it must fit NAME_MAX next to a
/// 255-byte name) and random (two writers never share one).
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
