//! `cairn wrap`'s terminal, used the way a user does: in a real tmux pane. The agent gets a
//! pseudo-terminal of its own, relayed: it sees the pane's size and follows a resize, keys
//! reach it, Ctrl-C interrupts it, its exit status is `cairn wrap`'s; and what it pushes with
//! `TIOCSTI` never reaches the user's shell.

use crate::support::*;
use std::process::Command;

/// A tmux server of its own (a socket in a temp dir), killed on drop.
pub struct Tmux {
    dir: tempfile::TempDir,
}

impl Tmux {
    pub fn new() -> Tmux {
        Tmux { dir: tempfile::tempdir().unwrap() }
    }
    pub fn cmd(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").arg("-S").arg(self.dir.path().join("sock")).args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
    pub fn socket(&self) -> std::path::PathBuf {
        self.dir.path().join("sock")
    }
    pub fn pane(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", "t"])
    }
    pub fn wait_for(&self, what: &str) {
        self.wait_count(what, 1);
    }
    /// Until `what` shows `n` times (a typed command line shows it once before it runs).
    pub fn wait_count(&self, what: &str, n: usize) {
        wait_until(30, what, || self.pane().matches(what).count() >= n);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.cmd(&["kill-server"]);
    }
}

pub fn cairn_line(f: &Fixture, rest: &str) -> String {
    format!("{} --project-root {} --cairn-home {} {rest}", exe().display(), f.root.display(), f.home.display())
}

#[test]
fn the_agent_has_its_own_terminal_relayed_size_keys_ctrl_c_and_status() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let t = Tmux::new();
    f.write("agent.sh", "stty size; read a; stty size; echo got-$a; trap 'echo INTERRUPTED; exit 7' INT; echo waiting; while :; do sleep 0.1; done\n");
    let line = cairn_line(&f, "wrap -- sh agent.sh; echo EXIT=$?; sleep 600");
    t.cmd(&["new-session", "-d", "-s", "t", "-x", "90", "-y", "25", &line]);
    t.wait_for("25 90");
    t.cmd(&["resize-window", "-t", "t", "-x", "70", "-y", "20"]);
    t.cmd(&["send-keys", "-t", "t", "hello", "Enter"]);
    t.wait_for("got-hello");
    assert!(t.pane().contains("20 70"), "the resize did not reach the agent:\n{}", t.pane());
    t.wait_for("waiting");
    t.cmd(&["send-keys", "-t", "t", "C-c"]);
    t.wait_for("EXIT=7");
    assert!(t.pane().contains("INTERRUPTED"), "{}", t.pane());
}

#[test]
fn tiocsti_from_the_agent_never_reaches_the_users_shell() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let t = Tmux::new();
    let marker = f.dir.path().join("pwned");
    // The user's shell in the pane runs `cairn wrap`; the agent tries to type a command into
    // every terminal it holds, which the shell would run once the agent exits.
    let inject = format!(
        "import fcntl, termios, os\nfor fd in (0, 1, 2):\n    for ch in 'touch {}\\n':\n        try:\n            fcntl.ioctl(fd, termios.TIOCSTI, ch.encode())\n        except OSError as e:\n            pass\nprint('injected-tried')\n",
        marker.display()
    );
    f.write("inject.py", &inject);
    t.cmd(&["new-session", "-d", "-s", "t", "-x", "100", "-y", "30", "sh"]);
    t.cmd(&["send-keys", "-t", "t", &cairn_line(&f, "wrap -- /usr/bin/python3 inject.py; echo WRAP-DONE"), "Enter"]);
    t.wait_count("WRAP-DONE", 2);
    t.cmd(&["send-keys", "-t", "t", "echo SHELL-ALIVE", "Enter"]);
    t.wait_count("SHELL-ALIVE", 2);
    assert!(t.pane().contains("injected-tried"), "{}", t.pane());
    assert!(!marker.exists(), "the agent's keystrokes ran in the user's shell:\n{}", t.pane());
}

