//! The file tools over MCP: each runs one external ([`cairn_core::externals`]) in the
//! session's overlay, with the limits, protected paths, serialization and audit of a run.

use super::params::*;
use super::{done, Reply, Server};
use cairn_core::tasks;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, RoleServer};
use serde_json::{json, Map, Value};

/// Most paths one `read_files` call reads.
const MAX_READ_FILES: usize = 50;
/// Matches `search_content` returns when the call names no `max_results`.
const DEFAULT_MATCHES: u32 = 200;

fn kw(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.to_string(), v.clone())).collect()
}

/// Lines `offset..offset+limit` (1-based) of `text`, and a note saying what part it is.
fn part(text: &str, offset: Option<u32>, limit: Option<u32>) -> (String, usize, Option<String>) {
    let total = text.lines().count();
    if offset.is_none() && limit.is_none() {
        return (text.to_string(), total, None);
    }
    let start = offset.unwrap_or(1).max(1) as usize;
    let take = limit.map_or(usize::MAX, |l| l as usize);
    let body: String = text.split_inclusive('\n').skip(start - 1).take(take).collect();
    let shown = body.lines().count();
    let note = if shown == 0 {
        format!("[no lines: the file has {total} lines]")
    } else {
        let end = start + shown - 1;
        if end < total {
            format!("[lines {start}-{end} of {total}; read on with offset={}]", end + 1)
        } else {
            format!("[lines {start}-{end} of {total}]")
        }
    };
    (body, total, Some(note))
}

#[tool_router(router = file_tools, vis = "pub(super)")]
impl Server {
    #[tool(description = "Read a text file as your proposal sees it (your edits over the project). offset/limit (1-based lines) read part of a large file; tagged=true prefixes lines with tags for edit_lines.")]
    async fn read_file(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<ReadArgs>) -> Reply {
        let tagged = a.tagged.unwrap_or(false);
        let got = self.external(&ctx, a.session, &a.path, "read_file", vec![json!(a.path), json!(tagged)], Map::new()).await?;
        Ok(match got {
            Ok(Value::String(text)) => {
                let (body, total, note) = part(&text, a.offset, a.limit);
                let mut v = json!({ "path": a.path, "content": body, "total_lines": total });
                if let Some(n) = &note {
                    v["part"] = json!(n);
                }
                let shown = match note {
                    Some(n) => format!("{body}{}{n}", if body.ends_with('\n') || body.is_empty() { "" } else { "\n" }),
                    None => body,
                };
                done(v, Some(shown))
            }
            Ok(other) => done(json!({ "path": a.path, "content": other }), None),
            Err(r) => r,
        })
    }

    #[tool(description = "Read several text files in one call; each path answers with its content or its own error.")]
    async fn read_files(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<ReadManyArgs>) -> Reply {
        if a.paths.len() > MAX_READ_FILES {
            return Ok(super::failed("usage", format!("paths: at most {MAX_READ_FILES} per call, not {}; split the call", a.paths.len())));
        }
        let first = a.paths.first().cloned().unwrap_or_default();
        let mut session = a.session;
        let mut files = Vec::new();
        let mut text = String::new();
        for path in a.paths {
            let got = self.external(&ctx, session.clone(), &first, "read_file", vec![json!(path)], Map::new()).await?;
            if session.is_none() {
                session = self.implicit.lock().await.as_ref().map(|i| i.session.clone());
            }
            match got {
                Ok(v) => {
                    text.push_str(&format!("==> {path} <==\n{}\n", v.as_str().unwrap_or_default()));
                    files.push(json!({ "path": path, "content": v }));
                }
                Err(r) => {
                    let message = r.structured_content.as_ref().and_then(|s| s["message"].as_str()).unwrap_or("failed").to_string();
                    text.push_str(&format!("==> {path} <==\nerror: {message}\n"));
                    files.push(json!({ "path": path, "error": message }));
                }
            }
        }
        Ok(done(json!({ "files": files }), Some(text)))
    }

    #[tool(description = "Create a file or replace its whole content. To change part of an existing file, prefer edit_file.")]
    async fn write_file(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<WriteArgs>) -> Reply {
        let bytes = a.content.len();
        let got = self.external(&ctx, a.session, &a.path, "write_file", vec![json!(a.path), json!(a.content)], Map::new()).await?;
        Ok(got.map_or_else(|r| r, |_| done(json!({ "path": a.path, "written": true, "bytes": bytes }), Some(format!("wrote {} ({bytes} bytes) to the proposal", a.path)))))
    }

