//! The boundary of a wrap session (`cairn wrap`, see [`crate::wrap`]): the same confined side
//! as a run (the allow-listed view, never host root, the seccomp filter), with what an agent
//! CLI needs: a terminal of its own relayed to the user's ([`super::pty`]), its model through
//! a proxy that admits only the allowed hosts ([`super::net`], [`super::proxy`]), a home that
//! shows only toolchains and its own state, copy-on-write ([`super::home`]), its own
//! installation read-only, an allow-listed environment ([`crate::wrap`]); and the written
//! layer on disk in the session's directory, where the parent reads it while the agent works
//! and after a crash.

use super::spec::{Spec, Wrap};
use super::Exit;
use crate::error::{Error, Result};
use crate::project::Project;
use crate::review::diff::FileChange;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A wrap session's network.
#[derive(Debug, Clone)]
pub enum Network {
    /// Its own namespace; out only through the proxy and the forwarded host ports.
    Proxy { allow_hosts: Vec<String>, host_ports: Vec<u16> },
    /// A loopback only.
    None,
    /// A loopback only, these ports of it forwarded to the host's 127.0.0.1 (a preview's
    /// `[preview] ports`, see [`super::dial`]).
    Forward { ports: Vec<u16> },
    /// The host's (an explicit opt-in).
    Host,
}

/// One wrap session's boundary.
#[derive(Debug)]
pub struct Request<'a> {
    pub argv: &'a [String],
    /// Working directory, relative to the project root.
    pub cwd: &'a str,
    pub network: Network,
    /// The command's environment (already the allow-list).
    pub env: Vec<(String, String)>,
    /// The user's home, and what the agent sees of it.
    pub home: PathBuf,
    pub home_plan: super::home::Plan,
    /// Host paths hidden in what is visible (credentials).
    pub hide: Vec<PathBuf>,
    /// More host paths readable (`[wrap] read_paths`).
    pub read_paths: Vec<PathBuf>,
    /// The user's terminal (or whatever `cairn wrap`'s streams are).
    pub streams: super::pty::Streams,
}

/// How a session ended, and what its proxy refused.
#[derive(Debug, Clone)]
pub struct Ran {
    pub exit: Exit,
    pub denied: Vec<String>,
}

/// The written layer of the wrap session in `dir` (whiteouts and all, as overlayfs keeps it).
pub fn upper(dir: &Path) -> PathBuf {
    dir.join("rw").join("upper")
}

/// Runs the session in `dir` (created if needed, kept afterwards: the caller removes it once
/// the layer is in the proposal), calling `tick` about every `every` while it runs, with the
/// agent's terminal.
pub fn run(project: &Project, dir: &Path, changes: &[FileChange], req: &Request, every: Duration, tick: &mut dyn FnMut(&super::pty::Console)) -> Result<Ran> {
    for d in ["stage", "rw/upper", "rw/work", "box"] {
        std::fs::create_dir_all(dir.join(d)).map_err(|e| Error::io(dir.join(d), e))?;
    }
    // Only this user may look into the session's files.
    let _ = std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700));
    for d in ["files", "dirs"] {
        let p = req.home_plan.layer.join(d);
        std::fs::create_dir_all(&p).map_err(|e| Error::io(&p, e))?;
    }
    let _ = std::fs::set_permissions(&req.home_plan.layer, std::os::unix::fs::PermissionsExt::from_mode(0o700));
    super::stage::stage(&dir.join("stage"), changes)?;
    let terminal = super::pty::Terminal::for_streams(&req.streams).map_err(|e| Error::Sandbox(format!("the agent's terminal: {e}")))?;
    let spec = spec_for(project, dir, req, terminal.is_pty())?;
    let _ = std::fs::remove_file(spec.result_file());
    let listen = spec.wrap.as_ref().and_then(|w| w.listen.clone());
    // A port in use on the host is said before anything starts.
    let forwarded = match &req.network {
        Network::Forward { ports } => Some(super::dial::bind(ports).map_err(Error::Sandbox)?),
        _ => None,
    };
    let (ours, theirs) = match listen.is_some() || forwarded.is_some() {
        true => {
            let (a, b) = rustix::net::socketpair(rustix::net::AddressFamily::UNIX, rustix::net::SocketType::SEQPACKET, rustix::net::SocketFlags::CLOEXEC, None).map_err(|e| Error::Sandbox(format!("socketpair: {e}")))?;
            (Some(a), Some(b))
        }
        false => (None, None),
    };
    let stdio = terminal.stdio().map_err(|e| Error::Sandbox(format!("the agent's terminal: {e}")))?;
    let side = super::launch::start(project, &spec, stdio, theirs)?;
    let relay = terminal.relay();
    let serving = serve(&listen, ours, &req.network, forwarded);
    // Woken by pid 1's end, else every `every` for a tick.
    while !side.ended(Duration::ZERO) {
        tick(&relay.console);
        if side.ended(every) {
            break;
        }
    }
    relay.finish();
    let denied = match serving {
        Some(Served::Proxy(s)) => s.stop(),
        Some(Served::Forward(f)) => {
            f.stop();
            Vec::new()
        }
        None => Vec::new(),
    };
    // The side's exit goes on in the background: the session's directory is removed after
    // it (see `settle`).
    let (ended, exiting) = side.finish(&spec.result_file());
    exiting.then(|| {});
    if let Some(e) = ended.setup_error {
        return Err(Error::Sandbox(format!("the wrap session could not start: {e} (see `cairn doctor` and :help cairn-wrap)")));
    }
    let exit = ended.exit();
    Ok(Ran { exit, denied })
}

