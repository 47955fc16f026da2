//! The parent's side of a wrap session's network ([`super::net`]): an HTTP(S) proxy that
//! admits `[wrap] allow_hosts` and nothing else, and the forwarders of `[wrap] host_ports`.
//! Blocking `std::net`, a thread per connection; everything here runs in the host's network
//! namespace, on listeners pid 1 made inside the session's.
//!
//! A request, in order (the anchors' pitfalls, BOUNDARY.md §4): the host canonicalised
//! (ASCII only, lowercase, one trailing dot dropped, IPv6 brackets off); matched against the
//! allow-list (`host`, `host:port`, `*.suffix`; port 443 unless named); resolved here, in the
//! parent; every loopback, private, link-local, CGNAT, unique-local, multicast and reserved
//! address dropped, and every address of this machine ([`super::own`]: its interfaces', its
//! public ones included, and any the kernel delivers here), IPv6 forms that carry an IPv4
//! address read as that address (a name that resolves only to those is refused: no DNS
//! rebinding to the host); the resolved address dialled. `CONNECT` tunnels; an absolute-form request (plain
//! `http://`) is forwarded in origin form. Refusals answer 403 and are logged with the host.
//!
//! Bounded for the host's sake: at most `[wrap] max_connections` at once (proxied and
//! forwarded together; one more is closed at once, with a 503 for the proxy), and a request
//! head must arrive whole within [`HEAD_DEADLINE`] (a client that sends it a byte at a time
//! holds a thread no longer).

use super::net::Handed;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the proxy admits.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub allow_hosts: Vec<String>,
    pub host_ports: Vec<u16>,
    /// Connections served at once (0: none).
    pub max_connections: u64,
}

/// How long a client has to send its whole request head.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(10);

/// One connection being served: counted while it lives.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The running proxy and forwarders; [`Serving::stop`] ends their accept loops.
pub struct Serving {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    denied: Arc<Mutex<Vec<String>>>,
    /// The listeners, shut down to wake their accept loops at once.
    listeners: Vec<std::net::TcpListener>,
}

impl Serving {
    /// Stops accepting; returns the `host:port`s refused during the session.
    pub fn stop(self) -> Vec<String> {
        self.stop.store(true, Ordering::SeqCst);
        for l in &self.listeners {
            let _ = rustix::net::shutdown(l, rustix::net::Shutdown::Both);
        }
        for t in self.threads {
            let _ = t.join();
        }
        let mut d = self.denied.lock().map(|d| d.clone()).unwrap_or_default();
        d.dedup();
        d
    }
}

/// Serves the listeners pid 1 handed out.
pub fn serve(handed: Vec<Handed>, policy: Policy) -> Serving {
    let stop = Arc::new(AtomicBool::new(false));
    let denied = Arc::new(Mutex::new(Vec::new()));
    let policy = Arc::new(policy);
    let active = Arc::new(AtomicUsize::new(0));
    let listeners = handed.iter().filter_map(|h| h.listener.try_clone().ok()).collect();
    let threads = handed
        .into_iter()
        .map(|h| {
            let (stop, denied, policy, active) = (Arc::clone(&stop), Arc::clone(&denied), Arc::clone(&policy), Arc::clone(&active));
            std::thread::spawn(move || accept_loop(h, &stop, &denied, &policy, &active))
        })
        .collect();
    Serving { stop, threads, denied, listeners }
}

fn accept_loop(h: Handed, stop: &AtomicBool, denied: &Arc<Mutex<Vec<String>>>, policy: &Arc<Policy>, active: &Arc<AtomicUsize>) {
    if h.listener.set_nonblocking(true).is_err() {
        return;
    }
    while !stop.load(Ordering::SeqCst) {
        let mut fds = [rustix::event::PollFd::new(&h.listener, rustix::event::PollFlags::IN)];
        let timeout = rustix::event::Timespec { tv_sec: 0, tv_nsec: 200_000_000 };
        if !matches!(rustix::event::poll(&mut fds, Some(&timeout)), Ok(n) if n > 0) {
            continue;
        }
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok((mut conn, _)) = h.listener.accept() else { continue };
        if active.fetch_add(1, Ordering::SeqCst) >= policy.max_connections as usize {
            active.fetch_sub(1, Ordering::SeqCst);
            // A few bytes into a fresh socket's buffer: never waits.
            if h.is_proxy {
                let _ = conn.write_all(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            }
            tracing::warn!("cairn wrap: proxy refused a connection: [wrap] max_connections ({}) are open", policy.max_connections);
            continue;
        }
        let slot = Slot(Arc::clone(active));
        let _ = conn.set_nonblocking(false);
        let (denied, policy, port, is_proxy) = (Arc::clone(denied), Arc::clone(policy), h.port, h.is_proxy);
        std::thread::spawn(move || {
            let _slot = slot;
            if is_proxy {
                proxy_one(conn, &policy, &denied);
            } else if let Ok(host) = TcpStream::connect(("127.0.0.1", port)) {
                splice(conn, host);
            }
        });
    }
}

/// The host as the allow-list compares it, or `None` when it is not a plain ASCII name.
pub fn canonical(host: &str) -> Option<String> {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    let h = h.strip_suffix('.').unwrap_or(h).to_ascii_lowercase();
    let ok = !h.is_empty() && h.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | ':')) && !h.contains("..");
    ok.then_some(h)
}

