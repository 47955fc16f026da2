//! Putting a file in place, or removing one, only over what was last seen there: an exchange
//! (`renameat2(RENAME_EXCHANGE)`) whose outcome is checked, put back when an editor saved
//! meanwhile. No save is replaced unseen, however late it lands. With a read lease on the old
//! file ([`crate::store::held::Lease`]), a process opening it for writing meanwhile (its open
//! waits on the lease) gets it put back too, so its later writes are not lost with it.

use super::{temp_name, Prepared, Temp};
use crate::error::{Error, Result};
use crate::store::fsx::{err, open_dir, split, Stamp};
use crate::store::held::Lease;
use rustix::fs::{self as rfs, AtFlags};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::Path;

impl Prepared {
    /// [`Prepared::commit`], but only over what the caller last saw at the target (`seen`;
    /// `None`: nothing): the file is exchanged with the target (`RENAME_EXCHANGE`; a new path
    /// is created only if still absent, `RENAME_NOREPLACE`) and what comes out is checked. When
    /// it is not what was seen (an editor saved meanwhile), it goes back in place untouched and
    /// [`Over::Moved`] is returned: no save is ever replaced unseen, however late it comes.
    /// With `lease` (on the file seen there), an open for writing of that file under way, before
    /// the exchange or right after it, puts it back the same way: [`Over::Held`].
    pub fn commit_over(mut self, seen: Option<&Stamp>, lease: Option<&Lease>) -> Result<Over> {
        self.name()?;
        let Temp::Named(tmp) = &self.temp else { return Err(Error::Internal("an unnamed temporary was not linked".into())) };
        let (tmp, rel, target) = (tmp.clone(), self.rel(), self.name.clone());
        let dir = match self.dfd.take() {
            Some(d) => d,
            None => open_dir(&self.root, &self.dir, false)?,
        };
        let out = match seen {
            None => match rfs::renameat_with(&dir, tmp.as_str(), &dir, target.as_str(), rfs::RenameFlags::NOREPLACE) {
                Ok(()) => Ok(Exchanged::Placed),
                Err(rustix::io::Errno::EXIST) => Ok(Exchanged::Moved),
                Err(e) => Err(e),
            },
            Some(seen) => exchange_if(&dir, &tmp, &target, seen, lease),
        };
        self.dfd = Some(dir);
        match out.map_err(|e| err(&self.root, &rel, e))? {
            Exchanged::Placed => {
                self.committed = true;
                self.in_dir(|d| rfs::fsync(d))?.map_err(|e| err(&self.root, &rel, e))?;
                Ok(Over::Placed)
            }
            Exchanged::Moved => Ok(Over::Moved),
            Exchanged::Held => Ok(Over::Held),
            Exchanged::Stuck => {
                // The user's version would go with the temporary: it gets a name of its own.
                let kept = self.in_dir(|d| keep_aside(d, &tmp, &target))?;
                self.committed = kept.is_some();
                let said = kept.map_or_else(|| format!("your version is still at {tmp}: move it before anything else"), |k| format!("your version is kept as {k}"));
                Err(Error::io(self.root.join(&rel), std::io::Error::other(format!("saved during the accept: {said}"))))
            }
        }
    }
}

/// What [`Prepared::commit_over`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Over {
    Placed,
    /// The target was not what the caller saw: nothing changed there.
    Moved,
    /// A process was opening the old file for writing: it is back in place, nothing changed.
    Held,
}

enum Exchanged {
    Placed,
    Moved,
    Held,
    /// Putting it back failed: the target's former content is at the temporary name.
    Stuck,
}

/// Exchanges `tmp` and `target` in `dir` if what comes out of the target is `seen`; else puts
/// it back. A file system without exchanges gets the look alone, then a rename.
fn exchange_if(dir: &OwnedFd, tmp: &str, target: &str, seen: &Stamp, lease: Option<&Lease>) -> rustix::io::Result<Exchanged> {
    let now = |name: &str| rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).map(|st| Stamp::of(&st));
    let opened = || lease.is_some_and(Lease::breaking);
    // A look with the ctime too: an edit in place that put its mtime back still moved it.
    if !now(target).is_ok_and(|cur| cur == *seen) {
        return Ok(Exchanged::Moved);
    }
    if opened() {
        return Ok(Exchanged::Held);
    }
    let ours = now(tmp)?;
    match rfs::renameat_with(dir, tmp, dir, target, rfs::RenameFlags::EXCHANGE) {
        // The old file is still linked (under the temporary name) while the lease is asked:
        // an opener found it by path before the exchange gets it back in place.
        Ok(()) if now(tmp).is_ok_and(|out| out.same_file(seen)) && opened() => Ok(match put_back(dir, tmp, target, &ours) {
            Exchanged::Moved => Exchanged::Held,
            other => other,
        }),
        Ok(()) if now(tmp).is_ok_and(|out| out.same_file(seen)) => {
            rfs::unlinkat(dir, tmp, AtFlags::empty())?;
            Ok(Exchanged::Placed)
        }
        Ok(()) => Ok(put_back(dir, tmp, target, &ours)),
        // Nothing at the target any more: deleted meanwhile.
        Err(rustix::io::Errno::NOENT) => Ok(Exchanged::Moved),
        Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS | rustix::io::Errno::OPNOTSUPP) => {
            rfs::renameat(dir, tmp, dir, target)?;
            Ok(Exchanged::Placed)
        }
        Err(e) => Err(e),
    }
}

