#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub mod client;
pub mod nats;
mod server;

use std::collections::HashMap;
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;

/// A running fixture server on `127.0.0.1`; dropping it stops the server and its thread.
pub struct TestSite {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// The dynamic handler type behind [`TestSite::route_fn`].
type Handler = Arc<dyn Fn(&Request, u64) -> Reply + Send + Sync>;

enum Route {
    Fixed(Reply),
    Seq(Vec<Reply>),
    Fn(Handler),
}

struct RouteEntry {
    route: Route,
    /// Requests this route has answered since it was installed.
    served: u64,
}

#[derive(Default)]
struct State {
    routes: HashMap<String, RouteEntry>,
    requests: Vec<Request>,
    hits: HashMap<String, usize>,
}

/// What the server thread and the handle share.
struct Shared {
    state: Mutex<State>,
    connections: AtomicUsize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking route_fn never runs under the lock, but stay usable regardless.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records `req` and picks its reply (404 for an unknown path).
    fn answer(&self, req: &Request) -> Reply {
        let handler = {
            let mut state = self.lock();
            state.requests.push(req.clone());
            *state.hits.entry(req.path.clone()).or_default() += 1;
            let Some(entry) = state.routes.get_mut(&req.path) else {
                return Reply::status(404);
            };
            let n = entry.served;
            entry.served += 1;
            match &entry.route {
                Route::Fixed(reply) => return reply.clone(),
                Route::Seq(replies) => {
                    let i = usize::try_from(n).unwrap_or(usize::MAX);
                    return replies[i.min(replies.len() - 1)].clone();
                }
                Route::Fn(f) => (Arc::clone(f), n),
            }
        };
        // Called outside the lock: the closure may be slow, or call back into the site.
        (handler.0)(req, handler.1)
    }
}

impl TestSite {
    /// Binds `127.0.0.1:0` (never any other address) and serves on its own thread with its own
    /// tokio runtime (multi-thread, 2 workers), so it works from sync tests, from
    /// `#[tokio::test]` tests, and while a test runs a child process against it.
    ///
    /// # Panics
    /// If the socket cannot be bound or the runtime cannot be built.
    pub fn start() -> TestSite {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .expect("testsite: bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("testsite: set_nonblocking");
        let addr = listener.local_addr().expect("testsite: local_addr");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("testsite")
            .enable_io()
            .enable_time()
            .build()
            .expect("testsite: tokio runtime");
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            connections: AtomicUsize::new(0),
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(format!("testsite-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    match tokio::net::TcpListener::from_std(listener) {
                        Ok(listener) => {
                            tokio::spawn(server::accept_loop(listener, server_shared));
                            // Err means the handle is gone: stop either way.
                            let _ = stopped.await;
                        }
                        Err(e) => eprintln!("testsite: cannot register the listener: {e}"),
                    }
                });
                // Dropping the runtime cancels every connection task and closes its socket.
                drop(runtime);
            })
            .expect("testsite: spawn server thread");
        TestSite {
            addr,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The bound address, `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `"http://127.0.0.1:PORT"` followed by `path` (which should start with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Serves `reply` for exactly this path (path and query string as sent in the request
    /// line). Replaces an earlier route for the path.
    pub fn route(&self, path: &str, reply: Reply) {
        self.install(path, Route::Fixed(reply));
    }

    /// Serves the replies in order, one per request; the last one repeats.
    ///
    /// # Panics
    /// If `replies` is empty.
    pub fn route_seq(&self, path: &str, replies: Vec<Reply>) {
        assert!(!replies.is_empty(), "testsite: route_seq needs a reply");
        self.install(path, Route::Seq(replies));
    }

    /// Dynamic route: `f` is called with the request and the 0-based hit number of this path,
    /// counted from when this route was installed. It runs on a server thread, outside any lock.
    pub fn route_fn(&self, path: &str, f: impl Fn(&Request, u64) -> Reply + Send + Sync + 'static) {
        self.install(path, Route::Fn(Arc::new(f)));
    }

    fn install(&self, path: &str, route: Route) {
        let entry = RouteEntry { route, served: 0 };
        self.shared.lock().routes.insert(path.to_owned(), entry);
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.lock().requests.clone()
    }

    /// How many requests for this exact path (and query string) arrived so far.
    pub fn hits(&self, path: &str) -> usize {
        self.shared.lock().hits.get(path).copied().unwrap_or(0)
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }
}

impl std::fmt::Debug for TestSite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestSite")
            .field("addr", &self.addr)
            .finish()
    }
}

impl Drop for TestSite {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A request as the server read it.
#[derive(Clone, Debug)]
pub struct Request {
    /// The method, as sent (`GET`, `HEAD`, ...).
    pub method: String,
    /// The request target as sent: path and query string.
    pub path: String,
    /// The headers in order, names lowercased, values trimmed.
    pub headers: Vec<(String, String)>,
    /// When the request head was completely read.
    pub at: Instant,
}

impl Request {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A response to serve: status, extra headers, body and how its length is framed.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The status code; its reason phrase comes from a small table (else `Status`).
    pub status: u16,
    /// Headers sent as given, before the framing header the server adds from `length`.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Body,
    /// How the body's length is announced.
    pub length: Length,
}

/// How the server frames a reply's body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Length {
    /// `Content-Length` is the real body length (the default). For a body without an end
    /// ([`Body::Drip`] or [`Body::Repeat`] with no count) it acts as [`Length::None`]; for
    /// [`Body::ResetAfter`] it announces one byte more than is sent, so the cut is mid-body.
    #[default]
    Exact,
    /// `Transfer-Encoding: chunked`, one chunk per piece; the `0` chunk ends the body.
    Chunked,
    /// Send this `Content-Length` whatever the body is; the connection closes after the body.
    Lie(u64),
    /// No length header and `Connection: close`: closing the connection ends the body.
    None,
    /// No head at all: the status, headers and framing of the reply are ignored and the
    /// body's bytes are written as they are, then the connection closes. The body must carry
    /// its own status line and headers, so a test can send what no well-behaved server would:
    /// a head that never ends (a status line, then header lines forever), a malformed status
    /// line, a `Content-Length` that contradicts a second one.
    Raw,
}

/// A reply body. Every variant is cheap to clone ([`Bytes`] is reference-counted).
#[derive(Clone, Debug)]
pub enum Body {
    /// These bytes, written at once.
    Bytes(Bytes),
    /// `chunk` every `every`, `count` times (`None` = forever). The first chunk goes right after
    /// the head, so `n` chunks take `(n - 1) * every`. Used for "1 byte per second" and
    /// "endless body"; an empty `chunk` with no count stalls forever after the head.
    Drip {
        /// The piece sent each time.
        chunk: Bytes,
        /// The pause between two pieces.
        every: Duration,
        /// How many pieces (`None` = until the client goes away).
        count: Option<u64>,
    },
    /// `chunk` repeated as fast as the client reads, `count` times (`None` = until the client
    /// goes away). Small chunks are batched into writes of about 64 KiB.
    Repeat {
        /// The repeated piece.
        chunk: Bytes,
        /// How many pieces (`None` = until the client goes away).
        count: Option<u64>,
    },
    /// Send these bytes, then reset the TCP connection (`SO_LINGER` 0) mid-body.
    ResetAfter(Bytes),
    /// These bodies one after the other, in one reply: a document streamed from a prefix,
    /// a long generated middle and a suffix (`Bytes`, `Repeat { count: Some(n) }`, `Bytes`)
    /// without ever being built in memory. With [`Length::Exact`] its length is the sum of the
    /// parts' (no length if one of them has no end); with [`Length::Chunked`] each piece of
    /// each part is a chunk. A part after one without an end, or after a
    /// [`Body::ResetAfter`] (which resets the connection), is never sent.
    Chain(Vec<Body>),
}

impl Reply {
    /// 200 with this body.
    pub fn ok(body: impl Into<Bytes>) -> Reply {
        Reply::status(200).body(Body::Bytes(body.into()))
    }

    /// This status with an empty body.
    pub fn status(code: u16) -> Reply {
        Reply {
            status: code,
            headers: Vec::new(),
            body: Body::Bytes(Bytes::new()),
            length: Length::Exact,
        }
    }

    /// This (redirect) status with a `Location` header and an empty body.
    pub fn redirect(code: u16, location: &str) -> Reply {
        Reply::status(code).header("Location", location)
    }

    /// Adds a header (builder).
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sets how the body length is framed (builder).
    pub fn length(mut self, l: Length) -> Reply {
        self.length = l;
        self
    }

    /// Sets the body (builder).
    pub fn body(mut self, b: Body) -> Reply {
        self.body = b;
        self
    }
}

/// Unix seconds as a W3C datetime (UTC), as sitemaps write lastmod.
///
/// ```
/// assert_eq!(sitemapd_testsite::w3c(0), "1970-01-01T00:00:00+00:00");
/// assert_eq!(sitemapd_testsite::w3c(1_700_000_000), "2023-11-14T22:13:20+00:00");
/// assert_eq!(sitemapd_testsite::w3c(951_782_400), "2000-02-29T00:00:00+00:00");
/// ```
pub fn w3c(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}+00:00",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

/// gzip of `data` (flate2, fast level).
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
    enc.write_all(data).expect("writing to a Vec cannot fail");
    enc.finish().expect("writing to a Vec cannot fail")
}

/// gzip of `size` zero bytes (a decompression bomb), compressed in a streaming way: memory
/// stays at one 64 KiB input block plus the output. The default level already reaches deflate's
/// ~1030:1 limit on zeros (fast gets ~100:1, best is 3x slower for the same output).
pub fn gzip_zeros(size: u64) -> Vec<u8> {
    const BLOCK: usize = 64 * 1024;
    let zeros = [0u8; BLOCK];
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    let mut left = size;
    while left > 0 {
        let n = usize::try_from(left.min(BLOCK as u64)).unwrap_or(BLOCK);
        enc.write_all(&zeros[..n])
            .expect("writing to a Vec cannot fail");
        left -= n as u64;
    }
    enc.finish().expect("writing to a Vec cannot fail")
}
