//! A wrapped agent's terminal: its own pseudo-terminal, relayed to the user's. The agent never
//! holds a descriptor of the user's terminal, so `TIOCSTI`, escape sequences aimed at
//! another of the user's terminals, or a read of the user's tty reach only its own.
//!
//! With a terminal on stdin ([`Terminal::Pty`]): a pty pair made here (`O_NOCTTY`); the slave
//! is the confined side's stdin, stdout and stderr (the command makes it its controlling
//! terminal in a session of its own); the user's terminal goes raw (restored on every way
//! out) and two threads copy bytes: keys in, output out. Window size follows the user's
//! (looked at whenever the relay wakes, at least every 100 ms). Ctrl-C, Ctrl-Z, mouse
//! reports, bracketed paste and colours are bytes like any other: the agent's line
//! discipline makes signals of them for the agent. Without one ([`Terminal::Pipes`]):
//! stdin as it is; stdout and stderr are relayed through pipes, whatever the user's are (a
//! terminal, a pipe or a file, which another program shows later). Output reaches the user
//! through [`super::term`]'s filter either way: its `Interactive` profile on the agent's own
//! terminal relayed to the user's, `Output` on pipes and where the user's stdout is no
//! terminal (no query passes: nothing but the user's shell would read the answer).

use super::term::{Filter, Profile};
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the wrap session sees of the agent's terminal while it runs: when the agent last
/// wrote output (an interactive CLI that has gone quiet waits for its user), and a way to
/// type a message into it as the user would (the review's feedback).
#[derive(Clone, Default)]
pub struct Console {
    inner: Arc<ConsoleState>,
}

#[derive(Default)]
struct ConsoleState {
    /// Milliseconds (monotonic, from the relay's start) of the last output.
    last_out: AtomicI64,
    /// The agent asked for bracketed paste (`ESC [ ? 2004 h`).
    paste: AtomicBool,
    /// Requests the command made with Cairn's own OSC sequence ([`super::term`]), not yet taken.
    requests: std::sync::Mutex<Vec<String>>,
    /// The pty's master side (none: the session has no terminal of its own).
    master: std::sync::Mutex<Option<OwnedFd>>,
    /// Lines the user submitted in the terminal ([`super::typed`]), not yet taken (a few: the
    /// first ones name the session).
    typed: std::sync::Mutex<Vec<String>>,
    start: std::sync::OnceLock<std::time::Instant>,
}

impl Console {
    fn now_ms(&self) -> i64 {
        self.inner.start.get_or_init(std::time::Instant::now).elapsed().as_millis() as i64
    }

    /// The agent has a terminal of its own (output and typing are followed).
    pub fn is_pty(&self) -> bool {
        self.inner.master.lock().is_ok_and(|m| m.is_some())
    }

    /// Time since the agent last wrote to its terminal.
    pub fn quiet_for(&self) -> Duration {
        Duration::from_millis((self.now_ms() - self.inner.last_out.load(Ordering::SeqCst)).max(0) as u64)
    }

    /// Takes the requests the command made on its terminal (a preview's Neovim asking for
    /// a decision, see [`super::term`]): what it asks, never a decision made.
    pub fn take_requests(&self) -> Vec<String> {
        self.inner.requests.lock().map(|mut r| std::mem::take(&mut *r)).unwrap_or_default()
    }

    fn asked(&self, asked: Vec<Vec<u8>>) {
        if asked.is_empty() {
            return;
        }
        if let Ok(mut r) = self.inner.requests.lock() {
            for a in asked {
                // A few at a time: a flood is dropped, not queued.
                if r.len() < 4 {
                    r.push(String::from_utf8_lossy(&a).into_owned());
                }
            }
        }
    }

    /// Takes the lines the user typed and submitted (Enter) since the last look, oldest first.
    pub fn take_typed(&self) -> Vec<String> {
        self.inner.typed.lock().map(|mut t| std::mem::take(&mut *t)).unwrap_or_default()
    }

    fn typed(&self, lines: Vec<String>) {
        if let Ok(mut t) = self.inner.typed.lock() {
            for line in lines {
                if t.len() < 8 {
                    t.push(line);
                }
            }
        }
    }

    /// A mark of the latest output (compare two to know whether output came in between).
    pub fn output_mark(&self) -> i64 {
        self.inner.last_out.load(Ordering::SeqCst)
    }

    fn saw_output(&self, bytes: &[u8]) {
        self.inner.last_out.store(self.now_ms(), Ordering::SeqCst);
        if contains(bytes, b"\x1b[?2004h") {
            self.inner.paste.store(true, Ordering::SeqCst);
        } else if contains(bytes, b"\x1b[?2004l") {
            self.inner.paste.store(false, Ordering::SeqCst);
        }
    }

