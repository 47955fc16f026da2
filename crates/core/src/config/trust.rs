//! Trust of a project's `.cairn.toml`. The file comes with the repository: a clone from
//! anyone may carry one. Keys that reach past the project's confinement (run a command on
//! the host, send prompts or a key somewhere, widen what a confined process sees or reaches)
//! take effect from it only once the user has trusted that exact content with
//! `cairn config trust`, as Neovim's `:trust` does for `.nvim.lua` and direnv's `allow` for
//! `.envrc`. An edited file is untrusted again. Without trust, such a key may still narrow
//! (hide more, cut the network), never widen; the rest is ignored with one warning. Budgets
//! and timeouts ([`BUDGET_KEYS`]: what a run, an agent or a session may take of the machine)
//! are such keys too: an untrusted file may lower them, never raise them.
//! The user's own `$CAIRN_HOME/config.toml` and the environment are always trusted.

use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::{Table, Value};

/// The keys a project file sets only when trusted.
pub const HOST_KEYS: &[(&str, &str)] = &[
    // Run on the host, or send the prompt and an API key to a server.
    ("llm", "command"),
    ("llm", "endpoint"),
    ("llm", "api_key_env"),
    ("llm", "provider"),
    ("jj", "program"),
    // What a confined process sees and reaches.
    ("run", "network"),
    ("run", "read_paths"),
    ("run", "env"),
    ("run", "allow_unconfined"),
    ("wrap", "hide"),
    ("wrap", "home"),
    ("wrap", "state"),
    ("wrap", "read_paths"),
    ("wrap", "env"),
    ("wrap", "network"),
    ("wrap", "allow_hosts"),
    ("wrap", "host_ports"),
    // Ports of a view opened on the host's loopback.
    ("preview", "ports"),
    // How soon decided agents (their undo) are collected: a project may keep more, not less.
    ("gc", "max_age_hours"),
    ("gc", "keep_latest"),
    ("gc", "max_total_size_mb"),
];

/// Budgets and timeouts: how much of the machine (memory, processes, time, disk, tokens) an
/// agent, a run or a session takes. An untrusted project file may lower them only.
pub const BUDGET_KEYS: &[(&str, &str)] = &[
    ("orchestrator", "max_concurrent_agents"),
    ("sandbox", "timeout_seconds"),
    ("sandbox", "max_memory_mb"),
    ("sandbox", "max_recursion"),
    ("sandbox", "max_log_bytes"),
    ("sandbox", "max_write_bytes"),
    ("sandbox", "max_files_written"),
    ("llm", "max_tokens"),
    ("llm", "timeout_seconds"),
    ("llm", "repair_attempts"),
    ("llm", "rate_limit_retries"),
    ("llm", "rate_limit_max_wait_seconds"),
    ("tasks", "check_timeout_seconds"),
    ("run", "timeout_seconds"),
    ("run", "max_memory_mb"),
    ("run", "max_processes"),
    ("run", "max_output_bytes"),
    ("wrap", "max_processes"),
    ("wrap", "max_tmp_mb"),
    ("wrap", "max_connections"),
];

/// The host keys `text` (a project file) sets, as `section.key = value` (escaped, cut at 200
/// characters: what the user vouches for).
pub fn host_keys_in(text: &str) -> Vec<String> {
    let table: Table = toml::from_str(text).unwrap_or_default();
    HOST_KEYS
        .iter()
        .chain(BUDGET_KEYS)
        .filter_map(|(s, k)| table.get(*s).and_then(|t| t.get(*k)).map(|v| format!("{s}.{k} = {}", crate::display::escape_line(&v.to_string()).chars().take(200).collect::<String>())))
        .collect()
}

/// `$CAIRN_HOME/trusted.json`, the trusted project files: canonical path → hash of the
/// trusted content.
fn read_store(cairn_home: &Path) -> BTreeMap<String, String> {
    std::fs::read(cairn_home.join("trusted.json")).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
}

