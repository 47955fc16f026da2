//! What `:checkhealth cairn` shows about the sandbox.

/// The sandbox self-test, summarised for `:checkhealth cairn`: which layers this kernel gave
/// the child, and any probe that was not denied.
pub(super) fn sandbox_health(exe: &std::path::Path) -> serde_json::Value {
    match cairn_core::sandbox::spawn::selftest(exe, &Default::default()) {
        Ok(t) => serde_json::json!({
            "landlock": t.applied.landlock,
            "seccomp": t.applied.seccomp,
            "identity": t.applied.identity,
            "uid": t.applied.uid,
            "namespaces": t.applied.namespaces,
            "namespaces_missing": t.applied.namespaces_missing,
            "probes": t.probes.len(),
            "not_denied": t.probes.iter().filter(|(_, o)| o != "EPERM").map(|(n, o)| format!("{n}: {o}")).collect::<Vec<_>>(),
        }),
        Err(e) => serde_json::json!({ "error": e.to_string() }),
    }
}