    #[tool(description = "Change a file by replacing exact text: each edit's old_text must occur exactly once (or set replace_all). All edits apply or none; returns the diff. dry_run shows the diff without changing anything.")]
    async fn edit_file(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<EditFileArgs>) -> Reply {
        let edits: Vec<Value> = a.edits.into_iter().map(|e| json!({ "old_text": e.old_text, "new_text": e.new_text, "replace_all": e.replace_all.unwrap_or(false) })).collect();
        let dry = a.dry_run.unwrap_or(false);
        let got = self.external(&ctx, a.session, &a.path, "edit_file", vec![json!(a.path), Value::Array(edits), json!(dry)], Map::new()).await?;
        Ok(match got {
            Ok(v) => {
                let diff = v["diff"].as_str().unwrap_or_default();
                let mut text = if diff.is_empty() { "no change".to_string() } else { diff.to_string() };
                if let Some(n) = v["note"].as_str() {
                    text = format!("note: {n}\n{text}");
                }
                done(v, Some(text))
            }
            Err(r) => r,
        })
    }

    #[tool(description = "Edit lines by the tags of a tagged read_file: ops {op: replace|insert_after|delete, tag, end?, lines?}. A stale or missing tag fails the whole edit, naming it.")]
    async fn edit_lines(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<EditLinesArgs>) -> Reply {
        let ops: Vec<Value> = a.ops.into_iter().map(|o| json!({ "op": o.op, "tag": o.tag, "end": o.end, "lines": o.lines.unwrap_or_default() })).collect();
        let got = self.external(&ctx, a.session, &a.path, "edit_lines", vec![json!(a.path), Value::Array(ops)], Map::new()).await?;
        Ok(got.map_or_else(|r| r, |v| done(v, None)))
    }

    #[tool(description = "Move or rename a file; `to` must not exist. The reviewer sees a rename.")]
    async fn move_file(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<MoveArgs>) -> Reply {
        let got = self.external(&ctx, a.session, &a.from, "move_file", vec![json!(a.from), json!(a.to)], Map::new()).await?;
        Ok(got.map_or_else(|r| r, |v| done(v, Some(format!("moved {} to {} in the proposal", a.from, a.to)))))
    }

    #[tool(description = "Delete a file in your proposal (the project's file stays until a human accepts).")]
    async fn delete_file(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<PathArgs>) -> Reply {
        let got = self.external(&ctx, a.session, &a.path, "delete_file", vec![json!(a.path)], Map::new()).await?;
        Ok(got.map_or_else(|r| r, |_| done(json!({ "path": a.path, "deleted": true }), Some(format!("deleted {} in the proposal", a.path)))))
    }

    #[tool(description = "List a directory (directories end with '/'); depth > 1 lists the tree below it, sizes=true adds file sizes.")]
    async fn list_dir(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<ListDirArgs>) -> Reply {
        let path = a.path.unwrap_or_else(|| ".".into());
        let k = kw(&[("depth", json!(a.depth)), ("sizes", json!(a.sizes))]);
        let got = self.external(&ctx, a.session, &path, "list_dir", vec![json!(path)], k).await?;
        Ok(match got {
            Ok(Value::Array(entries)) => {
                let text = entries.iter().map(|e| match e {
                    Value::String(s) => s.clone(),
                    e => match e["size"].as_u64() {
                        Some(n) => format!("{}{}  {n}", e["path"].as_str().unwrap_or(""), if e["type"] == "dir" { "/" } else { "" }),
                        None => format!("{}{}", e["path"].as_str().unwrap_or(""), if e["type"] == "dir" { "/" } else { "" }),
                    },
                });
                let text: Vec<String> = text.collect();
                done(json!({ "path": path, "entries": entries }), Some(text.join("\n")))
            }
            Ok(v) => done(json!({ "path": path, "entries": v }), None),
            Err(r) => r,
        })
    }

    #[tool(description = "Find files by glob: '**' crosses directories, '*' does not (e.g. 'src/**/*.py'); path limits it to a directory.")]
    async fn search_files(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<GlobArgs>) -> Reply {
        let under = match a.path.map(|p| self.host_path(&p)).transpose() {
            Ok(under) => under.filter(|p| !p.is_empty()),
            Err(r) => return Ok(r),
        };
        let got = self.external(&ctx, a.session, &a.pattern, "search_files", vec![json!(a.pattern)], Map::new()).await?;
        Ok(match got {
            Ok(Value::Array(files)) => {
                let files: Vec<Value> = files.into_iter().filter(|f| under.as_ref().is_none_or(|u| f.as_str().is_some_and(|f| f.starts_with(&format!("{u}/"))))).collect();
                let text = files.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n");
                done(json!({ "files": files }), Some(if text.is_empty() { "no files match".into() } else { text }))
            }
            Ok(v) => done(json!({ "files": v }), None),
            Err(r) => r,
        })
    }

