//! The file system a command sees: an allow-list, built by pid 1 on a fresh tmpfs and made
//! the root with `pivot_root`. Nothing of the host is there unless listed:
//!
//! - the system directories a toolchain needs (`Spec::system`: `/usr`, `/bin`, `/sbin`,
//!   `/lib*`, `/etc`), read-only, `nosuid`, `nodev`; a symlinked one (merged `/usr`) stays a
//!   symlink; a missing one is skipped; secrets inside them covered (`Spec::hidden_*`);
//! - the workspace: an overlay whose lower layers are the proposal's stage and the project,
//!   at the project's own path (absolute paths in build files keep working), with
//!   `.agentfs`, `.grail` and `$CAIRN_HOME` covered;
//! - an empty home, a private `/tmp`, `/var/tmp` and `/dev/shm`, and `Spec::read_paths` put
//!   back read-only;
//! - a minimal `/dev` and the run's own `/proc` as containers have them ([`super::procfs`]);
//!   no `/sys`, `/run`, `/var`, `/srv`, `/mnt`, `/media`, `/home` or `/root` but the above.
//!
//! One tmpfs holds the written layer, `/tmp`, `/var/tmp`, `/dev/shm` and the home: they share
//! one budget (its share of `max_memory_mb`, see `budget`; a wrap session's `[wrap]
//! max_tmp_mb`). The root itself is read-only once built. No mount target is
//! ever made on the host: every directory mounted over is made on that tmpfs.

use super::ids::Ids;
use super::mounts::{attach, bind, bind_read_only, layer, make_dir_mode, make_dirs, make_file, mount, set_attrs, tmpfs, under, NODEV, NOSUID, RDONLY};
use super::spec::Spec;
use super::sys::cstr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// What pid 1 keeps of the view once inside it.
pub(super) struct Built {
    /// The written layer, for the capture after the command.
    pub upper: OwnedFd,
    /// A wrap session's home: its scratch layer and the CLI's saved files (see `home`).
    pub home_save: Option<(OwnedFd, OwnedFd)>,
}

/// Builds the view (see the module docs) and moves into it.
pub(super) fn build(spec: &Spec, ids: &Ids, shares: &super::budget::Shares) -> Result<Built, String> {
    mount("none", Path::new("/"), "", libc::MS_REC | libc::MS_PRIVATE, None)?;
    let boxed = spec.dir.join("box");
    make_dirs(&boxed)?;
    tmpfs(&boxed, shares.tmpfs_mb, "0755", 0)?;
    let root = boxed.join("root");
    let (cmd_uid, cmd_gid) = ids.command();
    // The root must be a mount of its own for pivot_root, and read-only at the end.
    make_dirs(&root)?;
    bind(&root, &root)?;
    let (upper, work) = match &spec.wrap {
        // A wrap session's layer lives on disk: it outlives a crash of `cairn wrap`.
        Some(_) => (spec.rw().join("upper"), spec.rw().join("work")),
        None => (boxed.join("upper"), boxed.join("work")),
    };
    for d in [&upper, &work] {
        make_dirs(d)?;
    }
    chown(&upper, cmd_uid, cmd_gid)?;
    system(spec, &root)?;
    private_dirs(spec, &root, cmd_uid, cmd_gid)?;
    let home_save = match spec.wrap.as_ref().and_then(|w| w.home.as_ref()).filter(|h| h.real.is_dir()) {
        Some(plan) => Some(home(plan, ids, &boxed, &under(&root, &spec.home), (cmd_uid, cmd_gid))?),
        None => None,
    };
    // Inside a system directory or the project, a read path is already visible.
    for p in spec.read_paths.iter().filter(|p| !spec.system.iter().any(|s| p.starts_with(s)) && !p.starts_with(&spec.root)) {
        host_tree(ids, p, &under(&root, p), true)?;
    }
    workspace(spec, ids, &boxed, &root, &upper, &work)?;
    for p in spec.hidden_dirs.iter().filter(|p| under(&root, p).is_dir()) {
        let empty = boxed.join("empty");
        make_dir_mode(&empty, 0o555)?;
        bind_read_only(&empty, &under(&root, p), true)?;
    }
    for p in spec.hidden_files.iter().filter(|p| under(&root, p).is_file()) {
        mount("/dev/null", &under(&root, p), "", libc::MS_BIND, None)?;
    }
    // A wrapped agent's own sandbox (bubblewrap in Codex) binds `/dev/tty` into its view: the
    // node is there for wrap sessions (it opens the caller's controlling terminal: the
    // session's own pty, or nothing); runs have none.
    super::procfs::dev(&root.join("dev"), spec.wrap.is_some())?;
    if spec.wrap.is_none() {
        super::procfs::ipc_limits(spec.max_memory_mb);
        if !spec.host_network {
            super::procfs::socket_limits();
        }
    }
    super::procfs::proc(&root.join("proc"), spec.wrap.is_some())?;
    super::sys::hostname();
    if !spec.host_network {
        super::sys::loopback_up()?;
    }
    let upper_fd = std::fs::File::open(&upper).map_err(|e| format!("upper layer: {e}"))?;
    pivot(&root)?;
    set_attrs(Path::new("/"), RDONLY | NOSUID | NODEV, false)?;
    Ok(Built { upper: upper_fd.into(), home_save })
}

