//! The board: every pending proposal of the project at once, as review sees them together.
//!
//! - Which agents are at work or wait for the user, each with its short mark (`A`, `B`,
//!   ...) that signs, headers and status lines use, the agent's for its life.
//! - The overlap map: hunks of two pending proposals that touch the same lines of a file now
//!   (adjacent lines count, as they conflict in a three-way merge). Computed from each
//!   proposal's hunks against the project as it is, so the user's saved edits are already in
//!   it; unsaved buffers are compared by the plugin against these same hunks.
//! - A suggested landing order: greedily, the proposal whose landing leaves the fewest hunks
//!   of the others conflicted goes first.
//! - One line per project for status lines (`cairn status --format tmux`, the plugin's
//!   statusline component).
//!
//! Rebasing needs no copy: every proposal's hunks are its change merged three-way onto the
//! project as it is ([`super::diff`]). After an accept, [`rebased_by`] says what that did to
//! each other pending proposal.

use super::hunk_review::{file_hunks, FileHunks};
use super::hunks::Hunk;
use crate::error::Result;
use crate::lifecycle::State;
use crate::project::Project;
use serde::Serialize;
use std::collections::BTreeMap;

/// One agent on the board.
#[derive(Debug, Clone, Serialize)]
pub struct OnBoard {
    pub id: String,
    /// Its mark in signs, headers and status lines: `A`, `B`, ... given when it started and
    /// kept for its life (`store::bin` marks).
    pub mark: String,
    pub state: State,
    /// Still at work (its proposal grows).
    pub in_progress: bool,
    /// The proposal waits for the user (reviewing, undone).
    pub waits: bool,
    pub revision: u32,
    /// The agent's summary, or its task.
    pub summary: String,
    /// Failed checks of its task that count.
    pub checks_failed: usize,
    /// An open session of it has sent no heartbeat for a minute.
    pub stalled: bool,
    /// Other agents whose pending hunks overlap this one's.
    pub overlaps: Vec<String>,
    /// Hunks it proposes now.
    pub hunks: usize,
    /// Its text files with their hunks (with `overlaps` per hunk).
    #[serde(skip)]
    pub files: Vec<FileHunks>,
}

/// Two pending proposals changing the same lines.
#[derive(Debug, Clone, Serialize)]
pub struct Overlap {
    pub path: String,
    /// Lines of the file now (1-based, inclusive) the two hunks cover together.
    pub lines: (usize, usize),
    pub agents: [String; 2],
}

/// Every pending proposal at once.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Board {
    pub agents: Vec<OnBoard>,
    pub overlaps: Vec<Overlap>,
    /// The suggested landing order of the proposals with hunks (fewest conflicts first).
    pub order: Vec<String>,
}

/// Lines of the current file a hunk covers, `[start, end)`; an insertion is empty at its place.
fn span(h: &Hunk) -> (usize, usize) {
    (h.old_start, h.old_start + h.removed.len())
}

/// Do two hunks touch (overlap or sit next to each other)?
fn touch(a: &Hunk, b: &Hunk) -> bool {
    let ((s1, e1), (s2, e2)) = (span(a), span(b));
    s1 <= e2 && s2 <= e1
}

