//! Ports of a session's view forwarded to the host's loopback (`[preview] ports`): the other
//! way round from [`super::net`]. The parent listens on the host's 127.0.0.1; each
//! connection there asks the *dialer* for a socket connected to the same port on the view's
//! own loopback, and splices the two. The dialer is a child of pid 1, forked before the
//! command starts, single-threaded, non-dumpable, outside the command's nested user namespace
//! (the command cannot trace it); it reads two-byte port requests on the control socket
//! ([`super::launch::CONTROL_FD`], which the command never holds), dials only the listed
//! ports, and hands each connected socket out with `SCM_RIGHTS` (a byte 1 first; 0 when the
//! port did not answer). An unprivileged parent could not enter the view's network namespace
//! itself; a socket keeps the namespace it was made in, so nothing inside ever holds a socket
//! of the host's network, and nothing inside can reach out.

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Pid 1: forks the dialer, which serves `control` until the parent closes it; pid 1 keeps
/// no copy (the command must never get it).
#[allow(unsafe_code)]
pub(super) fn start_dialer(ports: &[u16], control: OwnedFd) -> Result<(), String> {
    // SAFETY: fork in a single-threaded process (pid 1).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(super::sys::os_err("fork (the dialer)"));
    }
    if pid == 0 {
        let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
        serve_dials(ports, &control);
        // SAFETY: the dialer leaves without running pid 1's destructors.
        unsafe { libc::_exit(0) };
    }
    drop(control);
    Ok(())
}

/// The dialer's loop: one request, one answer, until the control socket closes.
fn serve_dials(ports: &[u16], control: &OwnedFd) {
    use rustix::net::{RecvAncillaryBuffer, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    loop {
        let mut req = [0u8; 2];
        let mut none = RecvAncillaryBuffer::default();
        match rustix::net::recvmsg(control, &mut [IoSliceMut::new(&mut req)], &mut none, RecvFlags::empty()) {
            Ok(got) if got.bytes == 2 => {}
            _ => return,
        }
        let port = u16::from_le_bytes(req);
        let conn = ports.contains(&port).then(|| TcpStream::connect(("127.0.0.1", port)).ok()).flatten();
        let sent = match &conn {
            Some(c) => {
                let fds = [c.as_fd()];
                let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
                let mut cmsg = SendAncillaryBuffer::new(&mut space);
                cmsg.push(SendAncillaryMessage::ScmRights(&fds));
                rustix::net::sendmsg(control, &[IoSlice::new(&[1])], &mut cmsg, SendFlags::NOSIGNAL)
            }
            None => rustix::net::sendmsg(control, &[IoSlice::new(&[0])], &mut SendAncillaryBuffer::default(), SendFlags::NOSIGNAL),
        };
        if sent.is_err() {
            return;
        }
    }
}

/// The parent: asks the dialer for a connection to `port` inside.
fn dial(control: &OwnedFd, port: u16) -> Option<TcpStream> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendFlags};
    rustix::net::sendmsg(control, &[IoSlice::new(&port.to_le_bytes())], &mut SendAncillaryBuffer::default(), SendFlags::NOSIGNAL).ok()?;
    let mut answer = [0u8; 1];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut cmsg = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(control, &mut [IoSliceMut::new(&mut answer)], &mut cmsg, RecvFlags::CMSG_CLOEXEC).ok()?;
    let fd: Option<OwnedFd> = cmsg.drain().find_map(|m| if let RecvAncillaryMessage::ScmRights(mut fds) = m { fds.next() } else { None });
    (got.bytes == 1 && answer[0] == 1).then_some(fd).flatten().map(TcpStream::from)
}

/// The host's listeners, made before the session starts (a port in use on the host is said
/// at once).
pub fn bind(ports: &[u16]) -> Result<Vec<(u16, TcpListener)>, String> {
    ports.iter().map(|p| TcpListener::bind(("127.0.0.1", *p)).map(|l| (*p, l)).map_err(|e| format!("cannot forward port {p} to the host's 127.0.0.1: {e}"))).collect()
}

/// The running forwarders; [`Forwarding::stop`] ends them.
pub struct Forwarding {
    stop: Arc<AtomicBool>,
    listeners: Vec<TcpListener>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Forwarding {
    pub fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        for l in &self.listeners {
            let _ = rustix::net::shutdown(l, rustix::net::Shutdown::Both);
        }
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// Serves the host's listeners through the dialer behind `control`.
pub fn forward(listeners: Vec<(u16, TcpListener)>, control: OwnedFd) -> Forwarding {
    let stop = Arc::new(AtomicBool::new(false));
    let control = Arc::new(Mutex::new(control));
    let copies = listeners.iter().filter_map(|(_, l)| l.try_clone().ok()).collect();
    let threads = listeners
        .into_iter()
        .map(|(port, l)| {
            let (stop, control) = (Arc::clone(&stop), Arc::clone(&control));
            std::thread::spawn(move || accept_loop(port, &l, &stop, &control))
        })
        .collect();
    Forwarding { stop, listeners: copies, threads }
}

fn accept_loop(port: u16, l: &TcpListener, stop: &AtomicBool, control: &Mutex<OwnedFd>) {
    if l.set_nonblocking(true).is_err() {
        return;
    }
    while !stop.load(Ordering::SeqCst) {
        let mut fds = [rustix::event::PollFd::new(l, rustix::event::PollFlags::IN)];
        let timeout = rustix::event::Timespec { tv_sec: 0, tv_nsec: 200_000_000 };
        if !matches!(rustix::event::poll(&mut fds, Some(&timeout)), Ok(n) if n > 0) || stop.load(Ordering::SeqCst) {
            continue;
        }
        let Ok((conn, _)) = l.accept() else { continue };
        let _ = conn.set_nonblocking(false);
        // One request at a time: the answer is the next message.
        let inside = match control.lock() {
            Ok(c) => dial(&c, port),
            Err(_) => return,
        };
        if let Some(inside) = inside {
            std::thread::spawn(move || super::proxy::splice(conn, inside));
        }
    }
}