fn key_of(file: &Path) -> String {
    file.canonicalize().unwrap_or_else(|_| file.to_path_buf()).to_string_lossy().into_owned()
}

/// Is `text`, read from project file `file`, what the user trusted?
pub fn is_trusted(cairn_home: &Path, file: &Path, text: &str) -> bool {
    read_store(cairn_home).get(&key_of(file)).is_some_and(|h| *h == crate::store::hex_hash(text.as_bytes()))
}

/// Trusts the current content of `<root>/.cairn.toml` (`trust`), or withdraws the trust.
/// Returns the file.
pub fn set(cairn_home: &Path, root: &Path, trust: bool) -> Result<PathBuf> {
    let file = root.join(".cairn.toml");
    let mut all = read_store(cairn_home);
    if trust {
        let text = std::fs::read(&file).map_err(|e| Error::io(&file, e))?;
        all.insert(key_of(&file), crate::store::hex_hash(&text));
    } else {
        all.remove(&key_of(&file));
    }
    let json = serde_json::to_vec_pretty(&all).map_err(|e| Error::Internal(e.to_string()))?;
    std::fs::create_dir_all(cairn_home).map_err(|e| Error::io(cairn_home, e))?;
    crate::store::atomic::write_atomic(cairn_home, "trusted.json", &json, 0o600)?;
    Ok(file)
}

/// Takes out of an untrusted project `layer` every host key that would widen what `below`
/// (the layers under it) sets; keeps the narrowing ones (a longer `hide`, less network).
/// Returns the names of the keys ignored.
pub fn restrict(layer: &mut Table, below: &Table) -> Vec<String> {
    let mut ignored = Vec::new();
    for (section, key) in HOST_KEYS.iter().chain(BUDGET_KEYS) {
        let Some(Value::Table(body)) = layer.get_mut(*section) else { continue };
        let Some(value) = body.remove(*key) else { continue };
        let under = below.get(*section).and_then(|s| s.get(*key));
        match narrowed(section, key, value, under) {
            Some(v) => {
                body.insert(key.to_string(), v);
            }
            None => ignored.push(format!("{section}.{key}")),
        }
    }
    ignored
}

/// `value` as a narrowing of `under`, when it is one.
fn narrowed(section: &str, key: &str, value: Value, under: Option<&Value>) -> Option<Value> {
    let rank = |v: &str| ["none", "proxy", "host"].iter().position(|n| *n == v);
    match (section, key, &value, under) {
        // More is hidden: the union.
        ("wrap", "hide", Value::Array(more), Some(Value::Array(was))) => {
            let mut all = was.clone();
            all.extend(more.iter().filter(|v| !was.contains(v)).cloned());
            Some(Value::Array(all))
        }
        (_, "network", Value::String(to), Some(Value::String(from))) => (rank(to)? <= rank(from)?).then_some(value),
        ("run", "allow_unconfined", Value::Boolean(false), _) => Some(value),
        // A budget or a timeout lowered (every one of them has a lower bound above 0, so
        // lower is always less).
        _ if BUDGET_KEYS.iter().any(|(s, k)| *s == section && *k == key) => match (&value, under) {
            (Value::Integer(to), Some(Value::Integer(from))) => (to <= from).then_some(value),
            _ => None,
        },
        // Kept longer, more of them, a higher cap (0: none) is a narrowing of what gc removes.
        ("gc", k, Value::Integer(to), Some(Value::Integer(from))) => {
            let keeps_more = if k == "max_total_size_mb" { *to == 0 || (*from != 0 && to >= from) } else { to >= from };
            keeps_more.then_some(value)
        }
        _ if under == Some(&value) => Some(value),
        _ => None,
    }
}

/// The warning for an untrusted `file` whose keys `ignored` were left out.
pub fn warning(file: &Path, ignored: &[String]) -> String {
    format!(
        "{} sets {} (run on your machine, widen what agents reach, raise what they may take of it, or collect your undo history sooner): ignored until you trust the file with `cairn config trust` (after reading it)",
        file.display(),
        ignored.join(", ")
    )
}
