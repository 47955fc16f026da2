//! Writing an accept's files ahead: while review reads and merges and the journal is written,
//! the agent's contents already go to unnamed temporaries in their directories (`O_TMPFILE`:
//! nothing shows in the project, and a crash leaves nothing behind). Each writer writes all
//! its files, then syncs them (the disk gets them together, not one fsync at a time), and
//! names each synced one as soon as the journal is on disk ([`Gate`]). Accept commits each one
//! whose content turns out to be what lands (the path was not rebased) and drops the rest.

use crate::store::atomic::{self, Prepared};
use crate::store::overlay::{Change, Changed};
use crate::store::{fsx, hash_bytes, Hash};
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};

/// At most this many files are written ahead (each holds two descriptors until committed)...
const MAX_FILES: usize = 200;
/// ...and at most this many bytes in all.
const MAX_BYTES: usize = 64 << 20;

/// What was written ahead: path → (content hash, mode, temporary). The hash is computed from
/// the bytes written (as review does): the overlay's record of it is not trusted for what lands.
pub(crate) type Written = HashMap<String, (Hash, u32, Prepared)>;

/// The writer's thread. Dropping it closes the gate and waits for the thread (no work
/// outlives the accept).
pub(crate) struct Ahead {
    writer: Option<std::thread::JoinHandle<Written>>,
    journaled: Arc<Gate>,
}

/// Opens once the accept's journal is on disk (`true`), or closes for good when the accept
/// ends before (`false`): temporaries are named only through an open gate.
#[derive(Default)]
struct Gate {
    state: Mutex<Option<bool>>,
    changed: Condvar,
}

impl Gate {
    fn set(&self, open: bool) {
        if let Ok(mut s) = self.state.lock() {
            s.get_or_insert(open);
            self.changed.notify_all();
        }
    }

    fn is_open(&self) -> bool {
        self.state.lock().is_ok_and(|s| *s == Some(true))
    }

    /// Waits until the gate opens or closes; whether it opened.
    fn wait(&self) -> bool {
        let Ok(mut s) = self.state.lock() else { return false };
        loop {
            match *s {
                Some(open) => return open,
                None => match self.changed.wait(s) {
                    Ok(next) => s = next,
                    Err(_) => return false,
                },
            }
        }
    }
}

impl Ahead {
    /// Nothing written ahead (a resumed accept).
    pub(crate) fn none() -> Ahead {
        Ahead { writer: None, journaled: Arc::default() }
    }

    /// The journal is on disk: what is written ahead may be named.
    pub(crate) fn journaled(&self) {
        self.journaled.set(true);
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
        let (root, all, journaled) = (root.to_path_buf(), Arc::clone(all), Arc::<Gate>::default());
        let gate = Arc::clone(&journaled);
        let writer = std::thread::Builder::new().name("cairn-accept-ahead".into()).spawn(move || {
            let began = std::time::Instant::now();
            let written = write(&root, &all[..count], &gate);
            tracing::debug!(target: "cairn::accept", "writing ahead took {:.2} ms", began.elapsed().as_secs_f64() * 1e3);
            written
        });
        Ahead { writer: writer.ok(), journaled }
    }

    /// What was written ahead, once the writer is done.
    pub(crate) fn join(mut self) -> Written {
        self.writer.take().and_then(|h| h.join().ok()).unwrap_or_default()
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        // An accept that ends before its journal is on disk names nothing.
        self.journaled.set(false);
        if let Some(h) = self.writer.take() {
            let _ = h.join();
        }
    }
}

fn write(root: &Path, items: &[Changed], journaled: &Gate) -> Written {
    let threads = crate::par::io_threads(items.len());
    let umask = crate::store::mode::umask();
    let written = crate::par::chunks(items, threads, "accept (writing ahead)", |chunk| {
        let mut dirs = fsx::DirCache::new(root);
        let mut out = Vec::with_capacity(chunk.len());
        for c in chunk {
            let Change::Write { content, mode, .. } = &c.change else { continue };
            let Some(dfd) = dirs.get(crate::paths::parent(&c.path)).ok().flatten().and_then(|d| d.try_clone().ok()) else { continue };
            // The mode review will find it lands with (else accept writes it again).
            let current = rustix::fs::statat(&dfd, crate::paths::file_name(&c.path), rustix::fs::AtFlags::SYMLINK_NOFOLLOW).ok().filter(|st| rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile);
            let mode = crate::store::mode::landing(*mode, current.map(|st| st.st_mode & 0o7777), umask);
            if let Some(p) = write_one(root, &c.path, dfd, content, mode) {
                out.push((c.path.clone(), (hash_bytes(content), mode, p)));
            }
        }
        // Synced, then named if the journal is on disk by then; the rest once it is. A file
        // that fails either is left for accept to write.
        let mut unnamed = 0;
        out.retain_mut(|(_, (_, _, p))| p.sync().is_ok() && (!journaled.is_open() || p.name().is_ok()));
        out.retain_mut(|(_, (_, _, p))| p.is_named() || {
            unnamed += 1;
            journaled.wait() && p.name().is_ok()
        });
        tracing::trace!(target: "cairn::accept", "{unnamed} of {} named after their writer's last sync", out.len());
        out
    });
    written.map(|w| w.into_iter().flatten().collect()).unwrap_or_default()
}

fn write_one(root: &Path, path: &str, dfd: OwnedFd, content: &[u8], mode: u32) -> Option<Prepared> {
    if crate::paths::protected(path).is_some() {
        return None;
    }
    atomic::write_unnamed(root, path, dfd, content, mode).ok().flatten()
}
