//! An MCP connection's own session (implicit: the client named none): begun at its first file
//! tool, marked with the connection ([`Connection`]), ended when the client disconnects
//! ([`end_implicit`]: a proposal, or cancelled when it changed nothing). A server killed before
//! it could end its session leaves it open; the next server of the same actor (the client
//! started it again) goes on with it ([`adopt_implicit`]).

use super::sessions::{begin_with, cancel, finish, open, owned, with_health, Session};
use super::Flow;
use crate::error::{Error, Result};
use crate::project::Project;

/// One MCP connection (a `cairn mcp` server's life), marked by an `flock` it holds on
/// `.agentfs/connections/<id>.lock` until it ends or is killed. Its own sessions carry its id
/// (`meta.connection`), so a later server can tell a session whose server is gone (killed, so
/// it could not finish it) from one a live server still works in.
pub struct Connection {
    id: String,
    path: std::path::PathBuf,
    _lock: std::fs::File,
}

impl Connection {
    /// A new connection, its lock held; the lock files of ended connections are removed (a
    /// lock file appears under its name only once locked, so a free one is an ended one's).
    pub fn open(project: &Project) -> Result<Connection> {
        use rustix::fs::{flock, FlockOperation::NonBlockingLockExclusive};
        let dir = project.agentfs().join("connections");
        project.state_dir(&dir)?;
        let id = format!("c{:016x}", rand::random::<u64>());
        let (new, path) = (dir.join(format!("{id}.new")), dir.join(format!("{id}.lock")));
        let f = std::fs::OpenOptions::new().create_new(true).write(true).open(&new).map_err(|e| Error::io(&new, e))?;
        flock(&f, NonBlockingLockExclusive).map_err(|e| Error::io(&new, e.into()))?;
        std::fs::rename(&new, &path).map_err(|e| Error::io(&path, e))?;
        for old in std::fs::read_dir(&dir).into_iter().flatten().flatten().map(|e| e.path()).filter(|p| *p != path && p.extension().is_some_and(|x| x == "lock")) {
            if std::fs::File::open(&old).is_ok_and(|o| flock(&o, NonBlockingLockExclusive).is_ok()) {
                let _ = std::fs::remove_file(&old);
            }
        }
        Ok(Connection { id, path, _lock: f })
    }

    /// Is connection `id` alive (its lock held)? A connection without a lock file has ended.
    fn alive(project: &Project, id: &str) -> bool {
        let path = project.agentfs().join("connections").join(format!("{}.lock", crate::paths::id_part(id)));
        let Ok(f) = std::fs::File::open(&path) else { return false };
        rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockShared).is_err()
    }

    /// Ends the mark (the lock goes with the process).
    pub fn forget(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A session an MCP client used without naming one (its connection's own): a task titled
/// `title` and a session for it, created on the client's first file tool call, marked with
/// `connection` when there is one.
pub fn begin_implicit(project: &Project, actor: &str, title: &str, connection: Option<&Connection>) -> Result<Session> {
    let t = super::create(project, actor, title, "Changes an MCP client made without naming a session; finished when it disconnected.", &[], Vec::new())?;
    let key = format!("implicit-{}-{}-{}", std::process::id(), crate::time::now_ms(), rand::random::<u32>());
    let meta = connection.map(|c| serde_json::json!({ "connection": c.id }));
    begin_with(project, actor, &t.row.id, &key, meta.as_ref())
}

/// The newest open session of `actor` that was a connection's own and whose server is gone
/// (killed: it could neither finish nor cancel it), made `connection`'s own: a server started
/// again by the same client goes on with it. Of servers trying at once, one gets it.
pub fn adopt_implicit(project: &Project, actor: &str, connection: &Connection) -> Result<Option<Session>> {
    let bin = project.bin()?;
    for s in bin.session_list(None)?.into_iter().rev().filter(|s| s.actor == actor && s.status == "active") {
        let Some(from) = s.meta.as_ref().and_then(|m| m["connection"].as_str()).filter(|c| *c != connection.id) else { continue };
        if Connection::alive(project, from) || open(project, actor, &s.id).is_err() {
            continue;
        }
        if bin.session_move_connection(&s.id, from, &connection.id)? {
            tracing::info!("connection {} goes on with session {} of connection {from}, which is gone", connection.id, s.id);
            return Ok(Some(with_health(bin.session_get(&s.id)?)));
        }
    }
    Ok(None)
}

/// Ends an implicit session when its client disconnects: with changes it is finished (a
/// proposal for review, never lost); without, cancelled and its task with it.
pub fn end_implicit(project: &Project, actor: &str, id: &str, summary: &str) -> Result<Session> {
    let s = owned(project, actor, id)?;
    let overlay = project.existing_overlay(&s.agent)?;
    // A proposal that lost changes is neither submitted nor taken for one without changes.
    let intact = match &overlay {
        Some(o) if s.status == "active" => super::seal::check(project, &s.agent, o),
        _ => Ok(()),
    };
    let changed = overlay.map(|o| o.paths().map(|p| !p.is_empty())).transpose()?.unwrap_or(false);
    let finished = intact.and_then(|()| (changed || s.status != "active").then(|| finish(project, actor, id, summary)).transpose());
    if let Err(e @ Error::Overlay { .. }) = &finished {
        // No one is left to be told: the human is, by the agent errored with the reason.
        super::seal::lost_at_end(project, actor, &s, &e.to_string());
    }
    if let Some(done) = finished? {
        return Ok(done);
    }
    let done = cancel(project, actor, id, "the client disconnected without changes")?;
    let mut t = project.bin()?.task_get(&s.task)?;
    if let Some(last) = Flow::of(project).statuses.last() {
        t.status = last.clone();
        project.bin()?.task_update(&t, actor, "implicit session ended without changes")?;
    }
    Ok(done)
}
