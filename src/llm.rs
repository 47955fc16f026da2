//! The LLM backend: code generation for the `llm` provider and `ask_llm` for scripts.
//! (The HTTP and command backends are tracked in their own issue; until then both report
//! clearly that no model is configured.)

use crate::error::{Error, Result};
use crate::project::Project;

fn not_configured() -> String {
    "no LLM is configured: set [llm] endpoint (an OpenAI-compatible URL) or [llm] command in config.toml".to_string()
}

/// Generates agent code for a natural-language task.
pub fn generate_code(_project: &Project, _task: &str) -> Result<String> {
    Err(Error::Provider { provider: "llm".into(), message: not_configured() })
}

/// Answers `ask_llm(prompt, context)` from a script.
pub fn ask(_project: &Project, _prompt: &str, _context: &str) -> std::result::Result<String, String> {
    Err(not_configured())
}
