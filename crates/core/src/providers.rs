//! Code providers (SPEC §5): turn a task reference into agent code. `file` reads a `.pym`
//! (suffix optional, relative to the project), `inline` takes the reference as the code, and
//! `llm` asks the configured model.

use crate::error::{Error, Result};
use crate::project::Project;
use std::path::PathBuf;

pub use crate::lifecycle::Provider;

/// Parses a provider name given by a user (CLI flag, signal file, RPC).
pub fn parse(name: &str) -> Result<Provider> {
    match name.parse().map_err(Error::Usage)? {
        Provider::Mcp => Err(Error::Usage("provider mcp belongs to `cairn mcp` sessions; it cannot be queued".into())),
        Provider::Wrap => Err(Error::Usage("provider wrap belongs to `cairn wrap` sessions; it cannot be queued".into())),
        p => Ok(p),
    }
}

/// The provider used when none is named: `[orchestrator] default_provider` when set, else
/// `file` for a reference that names a script, `llm` for other text when an LLM is
/// configured, `file` otherwise (which then explains).
pub fn default_for(project: &Project, reference: &str) -> Provider {
    // `[orchestrator] default_provider` (`cairn up --provider P`) wins when set.
    if let Ok(p) = parse(&project.config.orchestrator.default_provider) {
        return p;
    }
    if names_script(project, reference) || !crate::llm::configured(&project.config.llm) {
        Provider::File
    } else {
        Provider::Llm
    }
}

/// Does `reference` name a script (a `.pym` path, or an existing file with or without the
/// suffix) rather than a task in words?
pub fn names_script(project: &Project, reference: &str) -> bool {
    reference.ends_with(".pym") || resolve_file(project, reference).is_some()
}

fn resolve_file(project: &Project, reference: &str) -> Option<PathBuf> {
    let base = PathBuf::from(reference);
    let base = if base.is_absolute() { base } else { project.root.join(base) };
    let with_suffix = PathBuf::from(format!("{}.pym", base.display()));
    [base, with_suffix].into_iter().find(|p| p.is_file())
}

/// Produces the code of an agent (the agent is `generating` meanwhile).
pub fn get_code(project: &Project, provider: Provider, reference: &str) -> Result<String> {
    let fail = |message: String| Error::Provider { provider: provider.to_string(), message };
    match provider {
        Provider::File => {
            let path = resolve_file(project, reference)
                .ok_or_else(|| fail(format!("no script '{reference}' (looked for it and {reference}.pym under {})", project.root.display())))?;
            std::fs::read_to_string(&path).map_err(|e| fail(format!("{}: {e}", path.display())))
        }
        Provider::Inline => Ok(reference.to_string()),
        Provider::Llm => crate::llm::generate_code(project, reference),
        Provider::Mcp => Err(fail("an MCP session's agent has no script: its changes come from the session's tool calls".into())),
        Provider::Wrap => Err(fail("a wrap session's agent has no script: its changes are what the wrapped command wrote".into())),
    }
}
