//! The generated project: `files` files of [`FILE_BYTES`] bytes of code-like text in
//! directories of ten, cached under `target/bench/` by file count, file size and generator
//! version, and copied for each run so that accepts never touch the cache.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Bytes per generated file.
pub const FILE_BYTES: usize = 10_000;
/// Bumped whenever the generator changes, so a stale cache is never reused.
const GENERATOR: u32 = 2;
/// Every 997th file holds this line: what the search rows look for.
pub const NEEDLE: &str = "NEEDLE_MARKER";

/// Path of generated file `i`.
pub fn path_of(i: usize) -> String {
    format!("pkg{:03}/mod{:02}/file{i:06}.py", i / 100, (i / 10) % 10)
}

/// Deterministic pseudo-random text of `len` bytes, in lines of about 70 characters.
pub fn text(seed: u64, len: usize) -> Vec<u8> {
    const WORDS: &[&str] = &["alpha", "beta", "gamma", "delta", "return", "value", "cairn", "agent", "def", "self", "import", "x", "=", "(", ")", ":"];
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut out = Vec::with_capacity(len + 16);
    let mut col = 0;
    while out.len() < len {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let w = WORDS[(s % WORDS.len() as u64) as usize];
        out.extend_from_slice(w.as_bytes());
        col += w.len() + 1;
        if col > 70 {
            out.push(b'\n');
            col = 0;
        } else {
            out.push(b' ');
        }
    }
    out.truncate(len);
    out
}

/// The cached fixture of `files` files, generated on first use.
pub fn cached(base: &Path, files: usize) -> PathBuf {
    let dir = base.join(format!("fixture-{files}x{FILE_BYTES}-g{GENERATOR}"));
    let marker = dir.join(".fixture-complete");
    if marker.exists() {
        return dir;
    }
    let _ = std::fs::remove_dir_all(&dir);
    for i in 0..files {
        let path = dir.join(path_of(i));
        if i % 10 == 0 {
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("fixture directory");
        }
        let mut body = text(i as u64, FILE_BYTES);
        if i % 997 == 0 {
            let at = FILE_BYTES / 2;
            body.splice(at..at, format!("\n{NEEDLE} here\n").into_bytes());
            body.truncate(FILE_BYTES);
        }
        std::fs::write(path, body).expect("fixture file");
    }
    std::fs::write(marker, "").expect("fixture marker");
    dir
}

/// `cp -a` of the fixture to `to` (a real copy: the watcher rows write files in place).
pub fn copy(fixture: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    let ok = Command::new("cp").arg("-a").arg(fixture).arg(to).status().is_ok_and(|s| s.success());
    assert!(ok, "cp -a {} {}", fixture.display(), to.display());
    let _ = std::fs::remove_file(to.join(".fixture-complete"));
}
