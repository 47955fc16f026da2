//! Configuration: one schema ([`SCHEMA`]) drives defaults, layering, validation, environment
//! overrides and the drift check against `doc/cairn.txt`.
//!
//! Layers, later wins: built-in defaults, `$CAIRN_HOME/config.toml`, `<project>/.cairn.toml`,
//! `CAIRN_<SECTION>_<KEY>` environment variables, then flags (applied by the caller on the
//! returned [`Config`]). Unknown keys warn, naming the key; bad values are errors naming the key.
//! The project's file sets keys that reach past its confinement only once trusted ([`trust`]).

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;
use toml::{Table, Value};

mod env;
mod schema;
pub mod trust;
pub use env::{unknown_env, ENV_ALIASES};
pub use schema::{Kind, KeyDef, SCHEMA};


/// `[orchestrator]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Orchestrator {
    pub max_concurrent_agents: u32,
    pub signal_polling: bool,
    pub poll_interval_ms: u64,
    pub auto_spawn: bool,
    pub default_provider: String,
}

closed_set! {
    /// The interpreters an agent script may run on (`[sandbox] interpreter`; see
    /// `sandbox::interpreter`).
    Interpreter, "interpreter" {
        /// rustpython-vm in `cairn __sandbox`: starts in milliseconds, no Python needed.
        Rustpython = "rustpython",
        /// The host's `python3` (`[sandbox] python`) in a run workspace (`runbox`).
        Cpython = "cpython",
    }
}

/// `[sandbox]`: the bounds of one agent run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sandbox {
    /// The syntax layer: the pre-flight policy check and the child's runtime guards. Not a
    /// config key: only a test switches it off (`CAIRN_TEST_NO_SYNTAX_LAYER` at the edge), to
    /// prove that the boundary holds without it.
    #[serde(skip, default = "syntax_layer_on")]
    pub syntax_layer: bool,
    pub timeout_seconds: u64,
    pub max_memory_mb: u64,
    pub max_recursion: u64,
    pub max_log_bytes: u64,
    pub max_write_bytes: u64,
    pub max_files_written: u64,
    pub random_seed: i64,
    /// Which Python runs agent scripts (`rustpython` or `cpython`; a script's header and
    /// `cairn run --interpreter` choose too: see `sandbox::interpreter`).
    pub interpreter: Interpreter,
    /// The CPython executable of `interpreter = "cpython"` (a name on the run's `PATH`, or a path).
    pub python: String,
    /// `cairn run --interpreter`: wins over a script's header and `interpreter`. Not a key.
    #[serde(skip)]
    pub interpreter_flag: Option<Interpreter>,
}

fn syntax_layer_on() -> bool {
    true
}

/// `[llm]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Llm {
    /// `openai`, `anthropic` or `ollama`.
    pub provider: String,
    pub endpoint: String,
    pub model: String,
    pub default_model: String,
    pub api_key_env: String,
    pub command: Vec<String>,
    pub temperature: f64,
    pub max_tokens: u64,
    pub timeout_seconds: u64,
    pub repair_attempts: u64,
    pub rate_limit_retries: u64,
    pub rate_limit_max_wait_seconds: u64,
    /// The API key, read at load time from the variable named by `api_key_env` (never from a
    /// file, never serialized).
    #[serde(skip)]
    pub api_key: Option<String>,
}

/// `[gc]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Gc {
    pub max_age_hours: u64,
    pub keep_latest: u64,
    pub max_workspaces: u64,
    pub max_total_size_mb: u64,
    pub auto_interval_minutes: u64,
}

/// `[preview]`: preview sessions (`cairn preview`, `:CairnPreview`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Preview {
    pub ports: Vec<u16>,
}

/// `[tmux]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tmux {
    pub split: String,
    pub size: String,
    pub auto_create_session: bool,
    pub layout: String,
}

/// `[jj]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Jj {
    /// `auto`, `true` or `false` (TOML booleans are read as the last two).
    pub enabled: String,
    pub describe: String,
    pub program: String,
    pub create_change_on_spawn: bool,
}

/// `[tasks]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tasks {
    pub statuses: Vec<String>,
    pub check_timeout_seconds: u64,
}

/// `[run]`: confined commands (checks, run_command).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    pub timeout_seconds: u64,
    pub network: String,
    pub read_paths: Vec<String>,
    pub env: Vec<String>,
    pub max_memory_mb: u64,
    pub max_processes: u64,
    pub max_output_bytes: u64,
    pub allow_unconfined: bool,
}

