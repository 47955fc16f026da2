//! What a command wrote: pid 1 walks the overlay's upper layer once the command has ended and
//! streams it into the run's `capture` file; the parent reads it back as [`Written`] entries.
//! A wrap session's layer is read from outside, while the agent may still be changing it
//! ([`scan`]).
//!
//! Both walks hold directory descriptors and open every entry relative to its directory with
//! `O_NOFOLLOW` (`O_DIRECTORY` for directories): a symlink swapped in anywhere, at any moment,
//! is never followed, only reported. Sizes are bounded before a byte is read ([`Limits`]): by
//! the apparent size and by the blocks on disk, per file and in total, so a sparse file of
//! gigabytes costs nothing but a [`Written::TooLarge`] entry.
//!
//! Records, little-endian: a tag, the path (u32 length + bytes), then for `F` the mode (u32)
//! and content (u64 length + bytes), for `L` the apparent size (u64). `F` a file, `D` a
//! deletion (an overlay whiteout), `O` a directory made anew (opaque: nothing below it comes
//! from the lower layers), `S` a symlink (reported, never applied), `L` a file left out for
//! its size, `P` a directory too deep to read ([`MAX_DEPTH`]). Paths under
//! [`crate::paths::ALWAYS_SKIPPED`] names are left out.

use rustix::fs::{Mode, OFlags};
use serde::{Deserialize, Serialize};
use std::io::{BufWriter, Read, Write};
use std::os::fd::{AsFd, OwnedFd};

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
}

/// How deep a walk goes into the layer: each level holds a descriptor and a frame of the
/// walk, and a command could nest directories until either runs out.
pub const MAX_DEPTH: usize = 128;

impl Written {
    pub fn path(&self) -> &str {
        match self {
            Written::File { path, .. } | Written::Deleted { path } | Written::Replaced { path } | Written::Symlink { path } | Written::TooLarge { path, .. } | Written::TooDeep { path } => path,
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
    Opaque,
    Symlink,
    TooLarge(u64),
    TooDeep,
}

/// Walks the upper layer (pid 1, after the command).
pub(super) fn write(upper: &OwnedFd, out: std::fs::File, limits: Limits) -> Result<(), String> {
    let mut w = BufWriter::new(out);
    let mut budget = limits;
    walk(upper.as_fd(), "", 0, &mut budget, &mut |path, kind, file| {
        w.write_all(&[tag(kind)])?;
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
    let dir = rustix::fs::open(upper, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())?;
    let mut out = Vec::new();
    let mut budget = limits;
    walk(dir.as_fd(), "", 0, &mut budget, &mut |path, kind, file| {
        let path = path.to_string();
        out.push(match (kind, file) {
            (Kind::File, Some((f, mode, len))) => {
                let mut content = Vec::with_capacity(len as usize);
                f.take(len).read_to_end(&mut content)?;
                Written::File { path, mode, content }
            }
            (Kind::File, None) => return Ok(()),
            (Kind::Whiteout, _) => Written::Deleted { path },
            (Kind::Opaque, _) => Written::Replaced { path },
            (Kind::Symlink, _) => Written::Symlink { path },
            (Kind::TooLarge(size), _) => Written::TooLarge { path, size },
            (Kind::TooDeep, _) => Written::TooDeep { path },
        });
        Ok(())
    })?;
    Ok(out)
}

fn tag(kind: Kind) -> u8 {
    match kind {
        Kind::File => b'F',
        Kind::Whiteout => b'D',
        Kind::Opaque => b'O',
        Kind::Symlink => b'S',
        Kind::TooLarge(_) => b'L',
        Kind::TooDeep => b'P',
    }
}

/// A file opened for the capture: the open file, its mode and the bytes to read.
type Opened = (std::fs::File, u32, u64);
type Visit<'a> = dyn FnMut(&str, Kind, Option<Opened>) -> std::io::Result<()> + 'a;

/// Calls `visit` for each entry of the layer under `dir` (`depth` levels down), in path order.
fn walk(dir: std::os::fd::BorrowedFd, rel: &str, depth: usize, budget: &mut Limits, visit: &mut Visit) -> std::io::Result<()> {
    let mut names: Vec<Vec<u8>> = Vec::new();
    let mut entries = rustix::fs::Dir::read_from(dir)?;
    while let Some(e) = entries.next() {
        let name = e?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            names.push(name);
        }
    }
    names.sort();
    for name in names {
        let Ok(name) = String::from_utf8(name) else { continue };
        if crate::paths::ALWAYS_SKIPPED.contains(&name.as_str()) {
            continue;
        }
        let path = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
        let st = rustix::fs::statat(dir, name.as_str(), rustix::fs::AtFlags::SYMLINK_NOFOLLOW)?;
        let ft = rustix::fs::FileType::from_raw_mode(st.st_mode);
        match ft {
            rustix::fs::FileType::CharacterDevice if st.st_rdev == 0 => visit(&path, Kind::Whiteout, None)?,
            rustix::fs::FileType::Directory if depth + 1 >= MAX_DEPTH => visit(&path, Kind::TooDeep, None)?,
            rustix::fs::FileType::Directory => {
                let sub = match rustix::fs::openat(dir, name.as_str(), OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty()) {
                    Ok(fd) => fd,
                    // Swapped for a symlink since the stat: reported as what it is now.
                    Err(rustix::io::Errno::LOOP) | Err(rustix::io::Errno::NOTDIR) => {
                        visit(&path, Kind::Symlink, None)?;
                        continue;
                    }
                    Err(e) => return Err(e.into()),
                };
                if opaque(&sub) {
                    visit(&path, Kind::Opaque, None)?;
                }
                walk(sub.as_fd(), &path, depth + 1, budget, visit)?;
            }
            rustix::fs::FileType::RegularFile => file(dir, &name, &path, budget, visit)?,
            rustix::fs::FileType::Symlink => visit(&path, Kind::Symlink, None)?,
            _ => {}
        }
    }
    Ok(())
}

/// A regular file: opened without following, measured on the open file, then bounded.
fn file(dir: std::os::fd::BorrowedFd, name: &str, path: &str, budget: &mut Limits, visit: &mut Visit) -> std::io::Result<()> {
    let fd = match rustix::fs::openat(dir, name, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::LOOP) => return visit(path, Kind::Symlink, None),
        Err(e) => return Err(e.into()),
    };
    let st = rustix::fs::fstat(&fd)?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
        return Ok(());
    }
    let (apparent, on_disk) = (st.st_size as u64, st.st_blocks as u64 * 512);
    let size = apparent.max(on_disk);
    if size > budget.file || size > budget.total {
        return visit(path, Kind::TooLarge(apparent), None);
    }
    budget.total -= size;
    visit(path, Kind::File, Some((std::fs::File::from(fd), st.st_mode & 0o777, apparent)))
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
