//! The model gateway of a wrap session (issue 50): the agent CLI gets a base URL on its own
//! loopback and a placeholder credential of the right shape, never the user's key. The
//! gateway, on the host side, checks the placeholder, sends the request to the user's
//! upstream (their own base URL, else the provider's) with the real credential, over TLS
//! unless that upstream is loopback, and nowhere else; it reads each response's token usage
//! as the response streams past, and once a budget is spent it answers with the provider's own
//! quota error.
//!
//! `plan.rs`: which credentials a session's environment holds, their placeholders, the
//! variables the agent gets. `upstream.rs`: the user's base URL, the connection to it (rustls
//! with the webpki roots). `http.rs`: HTTP/1.1 heads and bodies, every size bounded.
//! `relay.rs`: one agent connection, request by request. `usage.rs`: token counts out of a
//! JSON or server-sent-event body. `shape.rs`: the providers' error bodies. `price.rs`: the
//! price table a cost comes from. Blocking `std::net`, a thread per connection, as the wrap
//! proxy; the listeners are made inside the session's network namespace by its pid 1
//! (`runbox::net`), so no port of the host's is opened.

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

mod http;
pub mod plan;
pub mod price;
mod relay;
mod shape;
pub mod upstream;
pub mod usage;

pub use plan::{plan, Plan};
pub use usage::Usage;

closed_set! {
    /// A model provider whose API the gateway speaks.
    Provider, "model provider" {
        Anthropic = "anthropic",
        OpenAi = "openai",
        Gemini = "gemini",
    }
}

/// One credential of a route: where the agent puts it and what the gateway puts instead.
#[derive(Clone)]
pub struct Secret {
    /// The header, lower case (`x-api-key`, `authorization`, `x-goog-api-key`).
    pub header: &'static str,
    /// Sent as `Bearer <value>`.
    pub bearer: bool,
    /// What the agent holds.
    pub placeholder: String,
    /// What the upstream gets.
    pub real: String,
}

/// One provider's gateway in a session: the port inside, the credentials, the upstream.
#[derive(Clone)]
pub struct Route {
    pub provider: Provider,
    /// The port on the session's loopback.
    pub port: u16,
    /// The path prefix of the agent's base URL (`/v1` for OpenAI's), taken off before the
    /// upstream's own path is put on.
    pub prefix: &'static str,
    pub secrets: Vec<Secret>,
    pub upstream: upstream::Upstream,
}

impl std::fmt::Debug for Route {
    /// Never the credentials: a route ends up in logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Route({} on :{} → {})", self.provider, self.port, self.upstream)
    }
}

/// What the gateway reports to and asks of its session: usage as it is read, and whether a
/// budget is spent (why, for the error the agent gets).
pub trait Meter: Send + Sync {
    fn record(&self, provider: Provider, model: &str, usage: &Usage);
    fn exhausted(&self) -> Option<String>;
}

/// A session's gateway: its routes and the meter they report to.
#[derive(Clone)]
pub struct Gateway {
    pub routes: Vec<Route>,
    pub meter: Arc<dyn Meter>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(&self.routes).finish()
    }
}

/// A meter that records nothing and never stops (a session's until its agent exists).
pub struct Unmetered;

impl Meter for Unmetered {
    fn record(&self, _: Provider, _: &str, _: &Usage) {}
    fn exhausted(&self) -> Option<String> {
        None
    }
}

/// The running gateway; [`Serving::stop`] ends its accept loops.
pub struct Serving {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    listeners: Vec<TcpListener>,
}

impl Serving {
    /// Stops accepting (connections being served end with their agent's side).
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

/// Serves each route on its listener (made inside the session's network namespace).
pub fn serve(routes: Vec<(TcpListener, Route)>, meter: Arc<dyn Meter>) -> Serving {
    let stop = Arc::new(AtomicBool::new(false));
    let listeners = routes.iter().filter_map(|(l, _)| l.try_clone().ok()).collect();
    let threads = routes
        .into_iter()
        .map(|(listener, route)| {
            let (stop, meter) = (Arc::clone(&stop), Arc::clone(&meter));
            std::thread::spawn(move || accept_loop(&listener, Arc::new(route), &stop, &meter))
        })
        .collect();
    Serving { stop, threads, listeners }
}

fn accept_loop(listener: &TcpListener, route: Arc<Route>, stop: &AtomicBool, meter: &Arc<dyn Meter>) {
    if listener.set_nonblocking(true).is_err() {
        return;
    }
    while !stop.load(Ordering::SeqCst) {
        let mut fds = [rustix::event::PollFd::new(listener, rustix::event::PollFlags::IN)];
        let timeout = rustix::event::Timespec { tv_sec: 0, tv_nsec: 200_000_000 };
        if !matches!(rustix::event::poll(&mut fds, Some(&timeout)), Ok(n) if n > 0) {
            continue;
        }
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok((conn, _)) = listener.accept() else { continue };
        let _ = conn.set_nonblocking(false);
        let (route, meter) = (Arc::clone(&route), Arc::clone(meter));
        std::thread::spawn(move || relay::serve_connection(conn, &route, meter.as_ref()));
    }
}
