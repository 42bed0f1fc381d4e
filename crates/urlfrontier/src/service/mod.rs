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
//!   queues at most
//!   ([`LeaseRequest::max_queues`](sitemapd_scheduler::LeaseRequest::max_queues))
//!   in the queue order, each host no faster than its politeness delay
//!   lets a crawler fetch at once
//!   ([`Politeness::Now`](sitemapd_scheduler::Politeness::Now)), with the
//!   protocol's per-queue rules (blocks,
//!   delays, crawl limits, in-transit URLs) as its admit rule. Those rules
//!   live in memory, as in the reference service: a restart forgets them
//!   (the URLs and their leases stay).
//! - PutURLs and PutDiscovered write through [`Store::put_known`] and
//!   [`Store::discover`].
//!
//! Every store call runs on tokio's blocking pool: a slow disk never
//! stalls the runtime.
//!
//! One module per job: `convert` reads the protocol's messages into the
//! store's types and back, `rules` keeps the per-queue rules,
//! `get` serves GetURLs under them, `put` writes the put streams, `list`
//! pages through a crawl (ListURLs, CountURLs, ListQueues), `crawls` opens
//! and deletes crawls and queues, and `stats` reports.

mod convert;
mod crawls;
mod get;
mod list;
mod peers;
mod put;
mod rules;
mod stats;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use sitemapd_scheduler::{Clock, Store, SystemClock};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::proto::{self, url_frontier_server::UrlFrontier};
use crate::{DEFAULT_CRAWL, crawl_id};
use convert::check_delay;
use peers::{ask_others, forwarded, routed};

pub use convert::{
    MAX_DELAY_SECS, MAX_REFETCH_DATE, REDIRECT_KEY, SIGNATURE_KEY, STATUS_KEY, completion_of,
};
pub use crawls::MAX_CRAWLS;
pub use get::{DEFAULT_IN_TRANSIT, MAX_URLS_PER_CALL};
pub use list::{LIST_PAGE, MAX_LIST_STREAMS, MAX_LIST_STREAMS_PER_CONNECTION, STALLED_LIST};
pub use peers::{ClusterMap, FORWARDED};
pub use put::{IDLE_STREAM, PUT_CHUNK, PUT_CHUNK_BYTES, PUT_WAIT};
pub use rules::DEFAULT_QUEUE_DELAY;

/// `size` of ListQueues and ListURLs when the client gives 0.
pub const DEFAULT_PAGE: usize = 100;

/// The largest request message accepted, bytes.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// The connection a call came on, as the server's transport puts it in
/// each request's extensions: ListURLs streams are capped per connection
/// ([`MAX_LIST_STREAMS_PER_CONNECTION`]) as well as in all. Calls without
/// one are under the cap in all only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnectionId(pub u64);

/// What SetLogLevel calls: a logger (package) name and a level (`trace`
/// … `error`).
pub type LogLevelHook = Arc<dyn Fn(&str, &str) -> Result<(), String> + Send + Sync>;

/// The URLFrontier service on a store. Cheap to clone.
#[derive(Clone)]
pub struct Frontier {
    inner: Arc<Inner>,
}

