//! What the boundary is on this machine, measured from inside: [`probe`] runs a command
//! confined and reads its identity, its root directory, its terminal and the kernel's own
//! account of its filter (`/proc/self/status`), so `cairn doctor` and `:checkhealth cairn`
//! say which layer holds and why one is missing, not what the code meant to do.

use super::Request;
use crate::project::Project;
use std::time::Duration;

/// Runs a probe command confined; `Ok` holds one line per layer, `Err` names the layer that
/// kept the run from starting.
pub fn probe(project: &Project) -> Result<Vec<String>, String> {
    let cmd = "id -u; echo '--'; ls -A /; echo '--'; grep -E '^(NoNewPrivs|Seccomp|Seccomp_filters|CapEff):' /proc/self/status; echo '--'; if (: < /dev/tty) 2>/dev/null; then echo tty; else echo no-tty; fi";
    let req = Request { cmd, cwd: "", timeout: Duration::from_secs(20), capture: false };
    let o = super::run(project, &[], &req).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&o.output).into_owned();
    if !o.exit.success() {
        return Err(format!("a probe command {} in a confined run: {}", o.exit, text.trim()));
    }
    let parts: Vec<&str> = text.split("--\n").collect();
    let [uid, root, status, tty] = parts[..] else { return Err(format!("the probe's report is garbled: {text}")) };
    let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)).map(str::trim).unwrap_or("?").to_string();
    let run = &project.config.run;
    let host_root = super::ids::host_root();
    let uid = uid.trim();
    let mut lines = vec![
        format!("view: / holds {} (system dirs read-only: {}; the workspace at {}; private /tmp, /var/tmp, /dev/shm and home; read_paths: {})",
            root.split_whitespace().collect::<Vec<_>>().join(" "),
            super::SYSTEM.iter().filter(|d| std::path::Path::new(d).exists()).copied().collect::<Vec<_>>().join(" "),
            project.root.display(),
            if run.read_paths.is_empty() { "none".to_string() } else { run.read_paths.join(" ") }),
        match (host_root, uid) {
            (true, "65534") => "identity: uid 65534 (cairn runs as root; the command never does: root's files appear as its own through idmapped mounts)".to_string(),
            (true, other) => format!("identity: MISSING: cairn runs as root and the command ran as uid {other}"),
            (false, u) => format!("identity: uid {u} (yourself, in user namespaces)"),
        },
        format!("terminal: {}", if tty.trim() == "no-tty" { "none (a session of its own, stdin /dev/null)" } else { "MISSING: the command reached a terminal" }),
    ];
    let (seccomp, nnp, caps) = (field("Seccomp:"), field("NoNewPrivs:"), field("CapEff:"));
    lines.push(if seccomp == "2" {
        format!("syscall filter: seccomp ({} filters: io_uring, bpf, keyrings, ptrace, mounts, TIOCSTI ... denied), no new privileges: {}, capabilities: {caps}", field("Seccomp_filters:"), if nnp == "1" { "yes" } else { "NO" })
    } else {
        format!("syscall filter: MISSING (Seccomp: {seccomp}): the kernel refused the filter")
    });
    // Which bound holds: a memory cgroup, or limits per process (see `budget`).
    lines.push(format!("memory: {}", o.budget));
    lines.push(format!(
        "budgets: [run] max_memory_mb = {} MiB and max_processes = {} for the whole process tree; reading back at most {} bytes; the run's own per-user kernel limits: 16 inotify instances, 8 namespaces of each kind",
        run.max_memory_mb,
        run.max_processes,
        super::capture_limits(project).total,
    ));
    lines.push(format!("network: {}", if run.network == "host" { "the host's (network = \"host\": an explicit opt-in)" } else { "none (a private loopback)" }));
    Ok(lines)
}
