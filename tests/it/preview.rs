//! Preview sessions (`cairn preview ID`), used the way a user does: in a real tmux pane, a
//! real Neovim inside the confined copy-on-write view of the agent's version. What the user
//! writes there never reaches the tree, and reaches the proposal only with `--amend`; nothing
//! of the unchanged tree is copied; commands in it are confined like `cairn wrap`'s; forwarded
//! ports reach the view from the host's 127.0.0.1.

use crate::support::*;
use crate::wrap_tty::{cairn_line, Tmux};
use std::io::{Read, Write};
use std::path::Path;

fn nvim() -> String {
    format!("{}/.venv/nvim-0.11/bin/nvim", env!("CARGO_MANIFEST_DIR"))
}

/// Bytes of the regular files under `dir`, and whether a file named `name` is among them.
fn bytes_under(dir: &Path, name: &str) -> (u64, bool) {
    let (mut total, mut found) = (0, false);
    let Ok(rd) = std::fs::read_dir(dir) else { return (0, false) };
    for e in rd.flatten() {
        let Ok(m) = std::fs::symlink_metadata(e.path()) else { continue };
        if m.is_dir() {
            let (t, f) = bytes_under(&e.path(), name);
            total += t;
            found |= f;
        } else if m.is_file() {
            total += m.len();
            found |= e.file_name() == name;
        }
    }
    (total, found)
}

/// Starts `cairn preview ID ARGS` in a tmux session `t`; the pane says `PREVIEW-EXIT=<code>`
/// when it ends.
fn open(f: &Fixture, t: &Tmux, env: &str, args: &str) {
    let line = format!("{env} {}; echo PREVIEW-EXIT=$?; sleep 600", cairn_line(f, &format!("preview {args}")));
    t.cmd(&["new-session", "-d", "-s", "t", "-x", "120", "-y", "40", &line]);
}

/// Panes opened (and left) first, so that the next pane's id is `%{n}`: `%1` in a prompt's
/// template is its answer, and pane `%11` must still get its own.
fn burn_pane_ids(t: &Tmux, n: usize) {
    t.cmd(&["new-session", "-d", "-s", "pre", "sleep 600"]);
    for _ in 1..n {
        t.cmd(&["new-window", "-d", "-t", "pre", "sleep 600"]);
    }
}

fn keys(t: &Tmux, keys: &[&str]) {
    for k in keys {
        t.cmd(&["send-keys", "-t", "t", k]);
    }
}

/// Edits `a.txt` and writes `new.txt` in the preview's Neovim, then quits it.
fn edit_and_quit(f: &Fixture, t: &Tmux, id: &str, big: u64) {
    t.wait_for("agent line");
    let dir = f.home.join("workspaces").join(id);
    // Open: the proposal's one file staged, nothing of the unchanged tree.
    let (open_bytes, big_copied) = bytes_under(&dir, "big.txt");
    assert!(!big_copied && open_bytes < 64 * 1024, "the preview copied the tree: {open_bytes} bytes (big.txt is {big})");
    keys(t, &[":s/agent line/user line/", "Enter", ":w", "Enter", ":e new.txt", "Enter", "iuser file", "Escape", ":w", "Enter"]);
    let upper = dir.join("rw/upper");
    wait_until(30, "the preview's writes", || std::fs::read(upper.join("new.txt")).is_ok_and(|b| b.starts_with(b"user file")) && std::fs::read(upper.join("a.txt")).is_ok_and(|b| b.starts_with(b"user line")));
    let (bytes, big_copied) = bytes_under(&dir, "big.txt");
    assert!(!big_copied && bytes < 64 * 1024, "only the changed files and the user's: {bytes} bytes");
    keys(t, &[":qa!", "Enter"]);
    t.wait_for("PREVIEW-EXIT=0");
}

