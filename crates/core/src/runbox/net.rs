//! The network of a wrap session with `network = "proxy"`: its own network namespace, whose
//! only ways out are listeners on its loopback that pid 1 makes *inside* and hands to the
//! parent over the control socket ([`super::launch::CONTROL_FD`]). A socket keeps the
//! namespace it was made in: the parent `accept`s on them from the host's namespace and
//! serves each connection there ([`super::proxy`]), so nothing inside ever holds a socket of
//! the host's network.

use serde::{Deserialize, Serialize};
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// The proxy's port on the session's loopback (a fresh namespace: always free).
pub const PROXY_PORT: u16 = 3128;

/// What pid 1 makes inside.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Listen {
    /// The CONNECT proxy's port inside.
    pub proxy: u16,
    /// Host loopback ports forwarded: the same port inside.
    pub host_ports: Vec<u16>,
}

/// One listener handed out: the port inside, and what it is for.
pub struct Handed {
    pub port: u16,
    pub is_proxy: bool,
    pub listener: std::net::TcpListener,
}

/// Pid 1: makes the listeners on the loopback and sends them out, one message each (a byte
/// saying proxy or forward, the port, the descriptor).
pub(super) fn hand_out(listen: &Listen, control: BorrowedFd<'_>) -> Result<(), String> {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    let all = std::iter::once((listen.proxy, true)).chain(listen.host_ports.iter().map(|p| (*p, false)));
    for (port, is_proxy) in all {
        let l = std::net::TcpListener::bind(("127.0.0.1", port)).map_err(|e| format!("listen on 127.0.0.1:{port} inside: {e}"))?;
        let mut msg = [0u8; 3];
        msg[0] = is_proxy as u8;
        msg[1..].copy_from_slice(&port.to_le_bytes());
        let fds = [l.as_fd()];
        let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut cmsg = SendAncillaryBuffer::new(&mut space);
        cmsg.push(SendAncillaryMessage::ScmRights(&fds));
        rustix::net::sendmsg(control, &[IoSlice::new(&msg)], &mut cmsg, SendFlags::NOSIGNAL).map_err(|e| format!("hand out a listener: {e}"))?;
    }
    Ok(())
}

/// The parent: receives the listeners until pid 1 closes its end (or sends them all).
pub fn receive(control: &OwnedFd, count: usize) -> Vec<Handed> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let mut out = Vec::new();
    while out.len() < count {
        let mut msg = [0u8; 3];
        let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut cmsg = RecvAncillaryBuffer::new(&mut space);
        let Ok(got) = rustix::net::recvmsg(control, &mut [IoSliceMut::new(&mut msg)], &mut cmsg, RecvFlags::CMSG_CLOEXEC) else { break };
        if got.bytes != 3 {
            break;
        }
        let fd: Option<OwnedFd> = cmsg.drain().find_map(|m| if let RecvAncillaryMessage::ScmRights(mut fds) = m { fds.next() } else { None });
        let Some(fd) = fd else { break };
        out.push(Handed { port: u16::from_le_bytes([msg[1], msg[2]]), is_proxy: msg[0] == 1, listener: std::net::TcpListener::from(fd) });
    }
    out
}

/// The variables that send a client through the proxy (upper and lower case), and keep the
/// forwarded loopback ports direct.
pub fn proxy_env(port: u16) -> Vec<(String, String)> {
    let url = format!("http://127.0.0.1:{port}");
    let mut env = Vec::new();
    for name in ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"] {
        env.push((name.to_string(), url.clone()));
        env.push((name.to_ascii_lowercase(), url.clone()));
    }
    for name in ["NO_PROXY", "no_proxy"] {
        env.push((name.to_string(), "localhost,127.0.0.1,::1".to_string()));
    }
    env
}
