//! HTTP/1.1 as the gateway reads and writes it: a head (request or status line and headers)
//! and a body framed by `Content-Length`, chunks or the connection's end. Every size is
//! bounded before it is read; what the agent sends is hostile (a header name outside the
//! token characters, a control character in a value, a folded line are refused).

use std::io::{self, BufRead, Read, Write};

/// The longest head, and the most headers, either side may send.
const MAX_HEAD: usize = 64 * 1024;
const MAX_HEADERS: usize = 128;
/// The longest chunk-size line.
const MAX_CHUNK_LINE: u64 = 1024;

/// A request or status line and its headers (names lower case, in order).
#[derive(Debug, Clone, Default)]
pub(super) struct Head {
    pub first: String,
    pub headers: Vec<(String, String)>,
}

fn bad(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_string())
}

impl Head {
    /// The first value of header `name` (lower case).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// How its body is framed (`request`: a head without a length has no body).
    pub fn framing(&self, request: bool) -> io::Result<Framing> {
        if let Some(te) = self.get("transfer-encoding") {
            return if te.trim().eq_ignore_ascii_case("chunked") { Ok(Framing::Chunked) } else { Err(bad("a transfer encoding other than chunked")) };
        }
        let lengths: Vec<&str> = self.headers.iter().filter(|(k, _)| k == "content-length").map(|(_, v)| v.trim()).collect();
        match lengths.first() {
            Some(first) if lengths.iter().all(|l| l == first) => first.parse().map(Framing::Length).map_err(|_| bad("a content length that is no number")),
            Some(_) => Err(bad("two content lengths")),
            None if request => Ok(Framing::Length(0)),
            None => Ok(Framing::Close),
        }
    }
}

/// How a body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    Length(u64),
    Chunked,
    /// At the connection's end (a response without a length).
    Close,
}

/// Reads one head; `None` when the connection ended before its first byte.
pub(super) fn read_head(r: &mut impl BufRead) -> io::Result<Option<Head>> {
    let mut head = Head::default();
    let mut total = 0;
    loop {
        let mut line = Vec::new();
        let n = r.by_ref().take((MAX_HEAD - total) as u64 + 1).read_until(b'\n', &mut line)?;
        if n == 0 {
            return if total == 0 { Ok(None) } else { Err(bad("the connection ended inside a head")) };
        }
        total += n;
        if total > MAX_HEAD || !line.ends_with(b"\n") {
            return Err(bad("a head over 64 KiB"));
        }
        let text = std::str::from_utf8(&line).map_err(|_| bad("a head that is not UTF-8"))?.trim_end_matches(['\r', '\n']);
        if head.first.is_empty() {
            if text.is_empty() {
                // Blank lines before a request are allowed (RFC 9112 §2.2).
                continue;
            }
            head.first = text.to_string();
            continue;
        }
        if text.is_empty() {
            return Ok(Some(head));
        }
        let (name, value) = text.split_once(':').ok_or_else(|| bad("a header line without a colon"))?;
        let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
        if name.is_empty() || !name.chars().all(token) {
            return Err(bad("a header name outside the token characters (or a folded line)"));
        }
        let value = value.trim_matches([' ', '\t']);
        if value.chars().any(|c| c.is_control() && c != '\t') {
            return Err(bad("a control character in a header value"));
        }
        if head.headers.len() >= MAX_HEADERS {
            return Err(bad("more than 128 headers"));
        }
        head.headers.push((name.to_ascii_lowercase(), value.to_string()));
    }
}

/// A body's bytes, decoded from its framing, piece by piece.
pub(super) struct Body<'a, R: BufRead> {
    r: &'a mut R,
    framing: Framing,
    /// Bytes left in this chunk (or the whole body, by length).
    left: u64,
    done: bool,
}

impl<'a, R: BufRead> Body<'a, R> {
    pub fn new(r: &'a mut R, framing: Framing) -> Self {
        let left = if let Framing::Length(n) = framing { n } else { 0 };
        Body { r, done: framing == Framing::Length(0), framing, left }
    }

