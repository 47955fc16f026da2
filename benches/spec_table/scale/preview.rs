//! Preview open, isolated here so that it is easy to retarget when the preview changes.
//!
//! Today's `cairn preview ID` runs an editor inside a confined copy-on-write view of the
//! agent's version, on a terminal. The bench plays the user's terminal (a pty pair made here)
//! and the editor: `--editor /bin/sh --file F`, F being the agent's own script, which prints
//! `READY` and waits for a line. Ready is when `READY` shows (the view is up and its command
//! started); the disk it took is measured then, while the session is open.

use crate::Ctx;
use rustix::pty::OpenptFlags;
use std::os::fd::OwnedFd;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// What the previewed agent writes: the one file the preview opens.
pub fn agent(n: usize) -> (String, String) {
    let file = format!("scale_bench/ready{n}.sh");
    (format!("write_file('{file}', 'echo READY\\nread x\\n')"), file)
}

/// An open preview session.
pub struct Open {
    master: OwnedFd,
    child: Child,
    seen: Vec<u8>,
}

/// Opens agent `id`'s preview of `file` until it is ready.
pub fn open(c: &Ctx, id: &str, file: &str) -> (Duration, Open) {
    let master = rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).expect("openpt");
    rustix::pty::grantpt(&master).expect("grantpt");
    rustix::pty::unlockpt(&master).expect("unlockpt");
    let slave = rustix::pty::ioctl_tiocgptpeer(&master, OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).expect("slave");
    let t = Instant::now();
    let child = super::rows::cli(c, &["preview", id, "--editor", "/bin/sh", "--file", file])
        .stdin(Stdio::from(slave.try_clone().expect("dup")))
        .stdout(Stdio::from(slave.try_clone().expect("dup")))
        .stderr(Stdio::from(slave))
        .spawn()
        .expect("cairn preview");
    let mut o = Open { master, child, seen: Vec::new() };
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&o.seen).contains("READY") {
        match rustix::io::read(&o.master, &mut buf) {
            Ok(n) if n > 0 => o.seen.extend_from_slice(&buf[..n]),
            _ => panic!("cairn preview {id} ended before its view was ready: {}", String::from_utf8_lossy(&o.seen)),
        }
    }
    (t.elapsed(), o)
}

/// Ends the session (the line the script waits for) and waits for `cairn preview` to exit.
pub fn close(mut o: Open) {
    rustix::io::write(&o.master, b"\n").expect("write to the preview");
    let deadline = Instant::now() + Duration::from_secs(60);
    let master = o.master;
    // The closing lines, until every holder of the terminal is gone (not waited for).
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while matches!(rustix::io::read(&master, &mut buf), Ok(n) if n > 0) {}
    });
    let status = loop {
        if let Some(s) = o.child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = o.child.kill();
            panic!("cairn preview did not end: {}", String::from_utf8_lossy(&o.seen));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(status.success(), "cairn preview: {status}: {}", String::from_utf8_lossy(&o.seen));
}