/// What every rpc shares.
struct Inner {
    /// The store the sitemaps feed: crawl `DEFAULT`.
    store: Arc<Store>,
    /// The other crawls opened so far.
    crawls: Mutex<HashMap<String, Arc<Store>>>,
    /// Per crawl and queue: the protocol's rules.
    rules: Mutex<rules::Rules>,
    default_delay: AtomicU32,
    active: AtomicBool,
    node: String,
    /// The service's cluster, when it is a node of one
    /// ([`Frontier::join_cluster`]).
    peers: std::sync::OnceLock<peers::Peers>,
    log_level: Option<LogLevelHook>,
    /// When `rules` was last pruned of what no longer holds anything.
    pruned: AtomicI64,
    /// The ListURLs streams open, under their caps.
    list_streams: list::ListCaps,
    /// Where "now" comes from for every rule and store call.
    clock: Arc<dyn Clock>,
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
                peers: std::sync::OnceLock::new(),
                log_level,
                pruned: AtomicI64::new(0),
                list_streams: list::ListCaps::default(),
                clock,
            }),
        }
    }

    /// Makes the service one node of the cluster `map`: ListNodes answers
    /// the cluster's live nodes; the calls on URLs of a partition the store
    /// does not serve (PutURLs and PutDiscovered items, GetURLStatus) and
    /// ListURLs of a queue go to the partition's owner, with `token` (the
    /// bearer token every node asks) when set; the per-queue controls,
    /// GetStats, CountURLs, ListCrawls, DeleteCrawl and PurgeURLs (with
    /// `local=false`, the protocol's default) ask every node, and add up
    /// the answers. Set once: a second call is ignored.
    pub fn join_cluster(&self, map: Arc<dyn ClusterMap>, token: Option<&str>) {
        let _ = self.inner.peers.set(peers::Peers::new(map, token));
    }

    /// The tonic service, with the protocol's message size bound.
    pub fn into_server(self) -> proto::url_frontier_server::UrlFrontierServer<Frontier> {
        proto::url_frontier_server::UrlFrontierServer::new(self)
            .max_decoding_message_size(MAX_MESSAGE_BYTES)
    }
}

impl Inner {
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

impl Frontier {
    /// `f` on the service's state, on the blocking pool.
    async fn on_store<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Inner) -> Result<T, Status> + Send + 'static,
    ) -> Result<T, Status> {
        let inner = self.inner.clone();
        blocking(move || f(&inner)).await
    }
}

type Stream<T> = ReceiverStream<Result<T, Status>>;

#[tonic::async_trait]
impl UrlFrontier for Frontier {
    async fn list_nodes(
        &self,
        _: Request<proto::Empty>,
    ) -> Result<Response<proto::StringList>, Status> {
        let values = match self.inner.peers.get() {
            Some(peers) => peers.map.nodes(),
            None => vec![self.inner.node.clone()],
        };
        Ok(Response::new(proto::StringList { values }))
    }

    async fn list_crawls(
        &self,
        request: Request<proto::Local>,
    ) -> Result<Response<proto::StringList>, Status> {
        let forwarded = forwarded(request.metadata());
        let theirs = ask_others(
            &self.inner,
            request.get_ref().local,
            forwarded,
            (),
            |mut c, ()| async move {
                Ok(c.list_crawls(proto::Local { local: true })
                    .await?
                    .into_inner())
            },
        )
        .await?;
        let mut values = self.on_store(move |inner| inner.crawls_in_use()).await?;
        if !theirs.is_empty() {
            // The union, in the one order: DEFAULT first, then by name.
            values.extend(theirs.into_iter().flat_map(|l| l.values));
            values.sort_by(|a, b| (a != DEFAULT_CRAWL, a).cmp(&(b != DEFAULT_CRAWL, b)));
            values.dedup();
        }
        Ok(Response::new(proto::StringList { values }))
    }

    async fn delete_crawl(
        &self,
        request: Request<proto::DeleteCrawlMessage>,
    ) -> Result<Response<proto::Long>, Status> {
        let forwarded = forwarded(request.metadata());
        let p = request.into_inner();
        let crawl = crawl_id(&p.value).to_string();
        let theirs = ask_others(
            &self.inner,
            p.local,
            forwarded,
            p.clone(),
            |mut c, asked| async move { Ok(c.delete_crawl(asked).await?.into_inner()) },
        )
        .await?;
        let value = self
            .on_store(move |inner| inner.delete_crawl(&crawl))
            .await?;
        Ok(Response::new(proto::Long {
            value: peers::total(value, &theirs),
        }))
    }

    async fn list_queues(
        &self,
        request: Request<proto::Pagination>,
    ) -> Result<Response<proto::QueueList>, Status> {
        let p = request.into_inner();
        let crawl = crawl_id(&p.crawl_id).to_string();
        let (start, reply_crawl) = (p.start, crawl.clone());
        let values = self
            .on_store(move |inner| inner.queue_page(&crawl, &p))
            .await?;
        Ok(Response::new(proto::QueueList {
            size: u32::try_from(values.len()).unwrap_or(u32::MAX),
            values,
            total: 0,
            start,
            crawl_id: reply_crawl,
        }))
    }

