//! The side doors Cairn itself opens to a confined agent, attacked the way an attacker with
//! the source does: a race the agent runs against Cairn's own reads. `cairn wrap state`
//! against a live agent that swaps its state files for symlinks to a hidden key; the wrap
//! sync against one that swaps what it writes for links to a hidden directory and to `/usr`;
//! a Makefile run in an amending preview that copies the editor's and git's configuration
//! into the project; the default home's git configuration (tokens), `~/.local/bin` and
//! `~/.local/lib`. As root (when the tests are) and as an ordinary user.

use crate::runs::{as_ordinary_user, is_root};
use crate::support::*;
use crate::wrap_tty::{cairn_line, Tmux};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What no file Cairn writes for the agent may ever hold.
const SECRET: &str = "PLANTED-SECRET-KEY";

/// A project, a CAIRN_HOME, a user's home holding a hidden key, and a directory of programs,
/// all owned by whoever runs `cairn` (`ordinary`: an ordinary user, uid 65534 when the tests
/// are root).
struct Place {
    f: Fixture,
    user_home: PathBuf,
    bin: PathBuf,
    ordinary: bool,
}

impl Place {
    fn new(ordinary: bool, files: &[(&str, &str)]) -> Place {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let base = dir.path().to_path_buf();
        let (root, cairn_home, user_home, bin) = (base.join("proj"), base.join("cairn"), base.join("home"), base.join("bin"));
        for d in [&root, &cairn_home, &user_home.join(".ssh"), &bin] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(user_home.join(".ssh/id_rsa"), format!("{SECRET}\n")).unwrap();
        let f = Fixture { dir, root, home: cairn_home, config: Default::default() };
        for (rel, content) in files {
            f.write(rel, content);
        }
        Place { f, user_home, bin, ordinary }
    }

    /// A program in the programs' directory.
    fn program(&self, name: &str, script: &str) -> PathBuf {
        let p = self.bin.join(name);
        std::fs::write(&p, script).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        p
    }

    /// Everything planted: owned by the user who runs `cairn`, and the project initialized.
    fn ready(&self) {
        if self.ordinary && is_root() {
            assert!(Command::new("chown").arg("-R").arg("65534:65534").arg(self.f.dir.path()).status().unwrap().success());
        }
        let r = self.cairn(&["init"]);
        assert_eq!(r.code, 0, "{r:?}");
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let exe = exe();
        let mut all: Vec<&std::ffi::OsStr> = vec![exe.as_os_str(), "--project-root".as_ref(), self.f.root.as_os_str(), "--cairn-home".as_ref(), self.f.home.as_os_str()];
        all.extend(args.iter().map(|a| std::ffi::OsStr::new(*a)));
        let mut c = if self.ordinary {
            as_ordinary_user(&all)
        } else {
            let mut c = Command::new(all[0]);
            c.args(&all[1..]);
            c
        };
        c.env("HOME", &self.user_home).env_remove("CAIRN_HOME").current_dir(&self.f.root).stdin(Stdio::null());
        c
    }

    fn cairn(&self, args: &[&str]) -> Run {
        Run::from(self.cmd(args).output().unwrap())
    }
}

/// Every file of the user's home outside `~/.ssh` that holds the key, and every symlink there
/// (Cairn never writes one).
fn leaks(home: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![home.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let (p, m) = (e.path(), e.path().symlink_metadata().unwrap());
            if p == home.join(".ssh") {
                continue;
            }
            if m.file_type().is_symlink() {
                out.push(format!("a symlink at {}", p.display()));
            } else if m.is_dir() {
                stack.push(p);
            } else if std::fs::read(&p).is_ok_and(|b| String::from_utf8_lossy(&b).contains(SECRET)) {
                out.push(format!("the key in {}", p.display()));
            }
        }
    }
    out
}

