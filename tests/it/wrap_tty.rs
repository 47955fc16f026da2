//! `cairn wrap`'s terminal, used the way a user does: in a real tmux pane. The agent gets a
//! pseudo-terminal of its own, relayed: it sees the pane's size and follows a resize, keys
//! reach it, Ctrl-C interrupts it, its exit status is `cairn wrap`'s; and what it pushes with
//! `TIOCSTI` never reaches the user's shell.

use crate::support::*;
use std::process::Command;

/// A tmux server of its own (a socket in a temp dir), killed on drop.
struct Tmux {
    dir: tempfile::TempDir,
}

impl Tmux {
    fn new() -> Tmux {
        Tmux { dir: tempfile::tempdir().unwrap() }
    }
    fn cmd(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").arg("-S").arg(self.dir.path().join("sock")).args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
    fn pane(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", "t"])
    }
    fn wait_for(&self, what: &str) {
        self.wait_count(what, 1);
    }
    /// Until `what` shows `n` times (a typed command line shows it once before it runs).
    fn wait_count(&self, what: &str, n: usize) {
        wait_until(30, what, || self.pane().matches(what).count() >= n);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.cmd(&["kill-server"]);
    }
}

fn cairn_line(f: &Fixture, rest: &str) -> String {
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
