//! The fetcher: one reqwest client, shared, hardened for servers nobody
//! controls. Redirects are followed by hand so that every hop passes the
//! [address guard](crate::guard) and is recorded; 5xx, 429 and transport
//! failures are retried with backoff; conditional GET; per-host politeness.
//!
//! The body is never collected: [`Fetched::into_body`] is an `AsyncRead`
//! handed to the parser, which counts and caps the bytes after
//! decompression. The fetcher asks for `Accept-Encoding: gzip` only and
//! leaves the inflating to the parser, which recognises gzip by its magic
//! bytes whether it came from `Content-Encoding` or from a `.gz` file.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use reqwest::header::{self, HeaderMap, HeaderValue};
use serde::Serialize;
use sitemapd_parser::NormUrl;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::time::Instant;
use tracing::debug;

use crate::guard::{AddressGuard, GuardRefused, GuardedResolver, proxy_refusal};
use crate::politeness::{HostPermit, Politeness};

/// Fetcher settings. `Default` gives the values documented on each field.
#[derive(Debug, Clone)]
pub struct FetchConfig {
    /// `User-Agent` header; default `sitemapd/<version>`.
    pub user_agent: String,
    /// TCP + TLS connect timeout; default 10 s.
    pub connect_timeout: Duration,
    /// Longest silence while waiting for response bytes; default 30 s.
    pub idle_timeout: Duration,
    /// Total time for one document, retries and body included; default 300 s.
    pub deadline: Duration,
    /// Redirect hops followed at most; default 5.
    pub max_redirects: usize,
    /// Attempts per document (connect errors, timeouts, 5xx, 429); default 3.
    pub attempts: u32,
    /// First backoff; doubled per attempt, with ±50 % jitter; default 1 s.
    pub backoff: Duration,
    /// Longest `Retry-After` honoured; default 60 s (longer: give up).
    pub retry_after_cap: Duration,
    /// Requests in flight per host at most; default 2.
    pub per_host_in_flight: usize,
    /// Minimum delay between request starts on a host; default 1 s.
    pub min_delay: Duration,
    /// Longest robots.txt `Crawl-delay` honoured; default 30 s.
    pub crawl_delay_cap: Duration,
    /// Lift the address guard (loopback tests, intranets); default false.
    pub allow_private: bool,
    /// Addresses the guard lets through although they are not public (one
    /// intranet host, a loopback test server), while it still refuses every
    /// other; default none. Exact matches only: `127.0.0.1` does not let
    /// `127.0.0.2` or `::ffff:127.0.0.1` through.
    pub allow_addresses: Vec<IpAddr>,
    /// Proxy for every request (`http://…` or `socks5://…`); default none,
    /// and the system's proxy settings are ignored. Behind a proxy the guard can
    /// only check literal IP hosts (names resolve at the proxy), and a proxy
    /// on a loopback or private address is refused unless `allow_private`
    /// (or `allow_addresses` lists it): [`crate::guard::proxy_refusal`].
    pub proxy: Option<String>,
    /// Host names answered from this table instead of DNS (like curl's
    /// `--resolve`); the guard still applies.
    pub resolve: HashMap<String, Vec<IpAddr>>,
    /// For tests only: certificates (DER) trusted as TLS roots besides the
    /// system's, so that a test can fetch from a loopback HTTPS server with
    /// a certificate of its own CA. No command-line flag or configuration
    /// key sets it; default none.
    #[doc(hidden)]
    pub test_roots: Vec<Vec<u8>>,
    /// For tests only: names the HTTP client resolves itself, past the
    /// guarded resolver (as a resolver that let a forbidden address through
    /// would), so that a test can show the fetcher's re-check of the
    /// address a response came from. No command-line flag or configuration
    /// key sets it; default none.
    #[doc(hidden)]
    pub test_unguarded_resolve: HashMap<String, Vec<IpAddr>>,
}

