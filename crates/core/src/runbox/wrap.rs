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
    let serving = serve(&listen, ours, &req.network, forwarded, project.config.wrap.max_connections);
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
fn serve(listen: &Option<super::net::Listen>, control: Option<std::os::fd::OwnedFd>, network: &Network, forwarded: Option<Vec<(u16, std::net::TcpListener)>>, max_connections: u64) -> Option<Served> {
    match (listen, control, network, forwarded) {
        (Some(l), Some(control), Network::Proxy { allow_hosts, host_ports }, _) => {
            let handed = super::net::receive(&control, 1 + l.host_ports.len());
            Some(Served::Proxy(super::proxy::serve(handed, super::proxy::Policy { allow_hosts: allow_hosts.clone(), host_ports: host_ports.clone(), max_connections })))
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
    // What the command line runs, and what the user listed.
    let (workspace_masks, cwd) = super::workspace_paths(project, req.cwd)?;
    let mut read_paths = resolve(project, req, &cwd, &workspace_masks)?.read_paths;
    // Each path once: one listed in `[wrap] read_paths` may be an installation too.
    for p in &req.read_paths {
        if !read_paths.contains(p) {
            read_paths.push(p.clone());
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
        max_processes: project.config.wrap.max_processes,
        no_cgroup: false,
        capture: false,
        capture_limits: super::capture_limits(project),
        wrap: Some(Wrap { argv: req.argv.to_vec(), read_only, pty, home: Some(req.home_plan.clone()), listen, dial, max_tmp_mb: project.config.wrap.max_tmp_mb }),
    })
}

/// What starting `req` would refuse: a program, script or directory its command line names
/// that the view would not show ([`Error::NotVisible`], before anything starts); else notes
/// for the user (a package a runner would fetch from a host the session does not reach).
pub fn check(project: &Project, req: &Request) -> Result<Vec<String>> {
    let (masks, cwd) = super::workspace_paths(project, req.cwd)?;
    Ok(resolve(project, req, &cwd, &masks)?.notes)
}

/// What `req`'s command line runs, found as the confined side will find it (see
/// [`super::install`]).
fn resolve(project: &Project, req: &Request, cwd: &Path, masks: &[PathBuf]) -> Result<super::install::Resolved> {
    let path = req.env.iter().find(|(k, _)| k == "PATH").map_or("/usr/bin:/bin", |(_, v)| v.as_str());
    let secret: Vec<PathBuf> = super::hidden_dirs(project).into_iter().chain(super::HIDDEN_FILES.iter().map(PathBuf::from)).chain(masks.iter().cloned()).collect();
    let hosts = match &req.network {
        Network::Proxy { allow_hosts, .. } => Some(allow_hosts.as_slice()),
        Network::Host => None,
        Network::None | Network::Forward { .. } => Some(&[][..]),
    };
    let at = super::install::Where { home: &req.home, cwd, project: &project.root, path, hide: &req.hide, secret: &secret, home_hidden: &req.home_plan.hidden, read_paths: &req.read_paths, hosts };
    super::install::resolve(req.argv, &at)
}

/// The shells whose `-c SCRIPT` a command line may be.
pub use super::chain::SHELLS;

/// The script of a `SHELL -c SCRIPT` command line (how :CairnWrap starts a command line).
pub fn shell_script(argv: &[String]) -> Option<&str> {
    let program = Path::new(argv.first()?).file_name()?.to_str()?;
    (argv.len() >= 3 && argv[1] == "-c" && SHELLS.contains(&program)).then(|| argv[2].as_str())
}
