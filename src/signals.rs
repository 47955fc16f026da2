//! Signal files (SPEC §8): a shell drops `$CAIRN_HOME/signals/<name>.json`; the daemon loop
//! ([`crate::daemon`]) takes each once, in name order, parses it into a [`Command`] and runs
//! it through [`command::execute`]. A file that cannot be parsed or whose command fails moves to
//! `signals/failed/` with `<name>.error.txt` beside it; the orchestrator keeps running.

use cairn_core::command::{self, Command};
use cairn_core::error::{Error, Result};
use cairn_core::lifecycle::Priority;
use cairn_core::project::Project;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The JSON body of a signal file. Every field is optional; the name may supply type and id.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Body {
    #[serde(rename = "type")]
    kind: Option<String>,
    reference: Option<String>,
    agent_id: Option<String>,
    priority: Option<String>,
    provider: Option<String>,
    project_root: Option<String>,
    /// A reject's reason, for the agent's next revision.
    reason: Option<String>,
}

/// The result of one signal file.
#[derive(Debug)]
pub struct Handled {
    pub name: String,
    pub outcome: std::result::Result<command::Output, String>,
}

/// Signal types and the name prefixes that imply them.
const TYPES: &[&str] = &["queue", "spawn", "accept", "reject"];

fn fail(name: &str, message: impl Into<String>) -> Error {
    Error::Signal { name: name.to_string(), message: message.into() }
}

/// This orchestrator's entry in `$CAIRN_HOME/hosts/`, removed when dropped.
pub struct Registration(PathBuf);

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Announces that this process serves `project`, for the signal routing of other
/// orchestrators sharing `CAIRN_HOME`.
/// The signal directory is made here too: a shell drops files into it while this runs.
pub fn register(project: &Project) -> Result<Registration> {
    let signals = project.home.signals();
    std::fs::create_dir_all(&signals).map_err(|e| Error::io(&signals, e))?;
    let dir = project.home.hosts();
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let path = dir.join(format!("{}.root", std::process::id()));
    std::fs::write(&path, project.root.to_string_lossy().as_bytes()).map_err(|e| Error::io(&path, e))?;
    Ok(Registration(path))
}

/// Project roots of the other live orchestrators sharing this `CAIRN_HOME`.
fn other_roots(project: &Project) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(project.home.hosts()) else { return Vec::new() };
    rd.flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.strip_suffix(".root")?.parse().ok()?;
            let alive = rustix::process::Pid::from_raw(pid).is_some_and(|p| rustix::process::test_kill_process(p).is_ok());
            let root = PathBuf::from(std::fs::read_to_string(e.path()).ok()?);
            (alive && pid as u32 != std::process::id() && root != project.root).then_some(root)
        })
        .collect()
}

/// Does the project at `root` have agent `id` (or a unique prefix of it)?
fn has_agent(root: &Path, id: &str) -> bool {
    cairn_core::store::bin::Bin::open(&root.join(".agentfs/bin.db")).and_then(|b| b.resolve(id)).is_ok()
}

/// Where a signal belongs.
#[derive(Debug)]
pub enum Routed {
    /// This project's: run it.
    Ours(Command),
    /// Another project's (by `project_root`, or by an agent id this project does not have):
    /// left for its orchestrator.
    Elsewhere,
}

/// Parses a signal file's name and bytes into a command for this project. An accept or reject
/// without `project_root` belongs to the project whose `bin.db` has the agent: a host for
/// another project sharing `CAIRN_HOME` never takes it.
pub fn parse(project: &Project, name: &str, bytes: &[u8]) -> Result<Routed> {
    parse_keyed(project, name, bytes, None)
}

