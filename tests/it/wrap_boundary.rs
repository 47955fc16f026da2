//! `cairn wrap` attacked as a hostile agent would (`tests/hostile/wrap_probe.py`): the
//! terminal, host sockets (unix, abstract, loopback, direct), the proxy, credentials in the
//! home, the environment and root's files, persistence in the agent CLIs' own configuration,
//! a symlink to a secret, a sparse file, the environment on disk. With the default network
//! (the proxy) and `--network none`, as root (when the tests are) and as an ordinary user.

use crate::runs::{as_ordinary_user, is_root};
use crate::support::*;
use serde_json::{json, Value};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const PROBE: &str = include_str!("../hostile/wrap_probe.py");
const SECRET_ENV: [(&str, &str); 3] = [("GITHUB_TOKEN", "ghp_PLANTEDSECRET1"), ("AWS_SECRET_ACCESS_KEY", "AKIAPLANTEDSECRET2"), ("DATABASE_PASSWORD", "PLANTEDSECRET3")];
/// Also the agent CLIs' own credentials (another command than theirs never sees them), git's
/// XDG store, cargo's configuration (registry tokens), caches that hold tokens.
const CREDENTIALS: [&str; 19] = [
    ".ssh/id_rsa", ".git-credentials", ".npmrc", ".pypirc", ".cargo/credentials.toml", ".config/gh/hosts.yml", ".bash_history", ".local/share/keyrings/login.keyring",
    ".vault-token", ".terraform.d/credentials.tfrc.json", ".azure/accessTokens.json", ".m2/settings.xml", ".config/rclone/rclone.conf", ".aws/credentials",
    ".config/git/credentials", ".cargo/config.toml", ".claude/.credentials.json", ".codex/auth.json", ".cache/huggingface/token",
];
const PLANT: [(&str, &str); 4] = [(".claude/settings.json", "{\"hooks\": \"PLANTED\"}\n"), (".codex/config.toml", "[mcp_servers.x]\ncommand = \"PLANTED\"\n"), (".bashrc", "PLANTED\n"), (".cache/node/corepack/pnpm", "PLANTED\n")];

/// A user's home with credentials in it, and the targets the probe aims at.
struct Setup {
    _dir: tempfile::TempDir,
    home: PathBuf,
    _sockets: Vec<UnixListener>,
    abstract_socket: UnixListener,
    tcp: TcpListener,
    args: Value,
}

fn setup(owner: Option<u32>) -> Setup {
    use std::os::linux::net::SocketAddrExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let home = dir.path().join("home");
    for rel in CREDENTIALS {
        let p = home.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, format!("PLANTED-CREDENTIAL {rel}\n")).unwrap();
    }
    std::fs::write(home.join(".bashrc"), "# the user's own\n").unwrap();
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::write(home.join(".claude/settings.json"), "{}\n").unwrap();
    let run_dir = dir.path().join("run-user");
    std::fs::create_dir_all(&run_dir).unwrap();
    let mut paths = vec![run_dir.join("nvim.12345.0"), run_dir.join("bus")];
    if is_root() {
        let d = PathBuf::from(format!("/run/cairn-wrap-probe-{}-{}", std::process::id(), rand::random::<u32>()));
        std::fs::create_dir_all(&d).unwrap();
        paths.push(d.join("nvim.sock"));
    }
    let sockets: Vec<UnixListener> = paths.iter().map(|p| UnixListener::bind(p).unwrap()).collect();
    let name = format!("cairn-wrap-probe-{}", rand::random::<u32>());
    let abstract_socket = UnixListener::bind_addr(&std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
    abstract_socket.set_nonblocking(true).unwrap();
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    if let Some(uid) = owner {
        assert!(Command::new("chown").arg("-R").arg(format!("{uid}:{uid}")).arg(&home).status().unwrap().success());
    }
    let args = json!({
        "credentials": CREDENTIALS, "secret_env": SECRET_ENV.iter().map(|(k, _)| k).collect::<Vec<_>>(),
        "sockets": paths, "abstract": name, "tcp_port": tcp.local_addr().unwrap().port(),
        "plant": PLANT.iter().map(|(k, v)| (k.to_string(), Value::from(*v))).collect::<serde_json::Map<_, _>>(),
    });
    Setup { _dir: dir, home, _sockets: sockets, abstract_socket, tcp, args }
}