/// The board of `project`: its active agents, their hunks, the overlaps between them.
pub fn build(project: &Project) -> Result<Board> {
    let bin = project.bin()?;
    let sessions = bin.session_list(None)?;
    let now = crate::time::now_ms();
    let marks = bin.marks()?;
    let mut agents = Vec::new();
    for rec in bin.list(false)? {
        let waits = rec.state.is_reviewable();
        // An overlay being created, or damaged, does not take the board down: the agent shows
        // without hunks (its own status says what is wrong).
        let live = rec.state.is_running() && project.existing_overlay(&rec.id).ok().flatten().is_some_and(|o| o.changed_count().unwrap_or(0) > 0);
        let files = if waits || live { file_hunks(project, &rec.id).unwrap_or_default() } else { Vec::new() };
        let summary = rec.submission.as_ref().and_then(|s| s.get("summary")).and_then(|s| s.as_str()).unwrap_or(&rec.task).lines().next().unwrap_or("").to_string();
        let checks_failed = match bin.task_of_agent(&rec.id)? {
            Some(t) => bin.task_get(&t).map(|t| t.checks.iter().filter(|c| c.result == crate::store::bin::CheckResult::Fail && c.counts()).count()).unwrap_or(0),
            None => 0,
        };
        let stalled = sessions.iter().any(|s| s.agent == rec.id && s.status == "active" && now - s.heartbeat_ms > crate::store::bin::STALLED_AFTER_MS);
        let hunks = files.iter().map(|f| f.hunks.len()).sum();
        let mark = marks.get(&rec.id).cloned().unwrap_or_else(|| "?".into());
        agents.push(OnBoard { mark, id: rec.id, state: rec.state, in_progress: rec.state.is_running(), waits, revision: rec.revision, summary, checks_failed, stalled, overlaps: Vec::new(), hunks, files });
    }
    let overlaps = find_overlaps(&mut agents);
    let order = landing_order(&agents);
    Ok(Board { agents, overlaps, order })
}

/// Marks each hunk with the agents whose hunks touch it, each agent with the agents it
/// overlaps, and lists the overlapping pairs.
fn find_overlaps(agents: &mut [OnBoard]) -> Vec<Overlap> {
    // path -> (agent index, file index) of each proposal changing it
    let mut by_path: BTreeMap<String, Vec<(usize, usize)>> = BTreeMap::new();
    for (a, agent) in agents.iter_mut().enumerate() {
        for (f, file) in agent.files.iter_mut().enumerate() {
            file.overlaps = vec![Vec::new(); file.hunks.len()];
            by_path.entry(file.path.clone()).or_default().push((a, f));
        }
    }
    let mut out = Vec::new();
    for (path, sides) in by_path.into_iter().filter(|(_, s)| s.len() > 1) {
        for (i, &(a, fa)) in sides.iter().enumerate() {
            for &(b, fb) in &sides[i + 1..] {
                let (ida, idb) = (agents[a].id.clone(), agents[b].id.clone());
                let (ha, hb) = (agents[a].files[fa].hunks.clone(), agents[b].files[fb].hunks.clone());
                for (x, h1) in ha.iter().enumerate() {
                    for (y, h2) in hb.iter().enumerate().filter(|(_, h2)| touch(h1, h2)) {
                        push_unique(&mut agents[a].files[fa].overlaps[x], &idb);
                        push_unique(&mut agents[b].files[fb].overlaps[y], &ida);
                        push_unique(&mut agents[a].overlaps, &idb);
                        push_unique(&mut agents[b].overlaps, &ida);
                        let ((s1, e1), (s2, e2)) = (span(h1), span(h2));
                        out.push(Overlap { path: path.clone(), lines: (s1.min(s2) + 1, e1.max(e2).max(s1.min(s2) + 1)), agents: [ida.clone(), idb.clone()] });
                    }
                }
            }
        }
    }
    out
}

fn push_unique(v: &mut Vec<String>, s: &str) {
    if !v.iter().any(|x| x == s) {
        v.push(s.to_string());
    }
}

/// The landing order: repeatedly, the proposal whose landing would leave the fewest hunks of
/// the remaining ones conflicted (ties: the older first).
fn landing_order(agents: &[OnBoard]) -> Vec<String> {
    let mut left: Vec<&OnBoard> = agents.iter().filter(|a| a.hunks > 0).collect();
    let mut order = Vec::new();
    while !left.is_empty() {
        // Hunks of the others that overlap x: those conflict once x lands.
        let cost = |x: &OnBoard| -> usize { left.iter().filter(|o| o.id != x.id).flat_map(|o| o.files.iter()).flat_map(|f| f.overlaps.iter()).filter(|ov| ov.contains(&x.id)).count() };
        let best = (0..left.len()).min_by_key(|&i| cost(left[i])).unwrap_or(0);
        order.push(left.remove(best).id.clone());
    }
    order
}

