//! The API's connections: accepted, served by hyper with a head timeout,
//! and bounded in number, in total and per client address.
//!
//! A connection that has not sent a full request head (or, kept alive,
//! waits for its next one) costs the daemon a file descriptor and some
//! memory but no work; a client can open thousands without a token
//! (20,000 half-sent heads exhausted the open-file limit, and
//! authenticated leases timed out). So:
//!
//! - every connection holds a slot; there are `max` slots in all (kept
//!   below the open-file limit, [`connection_cap`]) and `per_peer` per
//!   client address (an IPv4 address, an IPv6 /64);
//! - a connection that finds no free slot takes the slot of the oldest
//!   *idle* connection (no request in flight: a head not yet complete, or a
//!   kept-alive connection between requests), of its own address when that
//!   address is at its cap, else of the address holding the most
//!   connections; that connection is closed. A request in flight is never
//!   cut. With no idle connection to take from, the new one is answered
//!   503 and closed;
//! - the head must arrive within the head timeout, or hyper closes the
//!   connection.
//!
//! A flood of half-sent heads thus holds at most `per_peer` slots for at
//! most the head timeout, and a client that sends its request at once is
//! served: it takes the slot of the flood's oldest connection.
//!
//! The URLFrontier service's connections have slots of their own, by the
//! same rules (a connection is idle when it has no call open), through
//! [`ConnSlot`] and [`MarkBusyLayer`]; every connection shed is logged and
//! counted in `/metrics` (`sitemapd_connections_shed_total`).

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv6Addr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use axum::response::Response;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use tokio::sync::oneshot;
use tracing::{debug, warn};

use super::metrics::Shed;

/// File descriptors kept out of the connection cap: the store's files, the
/// fetcher's connections, logs.
pub(super) const FD_RESERVE: u64 = 256;

/// The connection cap for a `max_connections` setting and a soft open-file
/// limit (`None`: unlimited): the setting, lowered to leave
/// [`FD_RESERVE`] descriptors (or half of a small limit) for the rest.
pub(super) fn connection_cap(setting: usize, fd_limit: Option<u64>) -> usize {
    let Some(limit) = fd_limit else {
        return setting;
    };
    let room = if limit > 2 * FD_RESERVE {
        limit - FD_RESERVE
    } else {
        limit / 2
    };
    setting
        .min(usize::try_from(room).unwrap_or(usize::MAX))
        .max(1)
}

/// The process's soft open-file limit (RLIMIT_NOFILE), `None` if unlimited
/// or unknown.
pub(super) fn fd_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0
        || lim.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    Some(lim.rlim_cur)
}

/// Whom a connection counts against: an IPv4 address (IPv4-mapped IPv6
/// included), or an IPv6 /64 (one host usually has a whole /64).
pub(super) fn peer_of(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        v4 => v4,
    }
}

/// The connection slots.
#[derive(Clone)]
pub(super) struct Slots(Arc<Mutex<Table>>);

struct Table {
    /// `api` or `urlfrontier`: the label in logs and `/metrics`.
    listener: &'static str,
    shed_total: Family<Shed, Counter>,
    max: usize,
    per_peer: usize,
    next: u64,
    /// By age: the oldest first.
    conns: BTreeMap<u64, Entry>,
    held: HashMap<IpAddr, usize>,
    /// Connections closed to make room, or refused, since the last warning.
    shed: u64,
    warned: Option<Instant>,
}

struct Entry {
    peer: IpAddr,
    in_flight: usize,
    /// A request has come on it.
    served: bool,
    close: Option<oneshot::Sender<()>>,
}

/// How often the shedding of connections is logged at most.
const WARN_EVERY: Duration = Duration::from_secs(60);