#[test]
fn a_previews_edits_never_reach_the_tree_and_reach_the_proposal_only_amended() {
    let f = Fixture::with_files(&[("a.txt", "one\n"), ("big.txt", &"x".repeat(2 << 20))]);
    let s = f.run_ok("write_file('a.txt', 'agent line\\n')");
    let diff = f.cairn(&["diff", &s.id]).ok().stdout;
    let t = Tmux::new();
    open(&f, &t, "", &format!("{} --file a.txt --line 1 --editor {}", s.id, nvim()));
    edit_and_quit(&f, &t, &s.id, 2 << 20);
    assert!(t.pane().contains("were thrown away"), "{}", t.pane());
    assert_eq!(f.read_str("a.txt").as_deref(), Some("one\n"), "the tree is untouched");
    assert!(f.read("new.txt").is_none());
    assert_eq!(f.cairn(&["diff", &s.id]).ok().stdout, diff, "the proposal is untouched");
    assert!(!f.home.join("workspaces").join(&s.id).join("rw").exists(), "the written layer is thrown away");
    drop(t);

    // Amended: the edit joins the proposal as its next revision; the tree still has nothing.
    let t = Tmux::new();
    open(&f, &t, "", &format!("{} --amend --file a.txt --line 1 --editor {}", s.id, nvim()));
    edit_and_quit(&f, &t, &s.id, 2 << 20);
    assert!(t.pane().contains("joined the proposal"), "{}", t.pane());
    assert_eq!(f.read_str("a.txt").as_deref(), Some("one\n"), "the tree is untouched");
    assert!(f.read("new.txt").is_none());
    let amended = f.cairn(&["diff", &s.id]).ok().stdout;
    assert!(amended.contains("+user line") && amended.contains("+user file") && !amended.contains("+agent line"), "{amended}");
    assert_eq!(f.status(&s.id).state.as_str(), "reviewing");
    let log = f.cairn(&["log", &s.id]).ok().stdout;
    assert!(log.contains("amended by the user in a preview"), "{log}");
}

#[test]
fn amending_needs_a_proposal_under_review() {
    let f = Fixture::with_files(&[("a.txt", "one\n")]);
    let s = f.run_ok("write_file('a.txt', 'agent line\\n')");
    f.cairn(&["accept", &s.id]).ok();
    let t = Tmux::new();
    open(&f, &t, "", &format!("{} --amend --editor {}", s.id, nvim()));
    t.wait_for("PREVIEW-EXIT=1");
    assert!(t.pane().contains("amend its proposal"), "{}", t.pane());
}

#[test]
fn commands_in_a_preview_see_no_home_secrets_and_reach_no_host_listener() {
    let f = Fixture::with_files(&[("a.txt", "one\n")]);
    let s = f.run_ok("write_file('a.txt', 'agent line\\n')");
    let home = f.dir.path().join("userhome");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "SECRET-KEY-MATERIAL\n").unwrap();
    std::fs::write(home.join(".netrc"), "machine x password SECRET-NETRC\n").unwrap();
    let host = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    host.set_nonblocking(true).unwrap();
    let port = host.local_addr().unwrap().port();
    let t = Tmux::new();
    open(&f, &t, &format!("HOME={} SHELL=/bin/sh", home.display()), &format!("{} --shell", s.id));
    keys(&t, &["echo READY-$((2+3))", "Enter"]);
    t.wait_for("READY-5");
    keys(&t, &["cat a.txt ~/.ssh/id_rsa ~/.netrc; echo CAT-$((1+1))", "Enter"]);
    t.wait_for("CAT-2");
    let probe = format!("python3 -c \"import socket; s=socket.socket(); s.settimeout(3); print('REACH-' + ('yes' if s.connect_ex(('127.0.0.1', {port})) == 0 else 'no'))\"");
    keys(&t, &[&probe, "Enter"]);
    wait_until(30, "the probe", || t.pane().contains("REACH-yes") || t.pane().contains("REACH-no"));
    let pane = t.pane();
    assert!(pane.contains("agent line"), "the view is the agent's version: {pane}");
    assert!(!pane.contains("SECRET-KEY-MATERIAL") && !pane.contains("SECRET-NETRC"), "home secrets visible: {pane}");
    assert!(pane.contains("REACH-no"), "the host's listener was reached: {pane}");
    assert!(host.accept().is_err(), "a connection reached the host's listener");
    keys(&t, &["exit", "Enter"]);
    t.wait_for("PREVIEW-EXIT=0");
}

/// A free port of the host's loopback (bound, then let go).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn http_get(port: u16, path: &str) -> Option<String> {
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    c.set_read_timeout(Some(std::time::Duration::from_secs(5))).ok()?;
    write!(c, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").ok()?;
    let mut out = String::new();
    c.read_to_string(&mut out).ok()?;
    Some(out)
}

#[test]
fn a_forwarded_port_reaches_the_agents_web_app_from_the_hosts_loopback() {
    let f = Fixture::with_files(&[("index.html", "old page\n")]);
    let s = f.run_ok("write_file('index.html', 'the agent page\\n')");
    let port = free_port();
    f.home_config(&format!("[preview]\nports = [{port}]\n"));
    let t = Tmux::new();
    open(&f, &t, "SHELL=/bin/sh", &format!("{} --shell", s.id));
    keys(&t, &["echo READY-$((2+3))", "Enter"]);
    t.wait_for("READY-5");
    keys(&t, &[&format!("python3 -m http.server {port} --bind 127.0.0.1"), "Enter"]);
    wait_until(30, "the agent's page through the forwarded port", || http_get(port, "/index.html").is_some_and(|r| r.contains("the agent page")));
    keys(&t, &["C-c"]);
    keys(&t, &["exit", "Enter"]);
    t.wait_for("PREVIEW-EXIT=0");
    // The forwarder ended with the session.
    assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_ok(), "the host's port is free again");
}

