//! The opt-in fallback (`[run] allow_unconfined`) for machines where the boundary cannot be
//! built: the command runs in a throwaway copy of the project with the proposal applied,
//! with the cleared environment, its own process group killed at the timeout, and nothing
//! else. Its log says so. What it wrote is found by comparing the copy with the view.

use super::capture::Written;
use super::spec::Spec;
use super::Exit;
use crate::error::{Error, Result};
use crate::review::diff::FileChange;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Directories of the project never copied (Cairn's state).
const NOT_COPIED: [&str; 2] = [".agentfs", ".grail"];

/// Runs `spec`'s command unconfined in `copy`; returns how it ended, the output's tail (and
/// bytes dropped), and what it wrote when `spec.capture`.
pub(super) fn run(spec: &Spec, copy: &Path, changes: &[FileChange], timeout: Duration, keep: usize) -> Result<(Exit, Vec<u8>, u64, Vec<Written>)> {
    copy_tree(&spec.root, copy, "")?;
    for c in changes {
        let path = copy.join(&c.path);
        match &c.new {
            Some(bytes) => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
                }
                std::fs::write(&path, bytes).map_err(|e| Error::io(&path, e))?;
                let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(c.new_mode.unwrap_or(0o644) & 0o777));
            }
            None => {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    let before = stamps(copy)?;
    let cwd = copy.join(spec.cwd.strip_prefix(&spec.root).unwrap_or(Path::new("")));
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| Error::Sandbox(format!("pipe: {e}")))?;
    let w2 = w.try_clone().map_err(|e| Error::Sandbox(format!("pipe: {e}")))?;
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(&spec.cmd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(w))
        .stderr(Stdio::from(w2))
        .process_group(0)
        .spawn()
        .map_err(|e| Error::io(&cwd, e))?;
    let reader = std::thread::spawn(move || super::tail(std::fs::File::from(r), keep));
    let group = rustix::process::Pid::from_raw(child.id() as i32);
    let deadline = Instant::now() + timeout;
    let exit = loop {
        if let Some(s) = child.try_wait().map_err(|e| Error::Sandbox(format!("wait: {e}")))? {
            break s.code().map_or(Exit::Signal(s.signal().unwrap_or(9)), Exit::Code);
        }
        if Instant::now() >= deadline {
            break Exit::TimedOut;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // The whole group goes, whether the command ended or timed out.
    if let Some(g) = group {
        let _ = rustix::process::kill_process_group(g, rustix::process::Signal::KILL);
    }
    let _ = child.wait();
    let (output, dropped) = reader.join().map_err(|_| Error::Internal("the output reader of a run panicked".into()))?;
    let written = if spec.capture { compare(copy, &before)? } else { Vec::new() };
    Ok((exit, output, dropped, written))
}

/// Copies the project (but Cairn's state) into `to`.
fn copy_tree(from: &Path, to: &Path, rel: &str) -> Result<()> {
    let dir = if rel.is_empty() { from.to_path_buf() } else { from.join(rel) };
    std::fs::create_dir_all(to.join(rel)).map_err(|e| Error::io(to.join(rel), e))?;
    for e in std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))?.flatten() {
        let Some(name) = e.file_name().to_str().map(str::to_string) else { continue };
        if rel.is_empty() && NOT_COPIED.contains(&name.as_str()) {
            continue;
        }
        let sub = if rel.is_empty() { name } else { format!("{rel}/{name}") };
        match e.file_type() {
            Ok(ft) if ft.is_dir() => copy_tree(from, to, &sub)?,
            Ok(ft) if ft.is_file() => {
                std::fs::copy(e.path(), to.join(&sub)).map_err(|err| Error::io(e.path(), err))?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Size, modification time and mode of every file of `copy` that could join a proposal.
fn stamps(copy: &Path) -> Result<BTreeMap<String, (u64, i128, u32)>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![String::new()];
    while let Some(rel) = stack.pop() {
        let dir = if rel.is_empty() { copy.to_path_buf() } else { copy.join(&rel) };
        for e in std::fs::read_dir(&dir).map_err(|e| Error::io(&dir, e))?.flatten() {
            let Some(name) = e.file_name().to_str().map(str::to_string) else { continue };
            let sub = if rel.is_empty() { name } else { format!("{rel}/{name}") };
            if crate::paths::has_skipped_component(&sub) {
                continue;
            }
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(sub),
                Ok(m) if m.is_file() => {
                    use std::os::unix::fs::MetadataExt;
                    out.insert(sub, (m.len(), m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128, m.mode() & 0o777));
                }
                _ => {}
            }
        }
    }
    Ok(out)
}

/// Files whose size, time or mode changed, new files, and files gone.
fn compare(copy: &Path, before: &BTreeMap<String, (u64, i128, u32)>) -> Result<Vec<Written>> {
    let after = stamps(copy)?;
    let mut out: Vec<Written> = before.keys().filter(|p| !after.contains_key(*p)).map(|p| Written::Deleted { path: p.clone() }).collect();
    for (path, stamp) in &after {
        if before.get(path) != Some(stamp) {
            let full = copy.join(path);
            let content = std::fs::read(&full).map_err(|e| Error::io(&full, e))?;
            out.push(Written::File { path: path.clone(), mode: stamp.2, content });
        }
    }
    Ok(out)
}