/// `[wrap]`: `cairn wrap` sessions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Wrap {
    pub hide: Vec<String>,
    pub home: Vec<String>,
    pub state: Vec<String>,
    pub read_paths: Vec<String>,
    pub env: Vec<String>,
    pub network: String,
    pub allow_hosts: Vec<String>,
    pub host_ports: Vec<u16>,
    pub turn_quiet_ms: u64,
    pub max_processes: u64,
    pub max_tmp_mb: u64,
    pub max_connections: u64,
}

/// `[ui]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ui {
    pub ghost_text: bool,
    pub auto_reload: bool,
    pub keymaps: bool,
}

/// The effective configuration.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Config {
    pub orchestrator: Orchestrator,
    pub sandbox: Sandbox,
    pub llm: Llm,
    pub gc: Gc,
    pub preview: Preview,
    pub tmux: Tmux,
    pub jj: Jj,
    pub tasks: Tasks,
    pub run: Run,
    pub wrap: Wrap,
    pub ui: Ui,
}

/// A loaded configuration and the warnings met on the way (unknown keys).
pub struct Loaded {
    pub config: Config,
    pub warnings: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        // The schema defaults are literals checked by a unit test; they always parse.
        from_table(defaults_table()).unwrap_or_else(|e| unreachable!("schema defaults invalid: {e}"))
    }
}

fn defaults_table() -> Table {
    let mut root = Table::new();
    for def in SCHEMA {
        let value: Value = toml::from_str::<Table>(&format!("v = {}", def.default))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or(Value::String(String::new()));
        section_mut(&mut root, def.section).insert(def.key.to_string(), value);
    }
    root
}

fn section_mut<'t>(root: &'t mut Table, section: &str) -> &'t mut Table {
    let entry = root.entry(section.to_string()).or_insert_with(|| Value::Table(Table::new()));
    if !entry.is_table() {
        *entry = Value::Table(Table::new());
    }
    match entry {
        Value::Table(t) => t,
        _ => unreachable!(),
    }
}

fn from_table(table: Table) -> Result<Config> {
    Value::Table(table).try_into().map_err(|e: toml::de::Error| Error::Config(e.to_string()))
}

fn find(section: &str, key: &str) -> Option<&'static KeyDef> {
    SCHEMA.iter().find(|d| d.section == section && d.key == key)
}

/// Checks a value against its key's type, converting integers to floats where a float is due.
fn check_value(def: &KeyDef, value: Value, origin: &str) -> Result<Value> {
    let name = format!("{}.{}", def.section, def.key);
    let bad = |want: &str, v: &Value| Error::Config(format!("{name} (from {origin}): expected {want}, got {}", v));
    match (def.kind, value) {
        (Kind::Bool, v @ Value::Boolean(_)) => Ok(v),
        (Kind::Int { min }, Value::Integer(i)) if i >= min => Ok(Value::Integer(i)),
        (Kind::Int { min }, v) => Err(bad(&format!("an integer >= {min}"), &v)),
        (Kind::Float, Value::Integer(i)) => Ok(Value::Float(i as f64)),
        (Kind::Float, v @ Value::Float(_)) => Ok(v),
        (Kind::Str, v @ Value::String(_)) => Ok(v),
        (Kind::StrList, Value::Array(items)) if items.iter().all(Value::is_str) => Ok(Value::Array(items)),
        (Kind::Choice(choices), Value::String(s)) if choices.contains(&s.as_str()) => Ok(Value::String(s)),
        (Kind::Choice(choices), Value::Boolean(b)) if choices.contains(&if b { "true" } else { "false" }) => Ok(Value::String(b.to_string())),
        (Kind::Choice(choices), v) => Err(bad(&format!("one of {}", choices.join(", ")), &v)),
        (Kind::Bool, v) => Err(bad("true or false", &v)),
        (Kind::Float, v) => Err(bad("a number", &v)),
        (Kind::Str, v) => Err(bad("a string", &v)),
        (Kind::StrList, v) => Err(bad("a list of strings", &v)),
        (Kind::PortList, Value::Array(items)) if items.iter().all(|i| i.as_integer().is_some_and(|p| (1..=65535).contains(&p))) => Ok(Value::Array(items)),
        (Kind::PortList, v) => Err(bad("a list of ports (1-65535)", &v)),
    }
}

