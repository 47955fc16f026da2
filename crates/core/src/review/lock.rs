//! The per-project review lock: accept, undo and hunk actions of every process (CLI, Neovim
//! host, daemon) take it, so the base check and the writes of one never interleave with
//! another's. An `flock` on `.agentfs/review.lock`: the kernel releases it when its holder
//! dies, so a killed accept never leaves the project locked.

use crate::error::{Error, Result};
use crate::project::Project;
use std::fs::File;

/// Held while reviewing; dropping it releases the lock.
#[derive(Debug)]
pub struct ReviewLock {
    _file: File,
}

/// The review lock if nobody holds it now (housekeeping never waits behind an accept).
pub fn try_acquire(project: &Project) -> Result<Option<ReviewLock>> {
    let path = project.agentfs().join("review.lock");
    let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(|e| Error::io(&path, e))?;
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(Some(ReviewLock { _file: file })),
        Err(rustix::io::Errno::WOULDBLOCK | rustix::io::Errno::INTR) => Ok(None),
        Err(e) => Err(Error::io(&path, e.into())),
    }
}

/// Waits for the project's review lock.
pub fn acquire(project: &Project) -> Result<ReviewLock> {
    let path = project.agentfs().join("review.lock");
    let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(|e| Error::io(&path, e))?;
    loop {
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive) {
            Ok(()) => return Ok(ReviewLock { _file: file }),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(Error::io(&path, e.into())),
        }
    }
}

/// [`acquire`], for a change to the project on behalf of agent `id`: refused while another
/// agent's accept is interrupted (its files half in place: landing more on top would mix the
/// two, and finishing it later could undo this one).
pub fn acquire_for(project: &Project, id: &str) -> Result<ReviewLock> {
    let lock = acquire(project)?;
    if let Some(other) = project.bin()?.other_accept_pending(id)? {
        return Err(Error::Busy(format!(
            "agent {other}'s accept was interrupted and is half done: finish it (`cairn accept {other}`) or roll it back (`cairn reject {other}`) first"
        )));
    }
    Ok(lock)
}