    /// Types `text` into the agent's terminal as the user's next message: pasted (bracketed,
    /// when the agent asked for it; else on one line) and sent with Enter. Control characters
    /// in `text` are the caller's to escape. Returns the output mark just before Enter (output
    /// after it is the agent's answer, not the echo of the paste); None when there is no
    /// terminal.
    pub fn type_message(&self, text: &str) -> Option<i64> {
        let Ok(guard) = self.inner.master.lock() else { return None };
        let Some(master) = guard.as_ref() else { return None };
        let body = if self.inner.paste.load(Ordering::SeqCst) {
            format!("\x1b[200~{text}\x1b[201~")
        } else {
            text.split_whitespace().collect::<Vec<_>>().join(" ")
        };
        let write_all = |mut b: &[u8]| -> bool {
            while !b.is_empty() {
                match rustix::io::write(master, b) {
                    Ok(n) => b = &b[n..],
                    Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => std::thread::yield_now(),
                    Err(_) => return false,
                }
            }
            true
        };
        // The paste, then Enter on its own: a TUI that reads the paste as one event submits it
        // with the next key, as when the user pastes and presses Enter.
        if !write_all(body.as_bytes()) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(150));
        let before = self.output_mark();
        write_all(b"\r").then_some(before)
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The user's side: the standard streams of `cairn wrap` (duplicates the edge hands over;
/// the core never takes the process's own).
#[derive(Debug)]
pub struct Streams {
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// How the session's standard streams are made.
pub enum Terminal {
    Pty { master: OwnedFd, slave: OwnedFd, user: Streams },
    /// Read end and write end of each of stdout's and stderr's pipes.
    Pipes { out: (OwnedFd, OwnedFd), err: (OwnedFd, OwnedFd), user: Streams },
}

/// The relay's threads and what to restore.
pub struct Relay {
    pub console: Console,
    stop: Arc<AtomicBool>,
    /// Written to wake the keys' thread at once when the session ends.
    wake: Option<OwnedFd>,
    threads: Vec<std::thread::JoinHandle<()>>,
    saved: Option<rustix::termios::Termios>,
    /// The user's terminal, to restore.
    tty: Option<OwnedFd>,
}

impl Terminal {
    /// A pty when the user's stdin is a terminal, else pipes for stdout and stderr.
    pub fn for_streams(user: &Streams) -> std::io::Result<Terminal> {
        use rustix::termios::isatty;
        let user = Streams { stdin: user.stdin.try_clone()?, stdout: user.stdout.try_clone()?, stderr: user.stderr.try_clone()? };
        if isatty(&user.stdin) {
            use rustix::pty::OpenptFlags;
            let master = rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
            rustix::pty::grantpt(&master)?;
            rustix::pty::unlockpt(&master)?;
            let slave = rustix::pty::ioctl_tiocgptpeer(&master, OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
            if let Ok(size) = rustix::termios::tcgetwinsize(&user.stdin) {
                let _ = rustix::termios::tcsetwinsize(&master, size);
            }
            return Ok(Terminal::Pty { master, slave, user });
        }
        let pipe = || rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC);
        Ok(Terminal::Pipes { out: pipe()?, err: pipe()?, user })
    }

    pub fn is_pty(&self) -> bool {
        matches!(self, Terminal::Pty { .. })
    }

    /// The confined side's stdin, stdout and stderr.
    pub fn stdio(&self) -> std::io::Result<[Stdio; 3]> {
        Ok(match self {
            Terminal::Pty { slave, .. } => [Stdio::from(slave.try_clone()?), Stdio::from(slave.try_clone()?), Stdio::from(slave.try_clone()?)],
            Terminal::Pipes { out, err, user } => [Stdio::from(user.stdin.try_clone()?), Stdio::from(out.1.try_clone()?), Stdio::from(err.1.try_clone()?)],
        })
    }