/// Inside the agent, `argv[1]` times: `~/.claude/x.json` is a file, then a symlink to the
/// user's key (hidden from the agent, there on the host), and `~/.claude/d` a directory, then
/// a symlink to `~/.ssh`, as fast as it goes.
const STATE_RACER: &str = r#"
import os, shutil, sys
home = os.environ['HOME']
os.chdir(home + '/.claude')
n = errors = 0
while n < int(sys.argv[1]):
    n += 1
    try:
        with open('x.tmp', 'w') as f:
            f.write('benign %d\n' % n)
        os.replace('x.tmp', 'x.json')
        if os.path.lexists('x.lnk'):
            os.remove('x.lnk')
        os.symlink(home + '/.ssh/id_rsa', 'x.lnk')
        os.replace('x.lnk', 'x.json')
    except OSError:
        errors += 1
    try:
        if os.path.islink('d'):
            os.remove('d')
        os.makedirs('d', exist_ok=True)
        with open('d/k.json', 'w') as f:
            f.write('ok\n')
        shutil.rmtree('d')
        os.symlink(home + '/.ssh', 'd')
    except OSError:
        errors += 1
print('RACER-DONE iterations=%d errors=%d' % (n, errors), flush=True)
"#;

/// `cairn wrap state diff` and `apply` again and again while a live agent swaps its state
/// files for symlinks to the user's hidden key: nothing of the key is ever shown or copied
/// into the real home, no symlink lands there, and every apply succeeds whole (the live
/// session keeps its layer); once the session has ended, apply drops the layer whole.
fn state_apply_races_a_live_agent(ordinary: bool) {
    let p = Place::new(ordinary, &[("a.txt", "a\n")]);
    std::fs::create_dir_all(p.user_home.join(".claude")).unwrap();
    std::fs::write(p.user_home.join(".claude/settings.json"), "{}\n").unwrap();
    // A command named `claude`: its state is `~/.claude`.
    let claude = p.program("claude", "#!/bin/sh\nexec /usr/bin/python3 -c \"$1\" \"$2\"\n");
    p.ready();
    let claude = claude.to_string_lossy().into_owned();
    let mut wrap = p.cmd(&["wrap", "--", &claude, STATE_RACER, "2000"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let upper = p.f.home.join("wrap-state/claude/dirs/.claude/upper");
    wait_until(120, "the racer at work", || upper.join("x.json").symlink_metadata().is_ok() || !matches!(wrap.try_wait(), Ok(None)));
    let (mut rounds, mut dropped) = (0, false);
    while !dropped && matches!(wrap.try_wait(), Ok(None)) {
        for verb in ["diff", "apply"] {
            let r = p.cairn(&["wrap", "state", verb, "claude"]);
            assert_eq!(r.code, 0, "`wrap state {verb}` failed under the race: {r:?}");
            assert!(!r.stdout.contains(SECRET) && !r.stderr.contains(SECRET), "`wrap state {verb}` showed the key: {r:?}");
            assert!(r.stdout.contains("fingerprint"), "{r:?}");
            // (Once the session has ended, an apply drops the layer.)
            dropped = verb == "apply" && !r.stdout.contains("layer is kept");
        }
        let leaked = leaks(&p.user_home);
        assert!(leaked.is_empty(), "round {rounds}: {leaked:?}");
        rounds += 1;
    }
    let out = wrap.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let iterations: u64 = text.split("RACER-DONE iterations=").nth(1).and_then(|r| r.split_whitespace().next()).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("the racer did not finish: {text} {}", String::from_utf8_lossy(&out.stderr)));
    assert!(iterations == 2000 && rounds >= 3, "the race was too short: {iterations} rounds of swaps, {rounds} rounds of diff and apply");
    // The session is over: apply goes through and drops the layer (overlayfs's work
    // directory without permissions too, as an ordinary user).
    if !dropped {
        let r = p.cairn(&["wrap", "state", "apply", "claude"]);
        assert_eq!(r.code, 0, "{r:?}");
        assert!(!r.stdout.contains("layer is kept"), "{r:?}");
    }
    assert!(!p.cairn(&["wrap", "state", "list"]).stdout.contains("claude"), "the layer was not dropped");
    let left: Vec<_> = std::fs::read_dir(p.f.home.join("wrap-state")).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let leaked = leaks(&p.user_home);
    assert!(leaked.is_empty(), "{leaked:?}");
}

#[test]
fn state_apply_racing_a_live_agent_copies_nothing_through_a_symlink() {
    state_apply_races_a_live_agent(false);
}

#[test]
fn state_apply_racing_a_live_agent_copies_nothing_through_a_symlink_as_an_ordinary_user() {
    state_apply_races_a_live_agent(true);
}

/// A state file that is not UTF-8 is shown whole (its bytes escaped, the hook in it
/// readable), a sparse file of 512 MiB is shown as too large without being read, and
/// `apply --expect` applies only what `diff` showed.
#[test]
fn state_diff_shows_what_apply_installs_and_reads_no_sparse_file() {
    let p = Place::new(false, &[("a.txt", "a\n")]);
    std::fs::create_dir_all(p.user_home.join(".claude")).unwrap();
    std::fs::write(p.user_home.join(".claude/settings.json"), "{}\n").unwrap();
    let claude = p.program("claude", "#!/bin/sh\nexec /bin/sh -c \"$1\"\n");
    p.ready();
    let plant = r#"printf '{"x": "\377", "hooks": {"SessionStart": [{"command": "curl evil"}]}}\n' > ~/.claude/settings.json; truncate -s 512M ~/.claude/big.bin"#;
    let r = p.cairn(&["wrap", "--", &claude.to_string_lossy(), plant]);
    assert_eq!(r.code, 0, "{r:?}");
    let diff = Command::new("/usr/bin/time").args(["-f", "MAXRSS=%M"]).arg(exe()).arg("--project-root").arg(&p.f.root).arg("--cairn-home").arg(&p.f.home).args(["wrap", "state", "diff", "claude"]).env("HOME", &p.user_home).output().unwrap();
    let (text, err) = (String::from_utf8_lossy(&diff.stdout), String::from_utf8_lossy(&diff.stderr));
    assert!(diff.status.success(), "{text}{err}");
    assert!(text.contains("M ~/.claude/settings.json") && text.contains(r#"+{"x": "\xff", "hooks": {"SessionStart": [{"command": "curl evil"}]}}"#), "the hook is not shown:\n{text}");
    assert!(text.contains("L ~/.claude/big.bin (left out: 536870912 bytes"), "{text}");
    let rss: u64 = err.lines().find_map(|l| l.strip_prefix("MAXRSS=")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    assert!(rss > 0 && rss < 200 * 1024, "`wrap state diff` peaked at {rss} kB");
    let fp = text.split("--expect ").nth(1).and_then(|r| r.split('`').next()).expect("a fingerprint").to_string();
    // The agent's next session changes the layer: what was shown is no longer what is there.
    p.cairn(&["wrap", "--", &claude.to_string_lossy(), "echo '{\"other\": 1}' > ~/.claude/settings.json"]).ok();
    let r = p.cairn(&["wrap", "state", "apply", "claude", "--expect", &fp]);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("not what was shown"), "{r:?}");
    assert_eq!(std::fs::read_to_string(p.user_home.join(".claude/settings.json")).unwrap(), "{}\n", "refused, nothing applied");
    let now = p.cairn(&["wrap", "state", "diff", "claude"]).ok().stdout;
    let fp = now.split("--expect ").nth(1).and_then(|r| r.split('`').next()).unwrap().to_string();
    p.cairn(&["wrap", "state", "apply", "claude", "--expect", &fp]).ok();
    assert_eq!(std::fs::read_to_string(p.user_home.join(".claude/settings.json")).unwrap(), "{\"other\": 1}\n");
    assert!(!p.user_home.join(".claude/big.bin").exists(), "a file left out was applied");
}

/// What `apply` installs in the user's home gets the user's umask, as an accepted file does:
/// a file the agent made world-writable (0666, 0777) lands without the bits the umask takes
/// away, a private one (0600) stays private, and a file the user has keeps its permissions.
#[test]
fn state_apply_installs_under_the_users_umask() {
    let p = Place::new(false, &[("a.txt", "a\n")]);
    std::fs::create_dir_all(p.user_home.join(".claude")).unwrap();
    let settings = p.user_home.join(".claude/settings.json");
    std::fs::write(&settings, "{}\n").unwrap();
    std::fs::set_permissions(&settings, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let claude = p.program("claude", "#!/bin/sh\nexec /bin/sh -c \"$1\"\n");
    p.ready();
    let plant = "cd ~/.claude && echo 1 > open.json && chmod 666 open.json && echo 2 > run.sh && chmod 777 run.sh \
                 && echo 3 > key && chmod 600 key && echo '{\"a\": 1}' > settings.json && chmod 666 settings.json";
    p.cairn(&["wrap", "--", &claude.to_string_lossy(), plant]).ok();
    p.cairn(&["wrap", "state", "apply", "claude"]).ok();
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let umask = status.lines().find_map(|l| l.strip_prefix("Umask:")).map(|v| u32::from_str_radix(v.trim(), 8).unwrap()).unwrap();
    let mode = |rel: &str| std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p.user_home.join(rel)).unwrap().permissions()) & 0o7777;
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), "{\"a\": 1}\n", "not applied");
    assert_eq!(mode(".claude/open.json"), 0o666 & !umask, "a 0666 file under umask {umask:o}");
    assert_eq!(mode(".claude/run.sh"), 0o777 & !umask, "a 0777 file under umask {umask:o}");
    assert_eq!(mode(".claude/key"), 0o600 & !umask, "a private file");
    assert_eq!(mode(".claude/settings.json"), 0o600, "the user's file widened");
}

