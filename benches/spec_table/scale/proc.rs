//! What a process costs: a command's wall time and peak RSS (`wait4`'s `ru_maxrss`: the
//! process and the descendants it waited for), a live process's memory and CPU time from
//! `/proc`, and the disk blocks under a directory.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[repr(C)]
#[derive(Default)]
struct Timeval {
    sec: i64,
    usec: i64,
}

/// `struct rusage` of 64-bit Linux: two timevals, then 14 longs (`ru_maxrss` first, in KiB).
#[repr(C)]
#[derive(Default)]
struct Rusage {
    utime: Timeval,
    stime: Timeval,
    maxrss: i64,
    rest: [i64; 13],
}

unsafe extern "C" {
    fn wait4(pid: i32, status: *mut i32, options: i32, rusage: *mut Rusage) -> i32;
    fn sysconf(name: i32) -> i64;
}

const SC_CLK_TCK: i32 = 2;

/// A finished command.
pub struct Ran {
    pub t: Duration,
    pub rss_mb: f64,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cmd` (stdin empty, output captured) to its end; panics unless it exits 0.
pub fn measured(mut cmd: Command) -> Ran {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let errs = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut stdout = String::new();
    let _ = out.read_to_string(&mut stdout);
    let pid = child.id() as i32;
    let (mut status, mut ru) = (0i32, Rusage::default());
    // SAFETY: `status` and `ru` are valid for writes; `pid` is our unwaited child.
    while unsafe { wait4(pid, &mut status, 0, &mut ru) } != pid {
        let e = std::io::Error::last_os_error();
        assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "wait4: {e}");
    }
    let t = start.elapsed();
    let stderr = errs.join().unwrap_or_default();
    assert_eq!(status, 0, "{cmd:?} failed (wait status {status:#x}): {stderr}");
    Ran { t, rss_mb: ru.maxrss as f64 / 1024.0, stdout, stderr }
}

/// A `/proc/<pid>/status` size (`VmRSS`, `VmHWM`), in MB.
pub fn vm_mb(pid: u32, key: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.strip_prefix(key).is_some_and(|r| r.starts_with(':')))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// CPU seconds (user + system, all threads) of `pid` and of its live children (the zygote
/// and what it forked).
pub fn cpu_secs(pid: u32) -> f64 {
    // SAFETY: sysconf has no preconditions.
    let tick = unsafe { sysconf(SC_CLK_TCK) }.max(1) as f64;
    let own = |p: u32| -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
        let rest: Vec<&str> = stat.rsplit_once(')').map_or(Vec::new(), |(_, r)| r.split_whitespace().collect());
        // Fields 14 and 15 (utime, stime) are the 12th and 13th after the command name.
        rest.get(11..13).map_or(0.0, |f| f.iter().filter_map(|x| x.parse::<f64>().ok()).sum::<f64>() / tick)
    };
    own(pid) + children(pid).into_iter().map(own).sum::<f64>()
}

/// The live children of `pid` (of every one of its threads).
pub fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    tasks.flatten().flat_map(|t| std::fs::read_to_string(t.path().join("children")).unwrap_or_default().split_whitespace().filter_map(|c| c.parse().ok()).collect::<Vec<u32>>()).collect()
}

/// Disk blocks (as `du -x` counts them: allocated, not apparent, size; symlinks not
/// followed; other file systems, such as a view mounted inside, not entered) under `dir`,
/// in bytes, a file with several links once; 0 when it does not exist.
pub fn disk_bytes(dir: &Path) -> u64 {
    let Ok(top) = std::fs::symlink_metadata(dir) else { return 0 };
    let dev = top.dev();
    let mut total = top.blocks() * 512;
    let mut stack = vec![dir.to_path_buf()];
    let mut linked = std::collections::HashSet::new();
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.dev() != dev || (m.nlink() > 1 && !m.is_dir() && !linked.insert(m.ino())) {
                continue;
            }
            total += m.blocks() * 512;
            if m.is_dir() {
                stack.push(e.path());
            }
        }
    }
    total
}
