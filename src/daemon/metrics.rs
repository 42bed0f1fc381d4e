//! The daemon's Prometheus metrics (`GET /metrics`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use sitemapd_scheduler::IngestStats;

/// A label set of one string.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct Status {
    /// HTTP status, or a word (`error`, an outcome).
    pub status: String,
}

/// An rpc of the URLFrontier service, and how it ended.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct RpcCode {
    /// The rpc (`GetURLs` …; `other` for a path that names none).
    pub rpc: String,
    /// Its gRPC status (`Ok`, `Unauthenticated` …; `Cancelled` when the
    /// response was dropped before its end).
    pub code: String,
}

/// An rpc of the URLFrontier service.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct Rpc {
    /// The rpc, as in [`RpcCode`].
    pub rpc: String,
}

/// Connections a listener closed to make room or refused for want of a
/// slot.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct Shed {
    /// `api`, `urlfrontier` or `indexnow`.
    pub listener: String,
    /// `evicted` (an idle connection closed for a new one) or `refused`.
    pub why: String,
}

/// Every metric, registered once; cheap to update from any thread.
#[derive(Debug)]
pub(super) struct Metrics {
    registry: Registry,
    /// Sitemap fetches by final HTTP status (`none`: no response).
    pub sitemap_fetches: Family<Status, Counter>,
    /// robots.txt fetches by outcome (`parsed`, `unavailable`, `unreachable`, `cached`).
    pub robots_fetches: Family<Status, Counter>,
    /// Sitemap bytes read (after decompression).
    pub bytes: Counter,
    /// Sitemap fetch latency, seconds.
    pub fetch_seconds: Histogram,
    /// URL entries ingested.
    pub urls_ingested: Counter,
    /// What ingest did with them (`new`, `updated`, `unchanged`, `duplicate`, `revived`, `retired`).
    pub ingest_urls: Family<Status, Counter>,
    /// Site walks finished.
    pub walks: Counter,
    /// URLs handed out by leases.
    pub leased: Counter,
    /// Completions by outcome.
    pub completions: Family<Status, Counter>,
    /// URLs notified through `POST /v1/notify`.
    pub notified: Counter,
    /// Due URLs (set at each scrape).
    pub queue_depth: Gauge,
    /// Sites followed (set at each scrape).
    pub sites: Gauge,
    /// Reads of store records that did not decode and were passed over,
    /// since the daemon started (set at each scrape).
    pub unreadable_records: Gauge,
    /// URLFrontier rpcs by rpc and gRPC status.
    pub rpcs: Family<RpcCode, Counter>,
    /// URLFrontier rpc time by rpc, seconds: from the request to the end of
    /// the response (a streaming rpc: its whole stream).
    pub rpc_seconds: Family<Rpc, Histogram, fn() -> Histogram>,
    /// Connections shed by listener and why.
    pub connections_shed: Family<Shed, Counter>,
    /// IndexNow requests by the status answered.
    pub indexnow_requests: Family<Status, Counter>,
    /// URLs IndexNow requests named, in the requests answered 200 or 202.
    pub indexnow_received: Counter,
    /// What became of the URLs received (`applied`: notified in the store;
    /// `duplicate`: pushed again within the window; `dropped`: their key
    /// did not verify).
    pub indexnow_urls: Family<Status, Counter>,
    /// Key verifications by result (`verified`, `rejected`, `revoked`,
    /// `unreachable`).
    pub indexnow_verifications: Family<Status, Counter>,
    /// Hosts with an IndexNow key verified now.
    pub indexnow_hosts: Gauge,
    /// In cluster mode (set at each scrape): the live members this node sees.
    pub cluster_members: Gauge,
    /// In cluster mode: the partitions this node owns now.
    pub cluster_partitions_owned: Gauge,
    /// In cluster mode: the node's heartbeat rounds that failed (NATS
    /// unreachable …) since it joined.
    pub cluster_failed_rounds: Gauge,
    /// In cluster mode: how long each append to the write log took.
    pub cluster_append_seconds: Histogram,
    /// In cluster mode: partitions this node took over (replayed, then
    /// served).
    pub cluster_takeovers: Counter,
    /// In cluster mode: write log entries replayed by those takeovers.
    pub cluster_replayed_entries: Counter,
}