/// Claude Code's own TUI under `cairn wrap` in a tmux pane: a prompt typed, the scripted
/// model's edit made and its answer shown, a resize redrawn at the new width, Ctrl-C twice
/// to quit; the proposal is exactly the edit.
#[test]
fn claude_codes_tui_works_under_wrap_in_tmux() {
    let claude = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/agents/node_modules/.bin/claude");
    assert!(claude.exists(), "Claude Code is missing: run `bash scripts/test.sh` (it installs .venv/agents)");
    let f = Fixture::with_files(&[("src/app.py", "def add(a, b):\n    return a - b\n")]);
    let app = f.root.join("src/app.py").display().to_string();
    let script = serde_json::json!([
        {"tool": "Read", "input": {"file_path": app}},
        {"tool": "Edit", "input": {"file_path": app, "old_string": "return a - b", "new_string": "return a + b"}},
        {"text": "All done."}
    ]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("script.json"), script.to_string()).unwrap();
    let port_file = dir.path().join("port");
    let log = std::fs::File::create(dir.path().join("requests.log")).unwrap();
    let stub = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/anthropic_stub.py");
    let mut model = Command::new("python3").arg(stub).arg(dir.path().join("script.json")).arg(&port_file).stderr(log).spawn().unwrap();
    wait_until(20, "the scripted model to listen", || port_file.exists());
    let port = std::fs::read_to_string(&port_file).unwrap();
    f.home_config(&format!("[wrap]\nhost_ports = [{port}]\n"));
    // A signed-in user who trusts the project (what Claude Code's first run would ask).
    let home = tempfile::tempdir().unwrap();
    let key = "sk-ant-scripted-0123456789abcdefghij";
    let state = serde_json::json!({
        "hasCompletedOnboarding": true, "theme": "dark",
        "customApiKeyResponses": {"approved": [&key[key.len() - 20..]], "rejected": []},
        "projects": {f.root.display().to_string(): {"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}}
    });
    std::fs::write(home.path().join(".claude.json"), state.to_string()).unwrap();
    let t = Tmux::new();
    let line = format!(
        "cd {} && HOME={} ANTHROPIC_BASE_URL=http://127.0.0.1:{port} ANTHROPIC_API_KEY={key} DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 {}; echo EXIT=$?; sleep 600",
        f.root.display(),
        home.path().display(),
        cairn_line(&f, &format!("wrap -- {} --allowedTools Read Edit", claude.display()))
    );
    t.cmd(&["new-session", "-d", "-s", "t", "-x", "100", "-y", "30", &line]);
    t.wait_for("? for shortcuts");
    t.cmd(&["send-keys", "-t", "t", "fix add", "Enter"]);
    t.wait_for("All done.");
    t.cmd(&["resize-window", "-t", "t", "-x", "80", "-y", "24"]);
    wait_until(30, "a redraw at 80 columns", || t.pane().lines().any(|l| l.starts_with('─') && l.chars().count() == 80));
    t.cmd(&["send-keys", "-t", "t", "C-c"]);
    t.cmd(&["send-keys", "-t", "t", "C-c"]);
    t.wait_for("EXIT=0");
    let _ = model.kill();
    let _ = model.wait();
    let requests = std::fs::read_to_string(dir.path().join("requests.log")).unwrap();
    assert!(requests.contains("fix add"), "the typed prompt never reached the model");
    assert_eq!(f.read_str("src/app.py").unwrap(), "def add(a, b):\n    return a - b\n", "nothing landed");
    let agents = f.cairn(&["list-agents", "--json"]).ok().json();
    let id = agents[0]["id"].as_str().unwrap().to_string();
    let diff = f.cairn(&["diff", &id]).ok().stdout;
    let headers: Vec<&str> = diff.lines().filter(|l| l.starts_with("diff --git")).collect();
    assert_eq!(headers, ["diff --git a/src/app.py b/src/app.py"], "{diff}");
    assert!(diff.contains("+    return a + b"), "{diff}");
}

/// What the agent prints reaches the user's terminal filtered the way a terminal reads it: a
/// clipboard write hidden behind an allowed title (cut by ESC, CAN, or an 8-bit OSC
/// introducer) or behind a control inside the escape never sets tmux's clipboard, which the
/// same bytes printed outside do.
#[test]
fn a_clipboard_write_hidden_in_an_allowed_sequence_never_reaches_the_terminal() {
    let f = Fixture::with_files(&[("a.txt", "a\n")]);
    let t = Tmux::new();
    t.cmd(&["new-session", "-d", "-s", "t", "-x", "100", "-y", "30", "sh"]);
    t.cmd(&["set-option", "-g", "set-clipboard", "on"]);
    let b64 = |s: &str| base64_of(s.as_bytes());
    // The control: printed by the pane's own shell, it lands in tmux's buffers.
    let control = format!(r"printf '\033]52;c;{}\007'; echo CONTROL-$((1+1))", b64("CONTROL"));
    t.cmd(&["send-keys", "-t", "t", &control, "Enter"]);
    t.wait_for("CONTROL-2");
    wait_until(30, "the control reached tmux's clipboard", || t.cmd(&["list-buffers"]).contains("CONTROL"));
    let script = format!(
        "printf 'A\\033]0;t\\033]52;c;{}\\007'\nprintf 'B\\033]2;t\\030\\033]52;c;{}\\007'\nprintf 'C\\302\\23552;c;{}\\007'\nprintf 'D\\23552;c;{}\\007'\nprintf 'E\\033\\001]52;c;{}\\007'\nprintf 'F\\033\\177]52;c;{}\\007'\necho AGENT-$((2+2))\n",
        b64("LEAKESC"), b64("LEAKCAN"), b64("LEAKC1UTF8"), b64("LEAKC1RAW"), b64("LEAKC0"), b64("LEAKDEL")
    );
    f.write("agent.sh", &script);
    let line = cairn_line(&f, "wrap -- sh agent.sh; echo WRAP-EXIT=$?");
    t.cmd(&["send-keys", "-t", "t", &line, "Enter"]);
    t.wait_for("WRAP-EXIT=0");
    assert!(t.pane().contains("AGENT-4"), "{}", t.pane());
    let buffers = t.cmd(&["list-buffers"]);
    assert!(!buffers.contains("LEAK"), "a clipboard write got through: {buffers}");
}

fn base64_of(bytes: &[u8]) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | (b as u32) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() { ABC[(n >> (18 - 6 * i) & 63) as usize] as char } else { '=' });
        }
    }
    out
}