    /// The next piece into `buf`; 0 at the body's end.
    pub fn piece(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        match self.framing {
            Framing::Close => self.r.read(buf),
            Framing::Length(_) => {
                let take = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
                let n = self.r.read(&mut buf[..take])?;
                if n == 0 {
                    return Err(bad("the connection ended inside a body"));
                }
                self.left -= n as u64;
                self.done = self.left == 0;
                Ok(n)
            }
            Framing::Chunked => {
                if self.left == 0 {
                    self.left = self.chunk_size()?;
                    if self.left == 0 {
                        self.trailers()?;
                        self.done = true;
                        return Ok(0);
                    }
                }
                let take = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
                let n = self.r.read(&mut buf[..take])?;
                if n == 0 {
                    return Err(bad("the connection ended inside a chunk"));
                }
                self.left -= n as u64;
                if self.left == 0 {
                    let mut crlf = Vec::new();
                    self.r.by_ref().take(2).read_until(b'\n', &mut crlf)?;
                    if crlf != b"\r\n" && crlf != b"\n" {
                        return Err(bad("a chunk without its line end"));
                    }
                }
                Ok(n)
            }
        }
    }

    fn chunk_size(&mut self) -> io::Result<u64> {
        let mut line = Vec::new();
        self.r.by_ref().take(MAX_CHUNK_LINE).read_until(b'\n', &mut line)?;
        let text = std::str::from_utf8(&line).map_err(|_| bad("a chunk size that is not text"))?;
        let size = text.trim_end_matches(['\r', '\n']).split(';').next().unwrap_or("").trim();
        u64::from_str_radix(size, 16).map_err(|_| bad("a chunk size that is no hex number"))
    }

    fn trailers(&mut self) -> io::Result<()> {
        for _ in 0..MAX_HEADERS {
            let mut line = Vec::new();
            if self.r.by_ref().take(8192).read_until(b'\n', &mut line)? == 0 || line == b"\r\n" || line == b"\n" {
                return Ok(());
            }
        }
        Err(bad("too many trailers"))
    }

    /// The whole body, refused past `max` bytes.
    pub fn read_all(&mut self, max: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = [0u8; 16 * 1024];
        loop {
            let n = self.piece(&mut buf)?;
            if n == 0 {
                return Ok(out);
            }
            if out.len() + n > max {
                return Err(io::Error::new(io::ErrorKind::OutOfMemory, "too large"));
            }
            out.extend_from_slice(&buf[..n]);
        }
    }
}

/// Writes a head: its first line, the headers, the blank line.
pub(super) fn write_head(w: &mut impl Write, first: &str, headers: &[(String, String)]) -> io::Result<()> {
    let mut out = String::with_capacity(256);
    out.push_str(first);
    out.push_str("\r\n");
    for (k, v) in headers {
        out.push_str(k);
        out.push_str(": ");
        out.push_str(v);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    w.write_all(out.as_bytes())
}

/// Writes one chunk (an empty `data` is the last one).
pub(super) fn write_chunk(w: &mut impl Write, data: &[u8]) -> io::Result<()> {
    write!(w, "{:x}\r\n", data.len())?;
    w.write_all(data)?;
    w.write_all(b"\r\n")
}

/// Headers that describe one connection, never forwarded either way.
pub(super) const HOP_BY_HOP: &[&str] = &["connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "trailer", "transfer-encoding", "upgrade", "content-length", "host", "expect"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_bodies_decode_and_hostile_heads_are_refused() {
        let raw = b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-T: 1\r\n\r\nNEXT";
        let mut r = io::BufReader::new(&raw[..]);
        let head = read_head(&mut r).unwrap().unwrap();
        assert_eq!(head.first, "POST /v1/messages HTTP/1.1");
        assert_eq!(head.framing(true).unwrap(), Framing::Chunked);
        assert_eq!(Body::new(&mut r, Framing::Chunked).read_all(100).unwrap(), b"hello world");
        let mut rest = String::new();
        r.read_to_string(&mut rest).unwrap();
        assert_eq!(rest, "NEXT");
        for bad in [&b"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n"[..], b"GET / HTTP/1.1\r\n folded\r\n\r\n", b"GET / HTTP/1.1\r\nA: b\x01c\r\n\r\n", b"GET / HTTP/1.1\r\nA: b"] {
            assert!(read_head(&mut io::BufReader::new(bad)).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let big = format!("GET / HTTP/1.1\r\nA: {}\r\n\r\n", "x".repeat(70_000));
        assert!(read_head(&mut io::BufReader::new(big.as_bytes())).is_err());
        let two = read_head(&mut io::BufReader::new(&b"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"[..])).unwrap().unwrap();
        assert!(two.framing(true).is_err());
        assert!(Body::new(&mut io::BufReader::new(&b"abcdef"[..]), Framing::Length(6)).read_all(5).is_err());
    }
}
