//! Writing an accept's files ahead: while review reads and merges and the journal is written,
//! the agent's contents already go to unnamed temporaries in their directories (`O_TMPFILE`:
//! nothing shows in the project, and a crash leaves nothing behind). Accept commits each one
//! whose content turns out to be what lands (the path was not rebased) and drops the rest.

use crate::store::atomic::{self, Prepared};
use crate::store::overlay::{Change, Changed};
use crate::store::{fsx, hash_bytes, Hash};
use std::collections::HashMap;
use std::path::Path;

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

    /// Starts writing the written files among `all` (an overlay's entries) into the project at
    /// `root`, wherever the directory exists. Anything that fails is left for accept to write.
    pub(crate) fn start(root: &Path, all: &[Changed]) -> Ahead {
        let mut items = Vec::new();
        let mut bytes = 0;
        for c in all {
            if let Change::Write { content, mode, .. } = &c.change {
                bytes += content.len();
                if items.len() == MAX_FILES || bytes > MAX_BYTES {
                    break;
                }
                items.push((c.path.clone(), content.clone(), mode & 0o777));
            }
        }
        let root = root.to_path_buf();
        let writer = std::thread::Builder::new().name("cairn-accept-ahead".into()).spawn(move || {
            let began = std::time::Instant::now();
            let written = write(&root, items);
            tracing::debug!(target: "cairn::accept", "writing ahead took {:.2} ms", began.elapsed().as_secs_f64() * 1e3);
            written
        });
        Ahead(writer.ok())
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

fn write(root: &Path, items: Vec<(String, Vec<u8>, u32)>) -> Written {
    let threads = crate::par::io_threads(items.len());
    let written = crate::par::map(&items, threads, "accept (writing ahead)", |(path, content, mode)| {
        write_one(root, path, content, *mode).map(|p| (path.clone(), (hash_bytes(content), *mode, p)))
    });
    written.map(|w| w.into_iter().flatten().collect()).unwrap_or_default()
}

fn write_one(root: &Path, path: &str, content: &[u8], mode: u32) -> Option<Prepared> {
    if crate::paths::protected(path).is_some() {
        return None;
    }
    let dir = fsx::open_dir(root, crate::paths::parent(path), false).ok()?;
    atomic::prepare_unnamed(root, path, dir, content, mode).ok().flatten()
}
