//! Where a route's requests go: the user's base URL (their environment's, never the agent's),
//! else the provider's, and the connection to it: TLS (rustls, the webpki roots) unless the
//! upstream is the host's loopback. A plain `http://` base URL elsewhere is refused: it would
//! send the key in clear.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// A parsed base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    pub tls: bool,
    pub host: String,
    pub port: u16,
    /// Its path, without the trailing slash (`""`, `/v1`).
    pub path: String,
}

impl std::fmt::Display for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}{}", if self.tls { "https" } else { "http" }, self.authority(), self.path)
    }
}

/// Is `host` this machine's loopback?
pub fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl Upstream {
    /// Parses `url` (`https://host[:port][/path]`, or `http://` to the loopback).
    pub fn parse(url: &str) -> Result<Upstream, String> {
        let url = url.trim();
        let (tls, rest) = match url.split_once("://") {
            Some((s, r)) if s.eq_ignore_ascii_case("https") => (true, r),
            Some((s, r)) if s.eq_ignore_ascii_case("http") => (false, r),
            _ => return Err(format!("{url:?} is not an http:// or https:// URL")),
        };
        let (authority, path) = match rest.find(['/', '?', '#']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let path = path.split(['?', '#']).next().unwrap_or("").trim_end_matches('/');
        if authority.contains('@') || authority.is_empty() {
            return Err(format!("{url:?} has no plain host (user information is not taken)"));
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !p.contains(']') => (h, p.parse::<u16>().map_err(|_| format!("{url:?} has a port that is no number"))?),
            _ => (authority, if tls { 443 } else { 80 }),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        if !host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | ':')) {
            return Err(format!("{url:?} has a host that is not a plain name"));
        }
        if !path.chars().all(|c| c.is_ascii_graphic()) {
            return Err(format!("{url:?} has a path that is not plain"));
        }
        if !tls && !is_loopback(&host) {
            return Err(format!("{url:?} is plain http to another machine: the gateway would send your key in clear (use https://)"));
        }
        Ok(Upstream { tls, host, port, path: path.to_string() })
    }

    /// `host[:port]` as the `Host` header carries it.
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        if self.port == if self.tls { 443 } else { 80 } {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// A connection to it.
    pub(super) fn connect(&self) -> io::Result<Conn> {
        let addrs: Vec<_> = (self.host.as_str(), self.port).to_socket_addrs()?.collect();
        let tcp = addrs
            .iter()
            .find_map(|a| TcpStream::connect_timeout(a, Duration::from_secs(15)).ok())
            .ok_or_else(|| io::Error::new(io::ErrorKind::ConnectionRefused, format!("{} did not answer", self.authority())))?;
        let _ = tcp.set_nodelay(true);
        // A stalled upstream does not hold a thread forever (a long generation streams events).
        let _ = tcp.set_read_timeout(Some(Duration::from_secs(600)));
        if !self.tls {
            return Ok(Conn::Plain(tcp));
        }
        let name = rustls::pki_types::ServerName::try_from(self.host.clone()).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let client = rustls::ClientConnection::new(tls_config()?, name).map_err(io::Error::other)?;
        Ok(Conn::Tls(Box::new(rustls::StreamOwned::new(client, tcp))))
    }
}

/// The TLS configuration, made once: the webpki roots, the ring provider's safe defaults.
fn tls_config() -> io::Result<Arc<rustls::ClientConfig>> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
            rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map(|b| Arc::new(b.with_root_certificates(roots).with_no_client_auth()))
                .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(io::Error::other)
}

/// A connection to the upstream, plain or TLS.
pub(super) enum Conn {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s) => s.read(buf),
            Conn::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(s) => s.write(buf),
            Conn::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Conn::Plain(s) => s.flush(),
            Conn::Tls(s) => s.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_parse_and_clear_text_leaves_only_for_the_loopback() {
        let u = Upstream::parse("http://127.0.0.1:8123").unwrap();
        assert_eq!((u.tls, u.host.as_str(), u.port, u.path.as_str()), (false, "127.0.0.1", 8123, ""));
        let u = Upstream::parse("https://api.openai.com/v1/").unwrap();
        assert_eq!((u.tls, u.port, u.path.as_str(), u.authority()), (true, 443, "/v1", "api.openai.com".to_string()));
        assert_eq!(Upstream::parse("http://[::1]:9/x").unwrap().authority(), "[::1]:9");
        for bad in ["http://api.anthropic.com", "ftp://x", "https://user:pw@x.com", "https://x.com:port", "https://ex ample.com"] {
            assert!(Upstream::parse(bad).is_err(), "{bad}");
        }
    }
}