/// The parent's side of the session's network.
enum Served {
    Proxy(super::proxy::Serving),
    Forward(super::dial::Forwarding),
}

/// Serves the session's network over the control socket: the proxy on the listeners pid 1
/// makes inside (they arrive before the command starts), or the forwarded ports.
fn serve(listen: &Option<super::net::Listen>, control: Option<std::os::fd::OwnedFd>, network: &Network, forwarded: Option<Vec<(u16, std::net::TcpListener)>>) -> Option<Served> {
    match (listen, control, network, forwarded) {
        (Some(l), Some(control), Network::Proxy { allow_hosts, host_ports }, _) => {
            let handed = super::net::receive(&control, 1 + l.host_ports.len());
            Some(Served::Proxy(super::proxy::serve(handed, super::proxy::Policy { allow_hosts: allow_hosts.clone(), host_ports: host_ports.clone() })))
        }
        (_, Some(control), Network::Forward { .. }, Some(host)) => Some(Served::Forward(super::dial::forward(host, control))),
        _ => None,
    }
}

fn spec_for(project: &Project, dir: &Path, req: &Request, pty: bool) -> Result<Spec> {
    let mut env = req.env.clone();
    let listen = match &req.network {
        Network::Proxy { host_ports, .. } => {
            env.retain(|(k, _)| !k.to_ascii_uppercase().ends_with("_PROXY"));
            env.extend(super::net::proxy_env(super::net::PROXY_PORT));
            Some(super::net::Listen { proxy: super::net::PROXY_PORT, host_ports: host_ports.clone() })
        }
        _ => None,
    };
    let dial = match &req.network {
        Network::Forward { ports } => ports.clone(),
        _ => Vec::new(),
    };
    // Every hidden path, in the home too: covered after the read paths are mounted, so that
    // an installation or a read path under the home never shows one.
    let (dirs, files): (Vec<PathBuf>, Vec<PathBuf>) = req.hide.iter().cloned().partition(|p| p.is_dir());
    let mut hidden_dirs = super::hidden_dirs(project);
    hidden_dirs.extend(dirs);
    let mut hidden_files: Vec<PathBuf> = super::HIDDEN_FILES.iter().map(PathBuf::from).collect();
    hidden_files.extend(files);
    // The command's own installation, and what the user listed.
    let (workspace_masks, cwd) = super::workspace_paths(project, req.cwd)?;
    let path = req.env.iter().find(|(k, _)| k == "PATH").map_or("/usr/bin:/bin", |(_, v)| v.as_str());
    let at = Where { home: &req.home, cwd: &cwd, project: &project.root, path, hide: &req.hide };
    let mut read_paths = installation(req.argv.first().map_or("", String::as_str), &at);
    // `sh -c 'claude --flag'` (how :CairnWrap starts a command line): the program the script
    // starts is readable too.
    let script = script_program(&req.argv).map(|p| installation(&p, &at)).unwrap_or_default();
    // Each path once: one listed in `[wrap] read_paths` may be the installation too.
    for p in script.into_iter().chain(req.read_paths.iter().cloned()) {
        if !read_paths.contains(&p) {
            read_paths.push(p);
        }
    }
    let read_only = [".git", ".jj", ".cairn.toml"].iter().map(|p| project.root.join(p)).collect();
    Ok(Spec {
        parent_pid: std::process::id() as i32,
        root: project.root.clone(),
        dir: dir.to_path_buf(),
        cmd: req.argv.join(" "),
        cwd,
        env,
        system: super::SYSTEM.iter().map(PathBuf::from).collect(),
        home: req.home.clone(),
        hidden_dirs,
        hidden_files,
        read_paths,
        workspace_masks,
        host_network: matches!(req.network, Network::Host),
        timeout_ms: 0,
        max_memory_mb: 0,
        max_processes: 0,
        capture: false,
        capture_limits: super::capture_limits(project),
        wrap: Some(Wrap { argv: req.argv.to_vec(), read_only, pty, home: Some(req.home_plan.clone()), listen, dial }),
    })
}