impl Slots {
    /// `max` slots in all, `per_peer` per client address, for `listener`
    /// (`api`, `urlfrontier`), counting what it sheds in `shed_total`.
    pub(super) fn new(
        listener: &'static str,
        max: usize,
        per_peer: usize,
        shed_total: Family<Shed, Counter>,
    ) -> Self {
        Self(Arc::new(Mutex::new(Table {
            listener,
            shed_total,
            max: max.max(1),
            per_peer: per_peer.clamp(1, max.max(1)),
            next: 0,
            conns: BTreeMap::new(),
            held: HashMap::new(),
            shed: 0,
            warned: None,
        })))
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for a connection from `ip`, making room if needed (the
    /// receiver fires when the connection must close to make room for
    /// another); `None`: no room.
    pub(super) fn admit(&self, ip: IpAddr) -> Option<(Slot, oneshot::Receiver<()>)> {
        let peer = peer_of(ip);
        let mut t = self.table();
        let held = t.held.get(&peer).copied().unwrap_or(0);
        if held >= t.per_peer {
            if !t.evict(Some(peer)) {
                t.shed(peer, "per-address");
                return None;
            }
        } else if t.conns.len() >= t.max && !t.evict(None) {
            t.shed(peer, "total");
            return None;
        }
        let id = t.next;
        t.next += 1;
        let (tx, rx) = oneshot::channel();
        t.conns.insert(
            id,
            Entry {
                peer,
                in_flight: 0,
                served: false,
                close: Some(tx),
            },
        );
        *t.held.entry(peer).or_default() += 1;
        Some((
            Slot {
                slots: self.clone(),
                id,
            },
            rx,
        ))
    }
}

impl Table {
    /// Closes the oldest idle connection of `peer`, or (`None`) of the
    /// address holding the most connections; whether one was found.
    fn evict(&mut self, peer: Option<IpAddr>) -> bool {
        let victim = match peer {
            Some(peer) => self
                .conns
                .iter()
                .find(|(_, e)| e.peer == peer && e.in_flight == 0)
                .map(|(id, _)| *id),
            None => {
                let mut best: Option<(usize, u64)> = None;
                for (id, e) in &self.conns {
                    if e.in_flight > 0 {
                        continue;
                    }
                    let held = self.held.get(&e.peer).copied().unwrap_or(0);
                    // The oldest of the biggest holder (ids grow with age).
                    if best.is_none_or(|(h, _)| held > h) {
                        best = Some((held, *id));
                    }
                }
                best.map(|(_, id)| id)
            }
        };
        let Some(id) = victim else {
            return false;
        };
        if let Some(mut e) = self.remove(id) {
            if let Some(close) = e.close.take() {
                let _ = close.send(());
            }
            self.count("evicted");
        }
        true
    }

    fn remove(&mut self, id: u64) -> Option<Entry> {
        let e = self.conns.remove(&id)?;
        if let Some(n) = self.held.get_mut(&e.peer) {
            *n -= 1;
            if *n == 0 {
                self.held.remove(&e.peer);
            }
        }
        Some(e)
    }

    fn shed(&mut self, peer: IpAddr, cap: &str) {
        debug!(listener = self.listener, %peer, cap, "no connection slot: refused");
        self.count("refused");
    }

    /// Counts a connection shed, and says so in the log (at most once a
    /// minute).
    fn count(&mut self, why: &str) {
        self.shed += 1;
        self.shed_total
            .get_or_create(&Shed {
                listener: self.listener.to_string(),
                why: why.to_string(),
            })
            .inc();
        if self.warned.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
            let name = match self.listener {
                "api" => "API",
                "indexnow" => "IndexNow",
                _ => "URLFrontier",
            };
            warn!(
                connections = self.conns.len(),
                max_connections = self.max,
                max_connections_per_ip = self.per_peer,
                shed = self.shed,
                "{name} connections at their limit: idle connections closed or new ones refused \
                 (api.max_connections, api.max_connections_per_ip)"
            );
            self.warned = Some(Instant::now());
            self.shed = 0;
        }
    }
}

/// A connection's slot, given back when dropped.
pub(super) struct Slot {
    slots: Slots,
    id: u64,
}

impl Slot {
    /// Marks a request in flight until the guard is dropped: the
    /// connection is not taken for another meanwhile.
    pub(super) fn busy(&self) -> Busy {
        if let Some(e) = self.slots.table().conns.get_mut(&self.id) {
            e.in_flight += 1;
            e.served = true;
        }
        Busy {
            slots: self.slots.clone(),
            id: self.id,
        }
    }
}

impl Slot {
    /// Whether a request has come on the connection.
    pub(super) fn served(&self) -> bool {
        self.slots
            .table()
            .conns
            .get(&self.id)
            .is_none_or(|e| e.served)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.table().remove(self.id);
    }
}

/// A request in flight on a connection (see [`Slot::busy`]).
pub(super) struct Busy {
    slots: Slots,
    id: u64,
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(e) = self.slots.table().conns.get_mut(&self.id) {
            e.in_flight = e.in_flight.saturating_sub(1);
        }
    }
}

