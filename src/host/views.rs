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

/// The ghost text of every pending proposal: agent `shown` (selected, or the newest) as
/// `agent`/`files`, every other one with hunks in `others`, each with its board mark and the
/// overlaps of its hunks; and `status`, the project's one-line status with each agent's
/// state (the statusline component, `User CairnStatus`). Paths are absolute.
pub fn ghost_payload(project: &cairn_core::project::Project, shown: Option<String>) -> Result<serde_json::Value> {
    let board = cairn_core::review::board::build(project)?;
    let status = serde_json::json!({ "text": board.short(), "agents": board.agents, "order": board.order, "overlaps": board.overlaps.len() });
    let entry = |a: &cairn_core::review::board::OnBoard| -> Result<serde_json::Value> {
        let files: serde_json::Map<String, serde_json::Value> = a
            .files
            .iter()
            .map(|f| (project.root.join(&f.path).display().to_string(), serde_json::to_value(f).unwrap_or_default()))
            .collect();
        let change = project.bin()?.jj_get(&a.id)?.filter(|j| j.status == "proposed").map(|j| j.change.chars().take(8).collect::<String>());
        let agent = serde_json::json!({ "id": a.id, "mark": a.mark, "summary": a.summary, "checks": task_checks(project, &a.id), "jj": change, "state": a.state, "in_progress": a.in_progress, "revision": a.revision, "overlaps": a.overlaps });
        Ok(serde_json::json!({ "agent": agent, "files": files }))
    };
    let focused = shown.as_deref().and_then(|id| board.get(id));
    let others = board.agents.iter().filter(|a| Some(a.id.as_str()) != shown.as_deref() && !a.files.is_empty()).map(entry).collect::<Result<Vec<_>>>()?;
    let mut payload = match focused {
        Some(a) => entry(a)?,
        None => serde_json::json!({}),
    };
    payload["others"] = serde_json::Value::Array(others);
    payload["status"] = status;
    Ok(payload)
}