/// Does the allow-list admit `host:port`?
pub fn allowed(allow: &[String], host: &str, port: u16) -> bool {
    allow.iter().any(|pattern| {
        let (p_host, p_port) = match pattern.rsplit_once(':') {
            Some((h, p)) if p.parse::<u16>().is_ok() => (h, p.parse::<u16>().unwrap_or(443)),
            _ => (pattern.as_str(), 443),
        };
        let Some(p_host) = canonical(p_host.trim_start_matches("*.")) else { return false };
        let name_ok = if pattern.starts_with("*.") { host.ends_with(&format!(".{p_host}")) } else { host == p_host };
        name_ok && port == p_port
    })
}

/// Is `ip` in a range of this machine or its private networks, by class (never dialled for
/// a name)? Loopback, private, link-local, CGNAT, unspecified, broadcast, multicast, IETF
/// protocol assignments, benchmarking, reserved; unique-local and site-local IPv6; an IPv6
/// address that carries an IPv4 one is that one.
pub fn private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback() || v4.is_private() || v4.is_link_local() || v4.is_unspecified() || v4.is_broadcast() || v4.is_multicast() || o[0] == 0 || (o[0] == 100 && (64..128).contains(&o[1])) || o[0] >= 240 || (o[0], o[1], o[2]) == (192, 0, 0) || (o[0] == 198 && (o[1] & 0xfe) == 18)
        }
        IpAddr::V6(v6) => match super::own::carried_v4(v6) {
            Some(v4) => private(IpAddr::V4(v4)),
            None => {
                let s = v6.segments();
                v6.is_loopback() || v6.is_unspecified() || v6.is_multicast() || (s[0] & 0xfe00) == 0xfc00 || (s[0] & 0xffc0) == 0xfe80 || (s[0] & 0xffc0) == 0xfec0
            }
        },
    }
}

/// The addresses `host:port` resolves to that the proxy may dial: none private
/// ([`private`]), none of this machine's ([`super::own`], asked now).
pub fn dialable(host: &str, port: u16) -> Vec<SocketAddr> {
    let Ok(addrs) = (host, port).to_socket_addrs() else { return Vec::new() };
    let own = super::own::interface_addresses();
    addrs.filter(|a| !private(a.ip()) && !super::own::is_own(a.ip(), &own)).collect()
}

