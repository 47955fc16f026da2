//! The environment a wrapped agent gets: an allow-list, not the user's whole environment.
//! Passed: the base variables a terminal program needs, the `DISABLE_*` switches, the agent
//! CLI's own variables to that CLI only (`ANTHROPIC_*`/`CLAUDE_*` to `claude`, `OPENAI_*`/
//! `CODEX_*` to `codex`, `GEMINI_*`/`GOOGLE_*` to `gemini`, all of them to `aider`, `opencode`
//! and `goose`; a `make` or a script run under wrap gets no model key), and what `[wrap] env`
//! lists (`cli:NAME` for one command only). Everything else is dropped (`GITHUB_TOKEN`,
//! `AWS_SECRET_ACCESS_KEY`, a database URL...), and a name that looks secret outside the
//! agents' own prefixes is dropped even if a base rule would pass it, unless listed.

/// Variables passed by name.
const BASE: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "COLORTERM", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "TZ", "NO_COLOR", "FORCE_COLOR", "EDITOR", "VISUAL",
    "PAGER", "TMPDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
];
/// Variables passed by prefix: the locale, and the agent CLIs' own.
const PREFIXES: &[&str] = &["LC_", "ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "CLAUDE_", "CODEX_", "DISABLE_"];
/// The agent CLIs' own prefixes: their keys are what they are for.
const AGENT_PREFIXES: &[&str] = &["ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "CLAUDE_", "CODEX_"];

/// Does `name` look like it holds a secret?
pub fn looks_secret(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    ["TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE"].iter().any(|w| n.contains(w)) || n.ends_with("_KEY") || n.ends_with("_KEYS") || n == "KEY"
}

/// Each agent CLI's own prefixes (a command not listed gets none).
const CLI_PREFIXES: &[(&str, &[&str])] = &[
    ("claude", &["ANTHROPIC_", "CLAUDE_"]),
    ("codex", &["OPENAI_", "CODEX_"]),
    ("gemini", &["GEMINI_", "GOOGLE_"]),
    ("aider", AGENT_PREFIXES),
    ("opencode", AGENT_PREFIXES),
    ("goose", AGENT_PREFIXES),
];

/// What of `env` command `cli` gets under wrap (`cli`: the agent CLI's name as
/// `wrap::state` finds it, empty for a command that is none; `listed`: `[wrap] env`, a
/// `cli:NAME` entry for that command only).
pub fn allowed(env: &[(String, String)], listed: &[String], cli: &str) -> Vec<(String, String)> {
    let own: &[&str] = CLI_PREFIXES.iter().find(|(c, _)| !cli.is_empty() && *c == cli).map_or(&[], |(_, p)| p);
    let named = |k: &str| listed.iter().any(|l| match l.split_once(':') {
        Some((c, name)) => !cli.is_empty() && c == cli && name == k,
        None => l == k,
    });
    env.iter()
        .filter(|(k, _)| {
            if named(k) {
                return true;
            }
            if k.starts_with("CAIRN_") {
                return false;
            }
            let agents = AGENT_PREFIXES.iter().any(|p| k.starts_with(p));
            if agents {
                return own.iter().any(|p| k.starts_with(p));
            }
            let base = BASE.contains(&k.as_str()) || PREFIXES.iter().any(|p| k.starts_with(p));
            base && !looks_secret(k)
        })
        .cloned()
        .collect()
}

/// What of `env` a preview session gets (it runs the agent's code): the base variables a
/// terminal program needs, never the agent CLIs' keys, `CAIRN_*` or a name that looks secret.
pub fn for_preview(env: &[(String, String)]) -> Vec<(String, String)> {
    let agents_own = |k: &str| AGENT_PREFIXES.iter().any(|p| k.starts_with(p));
    env.iter().filter(|(k, _)| (BASE.contains(&k.as_str()) || k.starts_with("LC_")) && !agents_own(k) && !looks_secret(k)).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_allow_list_passes() {
        let env: Vec<(String, String)> = ["PATH", "HOME", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DATABASE_URL", "LC_ALL", "CAIRN_HOME", "DISABLE_TELEMETRY", "DISABLE_SECRET_TOKEN", "MY_TOOL_FLAG"]
            .iter()
            .map(|k| (k.to_string(), "v".to_string()))
            .collect();
        let got = |cli: &str, listed: &[&str]| -> Vec<String> { allowed(&env, &listed.iter().map(|s| s.to_string()).collect::<Vec<_>>(), cli).into_iter().map(|(k, _)| k).collect() };
        assert_eq!(got("claude", &["MY_TOOL_FLAG"]), ["PATH", "HOME", "ANTHROPIC_API_KEY", "LC_ALL", "DISABLE_TELEMETRY", "MY_TOOL_FLAG"]);
        assert_eq!(got("codex", &[]), ["PATH", "HOME", "OPENAI_API_KEY", "LC_ALL", "DISABLE_TELEMETRY"]);
        assert_eq!(got("aider", &[]), ["PATH", "HOME", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "LC_ALL", "DISABLE_TELEMETRY"]);
        // A command that is no agent CLI gets no model key, unless listed (for it alone).
        assert_eq!(got("", &[]), ["PATH", "HOME", "LC_ALL", "DISABLE_TELEMETRY"]);
        assert_eq!(got("make", &["make:OPENAI_API_KEY", "qwen:ANTHROPIC_API_KEY"]), ["PATH", "HOME", "OPENAI_API_KEY", "LC_ALL", "DISABLE_TELEMETRY"]);
    }
}