/// Every file under `dir` with its content (what the real home holds).
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                out.push((e.path(), std::fs::read(e.path()).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

/// Runs the probe under `cairn wrap` (through `script`, so cairn has a terminal as a user's
/// shell gives it), then checks everything from outside.
fn probe(f: &Fixture, s: &Setup, network: &str, wrap: impl Fn(&[&str]) -> Command) {
    probe_as(f, s, network, false, wrap)
}

/// `via_shell`: started as :CairnWrap starts a command line, `sh -c 'LINE'` (whose program's
/// installation is readable too).
fn probe_as(f: &Fixture, s: &Setup, network: &str, via_shell: bool, wrap: impl Fn(&[&str]) -> Command) {
    let before = snapshot(&s.home);
    let probe_args = json!(s.args.as_object().unwrap().clone().into_iter().chain([("proxy".to_string(), json!(network == "proxy"))]).collect::<serde_json::Map<_, _>>()).to_string();
    let script = format!("/usr/bin/python3 probe.py '{}'", probe_args.replace('\'', "'\\''"));
    let args: Vec<&str> = if via_shell {
        vec!["wrap", "--network", network, "--", "sh", "-c", &script]
    } else {
        vec!["wrap", "--network", network, "--", "/usr/bin/python3", "probe.py", &probe_args]
    };
    let c = wrap(&args);
    let line = std::iter::once(c.get_program()).chain(c.get_args()).map(|a| format!("'{}'", a.to_string_lossy().replace('\'', "'\\''"))).collect::<Vec<_>>().join(" ");
    let envs: Vec<(String, String)> = c.get_envs().filter_map(|(k, v)| Some((k.to_string_lossy().into_owned(), v?.to_string_lossy().into_owned()))).collect();
    let mut outer = Command::new("/usr/bin/time");
    outer.args(["-f", "MAXRSS=%M", "script", "-qec", &line, "/dev/null"]).current_dir(&f.root).stdin(Stdio::null());
    for (k, v) in envs.iter().chain(&SECRET_ENV.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>()) {
        outer.env(k, v);
    }
    let out = outer.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("probe-done"), "the probe did not finish:\n{text}\n{err}");
    let leaks: Vec<&str> = text.lines().filter(|l| l.starts_with("LEAK")).collect();
    assert!(leaks.is_empty(), "network {network}: the boundary leaked:\n{}\n\n{text}", leaks.join("\n"));
    assert!(s.abstract_socket.accept().is_err() && s.tcp.accept().is_err(), "a host socket was reached");
    assert_eq!(snapshot(&s.home), before, "the real home changed");
    let id = text.lines().chain(err.lines()).find_map(|l| l.split("wrap session ").nth(1)).and_then(|r| r.split(':').next()).expect("session id").to_string();
    let diff = f.cairn(&["diff", &id]).stdout;
    assert!(diff.contains("b/made.txt"), "{diff}");
    assert!(!diff.contains("PLANTED") && !diff.contains("sparse.bin\n+"), "a secret or the sparse file reached the proposal:\n{diff}");
    // The sparse file cost cairn nothing: the whole `cairn wrap` tree stayed small.
    let rss: u64 = err.lines().find_map(|l| l.strip_prefix("MAXRSS=")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    assert!(rss > 0 && rss < 400 * 1024, "cairn wrap peaked at {rss} kB");
    // Nothing on disk holds the environment; the session's files are the user's only.
    let mut stack = vec![f.home.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                let t = String::from_utf8_lossy(&bytes);
                assert!(!SECRET_ENV.iter().any(|(_, v)| t.contains(v)), "{} holds the environment", p.display());
            }
        }
    }
    // The other CLIs' state was never this command's: what it planted there is in no layer.
    let state = f.cairn(&["wrap", "state", "diff", "python3"]);
    assert!(!state.stdout.contains(".claude") && !state.stdout.contains("PLANTED"), "{state:?}");
}

fn probe_fixture() -> Fixture {
    Fixture::with_files(&[("probe.py", PROBE), ("src/app.py", "x = 1\n")])
}

#[test]
fn a_hostile_agent_under_wrap_reaches_nothing_through_the_proxy() {
    let f = probe_fixture();
    let s = setup(None);
    let home = s.home.clone();
    probe(&f, &s, "proxy", |args| {
        let mut c = Command::new(exe());
        c.arg("--project-root").arg(&f.root).arg("--cairn-home").arg(&f.home).args(args).env("HOME", &home).env_remove("CAIRN_HOME");
        c
    });
}

