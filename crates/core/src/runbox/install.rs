//! What a wrap session's command line runs ([`super::chain`]: the program, what wrappers
//! start, scripts, package runners' commands), found on the host as the confined side will
//! find it (its `PATH`, `env`'s changes to it, `env -C`), and the installations made visible
//! for it: where each program really lives (its `node_modules`, the directory above its
//! `bin/`, else its directory) and its `#!` interpreter's; never in `/run`, `/proc`, `/sys`,
//! `/dev` or a hidden path; narrowed to the program's file where the installation would
//! show a home, a directory right under it, a top-level directory or the project; a
//! project script's `#!` adds only a program on `PATH` or in a system directory.
//!
//! What the command line names and the view would not show (missing, hidden, outside it)
//! is refused before anything starts, naming the path and the `[wrap]` setting that shows
//! it ([`Error::NotVisible`]); a package a runner would fetch from a host the session does
//! not reach is a note.

use super::chain::{self, Kind, Named, Runner};
use crate::error::{Error, Result};
use std::path::{Component, Path, PathBuf};

/// The C library's search path when `PATH` is unset (`env -i prog`).
const UNSET_PATH: &str = "/bin:/usr/bin";
/// At most this many installations are added for one command line.
const MAX_ROOTS: usize = 24;

/// Where a command line runs: what decides what it finds and what its view shows.
pub(super) struct Where<'a> {
    pub home: &'a Path,
    /// The working directory (absolute, in the project).
    pub cwd: &'a Path,
    pub project: &'a Path,
    /// The command's `PATH`.
    pub path: &'a str,
    /// `[wrap] hide`.
    pub hide: &'a [PathBuf],
    /// What Cairn hides whatever the settings: the system's secrets, `$CAIRN_HOME`,
    /// `.agentfs` and `.grail`.
    pub secret: &'a [PathBuf],
    /// The entries of the home the view hides (relative to it).
    pub home_hidden: &'a [String],
    /// `[wrap] read_paths`.
    pub read_paths: &'a [PathBuf],
    /// The hosts the session reaches (None: any, `--network host`).
    pub hosts: Option<&'a [String]>,
}

/// The installations to show, and what to tell the user.
#[derive(Debug, Default)]
pub(super) struct Resolved {
    pub read_paths: Vec<PathBuf>,
    pub notes: Vec<String>,
}

/// A path that must be there in the view, and what it is to the command line.
struct Need {
    path: PathBuf,
    what: String,
    strict: bool,
}

/// Finds what `argv` runs and the installations to show; refuses what it names and the view
/// would not show (see the module docs).
pub(super) fn resolve(argv: &[String], at: &Where) -> Result<Resolved> {
    let mut out = Resolved::default();
    let mut needs: Vec<Need> = Vec::new();
    for n in chain::named(argv, at.home) {
        let cwd = normal(&at.cwd.join(n.dir.as_deref().unwrap_or("")));
        let search = match n.path.as_deref() {
            Some("") => UNSET_PATH,
            Some(p) => p,
            None => at.path,
        };
        let what = describe(&n);
        match n.kind {
            Kind::Dir => needs.push(Need { path: cwd, what, strict: n.strict }),
            Kind::Script => {
                let p = normal(&cwd.join(&n.word));
                if p.exists() {
                    add(&p, false, n.strict, &what, at, &mut out.read_paths, &mut needs)?;
                } else if n.strict && !p.starts_with(at.project) {
                    return Err(unseen(&what, &p, Why::Missing, at));
                }
            }
            Kind::Program => match find(&n.word, &cwd, search) {
                Some(p) => add(&p, true, n.strict, &what, at, &mut out.read_paths, &mut needs)?,
                None if n.strict && !may_appear(&n.word, &cwd, search, at) => return Err(not_found(&n, &what, &cwd, search, at)),
                None => {}
            },
            Kind::Package(r) => match local(r, &n.word, &cwd, at).or_else(|| r.on_path.then(|| find(&n.word, &cwd, search)).flatten()) {
                Some(p) => add(&p, true, n.strict, &what, at, &mut out.read_paths, &mut needs)?,
                None => out.notes.extend(fetch_note(r, &n.word, at)),
            },
        }
    }
    let shown: Vec<PathBuf> = at.read_paths.iter().chain(&out.read_paths).cloned().collect();
    for need in needs.iter().filter(|n| n.strict) {
        seen(&need.path, at, &shown).map_err(|(path, why)| unseen(&need.what, &path, why, at))?;
    }
    Ok(out)
}

