//! The file externals: `read_file`, `write_file`, `delete_file`, `list_dir`, `file_exists`,
//! against the agent's view. The first touch of a path records its base in the overlay.

use super::{limit, raise, CallError, Host};
use crate::paths;
use crate::store::fsx::{self, Capped};
use crate::store::hash_bytes;
use crate::view::Node;
use serde_json::{json, Value};

/// Largest content one `write_file` call accepts.
pub const MAX_WRITE_FILE_BYTES: usize = 10 * 1024 * 1024;
/// Largest file `read_file` returns (and `search_content` looks into), in bytes; a larger file
/// is never read, only its size looked at.
pub const MAX_READ_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// Deepest and largest listing of one `list_dir` call with a depth.
pub const MAX_TREE_DEPTH: u64 = 8;
pub const MAX_TREE_ENTRIES: usize = 5_000;
/// Bytes one run may read through `read_file` and `search_content` together.
pub const MAX_READ_BYTES: u64 = 512 * 1024 * 1024;

/// Refuses a read, write or delete of a protected path, naming the path and the rule.
pub(super) fn refuse_protected(rel: &str) -> Result<(), CallError> {
    match paths::protected(rel) {
        Some(rule) => Err(raise("PermissionError", format!("{rel:?} is protected: {rule}"))),
        None => Ok(()),
    }
}

