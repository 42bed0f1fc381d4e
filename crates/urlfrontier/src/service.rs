//! The URLFrontier service on a sitemapd store ([`Frontier`]): every rpc
//! of the protocol, mapped onto the store as `docs/urlfrontier.md` tables
//! it.
//!
//! - A crawl is a store: `DEFAULT` the one the daemon's sitemaps feed,
//!   any other a store of its own in the same database
//!   ([`Store::crawl`]).
//! - A queue is the `key` a client put a URL with (the URL's host, cut as
//!   the reference service cuts it, when it sent none): a URL is in one
//!   queue at a time, the last it was put in; the URLs of sitemaps are in
//!   their host's (`host[:port]`). Politeness stays per host.
//! - GetURLs is a lease ([`Store::lease_admitting`]) of `max_queues`
//!   queues at most ([`LeaseRequest::max_queues`]) in the queue order, each
//!   host no faster than its politeness delay lets a crawler fetch at once
//!   ([`Politeness::Now`]), with the protocol's per-queue rules (blocks,
//!   delays, crawl limits, in-transit URLs) as its admit rule. Those rules
//!   live in memory, as in the reference service: a restart forgets them
//!   (the URLs and their leases stay).
//! - PutURLs and PutDiscovered write through [`Store::put_known`] and
//!   [`Store::discover`].
//!
//! Every store call runs on tokio's blocking pool: a slow disk never
//! stalls the runtime.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sitemapd_scheduler::{
    Clock, Completion, DiscoveredUrl, KnownUrl, LeaseRequest, Metadata, Outcome, Politeness, Put,
    QueuePlace, Store, StoreError, SystemClock, Timestamp, UrlStatus, UrlView,
};
use tokio::sync::{Semaphore, mpsc};
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::proto::{self, url_frontier_server::UrlFrontier};
use crate::status::store_status;
use crate::{DEFAULT_CRAWL, MAX_KEY_CHARS, crawl_id, queue_key, too_long};

/// How long a URL handed out stays in transit when the client asks for
/// no time (`delay_requestable` 0), as the reference service does.
pub const DEFAULT_IN_TRANSIT: Duration = Duration::from_secs(30);
/// Seconds between two servings of one queue unless SetDelay said
/// otherwise, as the reference service does.
pub const DEFAULT_QUEUE_DELAY: u32 = 1;
/// `delay_requestable` (GetURLs' time in transit, SetDelay's time between
/// servings) at most, in seconds: 7 days, as the HTTP lease's `ttl_secs`.
pub const MAX_DELAY_SECS: u32 = sitemapd_scheduler::LeaseRequest::MAX_TTL.as_secs() as u32;
/// The latest refetch date a known item may carry (9999-12-31T23:59:59Z,
/// the last second RFC 3339 writes): a later one is SKIPPED.
pub const MAX_REFETCH_DATE: u64 = 253_402_300_799;
/// URLs one GetURLs call sends at most, whatever it asks.
pub const MAX_URLS_PER_CALL: usize = 10_000;
/// `size` of ListQueues and ListURLs when the client gives 0.
pub const DEFAULT_PAGE: usize = 100;
/// Items of a PutURLs stream read and written together (each acked once
/// written): the reference reads 1024 unacked items per stream. A
/// PutDiscovered batch is written in chunks of as many.
pub const PUT_CHUNK: usize = 1024;
/// Bytes of read items (ids, URLs, keys, metadata cut to
/// [`sitemapd_scheduler::frontier::MAX_METADATA_BYTES`]) one PutURLs chunk holds at
/// most: with messages of up to 4 MiB, 1,024 items could hold 4 GiB.
pub const PUT_CHUNK_BYTES: usize = 8 << 20;
/// Seconds between two prunings of the per-queue rules.
const PRUNE_EVERY: i64 = 60;
/// The longest a PutURLs item waits for others to be written with.
pub const PUT_WAIT: Duration = Duration::from_millis(2);
/// A put stream that sends nothing for this long is closed.
pub const IDLE_STREAM: Duration = Duration::from_secs(600);
/// A ListURLs stream whose client takes less than a page ([`LIST_PAGE`]
/// URLs) in this long is cut.
pub const STALLED_LIST: Duration = Duration::from_secs(30);
/// ListURLs streams open at once, over every client; one more is
/// RESOURCE_EXHAUSTED. A stream holds a page and no thread while its
/// client does not read.
pub const MAX_LIST_STREAMS: usize = 16;
/// ListURLs streams open at once on one connection (when the transport
/// names connections, [`ConnectionId`]); one more is RESOURCE_EXHAUSTED.
pub const MAX_LIST_STREAMS_PER_CONNECTION: usize = 4;

/// The connection a call came on, as the server's transport puts it in
/// each request's extensions: ListURLs streams are capped per connection
/// ([`MAX_LIST_STREAMS_PER_CONNECTION`]) as well as in all. Calls without
/// one are under the cap in all only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnectionId(pub u64);

/// Status codes as a client reports them in metadata (StormCrawler's
/// `fetch.statusCode`), the content signature it computed (`signature`)
/// and a redirect's target (`_redirTo`).
pub const STATUS_KEY: &str = "fetch.statusCode";
/// See [`STATUS_KEY`].
pub const SIGNATURE_KEY: &str = "signature";
/// See [`STATUS_KEY`].
pub const REDIRECT_KEY: &str = "_redirTo";

/// What SetLogLevel calls: a logger (package) name and a level (`trace`
/// … `error`).
pub type LogLevelHook = Arc<dyn Fn(&str, &str) -> Result<(), String> + Send + Sync>;

/// The per-queue rules of the protocol, in memory.
#[derive(Debug, Default, Clone)]
struct QueueRules {
    /// Not served while now < this (unix seconds).
    blocked_until: i64,
    /// Seconds between two servings (SetDelay); `None`: the default.
    delay: Option<u32>,
    /// No more serving once this many URLs are completed; 0: no limit.
    limit: u32,
    /// The last time a GetURLs call sent it a URL.
    last_served: i64,
    /// URLs handed out and not reported, with the end of their hold.
    in_transit: HashMap<String, i64>,
}

impl QueueRules {
    fn in_transit(&mut self, now: i64) -> usize {
        self.in_transit.retain(|_, until| *until > now);
        self.in_transit.len()
    }
}

