//! The git configuration a wrapped agent (and a preview) finds at `~/.gitconfig`, in place of
//! the user's own: generated from it by an allow-list. The user's configuration is read as
//! git resolves it (`git config --global --includes --list -z`, run where the session runs,
//! so conditional includes apply), and only the settings listed here are kept: who the user
//! is, line endings, diff, merge, pull and push habits, colours, aliases that run no shell,
//! URL rewrites without a user in them, git-lfs's filter. Nothing else passes: credential
//! helpers, `http.*` (extra headers, cookies, proxies), includes, `core.sshCommand`,
//! `core.askPass`, `core.hooksPath`, `core.fsmonitor`, signing keys, `sendemail.*`, and any
//! key this list does not know. The real `~/.gitconfig` and `~/.config/git/config` are hidden.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// Where the generated file is in the agent's home.
pub(crate) const FILE: &str = ".gitconfig";

/// Settings kept as they are (`section.name`, lowercase as git lists them; `section.*`: every
/// name of a section of plain switches).
const KEPT: &[&str] = &[
    "user.name", "user.email", "user.useconfigonly", "author.name", "author.email", "committer.name", "committer.email",
    "init.defaultbranch", "core.autocrlf", "core.eol", "core.safecrlf", "core.filemode", "core.ignorecase", "core.precomposeunicode",
    "core.quotepath", "core.whitespace", "core.excludesfile", "core.attributesfile", "core.abbrev", "core.longpaths", "core.symlinks",
    "core.untrackedcache", "core.commentchar", "core.commentstring", "core.editor", "core.pager", "core.compression",
    "core.bigfilethreshold", "core.checkstat", "core.trustctime", "core.preloadindex", "pull.rebase", "pull.ff", "push.default",
    "push.autosetupremote", "push.followtags", "fetch.prune", "fetch.prunetags", "fetch.parallel", "rebase.autosquash",
    "rebase.autostash", "rebase.updaterefs", "rebase.stat", "merge.conflictstyle", "merge.ff", "merge.log", "diff.algorithm",
    "diff.colormoved", "diff.renames", "diff.mnemonicprefix", "diff.noprefix", "diff.context", "diff.submodule",
    "status.showuntrackedfiles", "status.short", "status.branch", "status.submodulesummary", "column.ui", "branch.sort",
    "branch.autosetupmerge", "branch.autosetuprebase", "tag.sort", "rerere.enabled", "rerere.autoupdate", "help.autocorrect",
    "log.date", "log.decorate", "log.follow", "commit.verbose", "commit.cleanup", "commit.status", "blame.coloring",
    "grep.linenumber", "grep.patterntype", "interactive.singlekey", "safe.directory", "submodule.recurse", "protocol.version",
    "feature.manyfiles", "index.version", "am.threeway", "apply.whitespace", "transfer.fsckobjects", "fetch.fsckobjects",
    "color.*", "advice.*",
];

/// How long the user's git may take to list its configuration.
const GIT_TIME: Duration = Duration::from_secs(5);
/// How much of that listing is read.
const MAX_LISTING: u64 = 1 << 20;

/// The files a session's home shows in place of the user's: the git configuration, unless the
/// user shows their own (`.gitconfig` in `[wrap] home` or `read_paths`: `shown`).
pub(crate) fn files(project: &crate::project::Project, home: &Path, shown: &[String]) -> Vec<(String, String)> {
    if shown.iter().any(|s| s.trim_start_matches("~/").trim_matches('/') == FILE) {
        return Vec::new();
    }
    vec![(FILE.to_string(), generate(home, &project.root, &project.env))]
}

/// The agent's `~/.gitconfig` for the user whose home is `home`, from their git's listing
/// (run in `cwd` with `env`: `PATH`, and `XDG_CONFIG_HOME`/`GIT_CONFIG_GLOBAL` when the user
/// sets them). Without a git or a configuration, a file that says so: the user's stays hidden.
pub(crate) fn generate(home: &Path, cwd: &Path, env: &crate::project::HostEnv) -> String {
    let listing = env.get("PATH").and_then(|path| crate::runbox::which("git", path, None)).and_then(|git| list(&git, home, cwd, env)).unwrap_or_default();
    render(&listing)
}

