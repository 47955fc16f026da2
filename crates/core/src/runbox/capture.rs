//! What a command wrote: pid 1 walks the overlay's upper layer once the command has ended and
//! streams it into the run's `capture` file; the parent reads it back as [`Written`] entries.
//! A wrap session's layer is read from outside, while the agent may still be changing it
//! ([`scan`], [`stamps`]), and so is an agent CLI's state layer ([`scan_home`]).
//!
//! Every walk holds directory descriptors and opens every entry relative to its directory with
//! `O_NOFOLLOW` (`O_DIRECTORY` for directories): a symlink swapped in anywhere, at any moment,
//! is never followed, only reported; an entry gone meanwhile is left out. Sizes are bounded
//! before a byte is read ([`Limits`]): by the apparent size and by the blocks on disk, per file
//! and in total, so a sparse file of gigabytes costs nothing but a [`Written::TooLarge`] entry.
//! A name that is not UTF-8 is reported ([`Written::Undecodable`], its bytes shown as `\xNN`),
//! never read below nor applied.
//!
//! Records, little-endian: a tag, the path (u32 length + bytes), then for `F` the mode (u32)
//! and content (u64 length + bytes), for `L` the apparent size (u64). `F` a file, `D` a
//! deletion (an overlay whiteout), `O` a directory made anew (opaque: nothing below it comes
//! from the lower layers), `S` a symlink (reported, never applied), `L` a file left out for
//! its size, `P` a directory too deep to read ([`MAX_DEPTH`]), `N` a name that is not UTF-8.
//! In a project's layer, paths under [`crate::paths::ALWAYS_SKIPPED`] names are left out.

use rustix::fs::{Mode, OFlags};
use serde::{Deserialize, Serialize};
use std::io::{BufWriter, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// One thing a command did to the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    File { path: String, mode: u32, content: Vec<u8> },
    Deleted { path: String },
    /// The directory was removed and made again: what the lower layers had below it is gone.
    Replaced { path: String },
    Symlink { path: String },
    /// A file over the capture's bounds (its apparent size): reported, not read.
    TooLarge { path: String, size: u64 },
    /// A directory nested deeper than [`MAX_DEPTH`]: reported, nothing below it read.
    TooDeep { path: String },
    /// A name that is not UTF-8 (`path` shows its bytes, see [`crate::display::escape_bytes`]):
    /// reported, never read nor applied.
    Undecodable { path: String },
}

/// How deep a walk goes into the layer: each level holds a descriptor and a frame of the
/// walk, and a command could nest directories until either runs out.
pub const MAX_DEPTH: usize = 128;

impl Written {
    pub fn path(&self) -> &str {
        match self {
            Written::File { path, .. } | Written::Deleted { path } | Written::Replaced { path } | Written::Symlink { path } | Written::TooLarge { path, .. } | Written::TooDeep { path } | Written::Undecodable { path } => path,
        }
    }
}

/// Bounds of a capture, in bytes.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Limits {
    /// One file, by apparent size and by blocks on disk.
    pub file: u64,
    /// All files read, together.
    pub total: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { file: 50 << 20, total: 50 << 20 }
    }
}

/// What an entry of the layer is.
#[derive(Clone, Copy)]
enum Kind {
    File,
    Whiteout,
    /// A directory (walked below).
    Dir,
    Opaque,
    Symlink,
    TooLarge(u64),
    TooDeep,
    Undecodable,
}

/// How a walk goes: which names it keeps, whether it reads files.
#[derive(Clone, Copy)]
struct How {
    /// A project's layer: [`crate::paths::ALWAYS_SKIPPED`] names are left out (a home's layer
    /// keeps every name).
    project: bool,
    /// Regular files are opened and bounded (a capture); else only their status is looked at.
    read: bool,
}

const PROJECT: How = How { project: true, read: true };

/// The status of an entry, as a sync compares it: size, modification time (s, ns) and mode.
pub type Stamp = (u64, i64, i64, u32);