/// The URLFrontier service on a store. Cheap to clone.
#[derive(Clone)]
pub struct Frontier {
    inner: Arc<Inner>,
}

struct Inner {
    /// The store the sitemaps feed: crawl `DEFAULT`.
    store: Arc<Store>,
    /// The other crawls opened so far.
    crawls: Mutex<HashMap<String, Arc<Store>>>,
    /// Per crawl and queue: the protocol's rules.
    rules: Mutex<HashMap<(String, String), QueueRules>>,
    default_delay: AtomicU32,
    active: AtomicBool,
    node: String,
    log_level: Option<LogLevelHook>,
    /// When `rules` was last pruned of what no longer holds anything.
    pruned: AtomicI64,
    /// A permit per ListURLs stream open ([`MAX_LIST_STREAMS`]).
    list_streams: Arc<Semaphore>,
    /// ListURLs streams open per connection.
    lists_by_connection: Mutex<HashMap<ConnectionId, usize>>,
    /// Where "now" comes from for every rule and store call.
    clock: Arc<dyn Clock>,
}

/// A ListURLs stream's place under the caps, given back when dropped.
struct ListPermit {
    _in_all: tokio::sync::OwnedSemaphorePermit,
    connection: Option<(Arc<Inner>, ConnectionId)>,
}

impl Drop for ListPermit {
    fn drop(&mut self) {
        if let Some((inner, id)) = &self.connection {
            let mut open = inner.lists_by_connection.lock().unwrap();
            if let Some(n) = open.get_mut(id) {
                *n -= 1;
                if *n == 0 {
                    open.remove(id);
                }
            }
        }
    }
}

impl Inner {
    /// A place for one more ListURLs stream from `connection`, under both
    /// caps.
    fn list_permit(
        self: &Arc<Self>,
        connection: Option<ConnectionId>,
    ) -> Result<ListPermit, Status> {
        let Ok(in_all) = self.list_streams.clone().try_acquire_owned() else {
            return Err(Status::resource_exhausted(format!(
                "{MAX_LIST_STREAMS} ListURLs streams are open: try again when one has ended"
            )));
        };
        let Some(id) = connection else {
            return Ok(ListPermit {
                _in_all: in_all,
                connection: None,
            });
        };
        let mut open = self.lists_by_connection.lock().unwrap();
        let n = open.entry(id).or_default();
        if *n >= MAX_LIST_STREAMS_PER_CONNECTION {
            return Err(Status::resource_exhausted(format!(
                "{MAX_LIST_STREAMS_PER_CONNECTION} ListURLs streams are open on this connection: \
                 try again when one has ended"
            )));
        }
        *n += 1;
        Ok(ListPermit {
            _in_all: in_all,
            connection: Some((self.clone(), id)),
        })
    }
}

impl Frontier {
    /// The service on `store` (crawl `DEFAULT`), naming itself `node`
    /// (`host:port`) in ListNodes; SetLogLevel calls `log_level` (none:
    /// it answers UNIMPLEMENTED). Its time is the system clock.
    pub fn new(
        store: Arc<Store>,
        node: impl Into<String>,
        log_level: Option<LogLevelHook>,
    ) -> Frontier {
        Frontier::with_clock(store, node, log_level, Arc::new(SystemClock))
    }

    /// [`Frontier::new`], its time read from `clock`: holds, queue delays,
    /// blocks, the dates it stores and PurgeURLs' cutoff all follow it (a
    /// [`sitemapd_scheduler::ManualClock`] in a test).
    pub fn with_clock(
        store: Arc<Store>,
        node: impl Into<String>,
        log_level: Option<LogLevelHook>,
        clock: Arc<dyn Clock>,
    ) -> Frontier {
        Frontier {
            inner: Arc::new(Inner {
                store,
                crawls: Mutex::new(HashMap::new()),
                rules: Mutex::new(HashMap::new()),
                default_delay: AtomicU32::new(DEFAULT_QUEUE_DELAY),
                active: AtomicBool::new(true),
                node: node.into(),
                log_level,
                pruned: AtomicI64::new(0),
                list_streams: Arc::new(Semaphore::new(MAX_LIST_STREAMS)),
                lists_by_connection: Mutex::new(HashMap::new()),
                clock,
            }),
        }
    }

    /// The tonic service, with the protocol's message size bound.
    pub fn into_server(self) -> proto::url_frontier_server::UrlFrontierServer<Frontier> {
        proto::url_frontier_server::UrlFrontierServer::new(self)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
    }
}

/// Crawls other than `DEFAULT` the service holds at most: each is a sled
/// tree, and a client naming a new crawl per item must not make a tree
/// per item.
pub const MAX_CRAWLS: usize = 1000;

/// The largest request message accepted, bytes.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

impl Inner {
    /// The store of `crawl` (normalised), opened (created) if need be.
    fn store(&self, crawl: &str) -> Result<Arc<Store>, Status> {
        let crawl = crawl_id(crawl);
        if crawl == DEFAULT_CRAWL {
            return Ok(self.store.clone());
        }
        let mut crawls = lock(&self.crawls);
        if let Some(s) = crawls.get(crawl) {
            return Ok(s.clone());
        }
        if too_long(crawl) {
            return Err(Status::invalid_argument(format!(
                "a crawl id has at most {MAX_KEY_CHARS} characters"
            )));
        }
        let names = self.store.crawl_names();
        if !names.iter().any(|n| n == crawl) && names.len() >= MAX_CRAWLS {
            return Err(Status::resource_exhausted(format!(
                "this service holds {MAX_CRAWLS} crawls at most: delete one first"
            )));
        }
        let s = Arc::new(self.store.crawl(crawl).map_err(store_status)?);
        crawls.insert(crawl.to_string(), s.clone());
        Ok(s)
    }

    /// The store of `crawl` if it exists (a read never creates one).
    fn existing(&self, crawl: &str) -> Result<Option<Arc<Store>>, Status> {
        let crawl = crawl_id(crawl);
        if crawl == DEFAULT_CRAWL
            || lock(&self.crawls).contains_key(crawl)
            || self.store.crawl_names().iter().any(|n| n == crawl)
        {
            return self.store(crawl).map(Some);
        }
        Ok(None)
    }

