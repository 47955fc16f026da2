//! A session's gateway planned from the environment its agent CLI would get: for each
//! provider whose key is there (`ANTHROPIC_API_KEY`/`ANTHROPIC_AUTH_TOKEN`, `OPENAI_API_KEY`/
//! `CODEX_API_KEY`, `GEMINI_API_KEY`/`GOOGLE_API_KEY`), a route whose upstream is the user's
//! base URL (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`, `GOOGLE_GEMINI_BASE_URL`) or the
//! provider's; the agent's environment gets a fresh random placeholder of the key's shape in
//! its place and the gateway's address on its own loopback as the base URL. The real values
//! stay in the route, in this process.

use super::upstream::Upstream;
use super::{Provider, Route, Secret};
use rand::Rng;

/// One provider's variables.
struct Spec {
    provider: Provider,
    /// Key variables: name, header, bearer, the placeholder's prefix and length.
    keys: &'static [(&'static str, &'static str, bool, &'static str, usize)],
    base_var: &'static str,
    default_base: &'static str,
    /// The port on the session's loopback, and the path the agent's base URL ends with.
    port: u16,
    prefix: &'static str,
}

const SPECS: &[Spec] = &[
    Spec {
        provider: Provider::Anthropic,
        keys: &[("ANTHROPIC_API_KEY", "x-api-key", false, "sk-ant-api03-", 108), ("ANTHROPIC_AUTH_TOKEN", "authorization", true, "sk-ant-oat01-", 108)],
        base_var: "ANTHROPIC_BASE_URL",
        default_base: "https://api.anthropic.com",
        port: 3130,
        prefix: "",
    },
    Spec {
        provider: Provider::OpenAi,
        keys: &[("OPENAI_API_KEY", "authorization", true, "sk-proj-", 164), ("CODEX_API_KEY", "authorization", true, "sk-proj-", 164)],
        base_var: "OPENAI_BASE_URL",
        default_base: "https://api.openai.com/v1",
        port: 3131,
        prefix: "/v1",
    },
    Spec {
        provider: Provider::Gemini,
        keys: &[("GEMINI_API_KEY", "x-goog-api-key", false, "AIza", 39), ("GOOGLE_API_KEY", "x-goog-api-key", false, "AIza", 39)],
        base_var: "GOOGLE_GEMINI_BASE_URL",
        default_base: "https://generativelanguage.googleapis.com",
        port: 3132,
        prefix: "",
    },
];

/// The variables every provider's key may be in (what a session without a gateway drops).
pub fn key_variables() -> impl Iterator<Item = &'static str> {
    SPECS.iter().flat_map(|s| s.keys.iter().map(|k| k.0))
}

/// The base URL the agent gets for `provider`'s gateway.
pub fn base_url(provider: Provider) -> String {
    SPECS.iter().find(|s| s.provider == provider).map(|s| format!("http://127.0.0.1:{}{}", s.port, s.prefix)).unwrap_or_default()
}

/// The agent's environment and the routes.
#[derive(Debug, Default)]
pub struct Plan {
    pub env: Vec<(String, String)>,
    pub routes: Vec<Route>,
}

/// A random placeholder: `prefix`, then URL-safe characters up to `len`.
fn placeholder(prefix: &str, len: usize) -> String {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut rng = rand::rng();
    let tail: String = (prefix.len()..len).map(|_| CHARS[rng.random_range(0..CHARS.len())] as char).collect();
    format!("{prefix}{tail}")
}

/// Plans the gateway of `env` (the agent CLI's allow-listed environment). A provider's base
/// URL that cannot carry a key safely (plain http to another machine) is an error naming it.
pub fn plan(env: Vec<(String, String)>) -> Result<Plan, String> {
    let mut out = Plan { env, routes: Vec::new() };
    for spec in SPECS {
        let mut secrets = Vec::new();
        for (var, header, bearer, prefix, len) in spec.keys {
            let Some((_, value)) = out.env.iter_mut().find(|(k, v)| k == var && !v.trim().is_empty()) else { continue };
            let ph = placeholder(prefix, *len);
            secrets.push(Secret { header, bearer: *bearer, placeholder: ph.clone(), real: std::mem::replace(value, ph).trim().to_string() });
        }
        if secrets.is_empty() {
            continue;
        }
        let base = out.env.iter().find(|(k, v)| k == spec.base_var && !v.trim().is_empty()).map_or(spec.default_base, |(_, v)| v.as_str());
        let upstream = Upstream::parse(base).map_err(|e| format!("{}: {e}", spec.base_var))?;
        out.env.retain(|(k, _)| k != spec.base_var);
        out.env.push((spec.base_var.to_string(), base_url(spec.provider)));
        out.routes.push(Route { provider: spec.provider, port: spec.port, prefix: spec.prefix, secrets, upstream });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_become_placeholders_of_their_shape_and_the_base_url_the_gateway() {
        let env: Vec<(String, String)> = [("PATH", "/bin"), ("ANTHROPIC_API_KEY", "sk-ant-api03-REAL"), ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9"), ("GEMINI_API_KEY", "AIzaREAL")].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let p = plan(env).unwrap();
        let get = |k: &str| p.env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap();
        assert_eq!(get("ANTHROPIC_BASE_URL"), "http://127.0.0.1:3130");
        assert_eq!(get("GOOGLE_GEMINI_BASE_URL"), "http://127.0.0.1:3132");
        let key = get("ANTHROPIC_API_KEY");
        assert!(key.starts_with("sk-ant-api03-") && key.len() == 108 && !key.contains("REAL"), "{key}");
        assert!(get("GEMINI_API_KEY").starts_with("AIza") && get("GEMINI_API_KEY").len() == 39);
        assert!(!format!("{:?}", p.env).contains("REAL") && !format!("{:?}", p.routes).contains("REAL"));
        assert_eq!(p.routes.len(), 2);
        assert_eq!(p.routes[0].upstream.to_string(), "http://127.0.0.1:9");
        assert_eq!(p.routes[1].upstream.to_string(), "https://generativelanguage.googleapis.com");
        assert_eq!(p.routes[0].secrets[0].real, "sk-ant-api03-REAL");
        // Two sessions never share a placeholder; a key over clear text elsewhere is refused.
        assert_ne!(plan(vec![("OPENAI_API_KEY".into(), "k".into())]).unwrap().env, plan(vec![("OPENAI_API_KEY".into(), "k".into())]).unwrap().env);
        assert!(plan(vec![("OPENAI_API_KEY".into(), "k".into()), ("OPENAI_BASE_URL".into(), "http://example.com/v1".into())]).is_err());
    }
}