/// The system directories, read-only.
fn system(spec: &Spec, root: &Path) -> Result<(), String> {
    for dir in &spec.system {
        let Ok(meta) = std::fs::symlink_metadata(dir) else { continue };
        let target = under(root, dir);
        if meta.file_type().is_symlink() {
            let to = std::fs::read_link(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            if let Some(parent) = target.parent() {
                make_dirs(parent)?;
            }
            std::os::unix::fs::symlink(&to, &target).map_err(|e| format!("symlink {}: {e}", target.display()))?;
        } else if meta.is_dir() {
            bind_read_only(dir, &target, true)?;
        }
    }
    Ok(())
}

/// The command's home, `/tmp`, `/var/tmp`: empty directories of the view's tmpfs, each a
/// mount of its own so that they stay writable once the root is read-only.
fn private_dirs(spec: &Spec, root: &Path, uid: u32, gid: u32) -> Result<(), String> {
    for (dir, mode) in [(PathBuf::from("/tmp"), 0o1777), (PathBuf::from("/var/tmp"), 0o1777), (spec.home.clone(), 0o700)] {
        let target = under(root, &dir);
        if target.exists() {
            // Inside a system directory, or the home at `/tmp`: already there.
            continue;
        }
        make_dir_mode(&target, mode)?;
        if mode == 0o700 {
            chown(&target, uid, gid)?;
        }
        bind(&target, &target)?;
    }
    Ok(())
}

/// A host path at `target` (a missing one is skipped): the idmapped clone made as root,
/// else a bind of the path.
fn host_tree(ids: &Ids, path: &Path, target: &Path, read_only: bool) -> Result<(), String> {
    let Ok(meta) = std::fs::metadata(path) else { return Ok(()) };
    if meta.is_dir() { make_dirs(target)? } else { make_file(target)? }
    match ids.tree(path) {
        Some(tree) => attach(tree, target)?,
        None => bind(path, target)?,
    }
    let attrs = if read_only { RDONLY | NOSUID | NODEV } else { NOSUID | NODEV };
    set_attrs(target, attrs, true)
}

/// The copy-on-write workspace at the project's path, and what is covered in it.
fn workspace(spec: &Spec, ids: &Ids, boxed: &Path, root: &Path, upper: &Path, work: &Path) -> Result<(), String> {
    // As root, the project and the stage come idmapped: attached on the tmpfs first.
    let lower = |path: &Path, name: &str| -> Result<PathBuf, String> {
        match ids.tree(path) {
            Some(tree) => {
                let at = boxed.join(name);
                make_dirs(&at)?;
                attach(tree, &at)?;
                Ok(at)
            }
            None => Ok(path.to_path_buf()),
        }
    };
    let (stage, project) = (lower(&spec.stage(), "stage")?, lower(&spec.root, "lower")?);
    let opts = format!("lowerdir={}:{},upperdir={},workdir={},userxattr", layer(&stage), layer(&project), layer(upper), layer(work));
    let at = under(root, &spec.root);
    make_dirs(&at)?;
    mount("overlay", &at, "overlay", libc::MS_NOSUID | libc::MS_NODEV, Some(&opts)).map_err(|e| format!("copy-on-write workspace (overlayfs in a user namespace): {e}"))?;
    for m in spec.workspace_masks.iter().filter(|m| under(root, m).is_dir()) {
        tmpfs(&under(root, m), 1, "0555", libc::MS_RDONLY)?;
    }
    for path in spec.wrap.iter().flat_map(|w| &w.read_only) {
        let target = under(root, path);
        if let Ok(meta) = std::fs::symlink_metadata(&target) {
            if !meta.file_type().is_symlink() {
                bind(&target, &target)?;
                set_attrs(&target, RDONLY | NOSUID | NODEV, true)?;
            }
        }
    }
    Ok(())
}

/// A wrap session's home at `at` (see `super::home`); returns descriptors of its scratch
/// layer and of the CLI's saved files, for the save after the command.
fn home(plan: &super::home::Plan, ids: &Ids, boxed: &Path, at: &Path, (uid, gid): (u32, u32)) -> Result<(OwnedFd, OwnedFd), String> {
    let dir = |name: &str| -> Result<PathBuf, String> {
        let d = boxed.join(name);
        make_dirs(&d)?;
        Ok(d)
    };
    // The mask: a whiteout per hidden entry, its directories the command's.
    let mask = dir("home-mask")?;
    for h in &plan.hidden {
        super::home::whiteout(&mask, h)?;
    }
    // The CLI's saved state files, copied in (small; the layer on disk is the record).
    let files = dir("home-files")?;
    for f in &plan.state_files {
        let saved = super::home::entry_dir(&plan.layer, "files", f);
        if saved.is_file() {
            let to = files.join(f);
            make_dirs(to.parent().unwrap_or(&files))?;
            std::fs::copy(&saved, &to).map_err(|e| format!("state file {f}: {e}"))?;
            chown(&to, uid, gid)?;
        }
    }
    // Files generated in place of the user's (their git configuration without credentials).
    for (rel, content) in &plan.generated {
        let to = files.join(rel);
        make_dirs(to.parent().unwrap_or(&files))?;
        std::fs::write(&to, content).map_err(|e| format!("{rel}: {e}"))?;
        chown(&to, uid, gid)?;
    }
    for layer_root in [&mask, &files] {
        chown_dirs(layer_root, uid, gid)?;
    }
    let real = match ids.tree(&plan.real) {
        Some(tree) => {
            let l = dir("home-real")?;
            attach(tree, &l)?;
            l
        }
        None => plan.real.clone(),
    };
    let (upper, work) = (dir("home-upper")?, dir("home-work")?);
    chown(&upper, uid, gid)?;
    let opts = format!("lowerdir={}:{}:{},upperdir={},workdir={},userxattr", layer(&mask), layer(&files), layer(&real), layer(&upper), layer(&work));
    mount("overlay", at, "overlay", libc::MS_NOSUID | libc::MS_NODEV, Some(&opts)).map_err(|e| format!("the agent's home: {e}"))?;
    // Each state directory: copy-on-write over the real one, its writes kept in the layer.
    for (i, d) in plan.state_dirs.iter().enumerate() {
        let target = at.join(d);
        make_dirs(&target)?;
        // Inside the home as mounted below the mask (idmapped as root), or an empty directory.
        let lower = if real.join(d).is_dir() { real.join(d) } else { dir(&format!("state-{i}"))? };
        let keep = super::home::entry_dir(&plan.layer, "dirs", d);
        let (u, w) = (keep.join("upper"), keep.join("work"));
        make_dirs(&u)?;
        make_dirs(&w)?;
        chown(&u, uid, gid)?;
        let opts = format!("lowerdir={},upperdir={},workdir={},userxattr", layer(&lower), layer(&u), layer(&w));
        mount("overlay", &target, "overlay", libc::MS_NOSUID | libc::MS_NODEV, Some(&opts)).map_err(|e| format!("the agent's state {d}: {e}"))?;
    }
    let open = |p: &Path| std::fs::File::open(p).map(OwnedFd::from).map_err(|e| format!("{}: {e}", p.display()));
    Ok((open(&upper)?, open(&plan.layer.join("files"))?))
}

/// `chown` of `root`'s directories (a layer whose directories merge over the home's).
fn chown_dirs(root: &Path, uid: u32, gid: u32) -> Result<(), String> {
    for e in std::fs::read_dir(root).map_err(|e| format!("{}: {e}", root.display()))?.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            chown(&e.path(), uid, gid)?;
            chown_dirs(&e.path(), uid, gid)?;
        }
    }
    Ok(())
}

#[allow(unsafe_code)]
fn chown(path: &Path, uid: u32, gid: u32) -> Result<(), String> {
    let p = cstr(path)?;
    // SAFETY: chown of a path we made.
    super::sys::check(unsafe { libc::chown(p.as_ptr(), uid, gid) } as _, &format!("chown {}", path.display()))
}

/// Makes `root` the root of this mount namespace; the host's is unmounted from it.
#[allow(unsafe_code)]
fn pivot(root: &Path) -> Result<(), String> {
    let (r, dot) = (cstr(root)?, cstr(".")?);
    // SAFETY: chdir, pivot_root(".", ".") (the old root stacks on the new one) and a lazy
    // unmount of it, in this process's own mount namespace.
    unsafe {
        super::sys::check(libc::chdir(r.as_ptr()) as _, "chdir to the new root")?;
        super::sys::check(libc::syscall(libc::SYS_pivot_root, dot.as_ptr(), dot.as_ptr()), "pivot_root")?;
        super::sys::check(libc::umount2(dot.as_ptr(), libc::MNT_DETACH) as _, "detach the host's root")?;
        let slash = cstr("/")?;
        super::sys::check(libc::chdir(slash.as_ptr()) as _, "chdir /")?;
    }
    Ok(())
}