impl Metrics {
    /// The registered metrics, at zero.
    pub(super) fn new() -> Self {
        let mut registry = Registry::with_prefix("sitemapd");
        let m = Metrics {
            sitemap_fetches: Family::default(),
            robots_fetches: Family::default(),
            bytes: Counter::default(),
            fetch_seconds: Histogram::new(exponential_buckets(0.005, 2.0, 16)),
            urls_ingested: Counter::default(),
            ingest_urls: Family::default(),
            walks: Counter::default(),
            leased: Counter::default(),
            completions: Family::default(),
            notified: Counter::default(),
            queue_depth: Gauge::default(),
            sites: Gauge::default(),
            unreadable_records: Gauge::default(),
            rpcs: Family::default(),
            rpc_seconds: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.000_25, 2.0, 20))
            }),
            connections_shed: Family::default(),
            indexnow_requests: Family::default(),
            indexnow_received: Counter::default(),
            indexnow_urls: Family::default(),
            indexnow_verifications: Family::default(),
            indexnow_hosts: Gauge::default(),
            cluster_members: Gauge::default(),
            cluster_partitions_owned: Gauge::default(),
            cluster_failed_rounds: Gauge::default(),
            cluster_append_seconds: Histogram::new(exponential_buckets(0.000_25, 2.0, 18)),
            cluster_takeovers: Counter::default(),
            cluster_replayed_entries: Counter::default(),
            registry: Registry::default(),
        };
        let r = &mut registry;
        r.register(
            "sitemap_fetches",
            "Sitemap fetches by final HTTP status",
            m.sitemap_fetches.clone(),
        );
        r.register(
            "robots_fetches",
            "robots.txt fetches by outcome",
            m.robots_fetches.clone(),
        );
        r.register(
            "sitemap_bytes",
            "Sitemap bytes read after decompression",
            m.bytes.clone(),
        );
        r.register(
            "sitemap_fetch_seconds",
            "Sitemap fetch and parse time, without the wait for the host's politeness gate",
            m.fetch_seconds.clone(),
        );
        r.register(
            "urls_ingested",
            "URL entries ingested",
            m.urls_ingested.clone(),
        );
        r.register(
            "ingest_urls",
            "What ingest did with the URLs it read",
            m.ingest_urls.clone(),
        );
        r.register("site_walks", "Site walks finished", m.walks.clone());
        r.register("leased_urls", "URLs handed out by leases", m.leased.clone());
        r.register(
            "completions",
            "Fetch outcomes reported, by outcome",
            m.completions.clone(),
        );
        r.register(
            "notified_urls",
            "URLs notified as changed",
            m.notified.clone(),
        );
        r.register(
            "cluster_members",
            "Live cluster members this node sees (cluster mode)",
            m.cluster_members.clone(),
        );
        r.register(
            "cluster_partitions_owned",
            "Partitions this node owns now (cluster mode)",
            m.cluster_partitions_owned.clone(),
        );
        r.register(
            "cluster_failed_rounds",
            "The node's cluster heartbeat rounds that failed since it joined (cluster mode)",
            m.cluster_failed_rounds.clone(),
        );
        r.register(
            "cluster_log_append_seconds",
            "How long each append to the cluster's write log took, replicated and on disk (cluster mode)",
            m.cluster_append_seconds.clone(),
        );
        r.register(
            "cluster_takeovers",
            "Partitions this node took over (replayed from the write log, then served) since it started (cluster mode)",
            m.cluster_takeovers.clone(),
        );
        r.register(
            "cluster_replayed_entries",
            "Write log entries this node's takeovers replayed since it started (cluster mode)",
            m.cluster_replayed_entries.clone(),
        );
        r.register(
            "queue_depth",
            "URLs due now (counted up to 100,000)",
            m.queue_depth.clone(),
        );
        r.register("sites", "Sites followed", m.sites.clone());
        r.register(
            "store_unreadable_records",
            "Reads of store records that did not decode and were passed over (stats --check names them)",
            m.unreadable_records.clone(),
        );
        r.register(
            "urlfrontier_rpcs",
            "URLFrontier rpcs by rpc and gRPC status",
            m.rpcs.clone(),
        );
        r.register(
            "urlfrontier_rpc_seconds",
            "URLFrontier rpc time, from the request to the end of the response",
            m.rpc_seconds.clone(),
        );
        r.register(
            "connections_shed",
            "Connections closed to make room for another, or refused for want of a slot",
            m.connections_shed.clone(),
        );
        r.register(
            "indexnow_requests",
            "IndexNow requests by the status answered",
            m.indexnow_requests.clone(),
        );
        r.register(
            "indexnow_received_urls",
            "URLs named by IndexNow requests answered 200 or 202",
            m.indexnow_received.clone(),
        );
        r.register(
            "indexnow_urls",
            "What became of the IndexNow URLs received (applied, duplicate, dropped)",
            m.indexnow_urls.clone(),
        );
        r.register(
            "indexnow_verifications",
            "IndexNow key verifications by result (verified, rejected, revoked, unreachable)",
            m.indexnow_verifications.clone(),
        );
        r.register(
            "indexnow_hosts",
            "Hosts with an IndexNow key verified now",
            m.indexnow_hosts.clone(),
        );
        Metrics { registry, ..m }
    }

    /// Counts an ingest session's results.
    pub(super) fn ingested(&self, stats: &IngestStats) {
        for (kind, n) in [
            ("new", stats.new),
            ("updated", stats.updated),
            ("unchanged", stats.unchanged),
            ("duplicate", stats.duplicates),
            ("revived", stats.revived),
            ("retired", stats.retired),
        ] {
            self.ingest_urls.get_or_create(&label(kind)).inc_by(n);
        }
    }

    /// The cluster gauges, from the node's latest view.
    pub(super) fn cluster(&self, view: &sitemapd_cluster::ClusterView) {
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.cluster_members.set(count(view.members.len()));
        self.cluster_partitions_owned.set(count(view.owned().len()));
        self.cluster_failed_rounds
            .set(i64::try_from(view.failed_rounds).unwrap_or(i64::MAX));
    }

    /// Records an rpc of the URLFrontier service that ended with `code`
    /// after `seconds`.
    pub(super) fn rpc_ended(&self, rpc: &str, code: String, seconds: f64) {
        let rpc = rpc.to_string();
        self.rpc_seconds
            .get_or_create(&Rpc { rpc: rpc.clone() })
            .observe(seconds);
        self.rpcs.get_or_create(&RpcCode { rpc, code }).inc();
    }

    /// The text exposition format.
    pub(super) fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// A label.
pub(super) fn label(status: impl Into<String>) -> Status {
    Status {
        status: status.into(),
    }
}
