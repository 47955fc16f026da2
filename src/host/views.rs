//! Read-only views the plugin shows: an agent's timeline (`:CairnLog`) and its task's
//! check results (the ghost header).

use cairn_core::error::Result;

/// `:CairnLog`: an agent's timeline from the event stream (what it read, wrote and logged,
/// its state changes, its task's checks).
pub fn agent_log(project: &cairn_core::project::Project, id: &str) -> Result<serde_json::Value> {
    let events = project.bin()?.events_of(id)?;
    Ok(serde_json::json!({ "id": id, "events": events }))
}

/// The checks of the task whose proposal `agent` is, in order: `{desc, result, by, counts}`
/// (`by`: the agent that wrote it, for an agent's own check), empty when it has none.
pub fn task_checks(project: &cairn_core::project::Project, agent: &str) -> Vec<serde_json::Value> {
    cairn_core::command::task_brief(project, agent).map(|t| t.checks).unwrap_or_default()
}