/// Walks the upper layer (pid 1, after the command).
pub(super) fn write(upper: &OwnedFd, out: std::fs::File, limits: Limits) -> Result<(), String> {
    let mut w = BufWriter::new(out);
    let mut budget = limits;
    walk(upper.as_fd(), "", 0, PROJECT, &mut budget, &mut |path, kind, file, _| {
        let Some(tag) = tag(kind) else { return Ok(()) };
        w.write_all(&[tag])?;
        w.write_all(&(path.len() as u32).to_le_bytes())?;
        w.write_all(path.as_bytes())?;
        match (kind, file) {
            (Kind::File, Some((f, mode, len))) => {
                w.write_all(&mode.to_le_bytes())?;
                w.write_all(&len.to_le_bytes())?;
                let copied = std::io::copy(&mut f.take(len), &mut w)?;
                if copied != len {
                    return Err(std::io::Error::other(format!("{path} changed while captured")));
                }
            }
            (Kind::TooLarge(size), _) => w.write_all(&size.to_le_bytes())?,
            _ => {}
        }
        Ok(())
    })
    .map_err(|e| format!("capture: {e}"))?;
    w.flush().map_err(|e| format!("capture: {e}"))
}

/// Reads a written layer on disk (a wrap session's, from outside its namespace).
pub fn scan(upper: &std::path::Path, limits: Limits) -> std::io::Result<Vec<Written>> {
    let mut budget = limits;
    collect(upper, PROJECT, &mut budget)
}

/// Reads a layer of the home (an agent CLI's state, see `wrap::state`) as [`scan`] reads a
/// project's, every name kept; `budget` is spent by what is read (several layers share it).
pub fn scan_home(upper: &std::path::Path, budget: &mut Limits) -> std::io::Result<Vec<Written>> {
    collect(upper, How { project: false, read: true }, budget)
}

/// The [`Stamp`] of every entry of a written layer (directories too), by path: what a sync
/// compares to know whether anything changed, without reading a file.
pub fn stamps(upper: &std::path::Path) -> std::io::Result<std::collections::BTreeMap<String, Stamp>> {
    let dir = open_top(upper)?;
    let mut out = std::collections::BTreeMap::new();
    walk(dir.as_fd(), "", 0, How { project: true, read: false }, &mut Limits::default(), &mut |path, kind, _, st| {
        // (Such a name is never synced, and its shown form may be a real name's.)
        if matches!(kind, Kind::Undecodable) {
            return Ok(());
        }
        out.insert(path.to_string(), (st.st_size as u64, st.st_mtime, st.st_mtime_nsec as i64, st.st_mode));
        Ok(())
    })?;
    Ok(out)
}

/// The top of a layer (Cairn's own directory), not through a symlink.
fn open_top(upper: &std::path::Path) -> std::io::Result<OwnedFd> {
    Ok(rustix::fs::open(upper, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())?)
}

fn collect(upper: &std::path::Path, how: How, budget: &mut Limits) -> std::io::Result<Vec<Written>> {
    let dir = open_top(upper)?;
    let mut out = Vec::new();
    walk(dir.as_fd(), "", 0, how, budget, &mut |path, kind, file, _| {
        let path = path.to_string();
        out.push(match (kind, file) {
            (Kind::File, Some((f, mode, len))) => {
                let mut content = Vec::with_capacity(len as usize);
                f.take(len).read_to_end(&mut content)?;
                Written::File { path, mode, content }
            }
            (Kind::File | Kind::Dir, _) => return Ok(()),
            (Kind::Whiteout, _) => Written::Deleted { path },
            (Kind::Opaque, _) => Written::Replaced { path },
            (Kind::Symlink, _) => Written::Symlink { path },
            (Kind::TooLarge(size), _) => Written::TooLarge { path, size },
            (Kind::TooDeep, _) => Written::TooDeep { path },
            (Kind::Undecodable, _) => Written::Undecodable { path },
        });
        Ok(())
    })?;
    Ok(out)
}

/// A record's tag (`None`: a plain directory, which has none).
fn tag(kind: Kind) -> Option<u8> {
    Some(match kind {
        Kind::File => b'F',
        Kind::Whiteout => b'D',
        Kind::Dir => return None,
        Kind::Opaque => b'O',
        Kind::Symlink => b'S',
        Kind::TooLarge(_) => b'L',
        Kind::TooDeep => b'P',
        Kind::Undecodable => b'N',
    })
}