    type GetURLsStream = tokio_stream::Iter<std::vec::IntoIter<Result<proto::UrlInfo, Status>>>;

    async fn get_ur_ls(
        &self,
        request: Request<proto::GetParams>,
    ) -> Result<Response<Self::GetURLsStream>, Status> {
        let p = request.into_inner();
        let urls = self.on_store(move |inner| inner.get_urls(p)).await?;
        let urls: Vec<_> = urls.into_iter().map(Ok).collect();
        Ok(Response::new(tokio_stream::iter(urls)))
    }

    type PutURLsStream = Stream<proto::AckMessage>;

    async fn put_ur_ls(
        &self,
        request: Request<Streaming<proto::UrlItem>>,
    ) -> Result<Response<Self::PutURLsStream>, Status> {
        let forwarded = forwarded(request.metadata());
        let inbound = request.into_inner();
        Ok(Response::new(put::put_urls(
            self.inner.clone(),
            inbound,
            forwarded,
        )))
    }

    type PutDiscoveredStream = Stream<proto::BatchAck>;

    async fn put_discovered(
        &self,
        request: Request<Streaming<proto::DiscoveredBatch>>,
    ) -> Result<Response<Self::PutDiscoveredStream>, Status> {
        let forwarded = forwarded(request.metadata());
        let inbound = request.into_inner();
        Ok(Response::new(put::put_discovered(
            self.inner.clone(),
            inbound,
            forwarded,
        )))
    }

    async fn get_stats(
        &self,
        request: Request<proto::QueueWithinCrawlParams>,
    ) -> Result<Response<proto::Stats>, Status> {
        let forwarded = forwarded(request.metadata());
        let p = request.into_inner();
        let theirs = ask_others(
            &self.inner,
            p.local,
            forwarded,
            p.clone(),
            |mut c, asked| async move { Ok(c.get_stats(asked).await?.into_inner()) },
        )
        .await?;
        let mut stats = self
            .on_store(move |inner| inner.stats(&p.key, &p.crawl_id))
            .await?;
        for s in theirs {
            stats::add(&mut stats, s);
        }
        Ok(Response::new(stats))
    }

    async fn delete_queue(
        &self,
        request: Request<proto::QueueWithinCrawlParams>,
    ) -> Result<Response<proto::Long>, Status> {
        let forwarded = forwarded(request.metadata());
        let p = request.into_inner();
        let theirs = ask_others(
            &self.inner,
            p.local,
            forwarded,
            p.clone(),
            |mut c, asked| async move { Ok(c.delete_queue(asked).await?.into_inner()) },
        )
        .await?;
        let value = self
            .on_store(move |inner| inner.delete_queue(&p.crawl_id, &p.key))
            .await?;
        Ok(Response::new(proto::Long {
            value: peers::total(value, &theirs),
        }))
    }

