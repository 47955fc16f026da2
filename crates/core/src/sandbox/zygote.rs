//! The parent's side of the zygote ([`super::child::zygote`]): starts it (the one way a child
//! is started, [`super::spawn::command`], plus `--zygote`) and asks it for a child per run.

use super::child::zygote::{RUN, SELFTEST};
use super::spawn::{command, Proc, Spawned};
use crate::error::{Error, Result};
use rustix::fd::{AsFd, OwnedFd};
use rustix::net::{AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketFlags, SocketType};
use std::fs::File;
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::time::Duration;

/// How long a fork request may wait for its answer: the zygote answers as soon as it has
/// built its interpreter (tens of milliseconds) and forked.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// A running zygote and the socket to it.
pub(super) struct Zygote {
    process: Child,
    control: OwnedFd,
}

fn failed(what: &str) -> impl Fn(rustix::io::Errno) -> Error + '_ {
    move |e| Error::Sandbox(format!("zygote: {what}: {e}"))
}

impl Zygote {
    /// Starts a zygote; it builds its interpreter while the first request waits in the socket.
    pub(super) fn start(exe: &Path, guards: bool) -> Result<Zygote> {
        let (ours, theirs) = rustix::net::socketpair(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None).map_err(failed("socketpair"))?;
        rustix::net::sockopt::set_socket_timeout(&ours, rustix::net::sockopt::Timeout::Recv, Some(ANSWER_TIMEOUT)).map_err(failed("timeout"))?;
        let mut cmd = command(exe, guards);
        cmd.arg("--zygote").stdin(Stdio::from(theirs)).stdout(Stdio::null()).stderr(Stdio::null());
        let process = cmd.spawn().map_err(|e| Error::Sandbox(format!("cannot start {}: {e}", exe.display())))?;
        Ok(Zygote { process, control: ours })
    }

    /// A child for one run.
    pub(super) fn fork(&self) -> Result<Spawned> {
        self.request(RUN)
    }

    /// A child that runs the self-test probes instead of a script.
    pub(super) fn fork_selftest(&self) -> Result<Spawned> {
        self.request(SELFTEST)
    }

    fn request(&self, kind: u8) -> Result<Spawned> {
        let pipe = || rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(failed("pipe"));
        let (in_r, in_w) = pipe()?;
        let (out_r, out_w) = pipe()?;
        let (err_r, err_w) = pipe()?;
        let (status_r, status_w) = pipe()?;
        {
            let fds = [in_r.as_fd(), out_w.as_fd(), err_w.as_fd(), status_w.as_fd()];
            let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(4))];
            let mut cmsg = SendAncillaryBuffer::new(&mut space);
            cmsg.push(SendAncillaryMessage::ScmRights(&fds));
            rustix::net::sendmsg(&self.control, &[IoSlice::new(&[kind])], &mut cmsg, SendFlags::NOSIGNAL).map_err(failed("request"))?;
        }
        // The child holds these ends now (through the zygote); ours must go for end-of-file.
        drop((in_r, out_w, err_w, status_w));
        let mut byte = [0u8; 1];
        let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut cmsg = RecvAncillaryBuffer::new(&mut space);
        let got = rustix::net::recvmsg(&self.control, &mut [IoSliceMut::new(&mut byte)], &mut cmsg, RecvFlags::CMSG_CLOEXEC).map_err(failed("answer"))?;
        if got.bytes == 0 {
            return Err(Error::Sandbox("zygote: it is gone".into()));
        }
        if got.flags.contains(rustix::net::ReturnFlags::CTRUNC) {
            // The kernel dropped the pidfd for want of a descriptor here; the child, without
            // its stdin, ends by itself.
            return Err(Error::Sandbox("zygote: answer: Too many open files (its pidfd was dropped)".into()));
        }
        let mut pidfd: Option<OwnedFd> = None;
        for msg in cmsg.drain() {
            if let RecvAncillaryMessage::ScmRights(mut fds) = msg {
                pidfd = pidfd.or_else(|| fds.next());
            }
        }
        let pidfd = pidfd.ok_or_else(|| Error::Sandbox("zygote: the fork failed".into()))?;
        Ok(Spawned { proc: Proc::Forked { pidfd: Arc::new(pidfd), status: File::from(status_r) }, stdin: File::from(in_w), stdout: File::from(out_r), stderr: File::from(err_r) })
    }
}

impl Drop for Zygote {
    fn drop(&mut self) {
        // Its children die with it (pid namespace, parent-death signal).
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// The self-test ([`super::spawn::selftest`]) of a child forked by a zygote, as every run in
/// `cairn up` and the Neovim host is started.
pub fn selftest(exe: &Path, target: &super::child::probe::Target) -> Result<super::child::probe::SelfTest> {
    use std::io::{Read, Write};
    let zygote = Zygote::start(exe, true)?;
    let mut child = zygote.fork_selftest()?;
    writeln!(child.stdin, "{}", serde_json::to_string(target)?).map_err(|e| Error::Sandbox(format!("selftest: {e}")))?;
    let mut out = Vec::new();
    child.stdout.read_to_end(&mut out).map_err(|e| Error::Sandbox(format!("selftest: {e}")))?;
    serde_json::from_slice(&out).map_err(|e| Error::Sandbox(format!("selftest output: {e}: {}", String::from_utf8_lossy(&out))))
}