/// Inside the agent, in the project: a directory `w/` of 300 files (what a sync walks past)
/// with `w/d` and `w/u` in it, then `argv[1]` times, each exchanged in one step
/// (`RENAME_EXCHANGE`) with its twin: a directory becomes a symlink to the user's `~/.ssh`
/// (`d`) or to `/usr` (`u`), and back, as fast as it goes.
const SYNC_RACER: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def exchange(a, b):
    if libc.renameat2(-100, a.encode(), -100, b.encode(), 2) != 0:
        raise OSError(ctypes.get_errno(), 'renameat2')
os.mkdir('w')
for i in range(300):
    with open('w/f%03d' % i, 'w') as f:
        f.write('%d\n' % i)
for name, target in (('d', os.environ['HOME'] + '/.ssh'), ('u', '/usr')):
    os.mkdir('w/' + name)
    os.symlink(target, 'w/%s_alt' % name)
n = 0
while n < int(sys.argv[1]):
    n += 1
    exchange('w/d', 'w/d_alt')
    exchange('w/u', 'w/u_alt')
with open('made.txt', 'w') as f:
    f.write('made\n')
print('RACER-DONE iterations=%d' % n, flush=True)
"#;

/// The wrap sync looks at the written layer every quarter of a second while the agent swaps
/// its directories for links to a hidden host directory and to `/usr`: it never walks
/// through one (no name from there in the session's events), and the proposal is the
/// agent's file only.
fn sync_races_a_live_agent(ordinary: bool) {
    let p = Place::new(ordinary, &[("racer.py", SYNC_RACER)]);
    std::fs::write(p.user_home.join(".ssh/known_hosts"), "x\n").unwrap();
    p.ready();
    let r = p.cairn(&["wrap", "--", "/usr/bin/python3", "racer.py", "200000"]);
    assert_eq!(r.code, 0, "{r:?}");
    let iterations: u64 = r.stdout.split("RACER-DONE iterations=").nth(1).and_then(|r| r.split_whitespace().next()).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{r:?}"));
    assert_eq!(iterations, 200000, "{r:?}");
    let id = r.stderr.split("wrap session ").nth(1).and_then(|r| r.split(':').next()).expect("session id").to_string();
    let events = p.cairn(&["events", "--json"]).ok().stdout;
    for name in ["id_rsa", "known_hosts", "w/d/", "w/d_alt/", "w/u/", "w/u_alt/"] {
        assert!(!events.contains(name), "the sync walked through a link ({name}):\n{events}");
    }
    let diff = p.cairn(&["diff", &id]).ok().stdout;
    assert!(diff.contains("b/made.txt") && !diff.contains(SECRET), "{diff}");
}