/// How a named word reads in a message.
fn describe(n: &Named) -> String {
    let by = |what: &str| match n.dir.as_deref() {
        Some(d) => format!("{what} (in {d})"),
        None => what.to_string(),
    };
    match n.kind {
        Kind::Program => by("the program"),
        Kind::Script => by("the script"),
        Kind::Dir => "the directory".to_string(),
        Kind::Package(r) => by(&format!("the command `{}` runs", r.words.join(" "))),
    }
}

/// Program `p` (or a script, `program` false) and everything its first line runs: their
/// installations into `roots`, the files the view must show into `needs`.
fn add(p: &Path, program: bool, strict: bool, what: &str, at: &Where, roots: &mut Vec<PathBuf>, needs: &mut Vec<Need>) -> Result<()> {
    needs.push(Need { path: p.to_path_buf(), what: what.to_string(), strict });
    let mut todo = vec![(p.to_path_buf(), program)];
    let mut steps = 0;
    while let Some((found, program)) = todo.pop() {
        steps += 1;
        for hop in hops(&found).into_iter().chain(std::fs::canonicalize(&found).ok()) {
            // The link itself may sit in another installation's `bin/` (npm's shims).
            if let Some(root) = install_root(&hop).map(|r| narrowed(r, &hop, at)).filter(|r| shown(r, at)) {
                if roots.len() < MAX_ROOTS && !roots.contains(&root) {
                    roots.push(root);
                }
            }
        }
        if !program || steps > 8 {
            continue;
        }
        // A script in the project is the agent's, its first line too: its interpreter counts
        // only when it is a program the user runs anyway (on `PATH`, or a system one).
        let agents = std::fs::canonicalize(&found).is_ok_and(|c| c.starts_with(at.project)) || found.starts_with(at.project);
        let Some(line) = shebang(&found) else { continue };
        let of = format!("the interpreter on the #! line of {}{}", found.display(), if agents { " (a project file: its #! is followed only to a program on PATH or in a system directory)" } else { "" });
        for n in chain::named(&line, at.home).into_iter().filter(|n| n.kind == Kind::Program) {
            let search = if agents { at.path } else { n.path.as_deref().map_or(at.path, |p| if p.is_empty() { UNSET_PATH } else { p }) };
            let named = find(&n.word, at.cwd, search);
            match named {
                Some(i) => {
                    needs.push(Need { path: i.clone(), what: of.clone(), strict });
                    if !agents || followed(&n.word, &i, at) {
                        todo.push((i, true));
                    }
                }
                None if strict && !(agents && n.word.contains('/') && Path::new(&n.word).starts_with(at.project)) => {
                    let why = if n.word.contains(char::is_whitespace) { "is not a program: a #! line passes what follows the interpreter as one word (`env -S` splits it)" } else { "is not found" };
                    return Err(Error::NotVisible { what: of, path: n.word.clone(), why: why.to_string(), fix: format!("fix the first line of {}, or install what it names", found.display()) });
                }
                None => {}
            }
        }
    }
    Ok(())
}

/// May an interpreter the agent's script names (`word`, found at `p`) be shown: a name on
/// `PATH`, or a path into a `PATH` or system directory.
fn followed(word: &str, p: &Path, at: &Where) -> bool {
    if !word.contains('/') {
        return true;
    }
    let dir = p.parent().and_then(|d| std::fs::canonicalize(d).ok());
    let listed = at.path.split(':').filter(|d| d.starts_with('/')).any(|d| std::fs::canonicalize(d).ok() == dir);
    listed || dir.is_some_and(|d| super::SYSTEM.iter().any(|s| d.starts_with(s)))
}

