//! What a command wrote: pid 1 walks the overlay's upper layer once the command has ended and
//! streams it into the run's `capture` file; the parent reads it back as [`Written`] entries.
//!
//! Records, little-endian: a tag, the path (u32 length + bytes), then for `F` the mode (u32)
//! and content (u64 length + bytes). `F` a file, `D` a deletion (an overlay whiteout), `O` a
//! directory made anew (opaque: nothing below it comes from the lower layers), `S` a symlink
//! (reported, never applied). Paths under [`crate::paths::ALWAYS_SKIPPED`] names are left out.

use std::io::{BufWriter, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

/// One thing a command did to the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    File { path: String, mode: u32, content: Vec<u8> },
    Deleted { path: String },
    /// The directory was removed and made again: what the lower layers had below it is gone.
    Replaced { path: String },
    Symlink { path: String },
}

/// Walks the upper layer (pid 1, after the command).
pub(super) fn write(upper: &OwnedFd, out: std::fs::File) -> Result<(), String> {
    let root = format!("/proc/self/fd/{}", upper.as_raw_fd());
    let mut w = BufWriter::new(out);
    walk(Path::new(&root), "", &mut |path, kind, full, meta| {
        record(&mut w, kind.tag(), path)?;
        if let Kind::File = kind {
            w.write_all(&(meta.mode() & 0o777).to_le_bytes())?;
            w.write_all(&meta.len().to_le_bytes())?;
            let copied = std::io::copy(&mut std::fs::File::open(full)?.take(meta.len()), &mut w)?;
            if copied != meta.len() {
                return Err(std::io::Error::other(format!("{path} changed while captured")));
            }
        }
        Ok(())
    })
    .map_err(|e| format!("capture: {e}"))?;
    w.flush().map_err(|e| format!("capture: {e}"))
}

/// Reads a written layer on disk (a wrap session's, from outside its namespace).
pub fn scan(upper: &Path) -> std::io::Result<Vec<Written>> {
    let mut out = Vec::new();
    walk(upper, "", &mut |path, kind, full, meta| {
        let path = path.to_string();
        out.push(match kind {
            Kind::File => Written::File { path, mode: meta.mode() & 0o777, content: std::fs::read(full)? },
            Kind::Whiteout => Written::Deleted { path },
            Kind::Opaque => Written::Replaced { path },
            Kind::Symlink => Written::Symlink { path },
        });
        Ok(())
    })?;
    Ok(out)
}

fn record(w: &mut impl Write, tag: u8, path: &str) -> std::io::Result<()> {
    w.write_all(&[tag])?;
    w.write_all(&(path.len() as u32).to_le_bytes())?;
    w.write_all(path.as_bytes())
}

/// What an entry of the layer is.
#[derive(Clone, Copy)]
enum Kind {
    File,
    Whiteout,
    Opaque,
    Symlink,
}

impl Kind {
    fn tag(self) -> u8 {
        match self {
            Kind::File => b'F',
            Kind::Whiteout => b'D',
            Kind::Opaque => b'O',
            Kind::Symlink => b'S',
        }
    }
}

type Visit<'a> = dyn FnMut(&str, Kind, &Path, &std::fs::Metadata) -> std::io::Result<()> + 'a;

/// Calls `visit` for each entry of the layer under `dir`, in path order.
fn walk(dir: &Path, rel: &str, visit: &mut Visit) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let Some(name) = e.file_name().to_str().map(str::to_string) else { continue };
        if crate::paths::ALWAYS_SKIPPED.contains(&name.as_str()) {
            continue;
        }
        let path = if rel.is_empty() { name } else { format!("{rel}/{name}") };
        let meta = std::fs::symlink_metadata(e.path())?;
        let ft = meta.file_type();
        if ft.is_char_device() && meta.rdev() == 0 {
            visit(&path, Kind::Whiteout, &e.path(), &meta)?;
        } else if ft.is_dir() {
            if opaque(&e.path()) {
                visit(&path, Kind::Opaque, &e.path(), &meta)?;
            }
            walk(&e.path(), &path, visit)?;
        } else if ft.is_file() {
            visit(&path, Kind::File, &e.path(), &meta)?;
        } else if ft.is_symlink() {
            visit(&path, Kind::Symlink, &e.path(), &meta)?;
        }
    }
    Ok(())
}

/// Does overlayfs mark `dir` opaque (made anew over a lower directory)?
#[allow(unsafe_code)]
fn opaque(dir: &Path) -> bool {
    let (Ok(p), Ok(name)) = (super::sys::cstr(dir), super::sys::cstr("user.overlay.opaque")) else { return false };
    let mut buf = [0u8; 4];
    // SAFETY: lgetxattr into a buffer of the size passed.
    let n = unsafe { libc::lgetxattr(p.as_ptr(), name.as_ptr(), buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
    n >= 1 && buf[0] == b'y'
}

/// Reads a capture file back.
pub fn read(path: &Path) -> std::io::Result<Vec<Written>> {
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