    /// Every crawl: DEFAULT, then the others by name.
    fn all_crawls(&self) -> Vec<String> {
        let mut names: Vec<String> = self.store.crawl_names();
        names.extend(lock(&self.crawls).keys().cloned());
        names.sort();
        names.dedup();
        names.retain(|n| n != DEFAULT_CRAWL);
        names.insert(0, DEFAULT_CRAWL.to_string());
        names
    }

    /// The service's clock now, in unix seconds.
    fn now(&self) -> i64 {
        self.clock.now().unix()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Status> + Send + 'static,
) -> Result<T, Status> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Status::internal(e.to_string()))?
}

/// A client's metadata in key order, cut as the store keeps it.
fn metadata_of(map: HashMap<String, proto::StringList>) -> Metadata {
    let mut m: Metadata = map.into_iter().map(|(k, v)| (k, v.values)).collect();
    m.sort_by(|a, b| a.0.cmp(&b.0));
    sitemapd_scheduler::bounded_metadata(m)
}

fn metadata_map(m: &Metadata) -> HashMap<String, proto::StringList> {
    m.iter()
        .map(|(k, v)| (k.clone(), proto::StringList { values: v.clone() }))
        .collect()
}

fn first<'m>(m: &'m Metadata, key: &str) -> Option<&'m str> {
    m.iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, v)| v.first())
        .map(String::as_str)
}

/// How the fetch went, from the metadata a client sends (`previous`: what
/// was stored before, for the signature): none when it sends no status.
pub fn completion_of(metadata: &Metadata, previous: &Metadata) -> Option<Completion> {
    let status: u16 = first(metadata, STATUS_KEY)?.trim().parse().ok()?;
    let outcome = match status {
        304 => Outcome::NotModified,
        200..=299 => {
            let now = first(metadata, SIGNATURE_KEY);
            let before = first(previous, SIGNATURE_KEY);
            match (now, before) {
                (Some(a), Some(b)) if a == b => Outcome::NotModified,
                _ => Outcome::Changed,
            }
        }
        404 | 410 => Outcome::Gone(status),
        301 | 302 | 303 | 307 | 308 => match first(metadata, REDIRECT_KEY) {
            Some(to) => Outcome::Redirected {
                to: to.to_string(),
                status,
            },
            None => Outcome::Error(status),
        },
        _ => Outcome::Error(status),
    };
    Some(Completion {
        status: Some(status),
        ..Completion::from(outcome)
    })
}

/// A stored URL as the protocol shows it, in its queue.
fn url_item(view: &UrlView, crawl: &str) -> proto::UrlItem {
    let info = proto::UrlInfo {
        url: view.url.clone(),
        key: view.queue.clone(),
        metadata: metadata_map(&view.metadata),
        crawl_id: crawl_id(crawl).to_string(),
    };
    let refetch = if view.status == UrlStatus::Completed {
        0
    } else {
        // A scheduled URL's date is above 0 (one due "at 0" would read as
        // completed).
        view.due.unix().max(1).unsigned_abs()
    };
    proto::UrlItem {
        item: Some(proto::url_item::Item::Known(proto::KnownUrlItem {
            info: Some(info),
            refetchable_from_date: refetch,
        })),
        id: String::new(),
        creation_date: view.first_seen.unix().max(1).unsigned_abs(),
    }
}

/// What one put item asks, once read, with the queue it goes in.
enum Item {
    Discovered(DiscoveredUrl),
    Known(KnownUrl),
}

impl Item {
    /// About the bytes it holds.
    fn bytes(&self) -> usize {
        let (url, metadata, queue) = match self {
            Item::Discovered(d) => (&d.url, &d.metadata, &d.queue),
            Item::Known(k) => (&k.url, &k.metadata, &k.queue),
        };
        let metadata: usize = metadata
            .iter()
            .map(|(k, v)| k.len() + v.iter().map(String::len).sum::<usize>())
            .sum();
        url.len() + queue.as_ref().map_or(0, String::len) + metadata
    }
}

/// `delay_requestable` within [`MAX_DELAY_SECS`], or INVALID_ARGUMENT
/// naming the bound.
fn check_delay(secs: u32) -> Result<(), Status> {
    if secs > MAX_DELAY_SECS {
        return Err(Status::invalid_argument(format!(
            "delay_requestable must be at most {MAX_DELAY_SECS} seconds (7 days), not {secs}"
        )));
    }
    Ok(())
}

/// An item's id (its URL when it has none), crawl and what it asks; `Err`
/// with the id when it is to be SKIPPED (no URL, no queue, a key too
/// long).
fn read_item(item: proto::UrlItem) -> Result<(String, String, Item), String> {
    let (info, refetch) = match item.item {
        Some(proto::url_item::Item::Discovered(d)) => (d.info, None),
        Some(proto::url_item::Item::Known(k)) => (k.info, Some(k.refetchable_from_date)),
        None => (None, None),
    };
    let Some(info) = info else {
        return Err(item.id);
    };
    let id = if item.id.is_empty() {
        info.url.clone()
    } else {
        item.id
    };
    match item_of(info, refetch) {
        Some((crawl, what)) => Ok((id, crawl, what)),
        None => Err(id),
    }
}

/// What `info` asks, with its crawl: discovered, or known with its
/// `refetch` date (0: completed). None when it has no queue (no host, a
/// key over the limit) or its date is past [`MAX_REFETCH_DATE`]: SKIPPED.
fn item_of(info: proto::UrlInfo, refetch: Option<u64>) -> Option<(String, Item)> {
    let queue = Some(queue_key(&info.url, &info.key).ok()?.to_string());
    let metadata = metadata_of(info.metadata);
    let what = match refetch {
        None => Item::Discovered(DiscoveredUrl {
            url: info.url,
            metadata,
            queue,
        }),
        Some(date) if date > MAX_REFETCH_DATE => return None,
        Some(date) => Item::Known(KnownUrl {
            url: info.url,
            refetch: (date > 0).then(|| Timestamp::from_unix(date as i64)),
            metadata,
            queue,
        }),
    };
    Some((info.crawl_id, what))
}

