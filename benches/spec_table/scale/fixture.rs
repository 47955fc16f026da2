//! The monorepo fixture of the scale rows: `files` files of [`FILE_BYTES`] bytes, 100 to a
//! leaf directory (`pkgNNN/modNN/fileNNNNNNN.py`, 100 `mod` directories to a `pkg`: at
//! 1,000,000 files, 10,101 directories and 4 GB). Generated once on every core, cached under
//! `target/bench/` by file count, file size and generator version, and used in place: the
//! scale rows only read it (their agents propose, nothing is accepted), and remove the
//! `.agentfs/` and `.grail/` they create.

use std::path::{Path, PathBuf};

/// Bytes per file (the copy of 1,000,000 files took 3.9 GB).
pub const FILE_BYTES: usize = 4000;
/// Bumped whenever the generator changes, so a stale cache is never reused.
const GENERATOR: u32 = 1;
const PER_DIR: usize = 100;

/// Path of file `i`.
pub fn path_of(i: usize) -> String {
    let leaf = i / PER_DIR;
    format!("pkg{:03}/mod{:02}/file{i:07}.py", leaf / 100, leaf % 100)
}

/// The cached fixture of `files` files, generated on first use. It is complete when its
/// directory exists: generation writes `<name>.partial` and renames it at the end.
pub fn cached(base: &Path, files: usize) -> PathBuf {
    let dir = base.join(format!("scale-{files}x{FILE_BYTES}-g{GENERATOR}"));
    if dir.is_dir() {
        return dir;
    }
    let partial = base.join(format!("scale-{files}x{FILE_BYTES}-g{GENERATOR}.partial"));
    if partial.exists() {
        std::fs::remove_dir_all(&partial).expect("remove a partial fixture");
    }
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).max(2);
    let leaves = files.div_ceil(PER_DIR);
    std::thread::scope(|s| {
        for t in 0..threads {
            let partial = &partial;
            s.spawn(move || {
                for leaf in (t..leaves).step_by(threads) {
                    let first = leaf * PER_DIR;
                    std::fs::create_dir_all(partial.join(path_of(first)).parent().expect("a parent")).expect("fixture directory");
                    for i in first..(first + PER_DIR).min(files) {
                        std::fs::write(partial.join(path_of(i)), crate::fixture::text(i as u64, FILE_BYTES)).expect("fixture file");
                    }
                }
            });
        }
    });
    std::fs::rename(&partial, &dir).expect("fixture complete");
    dir
}

/// Removes what the rows created in the fixture (it is used in place).
pub fn clean(root: &Path) {
    for state in [".agentfs", ".grail"] {
        let dir = root.join(state);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).unwrap_or_else(|e| panic!("remove {}: {e}", dir.display()));
        }
    }
}