impl Default for FetchConfig {
    fn default() -> Self {
        Self {
            user_agent: concat!("sitemapd/", env!("CARGO_PKG_VERSION")).into(),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            deadline: Duration::from_secs(300),
            max_redirects: 5,
            attempts: 3,
            backoff: Duration::from_secs(1),
            retry_after_cap: Duration::from_secs(60),
            per_host_in_flight: 2,
            min_delay: Duration::from_secs(1),
            crawl_delay_cap: Duration::from_secs(30),
            allow_private: false,
            allow_addresses: Vec::new(),
            proxy: None,
            resolve: HashMap::new(),
            test_roots: Vec::new(),
            test_unguarded_resolve: HashMap::new(),
        }
    }
}

/// HTTP validators of a document, sent back on the next fetch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Validators {
    /// `ETag`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// `Last-Modified`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

impl Validators {
    /// Whether neither is known.
    pub fn is_empty(&self) -> bool {
        self.etag.is_none() && self.last_modified.is_none()
    }
}

/// Why a fetch produced no usable response, or why a body stopped early.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
#[non_exhaustive]
pub enum FetchError {
    /// The address guard refused the host (its text starts with
    /// [`REFUSED`] and says how to lift the guard).
    #[error(
        "{REFUSED} {0}: not a public address (--allow-private, or fetch.allow_private, lets the fetcher reach loopback and private networks)"
    )]
    Refused(String),
    /// No connection could be made (DNS, TCP, TLS).
    #[error("connection failed: {0}")]
    Connect(String),
    /// No byte arrived for the idle timeout.
    #[error("no data for {0:?}")]
    Idle(Duration),
    /// The document's total deadline passed.
    #[error("deadline of {0:?} passed")]
    Deadline(Duration),
    /// More redirect hops than allowed.
    #[error("more than {0} redirects")]
    TooManyRedirects(usize),
    /// A redirect back to a URL already in the chain.
    #[error("redirect loop back to {0}")]
    RedirectLoop(String),
    /// A redirect without a usable `Location`.
    #[error("redirect with a bad Location: {0}")]
    BadRedirect(String),
    /// A `Content-Encoding` other than gzip or identity (never asked for).
    #[error("unsupported Content-Encoding {0:?}")]
    ContentEncoding(String),
    /// A 429 or 5xx (`status`) asked to wait longer than the cap.
    #[error("HTTP {status}: server asked to retry after {after:?}, longer than the cap")]
    RetryAfterTooLong {
        /// The status that came with `Retry-After`.
        status: u16,
        /// How long it asked to wait.
        after: Duration,
    },
    /// The connection broke or the response was malformed.
    #[error("HTTP: {0}")]
    Http(String),
    /// The client could not be built (bad proxy URL, TLS set-up).
    #[error("client set-up: {0}")]
    Setup(String),
}

/// How the text of a [`FetchError::Refused`] starts: a report that carries
/// the error as text (a robots.txt's `reason`, a failed sitemap's `error`)
/// is a guard refusal when it holds this ([`is_refusal`]).
pub const REFUSED: &str = "address guard refused";

/// What a [`FetchError::Connect`] says first when the TLS handshake failed
/// ([`is_tls_failure`]): for instance `https://` to a server that speaks
/// plain HTTP.
pub const TLS_FAILED: &str = "TLS handshake failed";

/// Whether an error's text (a report's `reason` or `error`) is the address
/// guard's refusal: not worth trying later, as nothing will change.
pub fn is_refusal(text: &str) -> bool {
    text.contains(REFUSED)
}

/// Whether an error's text is a failed TLS handshake.
pub fn is_tls_failure(text: &str) -> bool {
    text.contains(TLS_FAILED)
}

