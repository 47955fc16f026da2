//! Environment variables: the original design's names for config keys (aliases), and the
//! `CAIRN_*` names Cairn does not read, reported instead of silently ignored.

use super::SCHEMA;

/// Environment names of the original design for config keys: `(name, section, key)`. The
/// `CAIRN_<SECTION>_<KEY>` name wins when both are set.
pub const ENV_ALIASES: &[(&str, &str, &str)] = &[("CAIRN_MAX_CONCURRENT_AGENTS", "orchestrator", "max_concurrent_agents")];

/// `CAIRN_*` variables read besides the config keys, and the prefixes of the tests' and the
/// bench's own.
const ENV_KNOWN: &[&str] = &["CAIRN_HOME", "CAIRN_LOG", "CAIRN_REPO"];
const ENV_KNOWN_PREFIXES: &[&str] = &["CAIRN_TEST_", "CAIRN_BENCH_"];

/// The `CAIRN_*` names among `names` that Cairn does not read (a typo, or a setting of
/// another version): each is reported once by the edge, never silently ignored.
pub fn unknown_env<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let known = |n: &str| {
        ENV_KNOWN.contains(&n)
            || ENV_KNOWN_PREFIXES.iter().any(|p| n.starts_with(p))
            || ENV_ALIASES.iter().any(|(a, _, _)| *a == n)
            || SCHEMA.iter().any(|d| n == format!("CAIRN_{}_{}", d.section.to_uppercase(), d.key.to_uppercase()))
    };
    names.into_iter().filter(|n| n.starts_with("CAIRN_") && !known(n)).map(str::to_string).collect()
}


#[cfg(test)]
mod tests {
    use super::super::load;
    use super::*;

    #[test]
    fn the_seeds_environment_names_work_and_unknown_ones_are_named() {
        let env = |k: &str| match k {
            "CAIRN_MAX_CONCURRENT_AGENTS" => Some("3".to_string()),
            "CAIRN_LLM_MODEL" => Some("gpt-4".to_string()),
            _ => None,
        };
        // A home without a config.toml: the environment alone.
        let dir = std::path::PathBuf::from("/nonexistent/cairn-home");
        let loaded = load(&dir, None, &env).unwrap();
        assert_eq!((loaded.config.orchestrator.max_concurrent_agents, loaded.config.llm.model.as_str()), (3, "gpt-4"));
        let both = |k: &str| match k {
            "CAIRN_MAX_CONCURRENT_AGENTS" => Some("3".to_string()),
            "CAIRN_ORCHESTRATOR_MAX_CONCURRENT_AGENTS" => Some("7".to_string()),
            _ => None,
        };
        assert_eq!(load(&dir, None, &both).unwrap().config.orchestrator.max_concurrent_agents, 7, "the full name wins");
        let names = ["CAIRN_HOME", "CAIRN_MAX_CONCURRENT_AGENTS", "CAIRN_LLM_MODEL", "CAIRN_MAX_AGENTS", "CAIRN_TEST_X", "PATH", "CAIRN_SANDBOX_TIMEOUT"];
        assert_eq!(unknown_env(names), vec!["CAIRN_MAX_AGENTS".to_string(), "CAIRN_SANDBOX_TIMEOUT".to_string()]);
    }

}
