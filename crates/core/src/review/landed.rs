//! Whose change a file's drift is: since agent X read a file, the project's version moved on.
//! Walking the accept journal back from the file as it is now to the version X read names the
//! agents that landed those changes; a step no accept explains is the user's own edit. So a
//! conflict says "conflicts with agent 3f2a" after another proposal landed, and "your edit"
//! only when the user did edit.

use crate::error::Result;
use crate::store::bin::Bin;
use crate::store::Hash;

/// What the user's own change is called in conflict labels.
pub const YOUR_EDIT: &str = "your edit";

/// The authors of `path`'s change from `base` (as agent `id` read it) to `now` (the project's
/// version), newest first: agent ids, and [`YOUR_EDIT`] when some of it is no accept's.
pub fn authors(bin: &Bin, id: &str, path: &str, base: Option<Hash>, now: Option<Hash>) -> Result<Vec<String>> {
    let landings = bin.landings(path, id)?;
    let mut who = Vec::new();
    let mut at = now;
    // Each step goes back one accept; a cycle (undo and accept again) ends at the bound.
    for _ in 0..=landings.len() {
        if at == base {
            return Ok(who);
        }
        match landings.iter().find(|(_, _, new)| *new == at) {
            Some((agent, old, _)) => {
                if !who.contains(agent) {
                    who.push(agent.clone());
                }
                at = *old;
            }
            None => break,
        }
    }
    who.push(YOUR_EDIT.to_string());
    Ok(who)
}

/// How messages name the authors [`authors`] found: `agent 3f2a9c`, `your edit`, joined.
pub fn describe(who: &[String]) -> String {
    if who.is_empty() {
        return YOUR_EDIT.to_string();
    }
    let named: Vec<String> = who.iter().map(|w| if w == YOUR_EDIT { w.clone() } else { format!("agent {w}") }).collect();
    named.join(" and ")
}