impl FetchError {
    /// The HTTP status the server answered with, when the error came with
    /// one (a `Retry-After` beyond the cap).
    pub fn status(&self) -> Option<u16> {
        match self {
            FetchError::RetryAfterTooLong { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// One redirect hop followed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hop {
    /// 301, 302, 303, 307 or 308.
    pub status: u16,
    /// Where it pointed.
    pub to: NormUrl,
}

/// A response whose body has not been read yet.
pub struct Fetched {
    /// The URL asked for.
    pub requested: NormUrl,
    /// The URL the response came from (after redirects).
    pub url: NormUrl,
    /// Redirect hops followed, in order.
    pub redirects: Vec<Hop>,
    /// HTTP status of the final response.
    pub status: u16,
    /// The response's validators, for the next conditional GET.
    pub validators: Validators,
    /// Attempts made (1 when the first succeeded).
    pub attempts: u32,
    body: Body,
}

impl std::fmt::Debug for Fetched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetched")
            .field("url", &self.url)
            .field("status", &self.status)
            .field("redirects", &self.redirects)
            .finish_non_exhaustive()
    }
}

impl Fetched {
    /// 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// 304 to a conditional GET.
    pub fn not_modified(&self) -> bool {
        self.status == 304
    }

    /// What the body reader has seen so far: bytes and the error that
    /// stopped it, shared with the reader.
    pub fn progress(&self) -> BodyProgress {
        self.body.progress.clone()
    }

    /// The body as an `AsyncRead` (raw bytes: gzip stays gzip). The host's
    /// politeness slot stays taken until it is dropped.
    pub fn into_body(self) -> Body {
        self.body
    }
}

/// Bytes read from a body and the error that ended it early, if any.
#[derive(Debug, Clone, Default)]
pub struct BodyProgress(Arc<ProgressInner>);

#[derive(Debug, Default)]
struct ProgressInner {
    bytes: AtomicU64,
    error: Mutex<Option<FetchError>>,
}

impl BodyProgress {
    /// Raw bytes received so far.
    pub fn bytes(&self) -> u64 {
        self.0.bytes.load(Ordering::Relaxed)
    }

