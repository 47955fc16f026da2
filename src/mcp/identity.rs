//! Who a `cairn mcp` server acts as, bound once for the server's life (seed 004: identity is
//! fixed at start-up, never a tool argument): `--actor`, else a fresh identity per server
//! instance, `agent:<client>-<6 hex digits>` ([`cairn_core::tasks::instance_actor`]), so two
//! instances of the same client never share claims or sessions. The client's name and version
//! are the ones it gave when it started (`initialize`, or the first request's metadata).

use cairn_core::project::Project;
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use serde::Serialize;
use std::sync::Arc;

/// The server's side: `--actor` if given, and the identity once bound.
pub(super) struct Identity {
    given: Option<String>,
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
        Identity { given, bound: tokio::sync::OnceCell::new() }
    }

    /// The identity, bound on the first call from what that call's context says of the client.
    pub(super) async fn get(&self, project: &Arc<Project>, ctx: &RequestContext<RoleServer>) -> &Bound {
        self.bound
            .get_or_init(|| async {
                let info = ctx.client_info();
                let name = info.as_ref().map(|i| i.name.clone()).filter(|n| !n.is_empty()).unwrap_or_else(|| "unknown".into());
                let version = info.map(|i| i.version).unwrap_or_default();
                let actor = match &self.given {
                    Some(a) => a.clone(),
                    None => {
                        let (project, client) = (Arc::clone(project), name.clone());
                        let derived = tokio::task::spawn_blocking(move || cairn_core::tasks::instance_actor(&project, &client)).await;
                        derived.unwrap_or_else(|_| format!("agent:{name}-{:06x}", std::process::id() & 0xff_ffff))
                    }
                };
                tracing::info!("mcp: acting as {actor} for {name} {version}");
                Bound { actor, client: Client { name, version } }
            })
            .await
    }
}