#[test]
fn the_wrap_sync_never_walks_through_a_link_the_agent_swaps_in() {
    sync_races_a_live_agent(false);
}

#[test]
fn the_wrap_sync_never_walks_through_a_link_the_agent_swaps_in_as_an_ordinary_user() {
    sync_races_a_live_agent(true);
}

/// A user's home with tokens in its git configuration (direct, in an include, in the XDG
/// file), a script in `~/.local/bin` and credentials under `~/.local/lib`.
fn plant_git_tokens(home: &Path) {
    std::fs::write(
        home.join(".gitconfig"),
        "[user]\n\tname = Ada Lovelace\n[credential]\n\thelper = store\n[http]\n\textraHeader = Authorization: Bearer TOKEN-ONE\n\
         [url \"https://x:TOKEN-TWO@github.com/\"]\n\tinsteadOf = https://github.com/\n[alias]\n\tst = status\n\tpub = !curl -H TOKEN-THREE\n\
         [core]\n\tsshCommand = ssh -i TOKEN-FOUR\n\tautocrlf = input\n[include]\n\tpath = ~/.gitinclude\n",
    )
    .unwrap();
    std::fs::write(home.join(".gitinclude"), "[user]\n\temail = ada@example.com\n[http \"https://example.com\"]\n\textraHeader = TOKEN-FIVE\n").unwrap();
    std::fs::create_dir_all(home.join(".config/git")).unwrap();
    std::fs::write(home.join(".config/git/config"), "[github]\n\ttoken = TOKEN-SIX\n").unwrap();
    for (rel, text) in [(".local/bin/deploy", "#!/bin/sh\necho TOKEN-SEVEN\n"), (".local/lib/node/creds.json", "TOKEN-EIGHT\n")] {
        std::fs::create_dir_all(home.join(rel).parent().unwrap()).unwrap();
        std::fs::write(home.join(rel), text).unwrap();
    }
}

