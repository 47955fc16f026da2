//! One agent connection to a route, request after request (keep-alive): the request read
//! whole (bounded), its credential checked against the placeholders, its path against the
//! provider's paths the CLIs use, the budget asked; then sent to the route's upstream (one
//! connection per request) with the real credential, and the response relayed as it arrives,
//! piece by piece (an event stream stays a stream), its usage read on the way. Everything the
//! agent sends is hostile: it never chooses the host, a header it sends that names a
//! credential, a connection or an encoding is dropped, and a path outside the list is refused.

use super::http::{self, Body, Framing, Head, HOP_BY_HOP};
use super::shape::{self, Why};
use super::usage::Tap;
use super::{Meter, Provider, Route};
use std::io::{self, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The largest request body the gateway takes (a long conversation with its tools).
const MAX_REQUEST: usize = 32 << 20;
/// The largest response body it relays.
const MAX_RESPONSE: u64 = 512 << 20;
/// The headers that carry a credential, from any of the CLIs.
const CREDENTIAL_HEADERS: &[&str] = &["x-api-key", "authorization", "x-goog-api-key", "api-key"];

/// Serves one agent connection until it ends (or sends something the gateway refuses to read).
pub(super) fn serve_connection(conn: TcpStream, route: &Route, meter: &dyn Meter) {
    // An idle keep-alive connection is let go after a while.
    let _ = conn.set_read_timeout(Some(Duration::from_secs(600)));
    let _ = conn.set_nodelay(true);
    let Ok(mut w) = conn.try_clone() else { return };
    let mut r = BufReader::new(conn);
    while let Ok(true) = one(&mut r, &mut w, route, meter) {}
}

/// One request; whether the connection goes on.
fn one(r: &mut BufReader<TcpStream>, w: &mut TcpStream, route: &Route, meter: &dyn Meter) -> io::Result<bool> {
    let Some(head) = http::read_head(r)? else { return Ok(false) };
    let mut words = head.first.split(' ');
    let (method, target, version) = (words.next().unwrap_or(""), words.next().unwrap_or(""), words.next().unwrap_or(""));
    let framing = head.framing(true)?;
    if head.get("expect").is_some_and(|e| e.eq_ignore_ascii_case("100-continue")) {
        w.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    let body = match Body::new(r, framing).read_all(MAX_REQUEST) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::OutOfMemory => return answer(w, route.provider, Why::TooLarge, "the request is over 32 MiB", false),
        Err(e) => return Err(e),
    };
    let keep = version == "HTTP/1.1" && !head.get("connection").is_some_and(|c| c.eq_ignore_ascii_case("close"));
    if head.get("upgrade").is_some() {
        // (Codex tries a WebSocket first, and falls back to HTTPS.)
        return answer(w, route.provider, Why::NotFound, "the gateway takes no WebSocket", keep);
    }
    if !matches!(method, "GET" | "POST" | "HEAD") {
        return answer(w, route.provider, Why::NotFound, "only GET, HEAD and POST are forwarded", keep);
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let Some((credentials, query)) = credentials(&head, query, route) else {
        let named: Vec<&str> = head.headers.iter().map(|(k, _)| k.as_str()).filter(|k| CREDENTIAL_HEADERS.contains(k)).collect();
        tracing::warn!("cairn gateway: refused a request without this session's credential (credential headers: {named:?})");
        return answer(w, route.provider, Why::Auth, "the request does not carry this session's credential", keep);
    };
    if !plain_path(path) || !plain_query(&query) || !forwarded(route.provider, path) || !path.starts_with(route.prefix) {
        tracing::warn!("cairn gateway: refused a request to {:?}", crate::display::escape_line(&target.chars().take(200).collect::<String>()));
        return answer(w, route.provider, Why::NotFound, "the gateway forwards only the provider's model paths", keep);
    }
    if let Some(why) = meter.exhausted() {
        return answer(w, route.provider, Why::Quota, &why, keep);
    }
    let query = if query.is_empty() { String::new() } else { format!("?{query}") };
    let upstream_target = format!("{}{}{query}", route.upstream.path, &path[route.prefix.len()..]);
    let model = model_of(path, &body);
    let mut up = match route.upstream.connect() {
        Ok(c) => c,
        Err(e) => return answer(w, route.provider, Why::Upstream, &format!("{} did not answer: {e}", route.upstream), keep),
    };
    let mut headers: Vec<(String, String)> = head.headers.iter().filter(|(k, _)| !HOP_BY_HOP.contains(&k.as_str()) && !CREDENTIAL_HEADERS.contains(&k.as_str()) && k != "accept-encoding").cloned().collect();
    headers.push(("host".into(), route.upstream.authority()));
    // Plain bodies: the usage is read from them.
    headers.push(("accept-encoding".into(), "identity".into()));
    headers.push(("connection".into(), "close".into()));
    if !body.is_empty() || method == "POST" {
        headers.push(("content-length".into(), body.len().to_string()));
    }
    headers.extend(credentials);
    http::write_head(&mut up, &format!("{method} {upstream_target} HTTP/1.1"), &headers)?;
    up.write_all(&body)?;
    up.flush()?;
    let mut ur = BufReader::with_capacity(64 * 1024, up);
    let head = loop {
        match http::read_head(&mut ur) {
            Ok(Some(h)) if h.first.split(' ').nth(1).is_some_and(|s| s.starts_with('1')) => continue,
            Ok(Some(h)) => break h,
            Ok(None) | Err(_) => return answer(w, route.provider, Why::Upstream, &format!("{} sent no answer", route.upstream), keep),
        }
    };
    let mut tap = None;
    let relayed = relay_response(&mut ur, w, &head, method == "HEAD", keep, &mut tap);
    if let Some((usage, reported)) = tap.and_then(Tap::finish) {
        let model = reported.or(model).unwrap_or_default();
        meter.record(route.provider, &model, &usage);
    }
    relayed.map(|()| keep)
}

/// The upstream's response to the agent, as it arrives; `tap` reads a success's usage.
fn relay_response(ur: &mut BufReader<super::upstream::Conn>, w: &mut TcpStream, head: &Head, head_only: bool, keep: bool, tap: &mut Option<Tap>) -> io::Result<()> {
    let status: u16 = head.first.split(' ').nth(1).and_then(|s| s.parse().ok()).filter(|s| (200..600).contains(s)).unwrap_or(502);
    let reason: String = head.first.splitn(3, ' ').nth(2).unwrap_or("").chars().filter(|c| c.is_ascii_graphic() || *c == ' ').take(64).collect();
    let framing = if head_only || status == 204 || status == 304 { Framing::Length(0) } else { head.framing(false)? };
    if (200..300).contains(&status) {
        *tap = Some(Tap::new(head.get("content-type").unwrap_or("")));
    }
    let mut headers: Vec<(String, String)> = head.headers.iter().filter(|(k, _)| !HOP_BY_HOP.contains(&k.as_str())).cloned().collect();
    let chunked = !matches!(framing, Framing::Length(_));
    match framing {
        Framing::Length(n) if !head_only => headers.push(("content-length".into(), n.to_string())),
        Framing::Length(_) => {}
        _ => headers.push(("transfer-encoding".into(), "chunked".into())),
    }
    headers.push(("connection".into(), if keep { "keep-alive" } else { "close" }.into()));
    http::write_head(w, &format!("HTTP/1.1 {status} {reason}"), &headers)?;
    let mut body = Body::new(ur, if head_only { Framing::Length(0) } else { framing });
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = body.piece(&mut buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX_RESPONSE {
            return Err(io::Error::other("a response over 512 MiB"));
        }
        if let Some(t) = tap.as_mut() {
            t.feed(&buf[..n]);
        }
        if chunked {
            http::write_chunk(w, &buf[..n])?;
        } else {
            w.write_all(&buf[..n])?;
        }
        w.flush()?;
    }
    if chunked {
        http::write_chunk(w, &[])?;
    }
    w.flush()
}

/// The gateway's own answer.
fn answer(w: &mut TcpStream, provider: Provider, why: Why, message: &str, keep: bool) -> io::Result<bool> {
    let (status, body) = shape::error(provider, why, message);
    let headers = [("content-type".to_string(), "application/json".to_string()), ("content-length".into(), body.len().to_string()), ("connection".into(), if keep { "keep-alive" } else { "close" }.into())];
    http::write_head(w, &format!("HTTP/1.1 {status} {}", shape::reason(status)), &headers)?;
    w.write_all(body.as_bytes())?;
    w.flush()?;
    Ok(keep)
}

/// The real credentials for the placeholders the request carries (each header the agent used
/// gets its real value in the secret's own form), and the query with a placeholder `key=`
/// swapped; `None` when it carries none, or anything else in a credential's place.
fn credentials(head: &Head, query: &str, route: &Route) -> Option<(Vec<(String, String)>, String)> {
    let mut out = Vec::new();
    for (k, v) in head.headers.iter().filter(|(k, _)| CREDENTIAL_HEADERS.contains(&k.as_str())) {
        let bearer = v.len() > 7 && v[..7].eq_ignore_ascii_case("bearer ");
        let value = if bearer { &v[7..] } else { v.as_str() };
        let secret = route.secrets.iter().find(|s| s.placeholder == value.trim())?;
        let _ = k;
        out.push(real_header(secret));
    }
    let mut pairs = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.strip_prefix("key=") {
            Some(v) => {
                let secret = route.secrets.iter().find(|s| s.placeholder == v)?;
                out.push(real_header(secret));
            }
            None => pairs.push(pair),
        }
    }
    out.dedup();
    (!out.is_empty()).then(|| (out, pairs.join("&")))
}

fn real_header(secret: &super::Secret) -> (String, String) {
    (secret.header.to_string(), if secret.bearer { format!("Bearer {}", secret.real) } else { secret.real.clone() })
}

/// A path of plain characters, no `..` or empty segment.
fn plain_path(path: &str) -> bool {
    path.starts_with('/') && path.len() <= 512 && path.chars().all(|c| c.is_ascii_alphanumeric() || "-._~:/@".contains(c)) && !path[1..].split('/').any(|s| s.is_empty() || s == "." || s == "..")
}

fn plain_query(query: &str) -> bool {
    query.len() <= 512 && query.chars().all(|c| c.is_ascii_alphanumeric() || "-._~=&%+,".contains(c))
}

/// The provider paths the CLIs use (the agent's side: OpenAI's under `/v1`).
fn forwarded(provider: Provider, path: &str) -> bool {
    let segs: Vec<&str> = path[1..].split('/').collect();
    match provider {
        Provider::Anthropic => matches!(segs.as_slice(), ["v1", "messages"] | ["v1", "messages", "count_tokens"] | ["v1", "models"] | ["v1", "models", _]),
        Provider::OpenAi => matches!(segs.as_slice(), ["v1", "responses"] | ["v1", "responses", _] | ["v1", "chat", "completions"] | ["v1", "completions"] | ["v1", "embeddings"] | ["v1", "models"] | ["v1", "models", _]),
        Provider::Gemini => match segs.as_slice() {
            [v, "models"] => matches!(*v, "v1" | "v1beta" | "v1alpha"),
            [v, "models", call] => {
                let method = call.rsplit_once(':').map_or("", |(_, m)| m);
                matches!(*v, "v1" | "v1beta" | "v1alpha") && (!call.contains(':') || matches!(method, "generateContent" | "streamGenerateContent" | "countTokens" | "embedContent" | "batchEmbedContents"))
            }
            _ => false,
        },
    }
}

/// The model a request names (its body's `model`, or Gemini's path), plain characters only.
fn model_of(path: &str, body: &[u8]) -> Option<String> {
    let named = serde_json::from_slice::<serde_json::Value>(body).ok().and_then(|v| v.get("model").and_then(|m| m.as_str()).map(str::to_string));
    let named = named.or_else(|| path.split("/models/").nth(1).map(|m| m.split(':').next().unwrap_or("").to_string()));
    named.map(|m| m.chars().filter(|c| c.is_ascii_graphic()).take(100).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_providers_model_paths_are_forwarded() {
        for (p, path) in [(Provider::Anthropic, "/v1/messages"), (Provider::Anthropic, "/v1/messages/count_tokens"), (Provider::OpenAi, "/v1/responses"), (Provider::Gemini, "/v1beta/models/gemini-2.5-pro:streamGenerateContent")] {
            assert!(plain_path(path) && forwarded(p, path), "{path}");
        }
        for (p, path) in [(Provider::Anthropic, "/v1/files"), (Provider::Anthropic, "/api/oauth/token"), (Provider::OpenAi, "/v1/../admin"), (Provider::Gemini, "/v1beta/models/x:delete"), (Provider::Anthropic, "//evil.com/v1/messages")] {
            assert!(!(plain_path(path) && forwarded(p, path)), "{path}");
        }
        assert!(!plain_query("a=b\r\nHost: x") && plain_query("beta=true&alt=sse"));
    }
}