    /// Starts relaying (after the confined side started: our copies of its ends close here).
    pub fn relay(self) -> Relay {
        let stop = Arc::new(AtomicBool::new(false));
        let console = Console::default();
        console.now_ms();
        let mut threads = Vec::new();
        let mut saved = None;
        match self {
            Terminal::Pty { master, slave, user } => {
                drop(slave);
                saved = rustix::termios::tcgetattr(&user.stdin).ok();
                if let Some(mut raw) = saved.clone() {
                    raw.make_raw();
                    let _ = rustix::termios::tcsetattr(&user.stdin, rustix::termios::OptionalActions::Now, &raw);
                }
                let tty = user.stdin.try_clone().ok();
                if let (Ok(mut m), Ok(fd)) = (console.inner.master.lock(), master.try_clone()) {
                    *m = Some(fd);
                }
                let mut wake = None;
                if let (Ok(keys), Ok(stdin), Ok((wake_r, wake_w))) = (master.try_clone(), user.stdin.try_clone(), rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)) {
                    let (s, typed) = (Arc::clone(&stop), console.clone());
                    wake = Some(wake_w);
                    threads.push(std::thread::spawn(move || keys_in(stdin, keys, wake_r, &s, &typed)));
                }
                let Streams { stdin, stdout, .. } = user;
                let seen = console.clone();
                // A TUI's queries only where a terminal answers them (not into a file).
                let profile = if rustix::termios::isatty(&stdout) { Profile::Interactive } else { Profile::Output };
                threads.push(std::thread::spawn(move || output_out(master, stdin, stdout, profile, &seen)));
                return Relay { console, stop, wake, threads, saved, tty };
            }
            Terminal::Pipes { out, err, user } => {
                for ((r, w), to) in [(out, &user.stdout), (err, &user.stderr)] {
                    drop(w);
                    if let Ok(to) = to.try_clone() {
                        threads.push(std::thread::spawn(move || copy_pipe(r, to)));
                    }
                }
            }
        }
        Relay { console, stop, wake: None, threads, saved, tty: None }
    }
}

impl Relay {
    /// Once the session has ended: the rest of its output copied, the user's terminal back
    /// as it was.
    pub fn finish(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Ok(mut m) = self.console.inner.master.lock() {
            m.take();
        }
        if let Some(w) = self.wake.take() {
            let _ = rustix::io::write(&w, b"x");
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let (Some(saved), Some(tty)) = (self.saved.take(), &self.tty) {
            let _ = rustix::termios::tcsetattr(tty, rustix::termios::OptionalActions::Now, &saved);
        }
    }
}

/// Waits up to `ms` for `fd` to be readable.
fn readable(fd: impl AsFd, ms: i64) -> bool {
    let mut fds = [rustix::event::PollFd::new(&fd, rustix::event::PollFlags::IN)];
    let timeout = rustix::event::Timespec { tv_sec: 0, tv_nsec: ms * 1_000_000 };
    matches!(rustix::event::poll(&mut fds, Some(&timeout)), Ok(n) if n > 0)
}

/// Copies the user's keys to the agent's terminal; the lines they submit go to `console`.
fn keys_in(stdin: OwnedFd, master: OwnedFd, wake: OwnedFd, stop: &AtomicBool, console: &Console) {
    let mut master = std::fs::File::from(master);
    let mut lines = super::typed::Lines::default();
    let mut buf = [0u8; 16 * 1024];
    while !stop.load(Ordering::SeqCst) {
        let mut fds = [rustix::event::PollFd::new(&stdin, rustix::event::PollFlags::IN), rustix::event::PollFd::new(&wake, rustix::event::PollFlags::IN)];
        if rustix::event::poll(&mut fds, None).is_err() || !fds[1].revents().is_empty() {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            continue;
        }
        match rustix::io::read(&stdin, &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                // A resize just before a key reaches the agent before the key does.
                if let Ok(size) = rustix::termios::tcgetwinsize(&stdin) {
                    if rustix::termios::tcgetwinsize(&master).is_ok_and(|m| (m.ws_row, m.ws_col) != (size.ws_row, size.ws_col)) {
                        let _ = rustix::termios::tcsetwinsize(&master, size);
                    }
                }
                if master.write_all(&buf[..n]).is_err() {
                    break;
                }
                console.typed(lines.feed(&buf[..n]));
            }
        }
    }
}

fn output_out(master: OwnedFd, tty: OwnedFd, out: OwnedFd, profile: Profile, console: &Console) {
    let mut size = rustix::termios::tcgetwinsize(&tty).ok();
    let mut out = std::fs::File::from(out);
    let mut buf = vec![0u8; 64 * 1024];
    let mut filter = Filter::new(profile);
    let mut clean = Vec::with_capacity(buf.len());
    loop {
        let ready = readable(&master, 100);
        let now = rustix::termios::tcgetwinsize(&tty).ok();
        if let Some(n) = now.filter(|n| size.is_none_or(|s| (s.ws_row, s.ws_col) != (n.ws_row, n.ws_col))) {
            let _ = rustix::termios::tcsetwinsize(&master, n);
            size = Some(n);
        }
        if !ready {
            continue;
        }
        // EIO once every slave descriptor is closed: the session is over.
        match rustix::io::read(&master, &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                console.saw_output(&buf[..n]);
                clean.clear();
                filter.pass(&buf[..n], &mut clean);
                console.asked(filter.take_requests());
                if out.write_all(&clean).is_err() {
                    break;
                }
            }
        }
    }
}

/// Relays one of the command's output pipes to the user's stream, filtered, to its end.
fn copy_pipe(r: OwnedFd, to: OwnedFd) {
    let (mut r, mut to) = (std::fs::File::from(r), std::fs::File::from(to));
    let mut buf = vec![0u8; 64 * 1024];
    let mut filter = Filter::new(Profile::Output);
    let mut clean = Vec::with_capacity(buf.len());
    loop {
        clean.clear();
        let n = r.read(&mut buf).unwrap_or(0);
        if n == 0 {
            filter.end(&mut clean);
        } else {
            filter.pass(&buf[..n], &mut clean);
        }
        if to.write_all(&clean).is_err() || n == 0 {
            break;
        }
    }
}