    async fn block_queue_until(
        &self,
        request: Request<proto::BlockQueueParams>,
    ) -> Result<Response<proto::Empty>, Status> {
        let forwarded = forwarded(request.metadata());
        let p = request.into_inner();
        ask_others(
            &self.inner,
            p.local,
            forwarded,
            p.clone(),
            |mut c, asked| async move { Ok(c.block_queue_until(asked).await?.into_inner()) },
        )
        .await?;
        self.on_store(move |inner| {
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
        let forwarded = forwarded(request.metadata());
        let p = request.into_inner();
        check_delay(p.delay_requestable)?;
        ask_others(
            &self.inner,
            p.local,
            forwarded,
            p.clone(),
            |mut c, asked| async move { Ok(c.set_delay(asked).await?.into_inner()) },
        )
        .await?;
        if p.key.is_empty() {
            self.inner
                .default_delay
                .store(p.delay_requestable, Ordering::SeqCst);
            return Ok(Response::new(proto::Empty {}));
        }
        self.on_store(move |inner| {
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
        let forwarded = forwarded(request.metadata());
        let p = request.into_inner();
        // Whether each other node holds the queue (it answers UNKNOWN when
        // it does not).
        let theirs = ask_others(
            &self.inner,
            p.local,
            forwarded,
            p.clone(),
            |mut c, asked| async move {
                match c.set_crawl_limit(asked).await {
                    Ok(_) => Ok(true),
                    Err(s) if s.code() == tonic::Code::Unknown => Ok(false),
                    Err(s) => Err(s),
                }
            },
        )
        .await?;
        let key = p.key.clone();
        let found = self
            .on_store(move |inner| inner.with_rules(&p.crawl_id, &p.key, |r| r.limit = p.limit))
            .await?;
        if found.is_some() || theirs.contains(&true) {
            Ok(Response::new(proto::Empty {}))
        } else {
            Err(Status::unknown(format!("no queue {key}")))
        }
    }

    async fn get_url_status(
        &self,
        request: Request<proto::UrlStatusRequest>,
    ) -> Result<Response<proto::UrlItem>, Status> {
        let forwarded = forwarded(request.metadata());
        let p = request.into_inner();
        if crate::queue_key(&p.url, &p.key).is_err() {
            return Err(Status::invalid_argument("no queue key for this URL"));
        }
        let route = self.inner.route_url(&p.url, forwarded);
        if let Some(item) = routed(&self.inner, route, &p.url, |mut c| {
            let p = p.clone();
            async move { c.get_url_status(p).await }
        })
        .await?
        {
            return Ok(Response::new(item));
        }
        let item = self.on_store(move |inner| inner.url_status(&p)).await?;
        Ok(Response::new(item))
    }

    type ListURLsStream = list::ListStream;

    async fn list_ur_ls(
        &self,
        request: Request<proto::ListUrlParams>,
    ) -> Result<Response<Self::ListURLsStream>, Status> {
        let connection = request.extensions().get::<ConnectionId>().copied();
        let forwarded = forwarded(request.metadata());
        let p = request.into_inner();
        let stream = match self.inner.route_key(&p.key, forwarded) {
            peers::Route::Here => list::list_urls(self.inner.clone(), p, connection)?,
            peers::Route::Node(addr) => {
                list::list_urls_of(self.inner.clone(), &addr, p, connection).await?
            }
            peers::Route::Nowhere => return Err(peers::no_owner(&p.key)),
        };
        Ok(Response::new(stream))
    }

    async fn count_ur_ls(
        &self,
        request: Request<proto::CountUrlParams>,
    ) -> Result<Response<proto::Long>, Status> {
        let forwarded = forwarded(request.metadata());
        let p = request.into_inner();
        let theirs = ask_others(
            &self.inner,
            p.local.unwrap_or(false),
            forwarded,
            p.clone(),
            |mut c, asked| async move { Ok(c.count_ur_ls(asked).await?.into_inner()) },
        )
        .await?;
        let value = self.on_store(move |inner| inner.count(&p)).await?;
        Ok(Response::new(proto::Long {
            value: peers::total(value, &theirs),
        }))
    }

    async fn purge_ur_ls(
        &self,
        request: Request<proto::PurgeUrlParams>,
    ) -> Result<Response<proto::Long>, Status> {
        let forwarded = forwarded(request.metadata());
        let p = request.into_inner();
        // The protocol gives PurgeURLs no `local`: every node purges its own
        // partitions.
        let theirs = ask_others(
            &self.inner,
            false,
            forwarded,
            p.clone(),
            |mut c, asked| async move { Ok(c.purge_ur_ls(asked).await?.into_inner()) },
        )
        .await?;
        let value = self
            .on_store(move |inner| inner.purge(&p.crawl_id, &p.key, p.days))
            .await?;
        Ok(Response::new(proto::Long {
            value: peers::total(value, &theirs),
        }))
    }
}