/// The first line of script `p` as the kernel runs it: the interpreter, and what follows it
/// as one word.
fn shebang(p: &Path) -> Option<Vec<String>> {
    let mut head = [0u8; 256];
    let n = std::io::Read::read(&mut std::fs::File::open(p).ok()?, &mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = String::from_utf8_lossy(line.split(|b| *b == b'\n').next()?).into_owned();
    let line = line.trim_matches([' ', '\t', '\r']);
    let (interpreter, arg) = line.split_once([' ', '\t']).map_or((line, ""), |(i, a)| (i, a.trim_matches([' ', '\t'])));
    (!interpreter.is_empty()).then(|| std::iter::once(interpreter.to_string()).chain((!arg.is_empty()).then(|| arg.to_string())).collect())
}

/// The executable `word` names run from `cwd`: a path (relative to `cwd`), else the first on
/// `search` (a relative entry taken in `cwd`).
fn find(word: &str, cwd: &Path, search: &str) -> Option<PathBuf> {
    if word.contains('/') {
        return Some(normal(&cwd.join(word))).filter(|p| executable(p));
    }
    which(word, search, Some(cwd))
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

/// Could a program not found now be there when the command runs: a path in the project (the
/// proposal, or a step before, may make it), or a `PATH` with an entry that is relative or in
/// the project.
fn may_appear(word: &str, cwd: &Path, search: &str, at: &Where) -> bool {
    if word.contains('/') {
        return normal(&cwd.join(word)).starts_with(at.project);
    }
    search.split(':').any(|d| !d.starts_with('/') || Path::new(d).starts_with(at.project))
}

fn not_found(n: &Named, what: &str, cwd: &Path, search: &str, at: &Where) -> Error {
    if n.word.contains('/') {
        let p = normal(&cwd.join(&n.word));
        return match p.exists() {
            true => Error::NotVisible { what: what.into(), path: p.display().to_string(), why: "is not an executable file".into(), fix: format!("chmod +x {}", p.display()) },
            false => unseen(what, &p, Why::Missing, at),
        };
    }
    Error::NotVisible { what: what.into(), path: n.word.clone(), why: format!("is not found on PATH ({search})"), fix: "install it, or give its path; the wrapped command's PATH is the one cairn wrap was started with".into() }
}

/// The command `word` of runner `r` in the project: in `r.local` of the working directory
/// or of one above it, up to the project's root.
fn local(r: &Runner, word: &str, cwd: &Path, at: &Where) -> Option<PathBuf> {
    if r.local.is_empty() || word.contains('/') {
        return None;
    }
    cwd.ancestors().take_while(|d| d.starts_with(at.project)).map(|d| d.join(r.local).join(word)).find(|p| executable(p))
}

/// What to tell the user when runner `r` would fetch `word` from a host the session does
/// not reach.
fn fetch_note(r: &Runner, word: &str, at: &Where) -> Option<String> {
    let blocked: Vec<&str> = r.hosts.iter().copied().filter(|h| at.hosts.is_some_and(|allow| !super::proxy::allowed(allow, h, 443))).collect();
    // npx keeps what it fetched in `~/.npm/_npx/*/node_modules/.bin/`.
    let npx = r.home.contains(&".npm") && std::fs::read_dir(at.home.join(".npm/_npx")).into_iter().flatten().flatten().any(|e| e.path().join("node_modules/.bin").join(word).exists());
    if blocked.is_empty() || npx {
        return None;
    }
    let runner = r.words.join(" ");
    let not_local = match (r.local.is_empty(), r.on_path) {
        (false, _) => format!("neither in the project ({}) nor on PATH", r.local),
        (true, _) => "not installed".to_string(),
    };
    let cache = r.home.first().map(|h| format!(" unless its cache (~/{h}) has it")).unwrap_or_default();
    let quoted = blocked.iter().map(|h| format!("\"{h}\"")).collect::<Vec<_>>().join(", ");
    Some(format!("`{runner} {word}`: {word} is {not_local}, so {runner} fetches it from {}{cache}; this session does not reach {}: add {quoted} to [wrap] allow_hosts, or install it first", r.hosts.join(", "), blocked.join(", ")))
}

/// Why a path would not be in the view.
enum Why {
    Missing,
    /// Under this `[wrap] hide` entry.
    Hidden(PathBuf),
    Secret,
    Kernel(&'static str),
    Home(String),
    Outside,
}

/// Is `p` in the view at its own path, with every link on the way to the file it names?
fn seen(p: &Path, at: &Where, shown: &[PathBuf]) -> std::result::Result<(), (PathBuf, Why)> {
    for q in hops(p).into_iter().chain(std::fs::canonicalize(p).ok()) {
        if std::fs::symlink_metadata(&q).is_err() {
            return Err((q, Why::Missing));
        }
        if let Some(why) = why_not(&q, at, shown) {
            return Err((q, why));
        }
    }
    Ok(())
}

/// Why the view would not show `q`, if it would not.
fn why_not(q: &Path, at: &Where, shown: &[PathBuf]) -> Option<Why> {
    if let Some(h) = at.hide.iter().find(|h| q.starts_with(h)) {
        return Some(Why::Hidden(h.clone()));
    }
    if at.secret.iter().any(|s| q.starts_with(s)) {
        return Some(Why::Secret);
    }
    if super::SYSTEM.iter().any(|s| q.starts_with(s)) || q.starts_with(at.project) || shown.iter().any(|r| q.starts_with(r)) {
        return None;
    }
    if let Ok(rel) = q.strip_prefix(at.home) {
        let rel = rel.to_string_lossy();
        let hidden = !at.home.is_dir() || at.home_hidden.iter().any(|h| rel == h.as_str() || rel.starts_with(&format!("{h}/")));
        return hidden.then(|| Why::Home(rel.into_owned()));
    }
    ["/proc", "/sys", "/dev"].into_iter().find(|k| q.starts_with(k)).map_or(Some(Why::Outside), |k| Some(Why::Kernel(k)))
}

/// The refusal of `what` at `path`: why, and the setting that would show it.
fn unseen(what: &str, path: &Path, why: Why, at: &Where) -> Error {
    let tilde = |p: &Path| match p.strip_prefix(at.home) {
        Ok(rel) if at.home.as_os_str().len() > 1 => format!("~/{}", rel.display()),
        _ => p.display().to_string(),
    };
    let root = match path.is_dir() {
        true => path.to_path_buf(),
        false => install_root(path).map_or_else(|| path.to_path_buf(), |r| narrowed(r, path, at)),
    };
    let (why, fix) = match why {
        Why::Missing => ("does not exist".to_string(), "check the path (a link whose target is gone?)".to_string()),
        Why::Hidden(h) => (format!("is hidden by [wrap] hide ({})", tilde(&h)), "[wrap] hide wins over every other setting: take the entry out of [wrap] hide only if nothing under it is a credential, else install the program elsewhere".to_string()),
        Why::Secret => ("is where Cairn always hides secrets or its own state".to_string(), "install the program elsewhere".to_string()),
        Why::Kernel(k) => (format!("is in {k}, which the view replaces with its own"), "no setting shows the host's; copy the program elsewhere".to_string()),
        Why::Home(rel) => (
            "is in your home, of which a wrapped command sees only [wrap] home, its own state and [wrap] read_paths".to_string(),
            format!("add \"{rel}\" to [wrap] home, or \"{}\" to [wrap] read_paths (in $CAIRN_HOME/config.toml; :help cairn-wrap-programs)", tilde(&root)),
        ),
        Why::Outside => (
            "is outside what the view shows (the system directories, the project, [wrap] home, [wrap] read_paths and the installations of the programs the command line runs)".to_string(),
            format!("add \"{}\" to [wrap] read_paths (in $CAIRN_HOME/config.toml; :help cairn-wrap-programs)", tilde(&root)),
        ),
    };
    Error::NotVisible { what: what.to_string(), path: path.display().to_string(), why, fix }
}

/// `p` lexically without `.` and `..`.
fn normal(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// `p`, then each link its last component goes through, in order (`/usr/local/bin/x` →
/// `/opt/x/current/bin/x` → …).
fn hops(p: &Path) -> Vec<PathBuf> {
    let mut out = vec![p.to_path_buf()];
    while out.len() < 10 {
        let last = &out[out.len() - 1];
        let Ok(to) = std::fs::read_link(last) else { break };
        let next = normal(&last.parent().unwrap_or(Path::new("/")).join(to));
        out.push(next);
    }
    out
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