/// After an exchange that brought out something else than was seen, puts it back. What then
/// comes out should be `ours` as written; anything else is a newer save made in between (over
/// our file, or into it), and that one goes in place instead: the user's latest.
fn put_back(dir: &OwnedFd, tmp: &str, target: &str, ours: &Stamp) -> Exchanged {
    let swap = || rfs::renameat_with(dir, tmp, dir, target, rfs::RenameFlags::EXCHANGE);
    if swap().is_err() {
        return Exchanged::Stuck;
    }
    let mine = rfs::statat(dir, tmp, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| Stamp::of(&st).same_file(ours));
    if mine || swap().is_ok() { Exchanged::Moved } else { Exchanged::Stuck }
}

/// Removes `rel` only if it is what the caller saw there (`None`: nothing), the way
/// [`Prepared::commit_over`] replaces: moved aside under a temporary name, checked, then
/// unlinked, or put back when it was saved meanwhile, or being opened for writing (`lease`). A
/// path already gone is done.
pub fn remove_over(root: &Path, rel: &str, seen: Option<&Stamp>, lease: Option<&Lease>) -> Result<Over> {
    let (dir, name) = split(rel);
    let dfd = match open_dir(root, dir, false) {
        Ok(d) => d,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => return Ok(Over::Placed),
        Err(e) => return Err(e),
    };
    let now = |name: &str| rfs::statat(&dfd, name, AtFlags::SYMLINK_NOFOLLOW).map(|st| Stamp::of(&st));
    match (now(name), seen) {
        (Err(rustix::io::Errno::NOENT), _) => return Ok(Over::Placed),
        (Ok(cur), Some(seen)) if cur == *seen => {}
        (Err(e), _) => return Err(err(root, rel, e)),
        _ => return Ok(Over::Moved),
    }
    if lease.is_some_and(Lease::breaking) {
        return Ok(Over::Held);
    }
    let tmp = temp_name();
    match rfs::renameat_with(&dfd, name, &dfd, tmp.as_str(), rfs::RenameFlags::NOREPLACE) {
        Ok(()) => {}
        Err(rustix::io::Errno::NOENT) => return Ok(Over::Placed),
        Err(e) => return Err(err(root, rel, e)),
    }
    let opened = lease.is_some_and(Lease::breaking);
    if !opened && seen.is_some_and(|seen| now(&tmp).is_ok_and(|out| out.same_file(seen))) {
        rfs::unlinkat(&dfd, tmp.as_str(), AtFlags::empty()).map_err(|e| err(root, rel, e))?;
        rfs::fsync(&dfd).map_err(|e| err(root, rel, e))?;
        return Ok(Over::Placed);
    }
    // Saved meanwhile (or being opened): back in place, unless the path was made again since
    // (a newer save).
    let back = if opened { Over::Held } else { Over::Moved };
    match rfs::renameat_with(&dfd, tmp.as_str(), &dfd, name, rfs::RenameFlags::NOREPLACE) {
        Ok(()) => Ok(back),
        Err(rustix::io::Errno::EXIST) => rfs::unlinkat(&dfd, tmp.as_str(), AtFlags::empty()).map(|()| Over::Moved).map_err(|e| err(root, rel, e)),
        Err(e) => Err(err(root, rel, e)),
    }
}

/// A name of its own beside `target` for a file that would otherwise be left under a
/// temporary name: `<target>.saved-during-accept`, numbered when taken.
fn keep_aside(dir: BorrowedFd<'_>, tmp: &str, target: &str) -> Option<String> {
    (0..100).map(|n| if n == 0 { format!("{target}.saved-during-accept") } else { format!("{target}.saved-during-accept.{n}") }).find(|kept| {
        rfs::renameat_with(dir, tmp, dir, kept.as_str(), rfs::RenameFlags::NOREPLACE).is_ok()
    })
}