/// A file opened for the capture: the open file, its mode and the bytes to read.
type Opened = (std::fs::File, u32, u64);
type Visit<'a> = dyn FnMut(&str, Kind, Option<Opened>, &rustix::fs::Stat) -> std::io::Result<()> + 'a;

/// Calls `visit` for each entry of the layer under `dir` (`depth` levels down), in path order,
/// with its status (as opened, for a file read).
fn walk(dir: std::os::fd::BorrowedFd, rel: &str, depth: usize, how: How, budget: &mut Limits, visit: &mut Visit) -> std::io::Result<()> {
    use rustix::fs::{statat, AtFlags, FileType};
    let mut names: Vec<Vec<u8>> = Vec::new();
    let mut entries = rustix::fs::Dir::read_from(dir)?;
    while let Some(e) = entries.next() {
        let name = e?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            names.push(name);
        }
    }
    names.sort();
    for raw in names {
        let name = std::ffi::OsStr::from_bytes(&raw);
        let shown = crate::display::escape_bytes(&raw);
        if how.project && crate::paths::ALWAYS_SKIPPED.contains(&shown.as_ref()) {
            continue;
        }
        let path = if rel.is_empty() { shown.to_string() } else { format!("{rel}/{shown}") };
        let st = match statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            // Gone since the directory was read (the agent is still at work).
            Err(rustix::io::Errno::NOENT) => continue,
            Err(e) => return Err(e.into()),
        };
        if std::str::from_utf8(&raw).is_err() {
            visit(&path, Kind::Undecodable, None, &st)?;
            continue;
        }
        match FileType::from_raw_mode(st.st_mode) {
            FileType::CharacterDevice if st.st_rdev == 0 => visit(&path, Kind::Whiteout, None, &st)?,
            FileType::Directory if depth + 1 >= MAX_DEPTH => visit(&path, Kind::TooDeep, None, &st)?,
            FileType::Directory => {
                let sub = match rustix::fs::openat(dir, name, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty()) {
                    Ok(fd) => fd,
                    // Swapped for a symlink (or a file) since the stat: never followed.
                    Err(rustix::io::Errno::LOOP) | Err(rustix::io::Errno::NOTDIR) => {
                        visit(&path, Kind::Symlink, None, &st)?;
                        continue;
                    }
                    Err(rustix::io::Errno::NOENT) => continue,
                    Err(e) => return Err(e.into()),
                };
                visit(&path, if opaque(&sub) { Kind::Opaque } else { Kind::Dir }, None, &st)?;
                walk(sub.as_fd(), &path, depth + 1, how, budget, visit)?;
            }
            FileType::RegularFile if how.read => file(dir, name, &path, budget, visit)?,
            FileType::RegularFile => visit(&path, Kind::File, None, &st)?,
            FileType::Symlink => visit(&path, Kind::Symlink, None, &st)?,
            _ => {}
        }
    }
    Ok(())
}

/// A regular file: opened without following, measured on the open file, then bounded.
fn file(dir: std::os::fd::BorrowedFd, name: &std::ffi::OsStr, path: &str, budget: &mut Limits, visit: &mut Visit) -> std::io::Result<()> {
    let fd = match rustix::fs::openat(dir, name, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::LOOP) => {
            return match rustix::fs::statat(dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => visit(path, Kind::Symlink, None, &st),
                Err(_) => Ok(()),
            }
        }
        Err(rustix::io::Errno::NOENT) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let st = rustix::fs::fstat(&fd)?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
        return Ok(());
    }
    let (apparent, on_disk) = (st.st_size as u64, st.st_blocks as u64 * 512);
    let size = apparent.max(on_disk);
    if size > budget.file || size > budget.total {
        return visit(path, Kind::TooLarge(apparent), None, &st);
    }
    budget.total -= size;
    visit(path, Kind::File, Some((std::fs::File::from(fd), st.st_mode & 0o777, apparent)), &st)
}