    /// The error that cut the body short, if one did.
    pub fn error(&self) -> Option<FetchError> {
        self.0
            .error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn fail(&self, e: FetchError) {
        *self.0.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
    }
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// A response body as an `AsyncRead`; see [`Fetched::into_body`].
///
/// The document's deadline counts the time spent waiting for the network
/// only: while the reader is not asking for bytes (a slow consumer
/// downstream), the clock stops, so back-pressure never cuts a document.
pub struct Body {
    stream: ByteStream,
    chunk: Bytes,
    progress: BodyProgress,
    /// Network waiting time left before the deadline.
    budget: Duration,
    /// Since when the reader has been waiting for bytes.
    waiting_since: Option<Instant>,
    /// Fires when the budget runs out while waiting.
    timer: Pin<Box<tokio::time::Sleep>>,
    deadline_len: Duration,
    idle: Duration,
    _permit: Option<HostPermit>,
}

impl Body {
    /// Stops the waiting clock, charging the wait to the budget.
    fn stop_waiting(&mut self) {
        if let Some(since) = self.waiting_since.take() {
            self.budget = self.budget.saturating_sub(since.elapsed());
        }
    }

    /// Records why the body stopped, as the reader's error.
    fn fail(&mut self, error: FetchError) -> io::Error {
        let kind = match error {
            FetchError::Idle(_) | FetchError::Deadline(_) => io::ErrorKind::TimedOut,
            _ => io::ErrorKind::ConnectionAborted,
        };
        let message = error.to_string();
        self.progress.fail(error);
        io::Error::new(kind, message)
    }
}

impl Body {
    /// The whole of a small document (robots.txt, a key file): at most
    /// `cap` bytes read, and when they start with the gzip magic (servers
    /// gzip small text files whatever was asked) inflated, at most `cap`
    /// bytes of that too. A result of `cap` bytes may have been cut.
    pub async fn read_small(self, cap: u64) -> io::Result<Vec<u8>> {
        use tokio::io::AsyncReadExt;
        let mut raw = Vec::new();
        self.take(cap).read_to_end(&mut raw).await?;
        if raw.starts_with(&[0x1f, 0x8b]) {
            let mut inflated = Vec::new();
            let decoder = flate2::read::MultiGzDecoder::new(raw.as_slice());
            io::Read::read_to_end(&mut io::Read::take(decoder, cap), &mut inflated)?;
            return Ok(inflated);
        }
        Ok(raw)
    }
}

impl AsyncRead for Body {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        while self.chunk.is_empty() {
            match self.stream.as_mut().poll_next(cx) {
                Poll::Pending => {
                    if self.waiting_since.is_none() {
                        let now = Instant::now();
                        self.waiting_since = Some(now);
                        let until = now
                            .checked_add(self.budget)
                            .unwrap_or_else(|| later(Duration::MAX));
                        self.timer.as_mut().reset(until);
                    }
                    if self.timer.as_mut().poll(cx).is_ready() {
                        let e = FetchError::Deadline(self.deadline_len);
                        return Poll::Ready(Err(self.fail(e)));
                    }
                    return Poll::Pending;
                }
                Poll::Ready(None) => {
                    self.stop_waiting();
                    return Poll::Ready(Ok(()));
                }
                Poll::Ready(Some(Ok(bytes))) => {
                    self.stop_waiting();
                    self.progress
                        .0
                        .bytes
                        .fetch_add(bytes.len() as u64, Ordering::Relaxed);
                    self.chunk = bytes;
                }
                Poll::Ready(Some(Err(e))) => {
                    self.stop_waiting();
                    let e = classify(&e, self.idle);
                    return Poll::Ready(Err(self.fail(e)));
                }
            }
        }
        let n = self.chunk.len().min(buf.remaining());
        let piece = self.chunk.split_to(n);
        buf.put_slice(&piece);
        Poll::Ready(Ok(()))
    }
}

/// Whether the TLS handshake failed: a rustls error in the chain (I/O
/// errors may carry it, one inside another), or an I/O error that says so
/// ("tls handshake eof" when the server closed the connection on our hello).
fn is_tls(e: &reqwest::Error) -> bool {
    fn tls(inner: &(dyn std::error::Error + 'static)) -> bool {
        if inner.downcast_ref::<rustls::Error>().is_some() {
            return true;
        }
        match inner.downcast_ref::<std::io::Error>() {
            Some(io) => match io.get_ref() {
                Some(carried) => tls(carried),
                None => io.to_string().to_ascii_lowercase().contains("tls"),
            },
            None => false,
        }
    }
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        if tls(inner) {
            return true;
        }
        source = inner.source();
    }
    false
}

/// Sorts a reqwest error into a [`FetchError`] (the deadline is ours, so a
/// reqwest timeout is a connect or an idle timeout).
fn classify(e: &reqwest::Error, idle: Duration) -> FetchError {
    // A name the guard refused: a refusal like a literal's (not retried),
    // not a connection failure.
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        if let Some(refused) = inner.downcast_ref::<GuardRefused>() {
            return FetchError::Refused(refused.describe());
        }
        source = inner.source();
    }
    if e.is_connect() {
        let chain = error_chain(e);
        if is_tls(e) {
            FetchError::Connect(format!("{TLS_FAILED}: {chain}"))
        } else {
            FetchError::Connect(chain)
        }
    } else if e.is_timeout() {
        FetchError::Idle(idle)
    } else {
        FetchError::Http(error_chain(e))
    }
}

/// `now + d`, or a year from now when that overflows.
fn later(d: Duration) -> Instant {
    crate::politeness::after(Instant::now(), d)
}

/// Every `Content-Encoding` value must be gzip (the parser inflates it,
/// layer by layer) or identity: nothing else was asked for.
fn check_content_encoding(headers: &HeaderMap) -> Result<(), FetchError> {
    for value in headers.get_all(header::CONTENT_ENCODING) {
        let value = String::from_utf8_lossy(value.as_bytes()).to_ascii_lowercase();
        for coding in value.split(',').map(str::trim) {
            if !matches!(coding, "" | "gzip" | "x-gzip" | "identity") {
                return Err(FetchError::ContentEncoding(coding.to_string()));
            }
        }
    }
    Ok(())
}

/// An error and its sources, `: `-separated (reqwest's own message is terse).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        let text = inner.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        source = inner.source();
    }
    s
}