impl Host<'_> {
    /// Records the project's state at `rel` if the agent has not touched it before.
    fn touch_base(&self, rel: &str, content: Option<&[u8]>) -> Result<(), CallError> {
        if self.overlay().has_base(rel)? {
            return Ok(());
        }
        match content {
            Some(bytes) => {
                let base = fsx::stat_mode(&self.view.project.root, rel)?.map(|m| (hash_bytes(bytes), m));
                self.overlay().record_base(rel, base, base.map(|_| bytes))?;
            }
            // Keep the bytes for the three-way review when they fit the read cap; a larger
            // file is only hashed, streaming.
            None => match self.view.base_capped(rel, MAX_READ_FILE_BYTES)? {
                Some(Capped::Content(bytes, mode)) => self.overlay().record_base(rel, Some((hash_bytes(&bytes), mode)), Some(&bytes))?,
                Some(Capped::TooLarge(_)) => self.overlay().record_base(rel, self.view.base_hash(rel)?, None)?,
                None => self.overlay().record_base(rel, None, None)?,
            },
        }
        Ok(())
    }

    pub(super) fn read_file(&mut self, rel: &str) -> Result<Value, CallError> {
        refuse_protected(rel)?;
        let from_overlay = self.overlay().get(rel)?.is_some();
        match self.view.read_capped(rel, MAX_READ_FILE_BYTES)? {
            Some(Capped::TooLarge(size)) => Err(raise("ValueError", format!("file too large: {rel} is {size} bytes; read_file reads at most {MAX_READ_FILE_BYTES}"))),
            Some(Capped::Content(bytes, _)) => {
                self.charge_read(bytes.len() as u64)?;
                if !from_overlay {
                    self.touch_base(rel, Some(&bytes))?;
                }
                if bytes.contains(&0) {
                    return Err(raise("ValueError", format!("binary file: {rel}")));
                }
                String::from_utf8(bytes).map(Value::String).map_err(|_| raise("ValueError", format!("binary file: {rel}")))
            }
            None if self.view.node(rel)? == Node::Dir => Err(raise("IsADirectoryError", format!("is a directory: {rel}"))),
            None => Err(raise("FileNotFoundError", format!("no such file: {rel}"))),
        }
    }

    /// `edit_lines(path, ops)`: hashline edits ([`crate::hashline`]) of the agent's version,
    /// written back like `write_file`; any bad tag refuses the whole edit.
    pub(super) fn edit_lines(&mut self, rel: &str, ops: Option<&Value>) -> Result<Value, CallError> {
        let ops: Vec<crate::hashline::Op> = match ops {
            Some(v @ Value::Array(_)) => serde_json::from_value(v.clone()).map_err(|e| raise("ValueError", format!("edit_lines(): bad ops: {e}")))?,
            _ => return Err(raise("TypeError", "edit_lines(): ops must be a list of dicts")),
        };
        refuse_protected(rel)?;
        let Value::String(text) = self.read_file(rel)? else { return Err(raise("ValueError", format!("not a text file: {rel}"))) };
        let edited = crate::hashline::apply(&text, &ops).map_err(|e| raise("ValueError", e.to_string()))?;
        self.write_file(rel, &edited)?;
        Ok(serde_json::json!({ "path": rel, "lines": edited.lines().count(), "ops": ops.len() }))
    }

    pub(super) fn write_file(&mut self, rel: &str, content: &str) -> Result<Value, CallError> {
        self.write_bytes(rel, content.as_bytes(), None)
    }

    /// `write_file` of any bytes, with the checks and limits of `write_file`; `mode` (its
    /// permission bits) for what a confined command wrote, else the view's mode or 0644.
    pub(crate) fn write_bytes(&mut self, rel: &str, content: &[u8], mode: Option<u32>) -> Result<Value, CallError> {
        refuse_protected(rel)?;
        if rel.is_empty() || paths::has_skipped_component(rel) {
            return Err(raise("ValueError", "Invalid path"));
        }
        if content.len() > MAX_WRITE_FILE_BYTES {
            return Err(raise("ValueError", format!("content is {} bytes; write_file takes at most {MAX_WRITE_FILE_BYTES}", content.len())));
        }
        if self.view.node(rel)? == Node::Dir {
            return Err(raise("IsADirectoryError", format!("is a directory: {rel}")));
        }
        for anc in paths::ancestors(rel) {
            if self.view.node(anc)? == Node::File {
                return Err(raise("NotADirectoryError", format!("not a directory: {anc}")));
            }
        }
        // The path is stored too: it counts like content.
        self.written_bytes += (content.len() + rel.len()) as u64;
        if self.written_bytes > self.limits.max_write_bytes {
            return Err(limit(format!("wrote more than max_write_bytes = {} bytes", self.limits.max_write_bytes)));
        }
        let new_path = self.overlay().get(rel)?.is_none();
        if new_path && self.overlay().changed_count()? >= self.limits.max_files_written {
            return Err(limit(format!("wrote more than max_files_written = {} files", self.limits.max_files_written)));
        }
        self.touch_base(rel, None)?;
        // The proposal never carries setuid, setgid or sticky bits, even over a file that has
        // them: the diff shows the change, and accept cannot write them.
        let mode = match (mode, self.view.read(rel)?) {
            (Some(mode), _) | (None, Some((_, mode))) => mode & 0o777,
            (None, None) => 0o644,
        };
        self.overlay().write(rel, content, mode)?;
        Ok(Value::Bool(true))
    }

    pub(crate) fn delete_file(&self, rel: &str) -> Result<Value, CallError> {
        refuse_protected(rel)?;
        match self.view.node(rel)? {
            Node::Absent => return Err(raise("FileNotFoundError", format!("no such file: {rel}"))),
            Node::Dir => return Err(raise("IsADirectoryError", format!("is a directory: {rel}"))),
            Node::File => {}
        }
        if self.overlay().get(rel)?.is_none() && self.overlay().changed_count()? >= self.limits.max_files_written {
            return Err(limit(format!("changed more than max_files_written = {} files", self.limits.max_files_written)));
        }
        self.touch_base(rel, None)?;
        if self.view.base(rel)?.is_some() {
            self.overlay().whiteout(rel)?;
        } else {
            // Created by this agent only: deleting it leaves no trace.
            self.overlay().forget(rel)?;
        }
        Ok(Value::Bool(true))
    }

    /// `list_dir(path)`: names. With `depth` > 1 or `sizes`: entries `{path, type, size?}`
    /// down to `depth` levels (paths relative to `rel`), at most [`MAX_TREE_ENTRIES`].
    pub(super) fn list_dir(&self, rel: &str, depth: u64, sizes: bool) -> Result<Value, CallError> {
        if self.view.node(rel)? != Node::File {
            refuse_protected(rel)?;
        }
        if self.view.node(rel)? == Node::Dir && (depth > 1 || sizes) {
            let mut out = Vec::new();
            self.tree(rel, "", depth.min(MAX_TREE_DEPTH), sizes, &mut out)?;
            return Ok(Value::Array(out));
        }
        match self.view.node(rel)? {
            Node::Dir => Ok(json!(self.view.list_dir(rel)?)),
            Node::File => Err(raise("NotADirectoryError", format!("not a directory: {rel}"))),
            Node::Absent => Err(raise("FileNotFoundError", format!("no such directory: {rel}"))),
        }
    }

    fn tree(&self, dir: &str, shown: &str, depth: u64, sizes: bool, out: &mut Vec<Value>) -> Result<(), CallError> {
        for name in self.view.list_dir(dir)? {
            if out.len() >= MAX_TREE_ENTRIES {
                out.push(json!({ "path": "…", "type": "truncated" }));
                return Ok(());
            }
            let is_dir = name.ends_with('/');
            let name = name.trim_end_matches('/');
            let (full, path) = (if dir.is_empty() { name.to_string() } else { format!("{dir}/{name}") }, if shown.is_empty() { name.to_string() } else { format!("{shown}/{name}") });
            let mut e = json!({ "path": path, "type": if is_dir { "dir" } else { "file" } });
            if sizes && !is_dir {
                e["size"] = json!(match self.view.read_capped(&full, 0)? {
                    Some(Capped::TooLarge(n)) => n,
                    _ => 0,
                });
            }
            out.push(e);
            if is_dir && depth > 1 {
                self.tree(&full, &path, depth - 1, sizes, out)?;
            }
        }
        Ok(())
    }

    pub(super) fn file_exists(&self, rel: &str) -> Result<Value, CallError> {
        Ok(Value::Bool(self.view.node(rel)? != Node::Absent))
    }
}
