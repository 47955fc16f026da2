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

/// The ghost text of agent `shown`: absolute paths to hunks (with which changed since the
/// user's last review), the agent's state and revision; `{}` when none is shown.
pub fn ghost_payload(project: &cairn_core::project::Project, shown: Option<String>) -> Result<serde_json::Value> {
    use cairn_core::command::{self, Command, Output};
    let Some(id) = shown else { return Ok(serde_json::json!({})) };
    let rec = project.bin()?.get(&id)?;
    let Output::Hunks { files, .. } = command::execute(project, Command::Hunks { id: id.clone() })? else {
        return Ok(serde_json::json!({}));
    };
    let summary = rec.submission.as_ref().and_then(|s| s.get("summary")).and_then(|s| s.as_str()).unwrap_or("").to_string();
    let files: serde_json::Map<String, serde_json::Value> = files
        .into_iter()
        .map(|f| (project.root.join(&f.path).display().to_string(), serde_json::json!({ "path": f.path, "kind": f.kind, "hunks": f.hunks, "revised": f.revised, "conflicts": f.conflicts, "file_conflict": f.file_conflict })))
        .collect();
    let change = project.bin()?.jj_get(&id)?.filter(|j| j.status == "proposed").map(|j| j.change.chars().take(8).collect::<String>());
    let agent = serde_json::json!({ "id": id, "summary": summary, "checks": task_checks(project, &id), "jj": change, "state": rec.state, "in_progress": rec.state.is_running(), "revision": rec.revision });
    Ok(serde_json::json!({ "agent": agent, "files": files }))
}