/// The fetcher; cheap to clone, share one per process.
#[derive(Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    config: Arc<FetchConfig>,
    guard: AddressGuard,
    politeness: Arc<Politeness>,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("config", &self.config)
            .finish()
    }
}

impl Fetcher {
    /// Builds the shared client.
    pub fn new(config: FetchConfig) -> Result<Self, FetchError> {
        // reqwest is built without a bundled crypto provider: use ring.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let guard = AddressGuard {
            allow_private: config.allow_private,
        };
        let refusal = config.proxy.as_deref().and_then(|proxy| {
            proxy_refusal(guard, proxy, &config.resolve, &config.allow_addresses)
                .map(|why| (proxy, why))
        });
        if let Some((proxy, why)) = refusal {
            return Err(FetchError::Setup(format!(
                "the proxy {proxy} is not on a public address ({why}): behind a proxy, names \
                 resolve at the proxy, where the address guard cannot check them (localhost and \
                 internal names would pass), so a proxy on a loopback or private address needs \
                 --allow-private (fetch.allow_private)"
            )));
        }
        let resolver = GuardedResolver::new(guard, config.resolve.clone())
            .allowing(config.allow_addresses.clone());
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static(
                "application/xml, text/xml, application/rss+xml, application/atom+xml, text/plain;q=0.9, */*;q=0.5",
            ),
        );
        let mut builder = reqwest::Client::builder()
            .user_agent(config.user_agent.clone())
            .default_headers(headers)
            .connect_timeout(config.connect_timeout)
            .read_timeout(config.idle_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(resolver)
            .pool_idle_timeout(Duration::from_secs(30))
            .tcp_nodelay(true);
        if !config.test_roots.is_empty() {
            let roots = config
                .test_roots
                .iter()
                .map(|der| reqwest::Certificate::from_der(der))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| FetchError::Setup(format!("test root: {}", error_chain(&e))))?;
            builder = builder.tls_certs_merge(roots);
        }
        for (name, ips) in &config.test_unguarded_resolve {
            let addrs: Vec<SocketAddr> = ips.iter().map(|ip| SocketAddr::new(*ip, 0)).collect();
            builder = builder.resolve_to_addrs(name, &addrs);
        }
        builder = match &config.proxy {
            Some(p) => builder.proxy(
                reqwest::Proxy::all(p)
                    .map_err(|e| FetchError::Setup(format!("proxy {p:?}: {e}")))?,
            ),
            None => builder.no_proxy(),
        };
        let client = builder
            .build()
            .map_err(|e| FetchError::Setup(error_chain(&e)))?;
        Ok(Self {
            client,
            politeness: Arc::new(Politeness::new(
                config.per_host_in_flight,
                config.min_delay,
                config.crawl_delay_cap,
            )),
            guard,
            config: Arc::new(config),
        })
    }

    /// The settings.
    pub fn config(&self) -> &FetchConfig {
        &self.config
    }

    /// The per-host gate (to apply a robots.txt `Crawl-delay`).
    pub fn politeness(&self) -> &Politeness {
        &self.politeness
    }

    /// GETs `url`: redirects followed hop by hop, retries, conditional on
    /// `known` validators. Any HTTP response is `Ok` (check
    /// [`Fetched::status`]); `Err` means there was no response to use.
    pub async fn get(&self, url: &NormUrl, known: &Validators) -> Result<Fetched, FetchError> {
        self.get_timed(url, known).await.0
    }

    /// [`Fetcher::get`], and the time it spent waiting for the host's
    /// politeness gate (the minimum delay, a robots.txt `Crawl-delay`, a
    /// free slot): time that is not the server's.
    pub async fn get_timed(
        &self,
        url: &NormUrl,
        known: &Validators,
    ) -> (Result<Fetched, FetchError>, Duration) {
        let mut waited = Duration::ZERO;
        let outcome = self.get_waiting(url, known, &mut waited).await;
        (outcome, waited)
    }

    async fn get_waiting(
        &self,
        url: &NormUrl,
        known: &Validators,
        waited: &mut Duration,
    ) -> Result<Fetched, FetchError> {
        let mut deadline = later(self.config.deadline);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let outcome = self.attempt(url, known, &mut deadline, waited).await;
            let wait = if attempt >= self.config.attempts.max(1) {
                None
            } else {
                match &outcome {
                    Ok(a) if a.fetched.status == 429 || a.fetched.status >= 500 => {
                        match a.retry_after {
                            Some(after) if after > self.config.retry_after_cap => {
                                return Err(FetchError::RetryAfterTooLong {
                                    status: a.fetched.status,
                                    after,
                                });
                            }
                            Some(after) => Some(after),
                            None => Some(self.backoff(attempt)),
                        }
                    }
                    // A certificate the client refuses stays refused: no retry.
                    Err(FetchError::Connect(text)) if is_tls_failure(text) => None,
                    Err(FetchError::Connect(_) | FetchError::Idle(_) | FetchError::Http(_)) => {
                        Some(self.backoff(attempt))
                    }
                    _ => None,
                }
            };
            // A wait that would end past the deadline is not taken: the last
            // answer (a 503, a refused connection) is the truer report.
            let wait =
                wait.filter(|w| Instant::now().checked_add(*w).is_some_and(|t| t < deadline));
            match (wait, outcome) {
                (None, Ok(mut a)) => {
                    a.fetched.attempts = attempt;
                    return Ok(a.fetched);
                }
                (None, Err(e)) => return Err(e),
                (Some(wait), outcome) => {
                    drop(outcome);
                    debug!(url = %url, attempt, ?wait, "retrying");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// `backoff × 2^(attempt-1)`, ±50 % jitter.
    fn backoff(&self, attempt: u32) -> Duration {
        let base = self.config.backoff * 2u32.saturating_pow(attempt.saturating_sub(1));
        base.mul_f64(0.5 + fastrand::f64())
    }

    /// One attempt: follows redirects, each hop guarded and polite.
    async fn attempt(
        &self,
        url: &NormUrl,
        known: &Validators,
        deadline: &mut Instant,
        waited: &mut Duration,
    ) -> Result<Attempt, FetchError> {
        let mut current = url.clone();
        let mut redirects: Vec<Hop> = Vec::new();
        loop {
            self.check_literal_host(&current)?;
            // Waiting for our own politeness gate is not the server's time.
            let queued = Instant::now();
            let permit = self.politeness.acquire(&current.host_key()).await;
            let queued = queued.elapsed();
            *waited = waited.saturating_add(queued);
            *deadline = deadline.checked_add(queued).unwrap_or(*deadline);
            let deadline = *deadline;
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(FetchError::Deadline(self.config.deadline));
            }
            let mut request = self.client.get(current.as_str());
            if let Some(etag) = &known.etag {
                request = request.header(header::IF_NONE_MATCH, etag);
            }
            if let Some(lm) = &known.last_modified {
                request = request.header(header::IF_MODIFIED_SINCE, lm);
            }
            let response = tokio::time::timeout(remaining, request.send())
                .await
                .map_err(|_| FetchError::Deadline(self.config.deadline))?
                .map_err(|e| classify(&e, self.config.idle_timeout))?;
            if let (Some(remote), None) = (response.remote_addr(), &self.config.proxy) {
                self.check_ip(remote.ip()).map_err(|why| {
                    FetchError::Refused(format!("{current} connected to {} ({why})", remote.ip()))
                })?;
            }
            let status = response.status().as_u16();
            if matches!(status, 301 | 302 | 303 | 307 | 308) {
                let location = response
                    .headers()
                    .get(header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .ok_or_else(|| {
                        FetchError::BadRedirect(format!("HTTP {status} without Location"))
                    })?;
                let next = current
                    .join(location)
                    .map_err(|e| FetchError::BadRedirect(format!("{location:?}: {e}")))?;
                drop(permit);
                if next == *url || redirects.iter().any(|h| h.to == next) {
                    return Err(FetchError::RedirectLoop(next.to_string()));
                }
                if redirects.len() >= self.config.max_redirects {
                    return Err(FetchError::TooManyRedirects(self.config.max_redirects));
                }
                debug!(from = %current, to = %next, status, "redirect");
                redirects.push(Hop {
                    status,
                    to: next.clone(),
                });
                current = next;
                continue;
            }
            check_content_encoding(response.headers())?;
            let text = |name| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            let validators = Validators {
                etag: text(header::ETAG),
                last_modified: text(header::LAST_MODIFIED),
            };
            let retry_after = text(header::RETRY_AFTER).and_then(|v| parse_retry_after(&v));
            return Ok(Attempt {
                fetched: Fetched {
                    requested: url.clone(),
                    url: current,
                    redirects,
                    status,
                    validators,
                    attempts: 1,
                    body: Body {
                        stream: Box::pin(response.bytes_stream()),
                        chunk: Bytes::new(),
                        progress: BodyProgress::default(),
                        budget: deadline.saturating_duration_since(Instant::now()),
                        waiting_since: None,
                        timer: Box::pin(tokio::time::sleep_until(deadline)),
                        deadline_len: self.config.deadline,
                        idle: self.config.idle_timeout,
                        _permit: Some(permit),
                    },
                },
                retry_after,
            });
        }
    }

    /// Refuses a literal IP host before any connection (names are checked
    /// by the resolver).
    fn check_literal_host(&self, url: &NormUrl) -> Result<(), FetchError> {
        let host = url.host();
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = literal.parse::<IpAddr>() {
            self.check_ip(ip)
                .map_err(|why| FetchError::Refused(format!("{url} ({ip} is {why})")))?;
        }
        Ok(())
    }

    /// The guard, with [`FetchConfig::allow_addresses`] let through.
    fn check_ip(&self, ip: IpAddr) -> Result<(), &'static str> {
        if self.config.allow_addresses.contains(&ip) {
            return Ok(());
        }
        self.guard.check(ip)
    }
}

/// A response plus what the retry loop needs from it.
struct Attempt {
    fetched: Fetched,
    retry_after: Option<Duration>,
}

/// `Retry-After`: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // Too many digits for a u64: "much too long", not "absent".
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_forms() {
        assert_eq!(parse_retry_after(" 7 "), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        let later =
            httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(120));
        let d = parse_retry_after(&later).unwrap();
        assert!(
            d > Duration::from_secs(100) && d <= Duration::from_secs(120),
            "{d:?}"
        );
        assert_eq!(parse_retry_after("soon"), None);
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(
            parse_retry_after("99999999999999999999999"),
            Some(Duration::from_secs(u64::MAX))
        );
    }

    #[test]
    fn backoff_doubles_with_jitter() {
        let f = Fetcher::new(FetchConfig {
            backoff: Duration::from_millis(100),
            ..FetchConfig::default()
        })
        .unwrap();
        for _ in 0..100 {
            let b1 = f.backoff(1);
            let b3 = f.backoff(3);
            assert!(b1 >= Duration::from_millis(50) && b1 <= Duration::from_millis(150));
            assert!(b3 >= Duration::from_millis(200) && b3 <= Duration::from_millis(600));
        }
    }
}