/// Does overlayfs mark `dir` opaque (made anew over a lower directory)?
fn opaque(dir: &OwnedFd) -> bool {
    let mut buf = [0u8; 4];
    matches!(rustix::fs::fgetxattr(dir, "user.overlay.opaque", &mut buf), Ok(n) if n >= 1 && buf[0] == b'y')
}

/// Reads a capture file back.
pub fn read(path: &std::path::Path) -> std::io::Result<Vec<Written>> {
    let mut r = std::io::BufReader::new(std::fs::File::open(path)?);
    let mut out = Vec::new();
    loop {
        let mut tag = [0u8; 1];
        match r.read_exact(&mut tag) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(out),
            Err(e) => return Err(e),
        }
        let path = String::from_utf8(read_bytes(&mut r, 4)?).map_err(|_| std::io::Error::other("capture: a path is not UTF-8"))?;
        out.push(match tag[0] {
            b'F' => {
                let mut mode = [0u8; 4];
                r.read_exact(&mut mode)?;
                Written::File { path, mode: u32::from_le_bytes(mode), content: read_bytes(&mut r, 8)? }
            }
            b'D' => Written::Deleted { path },
            b'O' => Written::Replaced { path },
            b'S' => Written::Symlink { path },
            b'P' => Written::TooDeep { path },
            b'N' => Written::Undecodable { path },
            b'L' => {
                let mut size = [0u8; 8];
                r.read_exact(&mut size)?;
                Written::TooLarge { path, size: u64::from_le_bytes(size) }
            }
            t => return Err(std::io::Error::other(format!("capture: unknown record {t}"))),
        });
    }
}

/// A length-prefixed byte string (`width`: 4 or 8 bytes of length).
fn read_bytes(r: &mut impl Read, width: usize) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 8];
    r.read_exact(&mut len[..width])?;
    let len = u64::from_le_bytes(len);
    let mut buf = Vec::new();
    r.take(len).read_to_end(&mut buf)?;
    if buf.len() as u64 != len {
        return Err(std::io::Error::other("capture: cut short"));
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::{scan, stamps, Limits};
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    /// A directory of the layer swapped for a symlink to a directory outside it, over and over,
    /// while the layer is walked: no walk ever lists what is outside.
    #[test]
    fn a_walk_never_goes_through_a_symlink_swapped_in() {
        let t = Path::new("/tmp").join(format!("cairn-capture-test-{}", std::process::id()));
        let (layer, outside) = (t.join("layer"), t.join("outside"));
        std::fs::create_dir_all(&layer).unwrap();
        std::fs::create_dir_all(outside.join("OUTSIDE-DIR")).unwrap();
        std::fs::write(outside.join("OUTSIDE-FILE"), "x").unwrap();
        let (stop, swaps) = (AtomicBool::new(false), AtomicU64::new(0));
        let outside_seen = std::thread::scope(|s| {
            s.spawn(|| {
                let d = layer.join("d");
                while !stop.load(Ordering::Relaxed) {
                    let _ = std::fs::create_dir(&d).and_then(|()| std::fs::remove_dir(&d));
                    let _ = std::os::unix::fs::symlink(&outside, &d).and_then(|()| std::fs::remove_file(&d));
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            });
            // Thousands of walks, and the racer's thousands of swaps among them.
            let (mut walks, mut found) = (0, None);
            while found.is_none() && (walks < 3000 || swaps.load(Ordering::Relaxed) < 3000) {
                walks += 1;
                found = match (stamps(&layer), scan(&layer, Limits::default())) {
                    (Ok(st), Ok(w)) => Some(st.into_keys().chain(w.iter().map(|w| w.path().to_string())).collect::<Vec<_>>()).filter(|seen| seen.iter().any(|p| p.contains("OUTSIDE"))),
                    (st, w) => Some(vec![format!("a walk failed under the race: {:?} {:?}", st.err(), w.err())]),
                };
            }
            stop.store(true, Ordering::Relaxed);
            found
        });
        let _ = std::fs::remove_dir_all(&t);
        assert!(outside_seen.is_none(), "{outside_seen:?}");
    }
}