/// The directories a program needs besides the system's: where `name` (looked up on `PATH`)
/// really lives, and, for a script, where its interpreter does (`#!/usr/bin/env node` →
/// node's). Each is the installation's root: the directory above a `bin/`, or an npm
/// package's directory; nothing under the system directories (already visible).
fn installation(name: &str, at: &Where) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut todo: Vec<PathBuf> = program(name, at).into_iter().collect();
    while let Some(found) = todo.pop() {
        // The link itself may sit in another installation's `bin/` (npm's shims).
        for p in [Some(found.clone()), std::fs::canonicalize(&found).ok()].into_iter().flatten() {
            if let Some(root) = install_root(&p).map(|r| narrowed(r, &p, at)).filter(|r| shown(r, at)) {
                if !out.contains(&root) {
                    out.push(root);
                }
            }
        }
        if out.len() > 8 {
            break;
        }
        // A script in the project is the agent's, its first line too: its interpreter counts
        // only when it is a program the user runs anyway (on `PATH`).
        let agents = std::fs::canonicalize(&found).is_ok_and(|c| c.starts_with(at.project)) || found.starts_with(at.project);
        if let Some(p) = shebang(&found).and_then(|i| interpreter(i, agents, at)) {
            if !out.iter().any(|o| p.starts_with(o)) || std::fs::canonicalize(&p).is_ok_and(|c| !out.iter().any(|o| c.starts_with(o))) {
                todo.push(p);
            }
        }
    }
    out
}

/// Where a command runs: what decides how much of its installation is shown.
struct Where<'a> {
    home: &'a Path,
    cwd: &'a Path,
    project: &'a Path,
    /// The command's `PATH`.
    path: &'a str,
    /// `[wrap] hide`.
    hide: &'a [PathBuf],
}

/// The program `name` runs: a name on `PATH`, or a path (relative to where it runs); an
/// executable file either way.
fn program(name: &str, at: &Where) -> Option<PathBuf> {
    if name.contains('/') {
        Some(at.cwd.join(name)).filter(|p| executable(p))
    } else {
        on_path(name, at)
    }
}

fn on_path(name: &str, at: &Where) -> Option<PathBuf> {
    which(name, &at.path, None)
}

/// The executable `PATH` (`search`) finds for command `name`, in its order. A relative entry
/// (`.`, empty) is taken under `relative_in` when given, else skipped.
pub(crate) fn which(name: &str, search: &str, relative_in: Option<&Path>) -> Option<PathBuf> {
    search
        .split(':')
        .filter_map(|d| match (d.starts_with('/'), relative_in) {
            (true, _) => Some(Path::new(d).join(name)),
            (false, Some(base)) => Some(base.join(d).join(name)),
            (false, None) => None,
        })
        .find(|p| executable(p))
}

fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// An interpreter a script's first line names: a program on `PATH` (`env NAME`), or an
/// executable path; for the agent's script (`agents`), only a path into a `PATH` or system
/// directory (a pipx tool's own venv is the user's; a project script's `#!` is not).
fn interpreter(named: Interpreter, agents: bool, at: &Where) -> Option<PathBuf> {
    match named {
        Interpreter::Name(n) if !n.contains('/') => on_path(&n, at),
        Interpreter::Name(_) => None,
        Interpreter::Path(p) => {
            let p = PathBuf::from(p);
            let dir = p.parent().and_then(|d| std::fs::canonicalize(d).ok())?;
            let listed = at.path.split(':').filter(|d| d.starts_with('/')).any(|d| std::fs::canonicalize(d).is_ok_and(|d| d == dir));
            let system = super::SYSTEM.iter().any(|s| dir.starts_with(s));
            (p.is_absolute() && (listed || system || !agents) && executable(&p)).then_some(p)
        }
    }
}