/// One client of the proxy: reads its request head, decides, tunnels or refuses.
fn proxy_one(conn: TcpStream, policy: &Policy, denied: &Mutex<Vec<String>>) {
    let Some((head, buffered)) = read_head(&conn, std::time::Instant::now() + HEAD_DEADLINE) else { return };
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut words = text.lines().next().unwrap_or("").split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let (connect, authority, rest) = if method.eq_ignore_ascii_case("CONNECT") {
        (true, target.to_string(), String::new())
    } else if let Some(r) = target.strip_prefix("http://") {
        let (auth, path) = r.split_once('/').map_or((r, "/".to_string()), |(a, p)| (a, format!("/{p}")));
        (false, auth.to_string(), path)
    } else {
        return refuse(conn, "a request the proxy does not take (CONNECT or http:// only)", None, denied);
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(':') && p.parse::<u16>().is_ok() => (h.to_string(), p.parse().unwrap_or(443)),
        _ => (authority.clone(), if connect { 443 } else { 80 }),
    };
    let Some(host) = canonical(&host) else { return refuse(conn, &format!("{host:?} is not a plain host name"), None, denied) };
    let target = format!("{host}:{port}");
    let local = matches!(host.as_str(), "127.0.0.1" | "localhost" | "::1") && policy.host_ports.contains(&port);
    let upstream = if local {
        TcpStream::connect(("127.0.0.1", port)).ok()
    } else if !allowed(&policy.allow_hosts, &host, port) {
        return refuse(conn, &format!("{target} is not in [wrap] allow_hosts"), Some(target.clone()), denied);
    } else {
        let addrs = dialable(&host, port);
        if addrs.is_empty() {
            return refuse(conn, &format!("{target} does not resolve to a public address (this machine's own and private addresses are refused)"), None, denied);
        }
        addrs.iter().find_map(|a| TcpStream::connect_timeout(a, Duration::from_secs(10)).ok())
    };
    let Some(mut upstream) = upstream else { return refuse(conn, &format!("{target} did not answer"), None, denied) };
    let mut conn = conn;
    let _ = conn.set_read_timeout(None);
    if connect {
        if conn.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").is_err() {
            return;
        }
    } else {
        let mut lines = text.lines();
        let first = lines.next().unwrap_or("");
        let version = first.split_whitespace().nth(2).unwrap_or("HTTP/1.1");
        let mut out = format!("{method} {rest} {version}\r\n");
        for l in lines.filter(|l| !l.is_empty() && !l.to_ascii_lowercase().starts_with("proxy-")) {
            out.push_str(l);
            out.push_str("\r\n");
        }
        out.push_str("\r\n");
        if upstream.write_all(out.as_bytes()).is_err() {
            return;
        }
    }
    // Bytes the client sent past its head (already read) go first.
    if !buffered.is_empty() && upstream.write_all(&buffered).is_err() {
        return;
    }
    splice(conn, upstream);
}

/// The request head (up to its empty line, at most 16 KiB) and the bytes read past it, or
/// `None` when the client ends, errs or has not sent it whole by `deadline`.
fn read_head(mut conn: &TcpStream, deadline: std::time::Instant) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let left = deadline.checked_duration_since(std::time::Instant::now()).filter(|d| !d.is_zero())?;
        conn.set_read_timeout(Some(left)).ok()?;
        let n = conn.read(&mut chunk).ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
        let find = |pat: &[u8]| buf.windows(pat.len()).position(|w| w == pat).map(|i| i + pat.len());
        let end = find(b"\r\n\r\n").or_else(|| find(b"\n\n"));
        if let Some(end) = end {
            let rest = buf.split_off(end);
            return Some((buf, rest));
        }
        if buf.len() > 16 * 1024 {
            return Some((buf, Vec::new()));
        }
    }
}

fn refuse(mut conn: TcpStream, why: &str, host: Option<String>, denied: &Mutex<Vec<String>>) {
    tracing::warn!("cairn wrap: proxy refused: {why}");
    if let (Some(h), Ok(mut d)) = (host, denied.lock()) {
        d.push(h);
    }
    let body = format!("cairn: {why} (:help cairn-wrap)\n");
    let _ = write!(conn, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
}

/// Copies both ways until either side ends.
pub(super) fn splice(a: TcpStream, b: TcpStream) {
    let (Ok(mut a2), Ok(mut b2)) = (a.try_clone(), b.try_clone()) else { return };
    let (mut a, mut b) = (a, b);
    let up = std::thread::spawn(move || {
        let _ = std::io::copy(&mut a, &mut b2);
        let _ = b2.shutdown(std::net::Shutdown::Write);
    });
    let _ = std::io::copy(&mut b, &mut a2);
    let _ = a2.shutdown(std::net::Shutdown::Write);
    let _ = up.join();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_match_as_listed_and_nothing_else() {
        let allow = vec!["api.anthropic.com".to_string(), "*.example.com".to_string(), "svc.test:8443".to_string()];
        let ok = |h: &str, p| canonical(h).is_some_and(|h| allowed(&allow, &h, p));
        assert!(ok("api.anthropic.com", 443) && ok("API.Anthropic.COM.", 443) && ok("a.b.example.com", 443) && ok("svc.test", 8443));
        assert!(!ok("api.anthropic.com", 80) && !ok("example.com", 443) && !ok("evilexample.com", 443) && !ok("api.anthropic.com.evil.io", 443));
        assert!(!ok("svc.test", 443) && !ok("аpi.anthropic.com", 443) && !ok("api..anthropic.com", 443));
        for ip in ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "::1", "fc00::1", "fe80::1", "fec0::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::127.0.0.1", "64:ff9b::10.0.0.1", "2002:7f00:1::1", "192.0.0.170", "198.18.0.1"] {
            assert!(private(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["1.1.1.1", "8.8.8.8", "2606:4700::1111"] {
            assert!(!private(ip.parse().unwrap()), "{ip}");
        }
    }
}