/// [`parse`] with the identity of the signal file: a queue signal taken again after a crash
/// (same file, same content) queues nothing new.
fn parse_keyed(project: &Project, name: &str, bytes: &[u8], key: Option<String>) -> Result<Routed> {
    let stem = name.strip_suffix(".json").unwrap_or(name);
    let (name_type, name_id) = match stem.split_once('-') {
        Some((t, rest)) if TYPES.contains(&t) => (Some(t), Some(rest)),
        _ if TYPES.contains(&stem) => (Some(stem), None),
        _ => (None, None),
    };
    let text = std::str::from_utf8(bytes).map_err(|_| fail(name, "not UTF-8 text"))?;
    let body: Body = if text.trim().is_empty() && name_type.is_some() {
        Body::default()
    } else {
        serde_json::from_str(text).map_err(|e| fail(name, format!("invalid JSON: {e}")))?
    };
    if let Some(root) = &body.project_root {
        let same = Path::new(root).canonicalize().map(|r| r == project.root).unwrap_or(false);
        if !same {
            return Ok(Routed::Elsewhere);
        }
    }
    let kind = body.kind.as_deref().or(name_type).ok_or_else(|| fail(name, "no \"type\" (queue, spawn, accept or reject)"))?;
    let id = || -> Result<String> {
        body.agent_id.clone().or_else(|| name_id.map(str::to_string)).ok_or_else(|| fail(name, format!("{kind} needs \"agent_id\"")))
    };
    let reference = || body.reference.clone().filter(|r| !r.trim().is_empty()).ok_or_else(|| fail(name, format!("{kind} needs \"reference\"")));
    let provider = match &body.provider {
        Some(p) => Some(cairn_core::providers::parse(p).map_err(|e| fail(name, e.to_string()))?),
        None => None,
    };
    if matches!(kind, "accept" | "reject") && body.project_root.is_none() {
        let agent = id()?;
        if let Err(Error::UnknownAgent(_)) = project.bin()?.resolve(&agent) {
            // Another running orchestrator's project has it: leave it for that one. Else it
            // fails here, naming where it looked.
            let others = other_roots(project);
            if others.iter().any(|r| has_agent(r, &agent)) {
                return Ok(Routed::Elsewhere);
            }
            let looked: Vec<String> = std::iter::once(&project.root).chain(&others).map(|r| r.display().to_string()).collect();
            return Err(fail(name, format!("no agent '{agent}' in any running project ({})", looked.join(", "))));
        }
    }
    Ok(Routed::Ours(match kind {
        "queue" => {
            let priority = match &body.priority {
                Some(p) => p.parse::<Priority>().map_err(|e| fail(name, e))?,
                None => Priority::Normal,
            };
            Command::Queue { reference: reference()?, provider, priority, key }
        }
        "spawn" => Command::Queue { reference: reference()?, provider, priority: Priority::High, key },
        "accept" => Command::Accept { id: id()?, force: false },
        "reject" => Command::Reject { id: id()?, reason: body.reason.clone() },
        other => return Err(fail(name, format!("unknown type '{other}' (queue, spawn, accept or reject)"))),
    }))
}

/// Largest signal file taken; a larger one fails without being read.
pub const MAX_SIGNAL_BYTES: u64 = 64 * 1024;

/// One entry of `signals/` that is due.
enum Entry {
    /// A regular `*.json` file to take.
    Signal(PathBuf, String),
    /// Something that can never be a signal: moved to `failed/` with the reason. The name is
    /// the entry's (lossy for a non-UTF-8 name).
    Bad(PathBuf, String, String),
}

/// Pending entries, in name order. Dotfiles (a shell's temporary names, our claims) and other
/// names than `*.json` are left alone, except a non-UTF-8 name, which can never be one.
fn pending(dir: &Path) -> Vec<Entry> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<Entry> = Vec::new();
    for e in rd.flatten() {
        let path = e.path();
        let Some(name) = e.file_name().to_str().map(str::to_string) else {
            let lossy = e.file_name().to_string_lossy().replace('/', "_");
            out.push(Entry::Bad(path, lossy, "the name is not UTF-8".into()));
            continue;
        };
        if name.starts_with('.') || !name.ends_with(".json") {
            continue;
        }
        let why = match std::fs::symlink_metadata(&path) {
            Err(_) => continue,
            Ok(m) if m.file_type().is_symlink() => "a symbolic link, not a file",
            Ok(m) if m.is_dir() => "a directory, not a file",
            Ok(m) if !m.is_file() => "not a regular file (a FIFO, socket or device)",
            Ok(m) if m.len() > MAX_SIGNAL_BYTES => "larger than 64 KiB",
            Ok(_) => {
                out.push(Entry::Signal(path, name));
                continue;
            }
        };
        out.push(Entry::Bad(path, name, why.into()));
    }
    out.sort_by(|a, b| entry_name(a).cmp(entry_name(b)));
    out
}

fn entry_name(e: &Entry) -> &str {
    match e {
        Entry::Signal(_, n) | Entry::Bad(_, n, _) => n,
    }
}

/// Claims that a killed orchestrator left (`.taken-<pid>-<name>` of a dead pid) go back to
/// their names, to be taken again.
fn retry_orphaned_claims(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some((pid, original)) = name.strip_prefix(".taken-").and_then(|r| r.split_once('-')) else { continue };
        let Ok(pid) = pid.parse::<i32>() else { continue };
        let alive = rustix::process::Pid::from_raw(pid).is_some_and(|p| rustix::process::test_kill_process(p).is_ok());
        if !alive {
            let _ = std::fs::rename(e.path(), dir.join(original));
        }
    }
}