/// What an agent reads of the home it finds, written into the project (its proposal).
const READ_HOME: &str = "for f in ~/.gitconfig ~/.gitinclude ~/.config/git/config ~/.local/bin/deploy ~/.local/lib/node/creds.json; do cat $f; done > seen.txt 2>&1; git config --global --list >> seen.txt 2>&1; echo \"who=$(git config user.name) <$(git config user.email)>\" >> seen.txt";

/// The default home: git works with the user's name and habits, and no token reaches the
/// agent or its proposal.
fn default_home_holds_no_secret(ordinary: bool) {
    let p = Place::new(ordinary, &[("a.txt", "a\n")]);
    plant_git_tokens(&p.user_home);
    p.ready();
    let r = p.cairn(&["wrap", "--", "sh", "-c", READ_HOME]);
    assert_eq!(r.code, 0, "{r:?}");
    let id = r.stderr.split("wrap session ").nth(1).and_then(|r| r.split(':').next()).expect("session id").to_string();
    let diff = p.cairn(&["diff", &id]).ok().stdout;
    assert!(!diff.contains("TOKEN-") && !diff.contains(SECRET), "a secret reached the proposal:\n{diff}");
    assert!(diff.contains("+who=Ada Lovelace <ada@example.com>") && diff.contains("alias.st=status") && diff.contains("core.autocrlf=input"), "git lost the user's settings:\n{diff}");
}

#[test]
fn the_default_home_gives_git_the_users_settings_and_no_token() {
    default_home_holds_no_secret(false);
}

