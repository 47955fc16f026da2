//! Writing an accept's files ahead: while review reads and merges and the journal is written,
//! the agent's contents already go to unnamed temporaries in their directories (`O_TMPFILE`:
//! nothing shows in the project, and a crash leaves nothing behind). Accept commits each one
//! whose content turns out to be what lands (the path was not rebased) and drops the rest.

use crate::store::atomic::{self, Prepared};
use crate::store::overlay::{Change, Changed};
use crate::store::{fsx, hash_bytes, Hash};
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Arc;

/// At most this many files are written ahead (each holds two descriptors until committed)...
const MAX_FILES: usize = 200;
/// ...and at most this many bytes in all.
const MAX_BYTES: usize = 64 << 20;

/// What was written ahead: path → (content hash, mode, temporary). The hash is computed from
/// the bytes written (as review does): the overlay's record of it is not trusted for what lands.
pub(crate) type Written = HashMap<String, (Hash, u32, Prepared)>;

/// The writer's thread. Dropping it waits for the thread (no work outlives the accept).
pub(crate) struct Ahead(Option<std::thread::JoinHandle<Written>>);

impl Ahead {
    /// Nothing written ahead (a resumed accept).
    pub(crate) fn none() -> Ahead {
        Ahead(None)
    }

    /// Starts writing the written files among `all` (an overlay's entries, shared with review:
    /// nothing is copied) into the project at `root`, wherever the directory exists. Anything
    /// that fails is left for accept to write.
    pub(crate) fn start(root: &Path, all: &Arc<Vec<Changed>>) -> Ahead {
        // The entries up to `count` hold at most MAX_FILES files and MAX_BYTES bytes.
        let (mut count, mut files, mut bytes) = (0, 0, 0);
        for c in all.iter() {
            if let Change::Write { content, .. } = &c.change {
                if files == MAX_FILES || bytes + content.len() > MAX_BYTES {
                    break;
                }
                (files, bytes) = (files + 1, bytes + content.len());
            }
            count += 1;
        }
        let (root, all) = (root.to_path_buf(), Arc::clone(all));
        let writer = std::thread::Builder::new().name("cairn-accept-ahead".into()).spawn(move || {
            let began = std::time::Instant::now();
            let written = write(&root, &all[..count]);
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

fn write(root: &Path, items: &[Changed]) -> Written {
    let threads = crate::par::io_threads(items.len());
    let written = crate::par::chunks(items, threads, "accept (writing ahead)", |chunk| {
        let mut dirs = fsx::DirCache::new(root);
        let mut out = Vec::with_capacity(chunk.len());
        for c in chunk {
            let Change::Write { content, mode, .. } = &c.change else { continue };
            let Some(dfd) = dirs.get(crate::paths::parent(&c.path)).ok().flatten().and_then(|d| d.try_clone().ok()) else { continue };
            if let Some(p) = write_one(root, &c.path, dfd, content, mode & 0o777) {
                out.push((c.path.clone(), (hash_bytes(content), mode & 0o777, p)));
            }
        }
        out
    });
    written.map(|w| w.into_iter().flatten().collect()).unwrap_or_default()
}

fn write_one(root: &Path, path: &str, dfd: OwnedFd, content: &[u8], mode: u32) -> Option<Prepared> {
    if crate::paths::protected(path).is_some() {
        return None;
    }
    atomic::prepare_unnamed(root, path, dfd, content, mode).ok().flatten()
}
