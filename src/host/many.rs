//! The requests of many agents at once: the board, the three-way view of a conflicted file
//! and its resolution, and merging a landed change into a buffer with unsaved edits.

use super::wire::Args;
use super::Handler;
use cairn_core::command::{self, Command};
use cairn_core::error::{Error, Result};
use rmpv::Value;

impl Handler {
    /// `Some` for the methods this file serves.
    pub(super) fn dispatch_many(&self, method: &str, args: &Args) -> Option<std::result::Result<Result<serde_json::Value>, Value>> {
        let project = &self.project;
        let exec = |cmd: Command| command::execute(project, cmd).and_then(|o| Ok(serde_json::to_value(o)?));
        let path = || args.required("path").map(|p| self.relative(&p));
        Some(match method {
            "board" => Ok(exec(Command::Board)),
            // `:CairnStart [id]`: held agents (auto_spawn = false) start.
            "start" => Ok(args.str("id").filter(|i| !i.is_empty()).map(|i| command::resolve(project, &i)).transpose().and_then(|id| cairn_core::orchestrator::start(project, id.as_deref())).map(|ids| serde_json::json!({ "started": ids }))),
            "three_way" => path().map(|path| self.target(args.str("id")).and_then(|id| exec(Command::ThreeWay { id, path }))),
            "resolve" => path().and_then(|path| {
                let text = args.required("text")?;
                Ok(self.target(args.str("id")).and_then(|id| exec(Command::Resolve { id, path, content: text.into_bytes() })))
            }),
            "merge_buffer" => path().and_then(|path| {
                let (base, text) = (args.required("base")?, args.required("text")?);
                Ok(merge_buffer(project, &path, &base, &text))
            }),
            _ => return None,
        })
    }

    /// A path from the plugin (absolute, or relative to the project) relative to the project.
    pub(super) fn relative(&self, path: &str) -> String {
        std::path::Path::new(path).strip_prefix(&self.project.root).map(|p| p.display().to_string()).unwrap_or_else(|_| path.to_string())
    }
}

/// A buffer whose file changed on disk under unsaved edits: the change on disk (from `base`,
/// the text the buffer was read from, to the file now) merged into the buffer's `text`
/// three-way. Conflicts keep both sides between markers: nothing of either is dropped.
fn merge_buffer(project: &cairn_core::project::Project, path: &str, base: &str, text: &str) -> Result<serde_json::Value> {
    use cairn_core::review::merge;
    let now = cairn_core::store::fsx::read(&project.root, path)?.map(|(b, _)| b).ok_or_else(|| Error::Usage(format!("{path} is no longer in the project: nothing to merge")))?;
    let pieces = merge::merge(base.as_bytes(), text.as_bytes(), &now);
    let conflicts = merge::conflicts(&pieces).len();
    let merged = merge::with_markers(&pieces, "your unsaved edit", "landed on disk");
    Ok(serde_json::json!({ "text": String::from_utf8_lossy(&merged), "conflicts": conflicts }))
}

/// What a landing did, for the plugin: the absolute paths it changed, and one `rebased`
/// notice per other pending proposal it touched.
pub(super) struct Landing {
    pub paths: serde_json::Value,
    pub rebased: Vec<serde_json::Value>,
}

/// The landing event `ev` is, if any: an accept (its journal names the files), an accepted
/// hunk, an undo (it names the files).
pub(super) fn landing(project: &cairn_core::project::Project, ev: &cairn_core::events::Event) -> Option<Landing> {
    use cairn_core::events::EventKind;
    use cairn_core::lifecycle::State;
    let bin = project.bin().ok()?;
    let (paths, rebases) = match &ev.kind {
        EventKind::StateChanged { .. } if ev.state == State::Accepted => (bin.journal_rows(&ev.agent_id).ok()?.into_iter().map(|j| j.path).collect::<Vec<_>>(), true),
        EventKind::HunkDecided { path, accepted: true } => (vec![path.clone()], true),
        EventKind::Undone { paths } => (paths.clone(), false),
        _ => return None,
    };
    let rebased = if rebases { cairn_core::review::board::rebased_by(project, &ev.agent_id, &paths).unwrap_or_default() } else { Vec::new() };
    let rebased = rebased
        .iter()
        .map(|r| {
            let state = bin.get(&r.id).map(|rec| rec.state.to_string()).unwrap_or_default();
            serde_json::json!({ "id": r.id, "state": state, "type": "rebased", "message": r.describe(&ev.agent_id), "conflicts": r.conflicts })
        })
        .collect();
    let abs = paths.iter().map(|p| serde_json::Value::from(project.root.join(p).display().to_string())).collect();
    Some(Landing { paths: serde_json::Value::Array(abs), rebased })
}
