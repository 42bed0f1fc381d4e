//! Cluster mode (docs/cluster.md): the daemon joins the cluster, its store
//! appends every write to the partitions' replicated log, and it serves the
//! partitions it owns only: a partition it comes to own is taken over
//! (the log replayed into the store, the ex-owner fenced out) before its
//! URLs are leased; one it stops owning is no longer served or written.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use sitemapd_cluster::{ClusterNode, ClusterView, JetStreamLog};
use sitemapd_scheduler::{Clock, Store};
use tokio::sync::{Notify, watch};
use tracing::{info, warn};

use sitemapd_urlfrontier::service::ClusterMap;

use super::metrics::Metrics;
use crate::settings::ClusterSettings;

/// How often ownership is looked at besides the node's own changes.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// The daemon's part in a cluster.
pub(super) struct Cluster {
    node: ClusterNode,
    log: Arc<JetStreamLog>,
}

impl Cluster {
    /// Joins the cluster the settings name, if any: opens the write log,
    /// has `store` append to it and serve no partition until it holds one,
    /// then joins. `frontier` is the URLFrontier service's address, the one
    /// advertised by default; `http` the HTTP API's, advertised on the
    /// advertised host.
    pub(super) fn start(
        runtime: &tokio::runtime::Runtime,
        settings: &ClusterSettings,
        frontier: Option<SocketAddr>,
        http: SocketAddr,
        store: &Arc<Store>,
    ) -> Result<Option<Cluster>> {
        let partitions =
            u16::try_from(store.partitions()).context("the store's partition count")?;
        let Some(mut config) = settings.config(frontier, partitions)? else {
            return Ok(None);
        };
        config.advertise_http = Some(http_address(&config.advertise, http));
        let servers = config.servers.join(",");
        let log = JetStreamLog::open(
            &config.servers,
            &config.node_id,
            partitions,
            config.replicas,
        )
        .with_context(|| format!("cannot open the cluster's write log on {servers}"))?;
        let log = Arc::new(log);
        for p in 0..partitions {
            store.serve_partition(p, false);
        }
        store.log_writes_to(log.clone());
        let node = runtime
            .block_on(ClusterNode::join(config))
            .with_context(|| format!("cannot join the cluster on {servers}"))?;
        let view = node.view();
        info!(
            node = %view.node_id,
            members = view.members.len(),
            owned = view.owned().len(),
            "cluster mode: joined through {servers}"
        );
        Ok(Some(Cluster { node, log }))
    }

    /// The node's view, as it changes.
    pub(super) fn view(&self) -> watch::Receiver<ClusterView> {
        self.node.subscribe()
    }

    /// The cluster as the URLFrontier service asks it: the live nodes and
    /// the partitions' owners, from the node's latest view.
    pub(super) fn map(&self) -> Arc<dyn ClusterMap> {
        Arc::new(ViewMap(self.view()))
    }

    /// Takes over the partitions the node comes to own and gives up the
    /// others, until `stop`.
    /// The `seeds` the settings name are added once their partition is
    /// taken over (a site's keys are its partition's to write). `wake` is
    /// the refresh loop's: a partition taken over has sites to walk.
    /// `metrics` counts the takeovers and times the log's appends.
    pub(super) fn follow(
        &self,
        store: Arc<Store>,
        seeds: Vec<String>,
        clock: Arc<dyn Clock>,
        wake: Arc<Notify>,
        metrics: Arc<Metrics>,
        stop: watch::Receiver<bool>,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let appends = metrics.cluster_append_seconds.clone();
        self.log
            .observe_appends(move |took| appends.observe(took.as_secs_f64()));
        let taking = TakeOvers {
            log: self.log.clone(),
            store,
            seeds: Arc::new(seeds),
            clock,
            view: self.view(),
            metrics,
        };
        follow(self.view(), taking, wake, stop)
    }

    /// Leaves: serves no partition, releases them, leaves the membership.
    pub(super) fn leave(self, runtime: &tokio::runtime::Runtime, store: &Store) {
        for p in 0..store.partitions() as u16 {
            store.serve_partition(p, false);
            self.log.release(p);
        }
        runtime.block_on(self.node.leave());
    }
}

