//! Which credentials a wrapped agent holds (`[wrap] credentials`, `:help cairn-wrap-keys`).
//! `gateway` (the default): its model keys become placeholders and its base URLs the model
//! gateway's on its own loopback ([`crate::gateway`]), served with `network = "proxy"` (with
//! `none` it has the placeholders and nothing to reach); the CLIs' sign-in files are hidden
//! (Cairn does not hold a subscription's tokens for it yet). `pass`, or `--network host`:
//! the CLI gets the user's keys and sign-in files, as before; the session's notes say so.

use crate::error::{Error, Result};
use crate::gateway::{self, Gateway};
use crate::project::Project;
use crate::runbox::wrap::{Network, Request};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The sign-in files of the CLIs, under the home: where each keeps its subscription's tokens.
pub(crate) const LOGINS: &[&str] = &[".claude/.credentials.json", ".codex/auth.json", ".gemini/oauth_creds.json", ".gemini/google_accounts.json"];

/// A session's environment with its keys planned, its gateway, the host paths hidden.
pub(crate) struct Keyed {
    pub env: Vec<(String, String)>,
    pub gateway: Option<Gateway>,
    pub hidden: Vec<PathBuf>,
}

/// Does the agent hold the user's credentials (`pass`, or the host's network)?
fn passes(project: &Project, network: &Network) -> bool {
    project.config.wrap.credentials == "pass" || matches!(network, Network::Host)
}

/// Plans the keys of `env` (the CLI's allow-listed environment) for a session on `network`.
pub(crate) fn plan(project: &Project, env: Vec<(String, String)>, network: &Network, home: &Path) -> Result<Keyed> {
    if passes(project, network) {
        return Ok(Keyed { env, gateway: None, hidden: Vec::new() });
    }
    let plan = gateway::plan(env).map_err(|e| Error::Config(format!("the model gateway of `cairn wrap`: {e} (:help cairn-wrap-keys)")))?;
    let gateway = (matches!(network, Network::Proxy { .. }) && !plan.routes.is_empty()).then(|| Gateway { routes: plan.routes, meter: Arc::new(gateway::Unmetered) });
    Ok(Keyed { env: plan.env, gateway, hidden: LOGINS.iter().map(|l| home.join(l)).collect() })
}

/// Codex CLI reads no base URL from its environment (0.1xx: `openai_base_url` in its
/// configuration only): a `codex` command line whose key goes through the gateway gets
/// `-c openai_base_url=<the gateway>` first (the user's `OPENAI_BASE_URL` stays the upstream).
pub(crate) fn codex_base_url(project: &Project, mut argv: Vec<String>, network: Option<&str>) -> Vec<String> {
    let proxied = network.unwrap_or(project.config.wrap.network.as_str()) == "proxy";
    let keyed = ["OPENAI_API_KEY", "CODEX_API_KEY"].iter().any(|k| project.env.get(k).is_some_and(|v| !v.trim().is_empty()));
    let codex = argv.first().and_then(|p| Path::new(p).file_name()).is_some_and(|n| n == "codex");
    if proxied && keyed && codex && project.config.wrap.credentials == "gateway" {
        argv.splice(1..1, ["-c".to_string(), format!("openai_base_url=\"{}\"", gateway::plan::base_url(gateway::Provider::OpenAi))]);
    }
    argv
}

/// What the session's first lines say of its credentials.
pub(crate) fn note(project: &Project, req: &Request) -> Option<String> {
    if passes(project, &req.network) {
        let why = if matches!(req.network, Network::Host) { "--network host" } else { "[wrap] credentials = \"pass\"" };
        return Some(format!("the agent holds your model keys and sign-in files ({why}): code it runs can read them (:help cairn-wrap-keys)"));
    }
    let signed_in = LOGINS.iter().any(|l| req.home.join(l).exists());
    let login = if signed_in { "; your CLI sign-in files are hidden: a CLI logged in with a subscription is not signed in here ([wrap] credentials = \"pass\" gives them back)" } else { "" };
    match &req.gateway {
        Some(g) => {
            let routes: Vec<String> = g.routes.iter().map(|r| format!("{} → {}", r.provider, r.upstream)).collect();
            Some(format!("the agent holds placeholders, not your keys: its model requests go through Cairn's gateway ({}){login} (:help cairn-wrap-keys)", routes.join(", ")))
        }
        None if signed_in => Some(login.trim_start_matches("; ").to_string() + " (:help cairn-wrap-keys)"),
        None => None,
    }
}