#[test]
fn a_hostile_agent_started_by_a_shell_script_reaches_nothing() {
    let f = probe_fixture();
    let s = setup(None);
    let home = s.home.clone();
    probe_as(&f, &s, "proxy", true, |args| {
        let mut c = Command::new(exe());
        c.arg("--project-root").arg(&f.root).arg("--cairn-home").arg(&f.home).args(args).env("HOME", &home).env_remove("CAIRN_HOME");
        c
    });
}

#[test]
fn a_hostile_agent_under_wrap_reaches_nothing_without_a_network() {
    let f = probe_fixture();
    let s = setup(None);
    let home = s.home.clone();
    probe(&f, &s, "none", |args| {
        let mut c = Command::new(exe());
        c.arg("--project-root").arg(&f.root).arg("--cairn-home").arg(&f.home).args(args).env("HOME", &home).env_remove("CAIRN_HOME");
        c
    });
}

#[test]
fn a_hostile_agent_under_wrap_reaches_nothing_as_an_ordinary_user() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (root, cairn_home) = (dir.path().join("proj"), dir.path().join("cairn"));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&cairn_home).unwrap();
    std::fs::write(root.join("probe.py"), PROBE).unwrap();
    let owner = is_root().then_some(65534);
    if let Some(uid) = owner {
        assert!(Command::new("chown").arg("-R").arg(format!("{uid}:{uid}")).arg(&root).arg(&cairn_home).status().unwrap().success());
    }
    let s = setup(owner);
    let f = Fixture { dir: tempfile::tempdir().unwrap(), root: root.clone(), home: cairn_home.clone(), config: Default::default() };
    let exe = exe();
    let base = |args: &[&str]| {
        let mut all: Vec<&std::ffi::OsStr> = vec![exe.as_os_str(), "--project-root".as_ref(), root.as_os_str(), "--cairn-home".as_ref(), cairn_home.as_os_str()];
        all.extend(args.iter().map(|a| std::ffi::OsStr::new(*a)));
        let mut c = as_ordinary_user(&all);
        c.env("HOME", &s.home).env_remove("CAIRN_HOME");
        c
    };
    assert!(base(&["init"]).output().unwrap().status.success());
    probe(&f, &s, "proxy", base);
    // Its sessions leave no directory behind (overlayfs's work directory, mode 000, included).
    let left: Vec<_> = std::fs::read_dir(cairn_home.join("runs")).map(|d| d.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// The CLI's state is its own layer: kept across sessions, shown against the real home,
/// applied to it only when asked (then dropped), or dropped; another command never sees it.
#[test]
fn agent_state_is_copy_on_write_kept_shown_applied_and_reset() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    std::fs::write(home.path().join(".claude/settings.json"), "{\"real\": true}\n").unwrap();
    // A command named `claude` (its state is `.claude` and `.claude.json`).
    let bin = tempfile::tempdir().unwrap();
    let claude = bin.path().join("claude");
    std::fs::write(&claude, "#!/bin/sh\nexec /bin/sh -c \"$1\"\n").unwrap();
    std::fs::set_permissions(&claude, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let run = |argv: &[&std::ffi::OsStr]| {
        let out = f.cmd().arg("wrap").arg("--").args(argv).env("HOME", home.path()).stdin(Stdio::null()).output().unwrap();
        let r = Run::from(out);
        assert_eq!(r.code, 0, "{r:?}");
        r.stdout
    };
    let wrap = |script: &str| run(&[claude.as_os_str(), script.as_ref()]);
    wrap("echo '{\"planted\": 1}' > ~/.claude/settings.json; echo '{\"login\": 1}' > ~/.claude.json; echo scratch > ~/.profile");
    assert_eq!(std::fs::read_to_string(home.path().join(".claude/settings.json")).unwrap(), "{\"real\": true}\n", "the real home changed");
    assert!(!home.path().join(".claude.json").exists() && !home.path().join(".profile").exists());
    // The next session of the same CLI sees its own state; scratch elsewhere is gone.
    let seen = wrap("cat ~/.claude/settings.json ~/.claude.json; cat ~/.profile 2>/dev/null || echo no-profile");
    assert_eq!(seen, "{\"planted\": 1}\n{\"login\": 1}\nno-profile\n");
    // Another command sees none of it, nor the real state: it is claude's alone.
    let other = run(&["sh".as_ref(), "-c".as_ref(), "cat ~/.claude/settings.json ~/.claude.json 2>/dev/null || echo hidden".as_ref()]);
    assert_eq!(other, "hidden\n");
    let cairn = |args: &[&str]| Run::from(f.cmd().args(args).env("HOME", home.path()).output().unwrap());
    let diff = cairn(&["wrap", "state", "diff", "claude"]);
    assert!(diff.stdout.contains("M ~/.claude/settings.json") && diff.stdout.contains("A ~/.claude.json") && diff.stdout.contains("+{\"planted\": 1}"), "{diff:?}");
    assert!(cairn(&["wrap", "state", "list"]).stdout.contains("claude"));
    let applied = cairn(&["wrap", "state", "apply", "claude"]);
    assert_eq!(applied.code, 0, "{applied:?}");
    assert_eq!(std::fs::read_to_string(home.path().join(".claude/settings.json")).unwrap(), "{\"planted\": 1}\n");
    assert_eq!(std::fs::read_to_string(home.path().join(".claude.json")).unwrap(), "{\"login\": 1}\n");
    assert!(!cairn(&["wrap", "state", "list"]).stdout.contains("claude"), "applied, the layer is dropped");
    wrap("echo again > ~/.claude/settings.json");
    assert_eq!(cairn(&["wrap", "state", "reset", "claude"]).code, 0);
    assert_eq!(wrap("cat ~/.claude/settings.json"), "{\"planted\": 1}\n", "reset: the real home shows again");
    assert_ne!(cairn(&["wrap", "state", "diff", "nosuch"]).code, 0);
}

/// A relative `--cairn-home` works (the confined side starts in `/`).
#[test]
fn a_relative_cairn_home_works() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let out = Command::new(exe())
        .current_dir(f.dir.path())
        .args(["--project-root", "proj", "--cairn-home", "home", "wrap", "--", "sh", "-c", "echo b > b.txt"])
        .env_remove("CAIRN_HOME")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let r = Run::from(out);
    assert_eq!(r.code, 0, "{r:?}");
    let id = r.stderr.split("wrap session ").nth(1).and_then(|x| x.split(':').next()).unwrap().to_string();
    assert!(f.cairn(&["diff", &id]).ok().stdout.contains("+b"));
}