/// A client attached to session `t` as a user's terminal: keys written to it are the user's,
/// what it draws (tmux's prompts) is read back.
struct Client {
    child: std::process::Child,
    screen: std::path::PathBuf,
}

impl Client {
    fn attach(f: &Fixture, t: &Tmux) -> Client {
        let screen = f.dir.path().join("client-screen");
        let out = std::fs::File::create(&screen).unwrap();
        let attach = format!("tmux -S {} attach -t t", t.socket().display());
        let child = std::process::Command::new("script").args(["-q", "-c", &attach, "/dev/null"]).env("TERM", "xterm").stdin(std::process::Stdio::piped()).stdout(out).spawn().unwrap();
        wait_until(30, "the client attached", || !t.cmd(&["list-clients"]).trim().is_empty());
        Client { child, screen }
    }
    fn type_keys(&mut self, keys: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(keys.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
    fn drawn(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.screen).unwrap_or_default()).into_owned()
    }
    /// Asks (with `ask`) until the `n`th confirmation prompt is drawn: the relay takes one
    /// question per look, and stays quiet a while after a refusal.
    fn ask_until_prompt(&self, n: usize, ask: impl Fn()) {
        let prompts = || self.drawn().split("cairn: type ").count() - 1;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
        while prompts() < n {
            assert!(std::time::Instant::now() < deadline, "no prompt {n}: {}", self.drawn());
            ask();
            let asked = std::time::Instant::now();
            while prompts() < n && asked.elapsed() < std::time::Duration::from_secs(3) {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
    }

    /// The code of the `n`th confirmation prompt drawn.
    fn code(&self, n: usize) -> String {
        let mut code = String::new();
        wait_until(30, "the confirmation prompt", || {
            let drawn = self.drawn();
            let codes: Vec<&str> = drawn.split("cairn: type ").skip(1).filter_map(|s| s.get(..3)).collect();
            codes.get(n).map(|c| code = c.to_string()).is_some()
        });
        code
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_accept_asked_in_the_preview_acts_only_once_the_user_types_the_code_in_tmux() {
    let f = Fixture::with_files(&[("a.txt", "one\n")]);
    let s = f.run_ok("write_file('a.txt', 'agent line\\n')");
    let t = Tmux::new();
    burn_pane_ids(&t, 11);
    open(&f, &t, "SHELL=/bin/sh", &format!("{} --shell", s.id));
    let mut client = Client::attach(&f, &t);
    keys(&t, &["echo READY-$((2+3))", "Enter"]);
    t.wait_for("READY-5");
    // What the preview's Neovim sends for :CairnAccept (agent code in the view can too).
    let ask = r#"printf '\033]5379;{"action":"accept","id":"other"}\007'"#;
    keys(&t, &[ask, "Enter"]);
    client.code(0);
    // Dismissed: nothing happens.
    client.type_keys("\x1b");
    wait_until(30, "the refusal", || client.drawn().contains("not confirmed"));
    assert_eq!(f.status(&s.id).state.as_str(), "reviewing");
    assert_eq!(f.read_str("a.txt").as_deref(), Some("one\n"));
    // After a refusal the relay stays quiet a while (no prompt after prompt): ask again
    // until the second prompt shows, then confirm with its code.
    client.ask_until_prompt(2, || keys(&t, &[ask, "Enter"]));
    let code = client.code(1);
    client.type_keys(&format!("{code}\r"));
    wait_until(30, "the accept", || f.status(&s.id).state.as_str() == "accepted");
    assert_eq!(f.read_str("a.txt").as_deref(), Some("agent line\n"));
    keys(&t, &["exit", "Enter"]);
    t.wait_for("PREVIEW-EXIT=0");
}

/// A hunk command typed in the preview (`:CairnAcceptHunk` sends the file and the line of the
/// agent's version under the cursor) lands that hunk only, once confirmed; a line in no hunk
/// asks nothing.
#[test]
fn a_hunk_accept_asked_in_the_preview_lands_the_hunk_at_that_line_once_confirmed() {
    let mut old = String::new();
    for i in 1..=30 {
        old.push_str(&format!("line {i}\n"));
    }
    let f = Fixture::with_files(&[("a.txt", &old)]);
    let new = old.replace("line 3\n", "agent three\n").replace("line 25\n", "agent twenty-five\n");
    let s = f.run_ok(&format!("write_file('a.txt', {new:?})"));
    let t = Tmux::new();
    open(&f, &t, "SHELL=/bin/sh", &format!("{} --shell", s.id));
    let mut client = Client::attach(&f, &t);
    keys(&t, &["echo READY-$((2+3))", "Enter"]);
    t.wait_for("READY-5");
    let file = f.root.join("a.txt");
    let ask = |line: usize| format!(r#"printf '\033]5379;{{"action":"accept_hunk","file":"{}","line":{line}}}\007'"#, file.display());
    // Line 10 is in no hunk: no prompt; then line 25's hunk (asked again until the relay's
    // next look takes it: one question per look), confirmed.
    keys(&t, &[&ask(10), "Enter"]);
    client.ask_until_prompt(1, || keys(&t, &[&ask(25), "Enter"]));
    let code = client.code(0);
    assert!(client.drawn().contains("accept the hunk at a.txt:25"), "the prompt names the hunk: {}", client.drawn());
    client.type_keys(&format!("{code}\r"));
    let want = old.replace("line 25\n", "agent twenty-five\n");
    wait_until(30, "the hunk landed", || f.read_str("a.txt").as_deref() == Some(want.as_str()));
    assert_eq!(f.status(&s.id).state.as_str(), "reviewing", "the rest of the proposal stays in review");
    keys(&t, &["exit", "Enter"]);
    t.wait_for("PREVIEW-EXIT=0");
}

/// What tmux shows comes from the view (a file name the agent chose): it is shown as it is,
/// never expanded as a tmux format (`#(cmd)` would run `cmd` on the host, `#{…}` read tmux).
#[test]
fn a_file_name_asked_from_the_preview_is_shown_literally_in_the_tmux_prompt() {
    let name = "q#{pane_id}#(echo X)%H,y.txt";
    let f = Fixture::with_files(&[(name, "one\n")]);
    let s = f.run_ok(&format!("write_file({name:?}, 'agent one\\n')"));
    let t = Tmux::new();
    open(&f, &t, "SHELL=/bin/sh", &format!("{} --shell", s.id));
    let mut client = Client::attach(&f, &t);
    keys(&t, &["echo READY-$((2+3))", "Enter"]);
    t.wait_for("READY-5");
    let file = f.root.join(name);
    // Quoted for the pane's shell and for printf: `#`, `{`, `(` are literal in both, `%` doubled.
    let ask = format!(r#"printf '\033]5379;{{"action":"accept_hunk","file":"{}","line":1}}\007'"#, file.display().to_string().replace('%', "%%"));
    client.ask_until_prompt(1, || keys(&t, &[&ask, "Enter"]));
    client.code(0);
    let drawn = client.drawn();
    let shown = name.replace(',', "\\x2c");
    assert!(drawn.contains(&format!("accept the hunk at {shown}:")), "the name is shown as it is: {drawn}");
    client.type_keys("\x1b");
    wait_until(30, "the refusal", || client.drawn().contains("not confirmed"));
    assert_eq!(f.status(&s.id).state.as_str(), "reviewing");
    keys(&t, &["exit", "Enter"]);
    t.wait_for("PREVIEW-EXIT=0");
}

/// What the user wrote in a preview is thrown away when it ends, and said where they look: the
/// preview's tmux pane closes with it (its last line goes too), so the tmux client shows it.
#[test]
fn the_thrown_away_message_reaches_the_tmux_client_when_the_pane_closes() {
    let f = Fixture::with_files(&[("a.txt", "one\n")]);
    let s = f.run_ok("write_file('a.txt', 'agent line\\n')");
    let t = Tmux::new();
    // The user's editor, and the preview in a split beside it, which closes when it ends.
    t.cmd(&["new-session", "-d", "-s", "t", "-x", "120", "-y", "40", "sleep 600"]);
    let line = format!("SHELL=/bin/sh {}", cairn_line(&f, &format!("preview {} --shell", s.id)));
    let pane = t.cmd(&["split-window", "-t", "t", "-P", "-F", "#{pane_id}", &line]).trim().to_string();
    let _client = Client::attach(&f, &t);
    t.cmd(&["send-keys", "-t", &pane, "echo mine > new.txt; exit", "Enter"]);
    wait_until(30, "the preview's pane to close", || !t.cmd(&["list-panes", "-a", "-F", "#{pane_id}"]).lines().any(|p| p == pane));
    wait_until(30, "the message on the client", || t.cmd(&["show-messages"]).contains("1 path(s) you wrote were thrown away"));
    assert_eq!(f.read_str("new.txt"), None);
}
