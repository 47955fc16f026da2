//! The zygote (`cairn __sandbox --zygote`): a sandbox child that confines itself and builds
//! the interpreter once, then forks one child per run. A fork copies the built interpreter in
//! about a millisecond, where a fresh process takes 15–20 ms to build it.
//!
//! The zygote's stdin is a `SOCK_SEQPACKET` socket to the parent. Each request is one byte
//! ([`RUN`] or [`SELFTEST`]) carrying four descriptors: the run's stdin, stdout and stderr,
//! and a status pipe. The zygote forks; the child puts the three pipes on 0, 1 and 2, closes
//! every other descriptor (the socket, its siblings' pidfds and status pipes) and returns to
//! [`super::main`], which goes on exactly as a freshly started child: read `Start`, lock down
//! (rlimits, heap cap, seccomp), run, answer `Done`. The zygote answers the request with a
//! pidfd of the child (the parent's handle to kill it, valid across the pid namespace), and
//! when the child ends, writes its raw wait status (4 bytes) into the status pipe.
//!
//! What the zygote itself never does: run agent code, read a `Start`, or keep state from a
//! run (a child's changes die with the child).

use rustix::event::{poll, PollFd, PollFlags};
use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
use std::io::{IoSlice, IoSliceMut, Write};
use std::mem::MaybeUninit;

/// Request: fork a child that runs a script.
pub const RUN: u8 = b'R';
/// Request: fork a child that runs the self-test probes (see [`super::probe`]).
pub const SELFTEST: u8 = b'S';

/// A forked child the zygote still has to reap.
struct Live {
    pid: rustix::process::Pid,
    pidfd: OwnedFd,
    status: OwnedFd,
}

/// Serves fork requests on fd 0 until the parent closes the socket (then the process exits).
/// Returns only in a forked child, with its run's pipes on 0, 1 and 2, and the request byte.
#[allow(unsafe_code)]
pub fn serve() -> u8 {
    // SAFETY: fd 0 is the control socket for the whole life of the zygote.
    let control = unsafe { BorrowedFd::borrow_raw(0) };
    let mut live: Vec<Live> = Vec::new();
    loop {
        let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(live.len() + 1);
        fds.push(PollFd::new(&control, PollFlags::IN));
        for l in &live {
            fds.push(PollFd::new(&l.pidfd, PollFlags::IN));
        }
        if poll(&mut fds, None).is_err() {
            continue;
        }
        let ended: Vec<usize> = fds.iter().skip(1).enumerate().filter(|(_, f)| !f.revents().is_empty()).map(|(i, _)| i).collect();
        let request = !fds[0].revents().is_empty();
        drop(fds);
        for i in ended.into_iter().rev() {
            reap(live.swap_remove(i));
        }
        if !request {
            continue;
        }
        let Some((kind, pipes)) = receive(control) else {
            // The parent is gone (or sent garbage, which it never does): end with it.
            // SAFETY: leaving at once; the children die with us (pid namespace, death signal).
            unsafe { libc::_exit(0) };
        };
        let [stdin, stdout, stderr, status] = pipes;
        // SAFETY: the zygote's interpreter thread is the only one doing work; the main thread
        // is parked in join() and holds no lock. The child continues on this thread alone.
        match unsafe { libc::fork() } {
            0 => {
                become_run(&stdin, &stdout, &stderr);
                // Closed by close_range already: never close them again.
                std::mem::forget((stdin, stdout, stderr, status));
                std::mem::forget(live);
                return kind;
            }
            pid if pid > 0 => {
                let Some(pid) = rustix::process::Pid::from_raw(pid) else { continue };
                match rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) {
                    Ok(pidfd) => {
                        reply(control, Some(pidfd.as_fd()));
                        live.push(Live { pid, pidfd, status });
                    }
                    Err(_) => {
                        // Without a handle the parent could not stop it: do not let it run.
                        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                        let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
                        reply(control, None);
                    }
                }
            }
            _ => reply(control, None),
        }
    }
}

/// One request: its byte and exactly four descriptors.
fn receive(control: BorrowedFd<'_>) -> Option<(u8, [OwnedFd; 4])> {
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut cmsg = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(control, &mut [IoSliceMut::new(&mut byte)], &mut cmsg, RecvFlags::CMSG_CLOEXEC).ok()?;
    if got.bytes == 0 {
        return None;
    }
    let mut fds: Vec<OwnedFd> = Vec::new();
    for msg in cmsg.drain() {
        if let RecvAncillaryMessage::ScmRights(rights) = msg {
            fds.extend(rights);
        }
    }
    let fds: [OwnedFd; 4] = fds.try_into().ok()?;
    matches!(byte[0], RUN | SELFTEST).then_some((byte[0], fds))
}

/// Answers a request: one byte, with the child's pidfd when the fork worked.
fn reply(control: BorrowedFd<'_>, pidfd: Option<BorrowedFd<'_>>) {
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut cmsg = SendAncillaryBuffer::new(&mut space);
    let one;
    if let Some(fd) = pidfd {
        one = [fd];
        cmsg.push(SendAncillaryMessage::ScmRights(&one));
    }
    let byte = [u8::from(pidfd.is_some())];
    let _ = rustix::net::sendmsg(control, &[IoSlice::new(&byte)], &mut cmsg, SendFlags::empty());
}

/// Waits for an ended child and hands its raw wait status to the parent.
fn reap(l: Live) {
    let status = match rustix::process::waitpid(Some(l.pid), rustix::process::WaitOptions::empty()) {
        Ok(Some((_, s))) => s.as_raw(),
        _ => return,
    };
    let mut f = std::fs::File::from(l.status);
    let _ = f.write_all(&status.to_le_bytes());
    drop(l.pidfd);
}

/// In the forked child: the run's pipes become 0, 1 and 2, every other descriptor is closed,
/// and the child dies with the zygote.
#[allow(unsafe_code)]
fn become_run(stdin: &OwnedFd, stdout: &OwnedFd, stderr: &OwnedFd) {
    // SAFETY: dup2 onto the standard descriptors (the control socket on 0 is replaced), then
    // close_range above them: this process holds nothing else the run may use.
    unsafe {
        if libc::dup2(stdin.as_raw_fd(), 0) < 0 || libc::dup2(stdout.as_raw_fd(), 1) < 0 || libc::dup2(stderr.as_raw_fd(), 2) < 0 {
            libc::_exit(3);
        }
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
    }
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
}