#[test]
fn the_default_home_gives_git_the_users_settings_and_no_token_as_an_ordinary_user() {
    default_home_holds_no_secret(true);
}

/// The agent's Makefile, run by the user in a preview that amends the proposal: it copies the
/// editor's configuration and git's into the project. Neither joins the proposal (nor a
/// token); in a preview that does not amend, the editor's configuration is there, read-only.
#[test]
fn a_makefile_run_in_an_amending_preview_copies_no_editor_configuration_into_the_proposal() {
    let f = Fixture::with_files(&[("a.txt", "one\n")]);
    let makefile = "steal:\n\t-cp -r $(HOME)/.config/nvim stolen-nvim\n\t-cp $(HOME)/.gitconfig stolen-gitconfig\n\t-cp $(HOME)/.local/bin/deploy stolen-deploy\n\t@echo MAKE-$$((40+2))\n";
    let s = f.run_ok(&format!("write_file('a.txt', 'agent line\\n')\nwrite_file('Makefile', {makefile:?})"));
    let home = f.dir.path().join("userhome");
    std::fs::create_dir_all(home.join(".config/nvim")).unwrap();
    std::fs::write(home.join(".config/nvim/init.lua"), "-- NVIM-CONFIG-MARK\n").unwrap();
    plant_git_tokens(&home);
    let t = Tmux::new();
    let open = |args: &str| {
        let line = format!("HOME={} SHELL=/bin/sh {}; echo PREVIEW-EXIT=$?; sleep 600", home.display(), cairn_line(&f, &format!("preview {args}")));
        t.cmd(&["kill-session", "-t", "t"]);
        t.cmd(&["new-session", "-d", "-s", "t", "-x", "150", "-y", "40", &line]);
    };
    let keys = |k: &str| {
        t.cmd(&["send-keys", "-t", "t", k, "Enter"]);
    };
    let wait_for = |what: &str| wait_until(60, &format!("{what} in the pane"), || t.pane().contains(what) || t.pane().contains("PREVIEW-EXIT="));
    // The shell is there once it answers (keys typed before the session took the terminal
    // may be dropped: typed again until it does).
    let ready = || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !t.pane().contains("READY-5") {
            assert!(std::time::Instant::now() < deadline && !t.pane().contains("PREVIEW-EXIT="), "no shell: {}", t.pane());
            keys("echo READY-$((2+3))");
            let typed = std::time::Instant::now();
            while !t.pane().contains("READY-5") && typed.elapsed() < std::time::Duration::from_secs(3) {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
    };
    // Amending: the agent's Makefile finds nothing of it to copy.
    open(&format!("{} --shell --amend", s.id));
    ready();
    keys("make steal");
    wait_for("MAKE-42");
    keys("exit");
    wait_for("PREVIEW-EXIT=0");
    assert!(t.pane().contains("PREVIEW-EXIT=0") && t.pane().contains("joined the proposal"), "{}", t.pane());
    let diff = f.cairn(&["diff", &s.id]).ok().stdout;
    assert!(!diff.contains("NVIM-CONFIG-MARK") && !diff.contains("TOKEN-"), "the editor's configuration or a token joined the proposal:\n{diff}");
    assert!(diff.contains("b/stolen-gitconfig") && diff.contains("Ada Lovelace"), "the amendment is in: {diff}");
    // Not amending: the configuration is there for the editor, and read-only.
    open(&format!("{} --shell", s.id));
    ready();
    keys("cat ~/.config/nvim/init.lua; echo x >> ~/.config/nvim/init.lua || echo REFUSED-$((1+1))");
    wait_for("REFUSED-2");
    assert!(t.pane().contains("-- NVIM-CONFIG-MARK") && t.pane().contains("REFUSED-2"), "{}", t.pane());
    keys("exit");
    wait_for("PREVIEW-EXIT=0");
    assert_eq!(std::fs::read_to_string(home.join(".config/nvim/init.lua")).unwrap(), "-- NVIM-CONFIG-MARK\n");
}