/// [`Inner::put`] on the blocking pool; every item FAIL (to resend) if it
/// could not run.
async fn put_blocking(
    inner: Arc<Inner>,
    work: Vec<(String, Item)>,
) -> Vec<proto::ack_message::Status> {
    let n = work.len();
    tokio::task::spawn_blocking(move || inner.put(work))
        .await
        .unwrap_or_else(|_| vec![proto::ack_message::Status::Fail; n])
}

impl Inner {
    /// Writes the items of one chunk, crawl by crawl; a status per item,
    /// in order.
    fn put(&self, items: Vec<(String, Item)>) -> Vec<proto::ack_message::Status> {
        use proto::ack_message::Status as Ack;
        let mut statuses = vec![Ack::Fail; items.len()];
        let mut by_crawl: BTreeMap<String, Vec<(usize, Item)>> = BTreeMap::new();
        for (i, (crawl, item)) in items.into_iter().enumerate() {
            by_crawl
                .entry(crawl_id(&crawl).to_string())
                .or_default()
                .push((i, item));
        }
        let now = self.now();
        for (crawl, items) in by_crawl {
            let store = match self.store(&crawl) {
                Ok(store) => store,
                Err(refused) => {
                    // A crawl id over the bounds: do not resend. The store
                    // failing: resend.
                    let ack = if refused.code() == tonic::Code::Unavailable {
                        Ack::Fail
                    } else {
                        Ack::Skipped
                    };
                    for (i, _) in items {
                        statuses[i] = ack;
                    }
                    continue;
                }
            };
            let mut discovered = Vec::new();
            let mut known = Vec::new();
            let written: Vec<usize> = items.iter().map(|(i, _)| *i).collect();
            for (i, item) in items {
                match item {
                    Item::Discovered(d) => discovered.push((i, d)),
                    Item::Known(k) => known.push((i, k)),
                }
            }
            let put =
                |result: Result<Vec<Put>, StoreError>, at: Vec<usize>, st: &mut [Ack]| match result
                {
                    Ok(found) => {
                        for (i, p) in at.into_iter().zip(found) {
                            st[i] = match p {
                                Put::Stored => Ack::Ok,
                                Put::Known | Put::Invalid => Ack::Skipped,
                            };
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "urlfrontier: put failed");
                    }
                };
            if !discovered.is_empty() {
                let at = discovered.iter().map(|d| d.0).collect();
                let result = store.discover(discovered.into_iter().map(|(_, d)| d), now_ts(now));
                put(result, at, &mut statuses);
            }
            if !known.is_empty() {
                // A known update releases the URL's hold at once (held
                // under the queue it was handed out in).
                let held: Vec<(String, String)> = known
                    .iter()
                    .filter_map(|(_, k)| {
                        let view = store.url(&k.url).ok()??;
                        Some((view.queue, view.url))
                    })
                    .collect();
                let mut rules = lock(&self.rules);
                for (queue, url) in held {
                    if let Some(r) = rules.get_mut(&(crawl.clone(), queue)) {
                        r.in_transit.remove(&url);
                    }
                }
                drop(rules);
                let at = known.iter().map(|k| k.0).collect();
                let result = store.put_known(
                    known.into_iter().map(|(_, k)| k).collect(),
                    now_ts(now),
                    |k, stored| completion_of(&k.metadata, stored),
                );
                put(result, at, &mut statuses);
            }
            // Acked once on disk: a crash after an OK loses nothing.
            if let Err(e) = store.flush() {
                tracing::warn!(error = %e, "urlfrontier: flush failed");
                for i in written {
                    statuses[i] = Ack::Fail;
                }
            }
        }
        statuses
    }

    /// Drops, once a minute, the rules of queues that no longer hold
    /// anything (no block, delay or limit set, nothing in transit, their
    /// delay since the last serving over), so that what the service
    /// remembers follows what clients set and hold, not every host ever
    /// served.
    fn prune(&self, rules: &mut HashMap<(String, String), QueueRules>, now: i64) {
        if now
            < self
                .pruned
                .load(Ordering::Relaxed)
                .saturating_add(PRUNE_EVERY)
        {
            return;
        }
        self.pruned.store(now, Ordering::Relaxed);
        let default_delay = i64::from(self.default_delay.load(Ordering::SeqCst));
        rules.retain(|_, r| {
            r.in_transit(now) > 0
                || r.delay.is_some()
                || r.limit > 0
                || r.blocked_until > now
                || now < r.last_served.saturating_add(default_delay)
        });
    }

    /// One GetURLs call.
    fn get_urls(&self, p: proto::GetParams) -> Result<Vec<proto::UrlInfo>, Status> {
        if !self.active.load(Ordering::SeqCst) {
            return Ok(Vec::new());
        }
        let crawls = match &p.item {
            Some(proto::get_params::Item::CrawlId(c)) => vec![crawl_id(c).to_string()],
            _ => self.all_crawls(),
        };
        let per_queue = if p.max_urls_per_queue == 0 {
            usize::MAX
        } else {
            p.max_urls_per_queue as usize
        };
        let max_queues = if p.max_queues == 0 {
            usize::MAX
        } else {
            p.max_queues as usize
        };
        let n = per_queue.saturating_mul(max_queues).min(MAX_URLS_PER_CALL);
        check_delay(p.delay_requestable)?;
        let hold = if p.delay_requestable == 0 {
            DEFAULT_IN_TRANSIT
        } else {
            Duration::from_secs(u64::from(p.delay_requestable))
        };
        let now = self.now();
        let default_delay = self.default_delay.load(Ordering::SeqCst);
        let mut out = Vec::new();
        let mut queues_served = 0usize;
        // Check and reservation under one lock: two calls never serve a
        // queue twice in one window.
        let mut rules = lock(&self.rules);
        self.prune(&mut rules, now);
        for crawl in crawls {
            let Some(store) = self.existing(&crawl)? else {
                continue;
            };
            let left = n.saturating_sub(out.len());
            if left == 0 || queues_served >= max_queues {
                break;
            }
            // Each host no faster than a crawler may fetch from it at once
            // (its Crawl-delay, the store's lease delay).
            let request = LeaseRequest::new(left)
                .per_host(left)
                .max_queues(max_queues - queues_served)
                .ttl(hold)
                .politeness(Politeness::Now);
            let queue = (!p.key.is_empty()).then_some(p.key.as_str());
            let leased = store
                .lease_admitting(&request, queue, now_ts(now), |name| {
                    // A queue with no rules yet (none set, never served)
                    // is served.
                    let Some(r) = rules.get_mut(&(crawl.clone(), name.to_string())) else {
                        return per_queue;
                    };
                    let delay = i64::from(r.delay.unwrap_or(default_delay));
                    let limited = r.limit > 0
                        && store
                            .queue(name)
                            .ok()
                            .flatten()
                            .is_some_and(|q| q.completed >= u64::from(r.limit));
                    let waiting = r.last_served > 0 && now < r.last_served.saturating_add(delay);
                    let in_transit = r.in_transit(now);
                    if r.blocked_until > now || limited || waiting || in_transit >= per_queue {
                        return 0;
                    }
                    per_queue.saturating_sub(in_transit)
                })
                .map_err(store_status)?;
            let until = now.saturating_add(i64::try_from(hold.as_secs()).unwrap_or(i64::MAX));
            let mut served = std::collections::HashSet::new();
            for l in leased {
                let r = rules.entry((crawl.clone(), l.queue.clone())).or_default();
                r.last_served = now;
                r.in_transit.insert(l.url.clone(), until);
                served.insert(l.queue.clone());
                out.push(proto::UrlInfo {
                    metadata: metadata_map(&l.metadata),
                    url: l.url,
                    key: l.queue,
                    crawl_id: crawl.clone(),
                });
            }
            queues_served += served.len();
        }
        Ok(out)
    }