/// `git config --global --includes --list -z`, bounded in time and size.
fn list(git: &Path, home: &Path, cwd: &Path, env: &crate::project::HostEnv) -> Option<Vec<u8>> {
    let mut cmd = std::process::Command::new(git);
    cmd.args(["config", "--global", "--includes", "--list", "-z"]).current_dir(cwd).env_clear().env("HOME", home).env("GIT_CONFIG_NOSYSTEM", "1");
    for k in ["PATH", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL"] {
        if let Some(v) = env.get(k) {
            cmd.env(k, v);
        }
    }
    let mut child = cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null()).spawn().ok()?;
    let mut out = child.stdout.take()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let read = (&mut out).take(MAX_LISTING).read_to_end(&mut buf).map(|_| buf);
        let _ = tx.send(read);
    });
    let listing = rx.recv_timeout(GIT_TIME).ok().and_then(Result::ok);
    if listing.is_none() {
        let _ = child.kill();
    }
    let status = child.wait().ok()?;
    listing.filter(|_| status.success())
}

/// The file for a listing (entries `key\nvalue\0`, or `key\0` for a bare switch).
fn render(listing: &[u8]) -> String {
    let mut out = String::from("# Your git configuration as an agent under Cairn sees it: settings of an allow-list only,\n# no credentials, helpers or commands (:help cairn-wrap-home).\n");
    let mut at: Option<(String, Option<String>)> = None;
    for entry in listing.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        let Ok(entry) = std::str::from_utf8(entry) else { continue };
        let (key, value) = match entry.split_once('\n') {
            Some((k, v)) => (k, Some(v)),
            None => (entry, None),
        };
        let Some((section, sub, name)) = split_key(key) else { continue };
        if !kept(section, sub, name, value) {
            continue;
        }
        let header = (section.to_string(), sub.map(str::to_string));
        if at.as_ref() != Some(&header) {
            match sub {
                Some(s) => out.push_str(&format!("[{section} {}]\n", quoted(s))),
                None => out.push_str(&format!("[{section}]\n")),
            }
            at = Some(header);
        }
        match value {
            Some(v) => out.push_str(&format!("\t{name} = {}\n", quoted(v))),
            None => out.push_str(&format!("\t{name}\n")),
        }
    }
    out
}

/// `section.sub.section.name` as git lists it: the section (up to the first dot), the
/// subsection (may hold dots) and the name (after the last dot).
fn split_key(key: &str) -> Option<(&str, Option<&str>, &str)> {
    let (section, rest) = key.split_once('.')?;
    let (sub, name) = match rest.rsplit_once('.') {
        Some((s, n)) => (Some(s), n),
        None => (None, rest),
    };
    let word = |w: &str, dots: bool| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || (dots && c == '.'));
    (word(section, false) && word(name, false) && sub.is_none_or(|s| !s.contains(['\n', '\0']))).then_some((section, sub, name))
}

/// Does a setting pass the allow-list?
fn kept(section: &str, sub: Option<&str>, name: &str, value: Option<&str>) -> bool {
    let v = value.unwrap_or("");
    match (section, sub) {
        // An alias runs git, never a shell, and names no URL with a user (a token) in it.
        ("alias", None) => !v.trim_start().starts_with('!') && !has_user(v),
        ("url", Some(base)) => matches!(name, "insteadof" | "pushinsteadof") && !base.contains('@') && !v.contains('@'),
        ("filter", Some("lfs")) => matches!(name, "clean" | "smudge" | "process" | "required"),
        ("color", _) => true,
        (_, None) => KEPT.iter().any(|k| *k == format!("{section}.{name}") || *k == format!("{section}.*")),
        _ => false,
    }
}