    #[tool(description = "Search file contents by regex (like ripgrep): matches as {file, line, text}; glob filters files, ignore_case, context lines, max_results (truncated says when more matched).")]
    async fn search_content(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<GrepArgs>) -> Reply {
        let max = a.max_results.unwrap_or(DEFAULT_MATCHES).clamp(1, cairn_core::externals::MAX_SEARCH_RESULTS as u32);
        let path = a.path.unwrap_or_else(|| ".".into());
        let k = kw(&[("glob", json!(a.glob)), ("ignore_case", json!(a.ignore_case)), ("context", json!(a.context)), ("max_results", json!(max + 1))]);
        let got = self.external(&ctx, a.session, &path, "search_content", vec![json!(a.pattern), json!(path)], k).await?;
        Ok(match got {
            Ok(Value::Array(mut hits)) => {
                let truncated = hits.len() > max as usize;
                hits.truncate(max as usize);
                let mut text = String::new();
                for h in &hits {
                    for (i, l) in h["before"].as_array().into_iter().flatten().enumerate() {
                        let n = h["line"].as_u64().unwrap_or(0) as usize - h["before"].as_array().map_or(0, Vec::len) + i;
                        text.push_str(&format!("{}-{n}-{}\n", h["file"].as_str().unwrap_or(""), l.as_str().unwrap_or("")));
                    }
                    text.push_str(&format!("{}:{}:{}\n", h["file"].as_str().unwrap_or(""), h["line"], h["text"].as_str().unwrap_or("")));
                    for (i, l) in h["after"].as_array().into_iter().flatten().enumerate() {
                        text.push_str(&format!("{}-{}-{}\n", h["file"].as_str().unwrap_or(""), h["line"].as_u64().unwrap_or(0) as usize + 1 + i, l.as_str().unwrap_or("")));
                    }
                }
                if truncated {
                    text.push_str(&format!("[truncated at {max} matches; narrow the search or raise max_results]\n"));
                }
                done(json!({ "matches": hits, "truncated": truncated }), Some(if text.is_empty() { "no matches".into() } else { text }))
            }
            Ok(v) => done(json!({ "matches": v, "truncated": false }), None),
            Err(r) => r,
        })
    }

    #[tool(description = "Run Python in Cairn's sandbox against your proposal (read_file, write_file, edit_file, search_content, ... act on its files); for bulk or scripted edits. Returns the last expression's value.")]
    async fn run_script(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<ScriptArgs>) -> Reply {
        let session = match self.session(&ctx, a.session, "script").await {
            Ok(s) => s,
            Err(r) => return Ok(r),
        };
        let out = self.core(&ctx, move |p, who| tasks::sessions::run_script(p, who, &session, &a.code)).await?;
        // A script that raised or hit a limit is a failed call, said so.
        Ok(match out.structured_content.as_ref().and_then(|v| v.get("error")).filter(|e| e.is_object()) {
            Some(e) => super::failed(e["kind"].as_str().unwrap_or("error"), format!("the script failed ({}): {}", e["kind"].as_str().unwrap_or("error"), e["message"].as_str().unwrap_or(""))),
            None => out,
        })
    }

    #[tool(description = "Run a shell command (tests, builds, formatters) against your proposal: confined in a throwaway copy of the project with your changes, no network, a timeout. Returns the exit status and output; files it changes join your proposal unless capture=false.")]
    async fn run_command(&self, ctx: RequestContext<RoleServer>, Parameters(a): Parameters<CommandArgs>) -> Reply {
        let session = match self.session(&ctx, a.session, "command").await {
            Ok(s) => s,
            Err(r) => return Ok(r),
        };
        let cwd = match a.cwd.map(|c| self.host_path(&c)).transpose() {
            Ok(cwd) => cwd.unwrap_or_default(),
            Err(r) => return Ok(r),
        };
        let args = tasks::exec::ExecArgs { cmd: a.command, cwd, timeout_seconds: a.timeout_seconds.map(u64::from), capture: a.capture.unwrap_or(true) };
        self.core(&ctx, move |p, who| tasks::exec::exec(p, who, &session, &args)).await
    }
}