impl Board {
    pub fn get(&self, id: &str) -> Option<&OnBoard> {
        self.agents.iter().find(|a| a.id == id)
    }

    /// One line for a status line: `A 3f2a waits ⚠B  B 9c1d works ⚠A` (ids and states only:
    /// nothing an agent wrote).
    pub fn short(&self) -> String {
        let marks: BTreeMap<&str, &str> = self.agents.iter().map(|a| (a.id.as_str(), a.mark.as_str())).collect();
        self.agents
            .iter()
            .map(|a| {
                let word = match a.state {
                    _ if a.stalled => "stalled",
                    State::Reviewing => "waits",
                    State::Undone => "undone",
                    State::Queued => "queued",
                    _ => "works",
                };
                let mut s = format!("{} {} {word}", a.mark, a.id.chars().take(4).collect::<String>());
                if a.checks_failed > 0 {
                    s.push_str(" ✗");
                }
                if !a.overlaps.is_empty() {
                    s.push_str(" ⚠");
                    s.extend(a.overlaps.iter().map(|o| marks.get(o.as_str()).copied().unwrap_or("?")));
                }
                s
            })
            .collect::<Vec<_>>()
            .join("  ")
    }
}

/// What another agent's landing did to one pending proposal.
#[derive(Debug, Clone, Serialize)]
pub struct Rebased {
    pub id: String,
    /// Files of it the landing touched that moved onto it cleanly.
    pub clean: usize,
    /// Its hunks that now conflict with the agent that landed.
    pub conflicts: usize,
}

/// After agent `landed` changed `paths` of the project (an accept, a hunk accept): for each
/// other pending proposal changing one of them, what moved cleanly and what conflicts now
/// with `landed`. Read-only: every proposal's hunks are rebased onto the project as it is
/// whenever they are computed; this says what that did.
pub fn rebased_by(project: &Project, landed: &str, paths: &[String]) -> Result<Vec<Rebased>> {
    let mut out = Vec::new();
    for other in project.bin()?.list(false)?.into_iter().filter(|r| r.id != landed && (r.state.is_reviewable() || r.state.is_running())) {
        let Some(overlay) = project.existing_overlay(&other.id).ok().flatten() else { continue };
        if !paths.iter().any(|p| overlay.get(p).is_ok_and(|e| e.is_some())) {
            continue;
        }
        drop(overlay);
        let Ok(files) = file_hunks(project, &other.id) else { continue };
        let touched: Vec<&FileHunks> = files.iter().filter(|f| paths.contains(&f.path)).collect();
        let with_it = |f: &&&FileHunks| f.conflict_with.iter().any(|w| w == landed);
        let conflicts = touched.iter().filter(with_it).map(|f| if f.file_conflict.is_some() { f.hunks.len().max(1) } else { f.hunks.iter().filter(|h| f.in_conflict(h)).count() }).sum();
        let clean = touched.len() - touched.iter().filter(with_it).count();
        out.push(Rebased { id: other.id, clean, conflicts });
    }
    Ok(out)
}

impl Rebased {
    /// One line for people: `rebased 3f2a: 1 file moved cleanly` or `... 2 hunk(s) conflict
    /// with agent 9c1d`.
    pub fn describe(&self, landed: &str) -> String {
        match self.conflicts {
            0 => format!("rebased {} onto {landed}: {} file(s) moved cleanly", self.id, self.clean),
            n => format!("rebased {} onto {landed}: {n} hunk(s) conflict with agent {landed} (:CairnResolve, cairn resolve)", self.id),
        }
    }
}