    /// The counts of one crawl (one queue of it with `key`).
    fn stats(&self, key: &str, crawl: &str) -> Result<proto::Stats, Status> {
        let crawl = crawl_id(crawl).to_string();
        let mut stats = proto::Stats {
            crawl_id: crawl.clone(),
            ..Default::default()
        };
        let Some(store) = self.existing(&crawl)? else {
            return Ok(stats);
        };
        // In transit: what this service handed out (the lock held for
        // that only, not while the store is read).
        let now = self.now();
        let held: usize = lock(&self.rules)
            .iter_mut()
            .filter(|((c, host), _)| *c == crawl && (key.is_empty() || host == key))
            .map(|(_, r)| r.in_transit(now))
            .sum();
        stats.in_process = u32::try_from(held).unwrap_or(u32::MAX);
        let (mut completed, mut active_queues) = (0u64, 0u64);
        let mut count = |q: sitemapd_scheduler::QueueCounts| {
            stats.size += q.scheduled;
            completed += q.completed;
            stats.number_of_queues += 1;
            active_queues += u64::from(q.scheduled > 0);
        };
        if key.is_empty() {
            for q in store.queues() {
                count(q.map_err(store_status)?.1);
            }
        } else if let Some(q) = store.queue(key).map_err(store_status)? {
            count(q);
        }
        stats.counts.insert("completed".into(), completed);
        stats.counts.insert("active_queues".into(), active_queues);
        Ok(stats)
    }

    /// The queue `key` of `crawl`, if it exists, with its rules to change.
    fn with_rules<T>(
        &self,
        crawl: &str,
        key: &str,
        f: impl FnOnce(&mut QueueRules) -> T,
    ) -> Result<Option<T>, Status> {
        let crawl = crawl_id(crawl).to_string();
        let Some(store) = self.existing(&crawl)? else {
            return Ok(None);
        };
        if store.queue(key).map_err(store_status)?.is_none() {
            return Ok(None);
        }
        let mut rules = lock(&self.rules);
        Ok(Some(f(rules.entry((crawl, key.to_string())).or_default())))
    }

    /// Visits the URLs of `crawl` (one queue of it with `key`) matching
    /// `filter` (a substring), in store order, while `visit` says go on:
    /// one record in memory at a time.
    fn each_matching(
        &self,
        crawl: &str,
        key: &str,
        filter: Option<&str>,
        ignore_case: bool,
        from: QueuePlace,
        mut visit: impl FnMut(QueuePlace, UrlView) -> bool,
    ) -> Result<(), Status> {
        let Some(store) = self.existing(crawl)? else {
            return Ok(());
        };
        let filter = filter.filter(|f| !f.is_empty()).map(|f| {
            if ignore_case {
                f.to_lowercase()
            } else {
                f.to_owned()
            }
        });
        let queue = (!key.is_empty()).then_some(key);
        for item in store.queue_urls_from(queue, from, self.clock.now()) {
            let (place, view) = item.map_err(store_status)?;
            let keep = match &filter {
                None => true,
                Some(f) if ignore_case => view.url.to_lowercase().contains(f.as_str()),
                Some(f) => view.url.contains(f.as_str()),
            };
            if keep && !visit(place, view) {
                return Ok(());
            }
        }
        Ok(())
    }

    /// The next page of a ListURLs walk ([`LIST_PAGE`] items at most), and
    /// whether the walk is over.
    fn list_page(
        &self,
        p: &proto::ListUrlParams,
        walk: &mut ListWalk,
    ) -> Result<(Vec<proto::UrlItem>, bool), Status> {
        let (mut page, mut visited) = (Vec::new(), 0);
        let from = std::mem::take(&mut walk.place);
        let ignore_case = p.ignore_case.unwrap_or(false);
        let filter = p.filter.as_deref();
        self.each_matching(
            &p.crawl_id,
            &p.key,
            filter,
            ignore_case,
            from,
            |place, v| {
                walk.place = place;
                if walk.skip > 0 {
                    walk.skip -= 1;
                } else {
                    page.push(url_item(&v, &p.crawl_id));
                    walk.left -= 1;
                }
                visited += 1;
                walk.left > 0 && visited < LIST_PAGE
            },
        )?;
        // Over when the store had no more, or the client no more room.
        let ended = walk.left == 0 || visited < LIST_PAGE;
        Ok((page, ended))
    }
}

fn now_ts(now: i64) -> Timestamp {
    Timestamp::from_unix(now)
}

type Stream<T> = ReceiverStream<Result<T, Status>>;

/// Items a server stream holds before the client reads them: a client that
/// reads slowly holds the producer, never a growing buffer.
const STREAM_BUFFER: usize = 64;

