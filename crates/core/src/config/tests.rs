//! The defaults the SPEC names.

use super::*;

#[test]
fn defaults_match_spec() {
    let c = Config::default();
    assert_eq!(c.orchestrator.max_concurrent_agents, 5);
    assert_eq!(c.sandbox.max_write_bytes, 52_428_800);
    assert_eq!(c.llm.api_key_env, "OPENAI_API_KEY");
    assert!((c.llm.temperature - 0.2).abs() < 1e-9);
    assert_eq!(c.tmux.split, "horizontal");
    assert!(c.ui.keymaps && c.jj.enabled == "auto");
}
