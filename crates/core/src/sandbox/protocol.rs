//! Messages between the parent and the sandbox child: one JSON object per line.
//! The parent sends [`Start`] once, then one [`Reply`] per [`ChildMsg::Call`]; the child ends
//! with [`ChildMsg::Done`].

use crate::lifecycle::ErrorKind;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// First line from the parent: what to run and how.
#[derive(Debug, Serialize, Deserialize)]
pub struct Start {
    /// Script source, already checked and transformed.
    pub source: String,
    /// File name shown in tracebacks.
    pub filename: String,
    /// Values for `Input(name)`.
    pub inputs: Map<String, Value>,
    pub max_recursion: u64,
    pub max_memory_mb: u64,
    pub timeout_seconds: u64,
    /// Seed of the script's `random` module.
    #[serde(default)]
    pub seed: u64,
    /// The parent's wall clock when it sent this (ns since the epoch): `time.time()` counts
    /// from it.
    #[serde(default)]
    pub now_ns: u64,
}

/// A line from the child.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "lowercase")]
pub enum ChildMsg {
    /// Call an external function.
    Call { name: String, args: Vec<Value>, kwargs: Map<String, Value> },
    /// The script finished: its result (value of the last expression) or its error.
    Done { result: Option<Value>, error: Option<ScriptError> },
}

/// How a script failed inside the interpreter.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScriptError {
    /// `exception`, `syntax`, `recursion`, `memory` or `crash`.
    pub kind: ErrorKind,
    pub message: String,
}

/// The parent's answer to a call.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Reply {
    Ok { ok: Value },
    Raise { exc: String, message: String },
}