/// Files agent CLIs obey on their own are flagged in review.
#[test]
fn agent_cli_configuration_in_a_proposal_is_flagged() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let s = f.run_ok("write_file('.mcp.json', '{}')\nwrite_file('.claude/settings.json', '{}')\nwrite_file('.gemini/settings.json', '{}')\nwrite_file('.codex/config.toml', '')\n");
    let diff = f.cairn(&["diff", &s.id]).ok().stdout;
    for (path, why) in [(".mcp.json", "MCP servers it lists"), (".claude/settings.json", "Claude Code obeys it"), (".gemini/settings.json", "Gemini CLI obeys it"), (".codex/config.toml", "Codex CLI obeys it")] {
        assert!(diff.contains(&format!("WARNING {path}: ")) && diff.contains(why), "{path} not flagged:\n{diff}");
    }
}

/// Files in the project are the agent's: a script's first line never makes a host path
/// readable (`env -u PATH` names no interpreter, `/var/run/x` is no program), and a program
/// in the project named like an agent CLI never gets that CLI's state.
#[test]
fn project_scripts_reach_no_host_path_through_their_first_line_nor_a_clis_state() {
    let home = tempfile::tempdir().unwrap();
    let secret = home.path().join(".config/gh/hosts.yml");
    std::fs::create_dir_all(secret.parent().unwrap()).unwrap();
    std::fs::write(&secret, "PLANTED-CREDENTIAL gh\n").unwrap();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    std::fs::write(home.path().join(".claude/.credentials.json"), "PLANTED-CREDENTIAL claude\n").unwrap();
    let body = format!("ls /var/run /run 2>/dev/null | head -3\ncat {} ~/.claude/.credentials.json 2>/dev/null\necho ran\n", secret.display());
    let f = Fixture::with_files(&[
        ("env-u.sh", &format!("#!/usr/bin/env -S -u /var/run/x sh\n{body}")),
        ("env-secret.sh", &format!("#!/usr/bin/env -S -u {} sh\n{body}", secret.display())),
        ("var-run.sh", &format!("#!/var/run/x\n{body}")),
        ("claude", &format!("#!/bin/sh\n{body}")),
    ]);
    for name in ["env-u.sh", "env-secret.sh", "var-run.sh", "claude"] {
        std::fs::set_permissions(f.root.join(name), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let wrap = |argv: &[&str]| {
        let out = f.cmd().arg("wrap").arg("--").args(argv).env("HOME", home.path()).stdin(Stdio::null()).output().unwrap();
        Run::from(out)
    };
    let host_run: Vec<String> = std::fs::read_dir("/run").unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert!(!host_run.is_empty());
    for argv in [&["./env-u.sh"][..], &["./env-secret.sh"], &["sh", "-c", "./env-secret.sh; echo second"], &["./var-run.sh"], &["./claude"], &["sh", "-c", "./claude"], &["sh", "-c", "env '--split-string=cat ~/.claude/.credentials.json' claude"]] {
        let r = wrap(argv);
        let seen = format!("{}{}", r.stdout, r.stderr);
        assert!(!seen.contains("PLANTED"), "{argv:?} read a secret:\n{seen}");
        let listed: Vec<&str> = r.stdout.lines().filter(|l| host_run.iter().any(|h| h == l)).collect();
        assert!(listed.is_empty(), "{argv:?} saw the host's /run: {listed:?}\n{seen}");
    }
    // Nor through a `PATH` that finds the project's `claude` first.
    let path = format!(".:{}", std::env::var("PATH").unwrap_or_default());
    let out = f.cmd().args(["wrap", "--", "claude"]).env("HOME", home.path()).env("PATH", &path).stdin(Stdio::null()).output().unwrap();
    let r = Run::from(out);
    assert!(!format!("{}{}", r.stdout, r.stderr).contains("PLANTED") && r.stdout.contains("ran"), "{r:?}");
    // A program outside the project keeps its own interpreter, off PATH (a pipx tool's venv).
    let venv = home.path().join(".local/share/pipx/venvs/tool/bin");
    std::fs::create_dir_all(&venv).unwrap();
    std::os::unix::fs::symlink("/usr/bin/python3", venv.join("python")).unwrap();
    std::fs::write(venv.join("tool"), format!("#!{}\nprint('TOOL-RAN')\n", venv.join("python").display())).unwrap();
    std::fs::set_permissions(venv.join("tool"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let tool = wrap(&[venv.join("tool").to_str().unwrap()]);
    assert!(tool.stdout.contains("TOOL-RAN"), "{tool:?}");
    // The control: the same script run by the shell directly sees the secret.
    let direct = Command::new("sh").arg(f.root.join("claude")).env("HOME", home.path()).output().unwrap();
    assert!(String::from_utf8_lossy(&direct.stdout).contains("PLANTED-CREDENTIAL gh"));
}

/// An agent CLI's keys go to that CLI alone: `claude` gets `ANTHROPIC_*`, not `OPENAI_*`; a
/// `make` or a script the repository ships, run under wrap, gets no model key (it could spend
/// it, or read the user's files kept with that API); `[wrap] env = ["cli:NAME"]` passes one more.
#[test]
fn an_agent_clis_keys_reach_that_cli_alone() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let bin = tempfile::tempdir().unwrap();
    for cli in ["claude", "codex", "qwen"] {
        let p = bin.path().join(cli);
        std::fs::write(&p, "#!/bin/sh\necho \"A=$ANTHROPIC_API_KEY O=$OPENAI_API_KEY\"\n").unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    f.home_config("[wrap]\nenv = [\"qwen:OPENAI_API_KEY\"]\n");
    let path = format!("{}:/usr/bin:/bin", bin.path().display());
    let run = |argv: &[&str]| {
        let out = f.cmd().arg("wrap").arg("--").args(argv).env("PATH", &path).env("ANTHROPIC_API_KEY", "sk-ant").env("OPENAI_API_KEY", "sk-oai").stdin(Stdio::null()).output().unwrap();
        let r = Run::from(out);
        assert_eq!(r.code, 0, "{argv:?}: {r:?}");
        r.stdout
    };
    assert_eq!(run(&["claude"]), "A=sk-ant O=\n");
    assert_eq!(run(&["codex"]), "A= O=sk-oai\n");
    assert_eq!(run(&["qwen"]), "A= O=sk-oai\n", "listed for it");
    assert_eq!(run(&["sh", "-c", "echo \"A=$ANTHROPIC_API_KEY O=$OPENAI_API_KEY\""]), "A= O=\n");
    // A project's own `claude` (an agent's script) is no agent CLI.
    f.write("claude", "#!/bin/sh\necho \"A=$ANTHROPIC_API_KEY O=$OPENAI_API_KEY\"\n");
    std::fs::set_permissions(f.root.join("claude"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    assert_eq!(run(&["./claude"]), "A= O=\n");
}
