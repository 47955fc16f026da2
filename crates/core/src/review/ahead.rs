//! Writing an accept's files ahead: while review reads and merges and the journal is written,
//! the agent's contents already go to unnamed temporaries in their directories (`O_TMPFILE`:
//! nothing shows in the project, and a crash leaves nothing behind). Accept commits each one
//! whose content turns out to be what lands (the path was not rebased) and drops the rest.

use crate::store::atomic::{self, Prepared};
use crate::store::overlay::Overlay;
use crate::store::{fsx, hash_bytes, Hash};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{mpsc, Mutex};

/// At most this many files are written ahead (each holds two descriptors until committed)...
const MAX_FILES: usize = 200;
/// ...and at most this many bytes in all.
const MAX_BYTES: usize = 64 << 20;

/// What was written ahead: path → (content hash, mode, temporary).
pub(crate) type Written = HashMap<String, (Hash, u32, Prepared)>;

/// The writer's thread. Dropping it waits for the thread (no work outlives the accept).
pub(crate) struct Ahead(Option<std::thread::JoinHandle<Written>>);

impl Ahead {
    /// Nothing written ahead (a resumed accept).
    pub(crate) fn none() -> Ahead {
        Ahead(None)
    }

    /// Starts writing the files of the overlay at `overlay` (opened again on the writer's
    /// thread: its rows stream to the writers as they are read) into the project at `root`,
    /// wherever the directory exists. Anything that fails is left for accept to write.
    pub(crate) fn start(root: &Path, overlay: &Path) -> Ahead {
        let (root, overlay) = (root.to_path_buf(), overlay.to_path_buf());
        Ahead(std::thread::Builder::new().name("cairn-accept-ahead".into()).spawn(move || write(&root, &overlay)).ok())
    }

    /// What was written ahead, once the writer is done.
    pub(crate) fn join(mut self) -> Written {
        self.0.take().and_then(|h| h.join().ok()).unwrap_or_default()
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            let _ = h.join();
        }
    }
}

fn write(root: &Path, overlay: &Path) -> Written {
    let Ok(overlay) = Overlay::open_existing(overlay) else { return Written::new() };
    let written = Mutex::new(Written::new());
    let (tx, rx) = mpsc::sync_channel::<(String, Vec<u8>, u32)>(16);
    let rx = Mutex::new(rx);
    std::thread::scope(|s| {
        for _ in 0..crate::par::io_threads(MAX_FILES) {
            s.spawn(|| {
                while let Some((path, content, mode)) = rx.lock().ok().and_then(|r| r.recv().ok()) {
                    if let Some(p) = write_one(root, &path, &content, mode) {
                        if let Ok(mut w) = written.lock() {
                            w.insert(path, (hash_bytes(&content), mode, p));
                        }
                    }
                }
            });
        }
        let (mut files, mut bytes) = (0, 0);
        let _ = overlay.each_written(|path, content, mode| {
            files += 1;
            bytes += content.len();
            files <= MAX_FILES && bytes <= MAX_BYTES && tx.send((path.to_string(), content.to_vec(), mode & 0o777)).is_ok()
        });
        drop(tx);
    });
    written.into_inner().unwrap_or_default()
}

fn write_one(root: &Path, path: &str, content: &[u8], mode: u32) -> Option<Prepared> {
    if crate::paths::protected(path).is_some() {
        return None;
    }
    let dir = fsx::open_dir(root, crate::paths::parent(path), false).ok()?;
    atomic::prepare_unnamed(root, path, dir, content, mode).ok().flatten()
}