/// URLs a ListURLs stream reads from the store at once; its client must
/// take them within [`STALLED_LIST`].
pub const LIST_PAGE: usize = 256;

/// How far a ListURLs stream has gone.
struct ListWalk {
    /// Where the next page starts.
    place: QueuePlace,
    /// Matching URLs still to pass over (the request's `start`).
    skip: usize,
    /// URLs still to send (the request's `size`).
    left: usize,
}

#[tonic::async_trait]
impl UrlFrontier for Frontier {
    async fn list_nodes(
        &self,
        _: Request<proto::Empty>,
    ) -> Result<Response<proto::StringList>, Status> {
        Ok(Response::new(proto::StringList {
            values: vec![self.inner.node.clone()],
        }))
    }

    async fn list_crawls(
        &self,
        _: Request<proto::Local>,
    ) -> Result<Response<proto::StringList>, Status> {
        let inner = self.inner.clone();
        let values = blocking(move || {
            let mut values = Vec::new();
            for crawl in inner.all_crawls() {
                let store = inner.existing(&crawl)?;
                if store.is_some_and(|s| s.queues().next().is_some()) {
                    values.push(crawl);
                }
            }
            Ok(values)
        })
        .await?;
        Ok(Response::new(proto::StringList { values }))
    }

    async fn delete_crawl(
        &self,
        request: Request<proto::DeleteCrawlMessage>,
    ) -> Result<Response<proto::Long>, Status> {
        let crawl = crawl_id(&request.into_inner().value).to_string();
        let inner = self.inner.clone();
        let value = blocking(move || {
            let Some(store) = inner.existing(&crawl)? else {
                return Ok(0);
            };
            let mut removed = 0;
            if crawl == DEFAULT_CRAWL {
                // Named first: each deletion changes the keys read.
                let names: Vec<String> = store
                    .queues()
                    .map(|q| q.map(|(name, _)| name))
                    .collect::<Result<_, _>>()
                    .map_err(store_status)?;
                for name in &names {
                    removed += store.delete_queue(name).map_err(store_status)?;
                }
            } else {
                for q in store.queues() {
                    removed += q.map_err(store_status)?.1.total();
                }
                lock(&inner.crawls).remove(&crawl);
                drop(store);
                inner.store.drop_crawl(&crawl).map_err(store_status)?;
            }
            lock(&inner.rules).retain(|(c, _), _| c != &crawl);
            Ok(removed)
        })
        .await?;
        Ok(Response::new(proto::Long { value }))
    }

    async fn list_queues(
        &self,
        request: Request<proto::Pagination>,
    ) -> Result<Response<proto::QueueList>, Status> {
        let p = request.into_inner();
        let inner = self.inner.clone();
        let crawl = crawl_id(&p.crawl_id).to_string();
        let reply_crawl = crawl.clone();
        let values = blocking(move || {
            let Some(store) = inner.existing(&crawl)? else {
                return Ok(Vec::new());
            };
            let size = if p.size == 0 {
                DEFAULT_PAGE
            } else {
                p.size as usize
            };
            let now = inner.now();
            let blocked: std::collections::HashSet<String> = lock(&inner.rules)
                .iter()
                .filter(|((c, _), r)| *c == crawl && r.blocked_until > now)
                .map(|((_, name), _)| name.clone())
                .collect();
            let mut values = Vec::new();
            let mut matched = 0usize;
            for q in store.queues() {
                let (name, q) = q.map_err(store_status)?;
                if !p.include_inactive && (blocked.contains(&name) || q.scheduled == 0) {
                    continue;
                }
                matched += 1;
                if matched > p.start as usize {
                    values.push(name);
                    if values.len() >= size {
                        break;
                    }
                }
            }
            Ok(values)
        })
        .await?;
        Ok(Response::new(proto::QueueList {
            size: u32::try_from(values.len()).unwrap_or(u32::MAX),
            values,
            total: 0,
            start: p.start,
            crawl_id: reply_crawl,
        }))
    }

    type GetURLsStream = tokio_stream::Iter<std::vec::IntoIter<Result<proto::UrlInfo, Status>>>;

    async fn get_ur_ls(
        &self,
        request: Request<proto::GetParams>,
    ) -> Result<Response<Self::GetURLsStream>, Status> {
        let p = request.into_inner();
        let inner = self.inner.clone();
        let urls = blocking(move || inner.get_urls(p)).await?;
        let urls: Vec<_> = urls.into_iter().map(Ok).collect();
        Ok(Response::new(tokio_stream::iter(urls)))
    }

    type PutURLsStream = Stream<proto::AckMessage>;