/// What a takeover needs.
#[derive(Clone)]
struct TakeOvers {
    log: Arc<JetStreamLog>,
    store: Arc<Store>,
    seeds: Arc<Vec<String>>,
    clock: Arc<dyn Clock>,
    view: watch::Receiver<ClusterView>,
    metrics: Arc<Metrics>,
}

impl TakeOvers {
    /// Takes `partition` over (blocking): replays its log, adds the
    /// settings' sites it holds, then serves it.
    fn take_over(&self, partition: u16) -> Result<u64> {
        self.store.serve_partition(partition, false);
        let owns = || self.view.borrow().owns(partition);
        anyhow::ensure!(owns(), "no longer this node's");
        let taken = self.log.take_over_while(partition, &self.store, owns)?;
        for seed in self.seeds.iter() {
            if self.store.partition_of_site(seed) != partition {
                continue;
            }
            if let Err(e) = self.store.add_site(seed, self.clock.now()) {
                // Not served without it: the next look tries it all again.
                self.log.release(partition);
                return Err(e).with_context(|| format!("cannot add the site {seed}"));
            }
        }
        // Ownership may have moved during a long replay: then the new
        // owner takes it over in turn, and this node lets it go.
        if !owns() {
            self.log.release(partition);
            anyhow::bail!("ownership moved during the takeover");
        }
        self.store.serve_partition(partition, true);
        Ok(taken.applied)
    }

    /// Takes over each partition the node owns and does not hold, and
    /// gives up each it holds or serves and does not own: whether it took
    /// one over (the refresh loop then has sites to walk).
    fn pass(&self) -> bool {
        let mut took = false;
        for p in 0..self.store.partitions() as u16 {
            // Read again for each partition: a takeover before may have
            // taken long.
            let own = self.view.borrow().owns(p);
            let holds = self.log.holds(p);
            if own && !holds {
                match self.take_over(p) {
                    Ok(applied) => {
                        self.metrics.cluster_takeovers.inc();
                        self.metrics.cluster_replayed_entries.inc_by(applied);
                        info!(
                            partition = p,
                            replayed = applied,
                            "partition taken over: served"
                        );
                        took = true;
                    }
                    Err(e) => {
                        warn!(partition = p, error = %format!("{e:#}"), "cannot take the partition over; trying again")
                    }
                }
            } else if !own && (holds || self.store.serves_partition(p)) {
                self.store.serve_partition(p, false);
                self.log.release(p);
                info!(partition = p, "partition given up: no longer served");
            }
        }
        took
    }
}

/// [`Cluster::follow`]: a pass over the partitions at every change of the
/// view (and every [`LOOK_EVERY`]), on a blocking thread (a takeover
/// replays; the log's state is behind a lock an append holds).
async fn follow(
    mut view: watch::Receiver<ClusterView>,
    taking: TakeOvers,
    wake: Arc<Notify>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        view.mark_unchanged();
        let pass = taking.clone();
        match tokio::task::spawn_blocking(move || pass.pass()).await {
            Ok(true) => wake.notify_one(),
            Ok(false) => {}
            Err(e) => warn!(error = %e, "a pass over the partitions stopped"),
        }
        tokio::select! {
            _ = view.changed() => {}
            _ = tokio::time::sleep(LOOK_EVERY) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// The HTTP API's address other nodes use: the advertised (URLFrontier)
/// address's host, and the port the HTTP API listens on.
fn http_address(advertise: &str, http: SocketAddr) -> String {
    let host = advertise
        .rsplit_once(':')
        .map_or(advertise, |(host, _)| host);
    format!("{host}:{}", http.port())
}

/// [`ClusterMap`] on the node's view as it changes.
struct ViewMap(watch::Receiver<ClusterView>);

impl ClusterMap for ViewMap {
    fn nodes(&self) -> Vec<String> {
        self.0.borrow().nodes()
    }

    fn peers(&self) -> Vec<String> {
        self.0.borrow().peers()
    }

    fn owner(&self, partition: u16) -> Option<String> {
        self.0.borrow().owner_address(partition)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_http_api_is_advertised_on_the_advertised_host() {
        let http: SocketAddr = "0.0.0.0:8711".parse().unwrap();
        assert_eq!(
            http_address("crawl-3.example:7071", http),
            "crawl-3.example:8711"
        );
        assert_eq!(http_address("[::1]:7071", http), "[::1]:8711");
    }
}