/// Does `text` hold a URL with a user part (`https://user:token@host`)?
fn has_user(text: &str) -> bool {
    text.match_indices("://").any(|(i, _)| text[i + 3..].split(|c: char| c == '/' || c.is_whitespace()).next().is_some_and(|authority| authority.contains('@')))
}

/// A value or subsection as git's files quote it.
fn quoted(v: &str) -> String {
    let mut s = String::from("\"");
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            '\u{8}' => s.push_str("\\b"),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests {
    use super::render;

    /// Each row: a listed setting, and whether the agent gets it.
    #[test]
    fn only_settings_of_the_allow_list_pass() {
        let rows: &[(&str, bool)] = &[
            ("user.name\nA U Thor", true),
            ("user.email\na@example.com", true),
            ("core.autocrlf\ninput", true),
            ("color.diff.meta\nblue", true),
            ("alias.co\ncheckout", true),
            ("alias.up\nlog @{u}..", true),
            ("url.https://github.com/.insteadof\ngh:", true),
            ("filter.lfs.clean\ngit-lfs clean -- %f", true),
            ("safe.directory\n*", true),
            ("credential.helper\nstore", false),
            ("credential.https://example.com.username\nSECRET-USER", false),
            ("http.extraheader\nAuthorization: Bearer SECRET1", false),
            ("http.https://example.com/.extraheader\nAuthorization: SECRET2", false),
            ("url.https://user:SECRET3@github.com/.insteadof\nhttps://github.com/", false),
            ("url.https://github.com/.insteadof\nhttps://SECRET4@github.com/", false),
            ("include.path\n~/.gitconfig.secret", false),
            ("includeif.gitdir:~/work/.path\n~/.work", false),
            ("core.sshcommand\nssh -i ~/.ssh/SECRET5", false),
            ("core.askpass\n/bin/SECRET6", false),
            ("core.hookspath\n~/hooks", false),
            ("core.fsmonitor\nrun-me", false),
            ("user.signingkey\nSECRET7", false),
            ("gpg.program\ngpg", false),
            ("sendemail.smtppass\nSECRET8", false),
            ("alias.pub\n!curl -H SECRET9", false),
            ("alias.push-it\npush https://me:SECRET10@example.com/x", false),
            ("github.token\nSECRET11", false),
            ("remote.origin.url\nhttps://SECRET12@example.com", false),
            ("filter.crypt.smudge\nSECRET13", false),
        ];
        for (entry, kept) in rows {
            let out = render(format!("{entry}\0").as_bytes());
            let value = entry.split_once('\n').map_or("", |(_, v)| v);
            match kept {
                true => assert!(out.contains(&format!("= \"{value}\"")), "{entry:?} was dropped:\n{out}"),
                false => assert!(!out.contains(value), "{entry:?} passed:\n{out}"),
            }
        }
    }

    #[test]
    fn the_file_is_what_git_reads_back() {
        let out = render(b"user.name\nA \"Q\" \\ U\0user.email\na@b\0color.ui\0url.https://x.example/a.b/.insteadof\nx:\0");
        assert!(out.contains("[user]\n\tname = \"A \\\"Q\\\" \\\\ U\"\n\temail = \"a@b\"\n[color]\n\tui\n[url \"https://x.example/a.b/\"]\n\tinsteadof = \"x:\"\n"), "{out}");
        let file = std::path::Path::new("/tmp").join(format!("cairn-gitconfig-test-{}", std::process::id()));
        std::fs::write(&file, &out).unwrap();
        let got = std::process::Command::new("git").args(["config", "--file"]).arg(&file).args(["--list", "-z"]).output();
        let _ = std::fs::remove_file(&file);
        let Ok(got) = got else { return };
        assert_eq!(String::from_utf8_lossy(&got.stdout), "user.name\nA \"Q\" \\ U\0user.email\na@b\0color.ui\0url.https://x.example/a.b/.insteadof\nx:\0");
    }
}
