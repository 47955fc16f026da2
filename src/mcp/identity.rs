//! Who a `cairn mcp` server acts as, bound once for the server's life (seed 004: identity is
//! fixed at start-up, never a tool argument): `--actor`, else the identity of the MCP client
//! process that started it, `agent:<client>-<6 hex digits>` ([`cairn_core::tasks::client_actor`]
//! over [`client_process`]). A client restarts a killed server from the same process (Claude
//! Code's `/mcp` reconnect, Gemini CLI's `/mcp refresh`, Codex's recovery of a stdio server:
//! each spawns the command itself, no shell), so the new server is the same actor and goes on
//! with the sessions the model still names; servers one client runs side by side share it too;
//! two client processes are two actors. The client's name and version are the ones it gave
//! when it started (`initialize`, or the first request's metadata).

use rmcp::service::RequestContext;
use rmcp::RoleServer;
use serde::Serialize;

/// The server's side: `--actor` if given, else what names the client process, and the
/// identity once bound.
pub(super) struct Identity {
    given: Option<String>,
    /// [`client_process`], read at start (a fresh key of this server when it cannot be read).
    client_key: String,
    bound: tokio::sync::OnceCell<Bound>,
}

/// The bound identity, as the `identity` tool shows it.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Bound {
    pub actor: String,
    pub client: Client,
}

/// The MCP client, from its `clientInfo`.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Client {
    pub name: String,
    pub version: String,
}

impl Identity {
    pub(super) fn new(given: Option<String>) -> Identity {
        let client_key = match &given {
            Some(_) => String::new(),
            None => client_process().unwrap_or_else(|| {
                tracing::warn!("mcp: the client process cannot be told (no /proc?): this server is an actor of its own; --actor fixes one");
                format!("server {} {:?}", std::process::id(), std::time::SystemTime::now())
            }),
        };
        Identity { given, client_key, bound: tokio::sync::OnceCell::new() }
    }

    /// The identity, bound on the first call from what that call's context says of the client.
    pub(super) async fn get(&self, ctx: &RequestContext<RoleServer>) -> &Bound {
        self.bound
            .get_or_init(|| async {
                let info = ctx.client_info();
                let name = info.as_ref().map(|i| i.name.clone()).filter(|n| !n.is_empty()).unwrap_or_else(|| "unknown".into());
                let version = info.map(|i| i.version).unwrap_or_default();
                let actor = self.given.clone().unwrap_or_else(|| cairn_core::tasks::client_actor(&name, &self.client_key));
                tracing::info!("mcp: acting as {actor} for {name} {version}");
                Bound { actor, client: Client { name, version } }
            })
            .await
    }
}

/// Most wrappers [`client_process`] walks past.
const MAX_WRAPPERS: usize = 8;

/// The MCP client process that started this server, named so that it stays the same across
/// the server's restarts and never matches another process: `<boot id> <pid> <start time>` (a
/// recycled pid starts later; a reboot changes the boot id). The client is the parent, unless
/// the parent only wraps the server (`sh -c '…; exit'`, `npx`, `uv run`, `strace`, `timeout`):
/// a wrapper shares the server's stdin or stdout pipe (or socket), which the client holds the
/// other end of, and is started again with each server; the client is the first ancestor that
/// does not share them. `None` without `/proc` or when the parent is outside this pid namespace.
fn client_process() -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let ours = [pipe_of("self", 0), pipe_of("self", 1)];
    let (mut pid, _) = stat("self")?;
    (pid != 0).then_some(())?;
    for _ in 0..MAX_WRAPPERS {
        let wraps = (0..2).any(|fd| ours[fd].is_some() && pipe_of(&pid.to_string(), fd) == ours[fd]);
        match stat(&pid.to_string())? {
            (parent, _) if wraps && parent != 0 => pid = parent,
            _ => break,
        }
    }
    let (_, start) = stat(&pid.to_string())?;
    Some(format!("{} {pid} {start}", boot.trim()))
}

/// The pipe or socket on descriptor `fd` of process `pid` (`self` for this one): its device
/// and inode, or `None` for anything else (a terminal, a file) or when it cannot be read.
fn pipe_of(pid: &str, fd: usize) -> Option<(u64, u64)> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let m = std::fs::metadata(format!("/proc/{pid}/fd/{fd}")).ok()?;
    (m.file_type().is_fifo() || m.file_type().is_socket()).then(|| (m.dev(), m.ino()))
}

/// The parent (0: outside this pid namespace) and start time (clock ticks since boot) of
/// process `pid`, from `/proc/<pid>/stat`.
fn stat(pid: &str) -> Option<(u32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some((fields.get(1)?.parse().ok()?, fields.get(19)?.parse().ok()?))
}