/// Merges one parsed layer into `into`, validating every key and collecting unknown ones.
fn merge_layer(into: &mut Table, layer: Table, origin: &str, warnings: &mut Vec<String>) -> Result<()> {
    for (section, body) in layer {
        let Value::Table(body) = body else {
            warnings.push(format!("unknown config key '{section}' in {origin} (expected a [section])"));
            continue;
        };
        for (key, value) in body {
            match find(&section, &key) {
                Some(def) => {
                    let value = check_value(def, value, origin)?;
                    section_mut(into, &section).insert(key, value);
                }
                None => warnings.push(format!("unknown config key '{section}.{key}' in {origin}")),
            }
        }
    }
    Ok(())
}

/// Parses an environment override according to the key's type.
fn parse_env(def: &KeyDef, raw: &str, var: &str) -> Result<Value> {
    let bad = |want: &str| Error::Config(format!("{}.{} (from ${var}): expected {want}, got {raw:?}", def.section, def.key));
    let value = match def.kind {
        Kind::Bool => match raw.to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Value::Boolean(true),
            "0" | "false" | "no" | "off" => Value::Boolean(false),
            _ => return Err(bad("true or false")),
        },
        Kind::Int { .. } => Value::Integer(raw.trim().parse().map_err(|_| bad("an integer"))?),
        Kind::Float => Value::Float(raw.trim().parse().map_err(|_| bad("a number"))?),
        Kind::Str | Kind::Choice(_) => Value::String(raw.to_string()),
        Kind::StrList => match serde_json::from_str::<Vec<String>>(raw) {
            Ok(list) => Value::Array(list.into_iter().map(Value::String).collect()),
            Err(_) => Value::Array(raw.split_whitespace().map(|s| Value::String(s.to_string())).collect()),
        },
        Kind::PortList => Value::Array(raw.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()).map(|s| s.trim_matches(|c| c == '[' || c == ']').parse::<i64>().map(Value::Integer).map_err(|_| bad("a list of ports"))).collect::<Result<_>>()?),
    };
    check_value(def, value, &format!("${var}"))
}

/// Loads the layered configuration. `env` looks up environment variables (the library never
/// reads the process environment itself).
pub fn load(cairn_home: &Path, project_root: Option<&Path>, env: &dyn Fn(&str) -> Option<String>) -> Result<Loaded> {
    let mut table = defaults_table();
    let mut warnings = Vec::new();
    let mut files = vec![cairn_home.join("config.toml")];
    if let Some(root) = project_root {
        files.push(root.join(".cairn.toml"));
    }
    for (i, file) in files.into_iter().enumerate() {
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(&file, e)),
        };
        let origin = file.display().to_string();
        let mut layer: Table = toml::from_str(&text).map_err(|e| Error::Config(format!("{origin}: {e}")))?;
        if i > 0 && !trust::is_trusted(cairn_home, &file, &text) {
            let ignored = trust::restrict(&mut layer, &table);
            if !ignored.is_empty() {
                warnings.push(trust::warning(&file, &ignored));
            }
        }
        merge_layer(&mut table, layer, &origin, &mut warnings)?;
    }
    for def in SCHEMA {
        let var = format!("CAIRN_{}_{}", def.section.to_uppercase(), def.key.to_uppercase());
        let alias = ENV_ALIASES.iter().find(|(_, s, k)| *s == def.section && *k == def.key).map(|(a, _, _)| *a);
        let found = env(&var).map(|raw| (raw, var.clone())).or_else(|| alias.and_then(|a| env(a).map(|raw| (raw, a.to_string()))));
        if let Some((raw, var)) = found {
            let value = parse_env(def, &raw, &var)?;
            section_mut(&mut table, def.section).insert(def.key.to_string(), value);
        }
    }
    let mut config = from_table(table)?;
    // Anthropic's key has its own variable: an OpenAI key is never sent to it by default.
    let var = if config.llm.provider == "anthropic" && config.llm.api_key_env == "OPENAI_API_KEY" { "ANTHROPIC_API_KEY" } else { config.llm.api_key_env.as_str() };
    config.llm.api_key = env(var).filter(|k| !k.is_empty());
    Ok(Loaded { config, warnings })
}

#[cfg(test)]
mod tests;