/// Moves `from` to `failed/<name>` with `<name>.error.txt` saying why.
fn fail_entry(dir: &Path, from: &Path, name: &str, text: &str) {
    let failed = dir.join("failed");
    let _ = std::fs::create_dir_all(&failed);
    // The reason appears whole (written aside, then renamed), before the entry itself.
    let tmp = failed.join(format!(".{name}.error.txt.tmp"));
    if std::fs::write(&tmp, text).is_ok() {
        let _ = std::fs::rename(&tmp, failed.join(format!("{name}.error.txt")));
    }
    if std::fs::rename(from, failed.join(name)).is_err() {
        // Not movable (permissions): reported once, and removed if that is possible.
        tracing::warn!("signal {name}: {text} (could not move it to failed/)");
        let _ = std::fs::remove_file(from);
    }
}

/// Takes every pending signal once. Never fails as a whole: each file's outcome is returned.
pub fn poll(project: &Project) -> Vec<Handled> {
    let dir = project.home.signals();
    retry_orphaned_claims(&dir);
    let mut handled = Vec::new();
    for entry in pending(&dir) {
        let (path, name) = match entry {
            Entry::Signal(path, name) => (path, name),
            Entry::Bad(path, name, why) => {
                // Claimed like a signal first, so that only one orchestrator reports it.
                let claimed = dir.join(format!(".taken-{}-{name}", std::process::id()));
                if std::fs::rename(&path, &claimed).is_ok() {
                    let e = fail(&name, why);
                    fail_entry(&dir, &claimed, &name, &format!("{e}\n"));
                    handled.push(Handled { name, outcome: Err(e.to_string()) });
                }
                continue;
            }
        };
        // Claim the file first: a rename succeeds for exactly one orchestrator.
        let claimed = dir.join(format!(".taken-{}-{name}", std::process::id()));
        if std::fs::rename(&path, &claimed).is_err() {
            continue;
        }
        let mut bytes = Vec::new();
        let read = std::fs::File::open(&claimed).and_then(|f| std::io::Read::read_to_end(&mut std::io::Read::take(f, MAX_SIGNAL_BYTES + 1), &mut bytes));
        let outcome = match (read, parse_keyed(project, &name, &bytes, Some(identity(&claimed, &name, &bytes)))) {
            (Err(e), _) => Err(fail(&name, format!("unreadable: {e}"))),
            _ if bytes.len() as u64 > MAX_SIGNAL_BYTES => Err(fail(&name, "larger than 64 KiB")),
            (_, Ok(Routed::Elsewhere)) => {
                // Not ours: put it back for its own project's orchestrator.
                let _ = std::fs::rename(&claimed, &path);
                continue;
            }
            (_, Ok(Routed::Ours(cmd))) => run_once(project, cmd),
            (_, Err(e)) => Err(e),
        };
        match &outcome {
            Ok(_) => {
                let _ = std::fs::remove_file(&claimed);
            }
            Err(e) => {
                let text = match e.hint() {
                    Some(h) => format!("{e}\nhint: {h}\n"),
                    None => format!("{e}\n"),
                };
                fail_entry(&dir, &claimed, &name, &text);
                tracing::warn!("signal {name} failed: {e}");
            }
        }
        handled.push(Handled { name, outcome: outcome.map_err(|e| e.to_string()) });
    }
    handled
}

/// A signal file's identity across a crash: its name, inode, mtime and content (a claim put
/// back by [`retry_orphaned_claims`] keeps all four; a new file with the same name does not).
fn identity(path: &Path, name: &str, bytes: &[u8]) -> String {
    use std::os::unix::fs::MetadataExt;
    let (ino, mtime) = std::fs::metadata(path).map(|m| (m.ino(), m.mtime_nsec() + m.mtime() * 1_000_000_000)).unwrap_or_default();
    format!("signal:{name}:{ino}:{mtime}:{}", cairn_core::store::hex_hash(bytes))
}

/// Runs a signal's command. An accept or reject that a crash made run twice finds its work
/// done: that counts as success, not as a failure to report.
fn run_once(project: &Project, cmd: Command) -> Result<command::Output> {
    let target = match &cmd {
        Command::Accept { id, .. } => Some((id.clone(), cairn_core::lifecycle::State::Accepted)),
        Command::Reject { id, .. } => Some((id.clone(), cairn_core::lifecycle::State::Rejected)),
        _ => None,
    };
    match command::execute(project, cmd) {
        Err(Error::IllegalTransition { .. }) if target.as_ref().is_some_and(|(id, to)| project.bin().and_then(|b| b.get(id)).is_ok_and(|r| r.state == *to)) => match target {
            Some((id, _)) => command::execute(project, Command::Status { id }),
            None => Err(Error::Internal("signal target vanished".into())),
        },
        other => other,
    }
}
