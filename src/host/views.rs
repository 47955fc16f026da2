//! Read-only views the plugin shows: an agent's timeline (`:CairnLog`) and its task's
//! check results (the ghost header).

use cairn_core::error::Result;

/// `:CairnLog`: an agent's timeline from the event stream (what it read, wrote and logged,
/// its state changes, its task's checks).
pub fn agent_log(project: &cairn_core::project::Project, id: &str) -> Result<serde_json::Value> {
    let events: Vec<_> = project.bin()?.events_since(0)?.into_iter().filter(|e| e.agent_id == id).collect();
    Ok(serde_json::json!({ "id": id, "events": events }))
}

/// The results of the checks of the task whose proposal `agent` is (`pass`, `fail`,
/// `pending`, in order), empty when it has none.
pub fn task_checks(project: &cairn_core::project::Project, agent: &str) -> Vec<String> {
    let Ok(bin) = project.bin() else { return Vec::new() };
    match bin.task_of_agent(agent) {
        Ok(Some(task)) => bin.task_get(&task).map(|t| t.checks.iter().map(|c| serde_json::to_value(c.result).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()).collect()).unwrap_or_default(),
        _ => Vec::new(),
    }
}