/// May installation root `root` be shown: not a system directory, nor what holds one
/// (`/bin/sh`'s "installation" is `/`); not in the project (its view shows it); not where
/// the host keeps sockets and devices; nothing hidden in it or around it.
fn shown(root: &Path, at: &Where) -> bool {
    let Ok(real) = std::fs::canonicalize(root) else { return false };
    // (A link from elsewhere into a system directory is shown: its own path is not there.)
    let system = super::SYSTEM.iter().any(|s| root.starts_with(s) || Path::new(s).starts_with(root) || Path::new(s).starts_with(&real));
    let host = ["/run", "/var/run", "/proc", "/sys", "/dev"].iter().any(|h| real.starts_with(h));
    let hidden = at.hide.iter().any(|h| real.starts_with(h) || h.starts_with(&real) || root.starts_with(h));
    !system && !host && !hidden && !real.starts_with(at.project) && !root.starts_with(at.project)
}

/// The shells whose `-c SCRIPT` a command line may be.
pub const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "fish"];

/// The script of a `SHELL -c SCRIPT` command line (how :CairnWrap starts a command line).
pub fn shell_script(argv: &[String]) -> Option<&str> {
    let program = Path::new(argv.first()?).file_name()?.to_str()?;
    (argv.len() >= 3 && argv[1] == "-c" && SHELLS.contains(&program)).then(|| argv[2].as_str())
}

/// The program a shell's script starts first (`sh -c 'A=1 exec claude -p x'` → `claude`):
/// its first word that is not an assignment or `exec`/`env`/`command`, unquoted. None when
/// that word is an option (`env -S …` runs something else).
pub fn script_program(argv: &[String]) -> Option<String> {
    let word = shell_script(argv)?.split_whitespace().find(|w| !is_assignment(w) && !matches!(*w, "exec" | "env" | "command" | "nohup"))?;
    let word = word.trim_matches(|c| c == '\'' || c == '"').trim_end_matches(';');
    (!word.is_empty() && !word.starts_with('-')).then(|| word.to_string())
}

/// The installation a program file belongs to: its `node_modules`, else the parent of its
/// `bin/`, else its directory.
fn install_root(p: &Path) -> Option<PathBuf> {
    let comps: Vec<_> = p.components().collect();
    // The whole `node_modules`: a package's native binary lives in a sibling package
    // (`@anthropic-ai/claude-code-linux-x64`, `@openai/codex-linux-x64`).
    if let Some(i) = comps.iter().position(|c| c.as_os_str() == "node_modules") {
        return Some(comps[..=i].iter().collect());
    }
    let dir = p.parent()?;
    match dir.file_name() {
        Some(n) if n == "bin" => dir.parent().map(Path::to_path_buf),
        _ => Some(dir.to_path_buf()),
    }
}

/// An installation root that would show the home, or a directory right under it that
/// programs share (`~/.local`, `~/bin`, `~/.cargo`: keyrings, histories, credentials), or
/// the project's real tree, or a top-level directory (`/tmp`, `/opt`: everyone's files), is
/// narrowed to the program's own file. (A tool may live anywhere else, `/tmp/x/node_modules`
/// included: what decides is that the user runs it, or that it is on `PATH`.)
fn narrowed(root: PathBuf, program: &Path, at: &Where) -> PathBuf {
    let home = at.home;
    let broad = (home.as_os_str().len() > 1 && (home.starts_with(&root) || root.parent() == Some(home)))
        || at.project.starts_with(&root)
        || root.parent().is_none_or(|p| p == Path::new("/"));
    if broad {
        program.to_path_buf()
    } else {
        root
    }
}

/// What a script's first line names as its interpreter.
enum Interpreter {
    /// `#!/usr/bin/env NAME`.
    Name(String),
    /// `#!/path/to/interpreter`.
    Path(String),
}

/// The interpreter a script names on its first line: `env`'s program (none when `env` is
/// given options: `-S`, `-u NAME` and the like change what runs), or the path.
fn shebang(p: &Path) -> Option<Interpreter> {
    let mut head = [0u8; 256];
    let n = std::io::Read::read(&mut std::fs::File::open(p).ok()?, &mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = String::from_utf8_lossy(line.split(|b| *b == b'\n').next()?).into_owned();
    let mut words = line.split_whitespace();
    let first = words.next()?;
    if !first.ends_with("/env") {
        return Some(Interpreter::Path(first.to_string()));
    }
    let word = words.find(|w| !is_assignment(w))?;
    (!word.starts_with('-')).then(|| Interpreter::Name(word.to_string()))
}

/// `NAME=VALUE`, NAME a shell variable's name.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}