    async fn put_ur_ls(
        &self,
        request: Request<Streaming<proto::UrlItem>>,
    ) -> Result<Response<Self::PutURLsStream>, Status> {
        let inbound = request.into_inner();
        let (tx, rx) = mpsc::channel(PUT_CHUNK);
        let inner = self.inner.clone();
        tokio::spawn(async move {
            // Each item is read (its metadata cut) as it arrives; a chunk
            // ends at PUT_CHUNK items, PUT_CHUNK_BYTES or PUT_WAIT after
            // its first item.
            let inbound = inbound.timeout(IDLE_STREAM);
            tokio::pin!(inbound);
            let mut done = false;
            // Why the stream broke, sent once what came before is acked.
            let mut broken = None;
            while !done {
                let mut items = Vec::new();
                let mut acks = Vec::new();
                let (mut held, mut bytes) = (0usize, 0usize);
                let mut deadline = None;
                while held < PUT_CHUNK && bytes < PUT_CHUNK_BYTES {
                    let next = match deadline {
                        None => inbound.next().await,
                        Some(at) => match tokio::time::timeout_at(at, inbound.next()).await {
                            Ok(next) => next,
                            Err(_) => break,
                        },
                    };
                    deadline.get_or_insert_with(|| tokio::time::Instant::now() + PUT_WAIT);
                    held += 1;
                    match next {
                        Some(Ok(Ok(item))) => match read_item(item) {
                            Ok((id, crawl, what)) => {
                                bytes += id.len() + crawl.len() + what.bytes();
                                items.push((id, crawl, what));
                            }
                            Err(id) => {
                                bytes += id.len();
                                acks.push((id, proto::ack_message::Status::Skipped));
                            }
                        },
                        Some(Ok(Err(status))) => {
                            broken = Some(status);
                            done = true;
                            break;
                        }
                        // An idle or finished stream ends here.
                        _ => {
                            done = true;
                            break;
                        }
                    }
                }
                let ids: Vec<String> = items.iter().map(|(id, _, _)| id.clone()).collect();
                let work = items.into_iter().map(|(_, c, w)| (c, w)).collect();
                let statuses = put_blocking(inner.clone(), work).await;
                acks.extend(ids.into_iter().zip(statuses));
                for (id, status) in acks {
                    let ack = proto::AckMessage {
                        id,
                        status: status as i32,
                    };
                    if tx.send(Ok(ack)).await.is_err() {
                        return;
                    }
                }
            }
            if let Some(status) = broken {
                let _ = tx.send(Err(status)).await;
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    type PutDiscoveredStream = Stream<proto::BatchAck>;

    async fn put_discovered(
        &self,
        request: Request<Streaming<proto::DiscoveredBatch>>,
    ) -> Result<Response<Self::PutDiscoveredStream>, Status> {
        let inbound = request.into_inner();
        let (tx, rx) = mpsc::channel(16);
        let inner = self.inner.clone();
        tokio::spawn(async move {
            let batches = inbound.timeout(IDLE_STREAM);
            tokio::pin!(batches);
            while let Some(next) = batches.next().await {
                let batch = match next {
                    Ok(Ok(batch)) => batch,
                    // A broken stream says why (a message over its bound).
                    Ok(Err(status)) => {
                        let _ = tx.send(Err(status)).await;
                        return;
                    }
                    Err(_idle) => return,
                };
                use proto::ack_message::Status as Ack;
                // A repeat within the batch is SKIPPED by the store (it
                // knows the URL by then).
                let mut statuses = vec![Ack::Skipped; batch.items.len()];
                let mut work = Vec::new();
                let mut at = Vec::new();
                for (i, info) in batch.items.into_iter().enumerate() {
                    if let Some(item) = item_of(info, None) {
                        at.push(i);
                        work.push(item);
                    }
                }
                // Written PUT_CHUNK items at a time, as PutURLs is: a
                // lease or another client's write waits for one chunk, not
                // for a batch of 100,000. Each item's status says whether
                // it was written, so a batch may be written in part.
                let mut done = Vec::with_capacity(work.len());
                while !work.is_empty() {
                    let rest = work.split_off(work.len().min(PUT_CHUNK));
                    let chunk = std::mem::replace(&mut work, rest);
                    done.extend(put_blocking(inner.clone(), chunk).await);
                }
                for (i, s) in at.into_iter().zip(done) {
                    statuses[i] = s;
                }
                let ack = proto::BatchAck {
                    id: batch.id,
                    statuses: statuses.into_iter().map(|s| s as i32).collect(),
                };
                if tx.send(Ok(ack)).await.is_err() {
                    return;
                }
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn get_stats(
        &self,
        request: Request<proto::QueueWithinCrawlParams>,
    ) -> Result<Response<proto::Stats>, Status> {
        let p = request.into_inner();
        let inner = self.inner.clone();
        let stats = blocking(move || inner.stats(&p.key, &p.crawl_id)).await?;
        Ok(Response::new(stats))
    }

    async fn delete_queue(
        &self,
        request: Request<proto::QueueWithinCrawlParams>,
    ) -> Result<Response<proto::Long>, Status> {
        let p = request.into_inner();
        let inner = self.inner.clone();
        let value = blocking(move || {
            let crawl = crawl_id(&p.crawl_id).to_string();
            let Some(store) = inner.existing(&crawl)? else {
                return Ok(0);
            };
            if p.key.is_empty() {
                return Ok(0);
            }
            let removed = store.delete_queue(&p.key).map_err(store_status)?;
            lock(&inner.rules).remove(&(crawl, p.key));
            Ok(removed)
        })
        .await?;
        Ok(Response::new(proto::Long { value }))
    }

    async fn block_queue_until(
        &self,
        request: Request<proto::BlockQueueParams>,
    ) -> Result<Response<proto::Empty>, Status> {
        let p = request.into_inner();
        let inner = self.inner.clone();
        blocking(move || {
            let until = i64::try_from(p.time).unwrap_or(i64::MAX);
            inner.with_rules(&p.crawl_id, &p.key, |r| r.blocked_until = until)
        })
        .await?;
        Ok(Response::new(proto::Empty {}))
    }

    async fn set_active(
        &self,
        request: Request<proto::Active>,
    ) -> Result<Response<proto::Empty>, Status> {
        let state = request.into_inner().state;
        self.inner.active.store(state, Ordering::SeqCst);
        tracing::info!(active = state, "urlfrontier: SetActive");
        Ok(Response::new(proto::Empty {}))
    }

    async fn get_active(
        &self,
        _: Request<proto::Local>,
    ) -> Result<Response<proto::Boolean>, Status> {
        Ok(Response::new(proto::Boolean {
            state: self.inner.active.load(Ordering::SeqCst),
        }))
    }

    async fn set_delay(
        &self,
        request: Request<proto::QueueDelayParams>,
    ) -> Result<Response<proto::Empty>, Status> {
        let p = request.into_inner();
        check_delay(p.delay_requestable)?;
        if p.key.is_empty() {
            self.inner
                .default_delay
                .store(p.delay_requestable, Ordering::SeqCst);
            return Ok(Response::new(proto::Empty {}));
        }
        let inner = self.inner.clone();
        blocking(move || {
            inner.with_rules(&p.crawl_id, &p.key, |r| r.delay = Some(p.delay_requestable))
        })
        .await?;
        Ok(Response::new(proto::Empty {}))
    }

    async fn set_log_level(
        &self,
        request: Request<proto::LogLevelParams>,
    ) -> Result<Response<proto::Empty>, Status> {
        let p = request.into_inner();
        let Some(hook) = &self.inner.log_level else {
            return Err(Status::unimplemented(
                "this service does not change log levels",
            ));
        };
        let level = proto::log_level_params::Level::try_from(p.level)
            .map_err(|_| Status::invalid_argument("unknown level"))?;
        let level = match level {
            proto::log_level_params::Level::Trace => "trace",
            proto::log_level_params::Level::Debug => "debug",
            proto::log_level_params::Level::Info => "info",
            proto::log_level_params::Level::Warn => "warn",
            proto::log_level_params::Level::Error => "error",
        };
        hook(&p.package, level).map_err(Status::invalid_argument)?;
        Ok(Response::new(proto::Empty {}))
    }

    async fn set_crawl_limit(
        &self,
        request: Request<proto::CrawlLimitParams>,
    ) -> Result<Response<proto::Empty>, Status> {
        let p = request.into_inner();
        let inner = self.inner.clone();
        let key = p.key.clone();
        let found =
            blocking(move || inner.with_rules(&p.crawl_id, &p.key, |r| r.limit = p.limit)).await?;
        match found {
            Some(()) => Ok(Response::new(proto::Empty {})),
            None => Err(Status::unknown(format!("no queue {key}"))),
        }
    }

    async fn get_url_status(
        &self,
        request: Request<proto::UrlStatusRequest>,
    ) -> Result<Response<proto::UrlItem>, Status> {
        let p = request.into_inner();
        if queue_key(&p.url, &p.key).is_err() {
            return Err(Status::invalid_argument("no queue key for this URL"));
        }
        let inner = self.inner.clone();
        let item = blocking(move || {
            let crawl = crawl_id(&p.crawl_id).to_string();
            let Some(store) = inner.existing(&crawl)? else {
                return Err(Status::not_found(format!("no crawl {crawl}")));
            };
            let Some(view) = store.url(&p.url).map_err(store_status)? else {
                return Err(Status::not_found("unknown URL"));
            };
            // The queue asked (the URL's host, cut as the reference does,
            // when none is named), and the queue the URL is in: its host
            // (`host[:port]`) for a URL no client put in a queue.
            let asked = queue_key(&p.url, &p.key).unwrap_or_default();
            let in_its_host = sitemapd_parser::NormUrl::parse(&view.url)
                .is_ok_and(|u| u.host_key().as_str() == view.queue);
            if view.queue != asked && !(p.key.is_empty() && in_its_host) {
                return Err(Status::not_found(format!(
                    "not in queue {asked} (it is in queue {})",
                    view.queue
                )));
            }
            Ok(url_item(&view, &crawl))
        })
        .await?;
        Ok(Response::new(item))
    }

    type ListURLsStream = std::pin::Pin<
        Box<dyn tokio_stream::Stream<Item = Result<proto::UrlItem, Status>> + Send + 'static>,
    >;

    async fn list_ur_ls(
        &self,
        request: Request<proto::ListUrlParams>,
    ) -> Result<Response<Self::ListURLsStream>, Status> {
        let connection = request.extensions().get::<ConnectionId>().copied();
        let p = request.into_inner();
        let inner = self.inner.clone();
        let permit = inner.list_permit(connection)?;
        // Read a page at a time on the blocking pool, sent from here: a
        // client that does not read holds no thread, only this task and
        // its page, and one that takes less than a page in STALLED_LIST
        // is cut (a dump asks for 2^31 - 1 URLs in one stream). A stream
        // cut, or whose read failed, ends with that status after what it
        // holds, never as if the list were whole.
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        let (end_tx, end_rx) = tokio::sync::oneshot::channel::<Status>();
        tokio::spawn(async move {
            let _permit = permit;
            let p = Arc::new(p);
            let mut walk = ListWalk {
                place: QueuePlace::default(),
                skip: p.start as usize,
                left: if p.size == 0 {
                    DEFAULT_PAGE
                } else {
                    p.size as usize
                },
            };
            loop {
                let (inner, params) = (inner.clone(), p.clone());
                let read = blocking(move || {
                    let page = inner.list_page(&params, &mut walk)?;
                    Ok((page, walk))
                })
                .await;
                let ((page, ended), next) = match read {
                    Ok(read) => read,
                    Err(status) => {
                        let _ = end_tx.send(status);
                        return;
                    }
                };
                let taken = tokio::time::timeout(STALLED_LIST, async {
                    for item in page {
                        tx.send(Ok(item)).await.ok()?;
                    }
                    Some(())
                })
                .await;
                match taken {
                    Err(_) => {
                        let _ = end_tx.send(Status::deadline_exceeded(format!(
                            "the client took fewer than {LIST_PAGE} URLs in {} s: stream cut",
                            STALLED_LIST.as_secs()
                        )));
                        return;
                    }
                    // The client went away.
                    Ok(None) => return,
                    Ok(Some(())) if ended => return,
                    Ok(Some(())) => walk = next,
                }
            }
        });
        let end = tokio_stream::once(end_rx)
            .then(|end| async move { end.await.ok() })
            .filter_map(|status| status.map(Err));
        Ok(Response::new(Box::pin(ReceiverStream::new(rx).chain(end))))
    }

    async fn count_ur_ls(
        &self,
        request: Request<proto::CountUrlParams>,
    ) -> Result<Response<proto::Long>, Status> {
        let p = request.into_inner();
        let inner = self.inner.clone();
        let value = blocking(move || {
            let mut n = 0u64;
            let ignore_case = p.ignore_case.unwrap_or(false);
            let filter = p.filter.as_deref();
            let start = QueuePlace::default();
            inner.each_matching(&p.crawl_id, &p.key, filter, ignore_case, start, |_, _| {
                n += 1;
                true
            })?;
            Ok(n)
        })
        .await?;
        Ok(Response::new(proto::Long { value }))
    }

    async fn purge_ur_ls(
        &self,
        request: Request<proto::PurgeUrlParams>,
    ) -> Result<Response<proto::Long>, Status> {
        let p = request.into_inner();
        let inner = self.inner.clone();
        let value = blocking(move || {
            let Some(store) = inner.existing(&p.crawl_id)? else {
                return Ok(0);
            };
            let cutoff = inner.now().saturating_sub(i64::from(p.days) * 86_400);
            let cutoff = Timestamp::from_unix(cutoff);
            let queue = (!p.key.is_empty()).then_some(p.key.as_str());
            store.purge(queue, cutoff).map_err(store_status)
        })
        .await?;
        Ok(Response::new(proto::Long { value }))
    }
}
