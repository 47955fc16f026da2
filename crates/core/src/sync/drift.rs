//! How `stable.db` differs from the tree, for `cairn doctor`: the same directory-by-directory
//! reading as a full scan ([`super::scan`]), nothing hashed or written, and only the
//! differences kept (never the whole index in memory).

use crate::error::Result;
use crate::project::Project;

/// What a comparison found, each list sorted.
#[derive(Default)]
pub struct Drift {
    /// On disk, not in the index.
    pub missing: Vec<String>,
    /// In the index, not on disk.
    pub extra: Vec<String>,
    /// Files whose size or mtime differ.
    pub changed: Vec<String>,
    /// FIFOs, sockets and devices (never indexed, never opened).
    pub specials: Vec<String>,
}

/// The index against the whole tree. Read-only.
pub fn compare(project: &Project) -> Result<Drift> {
    let mut found = Drift::default();
    super::scan::compare(project, |deltas| {
        for d in deltas {
            found.missing.extend(d.missing.iter().cloned());
            found.changed.extend(d.changed.iter().cloned());
            found.extra.extend(d.extra().iter().cloned());
            found.specials.extend(d.specials.iter().cloned());
        }
        true
    })?;
    for v in [&mut found.missing, &mut found.extra, &mut found.changed, &mut found.specials] {
        v.sort();
    }
    Ok(found)
}

/// How `stable.db` differs from the tree: paths only in the tree, paths only in the index, and
/// files whose size or mtime differ. Read-only.
pub fn drift(project: &Project) -> Result<(Vec<String>, Vec<String>, Vec<String>)> {
    let found = compare(project)?;
    Ok((found.missing, found.extra, found.changed))
}