/// A response body that holds its request's [`Busy`] guard until the
/// body has been sent (or dropped).
pub(super) struct Tracked<B> {
    inner: B,
    _busy: Option<Busy>,
}

impl<B: http_body::Body + Unpin> http_body::Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The answer to a connection refused for want of a slot.
const FULL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
connection: close\r\nretry-after: 1\r\ncontent-length: 70\r\n\r\n\
{\"error\":\"too many connections (api.max_connections): try again later\"}";

/// Serves `app` on `listener` until `stop` completes, then waits for the
/// requests in flight (idle connections are closed at once).
///
/// HTTP/1 by hyper, with a timer: the head of every request (and the wait
/// for the next one on a kept-alive connection) must arrive within
/// `head_timeout`, or the connection is closed. `axum::serve` sets no
/// timer, so hyper's header read timeout never fired there.
pub(super) async fn serve(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    head_timeout: Duration,
    slots: Slots,
    stop: impl std::future::Future<Output = ()>,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};

    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(head_timeout);
    let mut stop = std::pin::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of descriptors and the like: retry a little later.
                    debug!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let Some((slot, closing)) = slots.admit(peer.ip()) else {
            // Best effort, without waiting: the client may be gone.
            let _ = stream.try_write(FULL);
            drop(stream);
            continue;
        };
        let slot = Arc::new(slot);
        let app = app.clone();
        let service = hyper::service::service_fn(move |mut req: Request<hyper::body::Incoming>| {
            // The client's address, for what limits a client (IndexNow's
            // quotas).
            req.extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
            let busy = slot.busy();
            // A Router is always ready: no poll_ready needed.
            let call = tower_service::Service::call(&mut app.clone(), req);
            async move {
                let response: Response = match call.await {
                    Ok(response) => response,
                    Err(never) => match never {},
                };
                Ok::<_, std::convert::Infallible>(response.map(|inner| {
                    Body::new(Tracked {
                        inner,
                        _busy: Some(busy),
                    })
                }))
            }
        });
        let conn = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            tokio::select! {
                result = conn => if let Err(e) = result {
                    debug!(error = %e, "connection ended");
                },
                // Closed to make room: dropping the connection closes it.
                Ok(()) = closing => debug!(%peer, "idle connection closed for another"),
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// The slot of a URLFrontier connection, as tonic hands it to each of its
/// requests (its `ConnectInfo`).
#[derive(Clone)]
pub(super) struct ConnSlot(pub Arc<Slot>);

/// Marks a URLFrontier connection busy while one of its calls is open, to
/// the end of the call's response stream: such a connection is never
/// closed to make room. Names the connection to the service
/// ([`sitemapd_urlfrontier::ConnectionId`]), which caps streams per
/// connection.
#[derive(Clone)]
pub(super) struct MarkBusyLayer;

impl<S> tower_layer::Layer<S> for MarkBusyLayer {
    type Service = MarkBusy<S>;

    fn layer(&self, inner: S) -> MarkBusy<S> {
        MarkBusy(inner)
    }
}

/// See [`MarkBusyLayer`].
#[derive(Clone)]
pub(super) struct MarkBusy<S>(S);

impl<S, ReqBody, ResBody> tower_service::Service<Request<ReqBody>> for MarkBusy<S>
where
    S: tower_service::Service<Request<ReqBody>, Response = Response<ResBody>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ResBody: Send + 'static,
{
    type Response = Response<Tracked<ResBody>>;
    type Error = S::Error;
    type Future =
        Pin<Box<dyn std::future::Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<ReqBody>) -> Self::Future {
        let slot = request.extensions().get::<ConnSlot>().map(|c| c.0.clone());
        let busy = slot.map(|slot| {
            let id = sitemapd_urlfrontier::ConnectionId(slot.id);
            request.extensions_mut().insert(id);
            slot.busy()
        });
        let response = self.0.call(request);
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|inner| Tracked { inner, _busy: busy }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_cap_stays_below_the_fd_limit() {
        assert_eq!(connection_cap(512, None), 512);
        assert_eq!(connection_cap(512, Some(20_000)), 512);
        assert_eq!(connection_cap(512, Some(1024)), 512);
        assert_eq!(connection_cap(4096, Some(1024)), 768);
        assert_eq!(connection_cap(512, Some(256)), 128);
        assert_eq!(connection_cap(512, Some(1)), 1);
    }

    #[test]
    fn peers_are_addresses_and_ipv6_64s() {
        assert_eq!(peer_of(ip("::ffff:10.0.0.1")), ip("10.0.0.1"));
        assert_eq!(peer_of(ip("2001:db8:1:2:3:4:5:6")), ip("2001:db8:1:2::"));
        assert_eq!(peer_of(ip("127.0.0.2")), ip("127.0.0.2"));
    }

    #[test]
    fn a_full_address_gives_up_its_own_oldest_idle_connection() {
        let slots = Slots::new("api", 10, 2, Family::default());
        let (a1, mut a1_closed) = slots.admit(ip("10.0.0.1")).unwrap();
        let (_a2, _) = slots.admit(ip("10.0.0.1")).unwrap();
        let (_b1, mut b1_closed) = slots.admit(ip("10.0.0.2")).unwrap();
        let (_a3, _) = slots.admit(ip("10.0.0.1")).unwrap();
        assert!(
            a1_closed.try_recv().is_ok(),
            "the oldest of 10.0.0.1 closed"
        );
        assert!(b1_closed.try_recv().is_err(), "10.0.0.2 untouched");
        drop(a1); // its slot was already given back
        assert_eq!(slots.table().held[&ip("10.0.0.1")], 2);
        assert_eq!(slots.table().conns.len(), 3);
    }

    #[test]
    fn requests_in_flight_are_never_cut() {
        let slots = Slots::new("api", 10, 1, Family::default());
        let (a1, mut a1_closed) = slots.admit(ip("10.0.0.1")).unwrap();
        let busy = a1.busy();
        assert!(slots.admit(ip("10.0.0.1")).is_none(), "no idle one to take");
        assert!(a1_closed.try_recv().is_err());
        drop(busy);
        assert!(slots.admit(ip("10.0.0.1")).is_some());
        assert!(a1_closed.try_recv().is_ok());
    }

    #[test]
    fn when_all_are_taken_the_biggest_holder_gives_way() {
        let slots = Slots::new("api", 4, 4, Family::default());
        let (_b, mut b_closed) = slots.admit(ip("10.0.0.2")).unwrap();
        let mut hog = Vec::new();
        for _ in 0..3 {
            hog.push(slots.admit(ip("10.0.0.1")).unwrap());
        }
        // Full: a newcomer from a third address takes the hog's oldest.
        let (_c, _) = slots.admit(ip("10.0.0.3")).unwrap();
        assert!(hog[0].1.try_recv().is_ok());
        assert!(b_closed.try_recv().is_err());
        // And the hog's next takes its own.
        let _more = slots.admit(ip("10.0.0.1")).unwrap();
        assert!(hog[1].1.try_recv().is_ok());
        assert!(b_closed.try_recv().is_err());
        assert_eq!(slots.table().conns.len(), 4);
    }
}
