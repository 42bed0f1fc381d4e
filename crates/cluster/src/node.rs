//! A node in the cluster: joins (announces itself, checks the cluster's
//! partition count), then every round heartbeats its member entry, reads
//! who is alive and who owns what, and claims, renews or releases
//! partitions ([`crate::plan`]). What it sees is published as a
//! [`ClusterView`].

use std::time::{Duration, Instant};

use async_nats::jetstream;
use futures_util::StreamExt;
use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::buckets::{Buckets, Member, owner_key};
use crate::plan::{Owner, Step, plan};
use crate::{ClusterConfig, ClusterError};

/// Ownership writes in flight at once (each to its own key).
const WRITES: usize = 32;
/// How long joining retries while the cluster's buckets are not ready.
const SETTLE: Duration = Duration::from_secs(30);

/// What a node knows of the cluster after its latest round.
#[derive(Debug, Clone)]
pub struct ClusterView {
    /// This node's id.
    pub node_id: String,
    /// The live members, sorted by id (this node among them).
    pub members: Vec<Member>,
    /// Each partition's owner as last read (and as this node's own writes
    /// changed it since); `None` when free.
    pub owners: Vec<Option<String>>,
    /// Until when this node may act as each partition's owner: its last
    /// successful claim or renewal, sent at that instant, plus the lease.
    owned_until: Vec<Option<Instant>>,
    /// Rounds completed, and rounds that failed (NATS unreachable, …).
    pub rounds: u64,
    /// Rounds that failed.
    pub failed_rounds: u64,
}

impl ClusterView {
    /// The live members' advertised addresses, sorted and distinct: what
    /// ListNodes answers, the same on every node that sees the same members.
    pub fn nodes(&self) -> Vec<String> {
        let mut nodes: Vec<String> = self.members.iter().map(|m| m.advertise.clone()).collect();
        nodes.sort();
        nodes.dedup();
        nodes
    }

    /// The other live members' advertised addresses, sorted and distinct
    /// (not this node's own, even when a stale member names it).
    pub fn peers(&self) -> Vec<String> {
        let own = self
            .members
            .iter()
            .find(|m| m.id == self.node_id)
            .map(|m| m.advertise.as_str());
        let mut peers = self.nodes();
        peers.retain(|addr| Some(addr.as_str()) != own);
        peers
    }

    /// The advertised address of `partition`'s owner when that is another
    /// live member; `None` when it is free, this node's, or its owner's
    /// membership lapsed.
    pub fn owner_address(&self, partition: u16) -> Option<String> {
        self.other_owner(partition).map(|m| m.advertise.clone())
    }

    /// The HTTP API address of `partition`'s owner, as [`ClusterView::owner_address`]
    /// (`None` too when the owner advertises none).
    pub fn owner_http(&self, partition: u16) -> Option<String> {
        self.other_owner(partition)?.http.clone()
    }

    /// `partition`'s owner when that is another live member.
    fn other_owner(&self, partition: u16) -> Option<&Member> {
        let owner = self.owners.get(usize::from(partition))?.as_deref()?;
        if owner == self.node_id {
            return None;
        }
        self.members.iter().find(|m| m.id == owner)
    }

    /// Whether this node owns `partition` now: it claimed or renewed it
    /// less than a lease ago (by its own clock, counted from before the
    /// write was sent, so never longer than the bucket keeps the entry).
    pub fn owns(&self, partition: u16) -> bool {
        self.owned_until
            .get(usize::from(partition))
            .copied()
            .flatten()
            .is_some_and(|until| Instant::now() < until)
    }

    /// The partitions this node owns now.
    pub fn owned(&self) -> Vec<u16> {
        (0..self.owners.len() as u16)
            .filter(|&p| self.owns(p))
            .collect()
    }
}

/// A node's membership of the cluster, running on the tokio runtime it
/// joined from. Dropping it stops its heartbeat without releasing anything,
/// as a crash does; [`ClusterNode::leave`] leaves cleanly.
pub struct ClusterNode {
    view: watch::Receiver<ClusterView>,
    stop: watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl ClusterNode {
    /// Joins the cluster on `config.servers`: connects, opens (or creates)
    /// the buckets, checks that the cluster's partition count is this
    /// node's, that no other live member has this id, and runs a first
    /// round before returning.
    pub async fn join(config: ClusterConfig) -> Result<ClusterNode, ClusterError> {
        config.validate()?;
        let name = format!("sitemapd-{}", config.node_id);
        let js = crate::connect::jetstream(&config.servers, &name).await?;
        // A bucket just made by another node may not answer on every server
        // at once ("no responders", "no stream found"): retried a while.
        let started = Instant::now();
        let node = loop {
            match Node::start(&js, &config).await {
                Err(ClusterError::JetStream { what, message }) if started.elapsed() < SETTLE => {
                    debug!(%what, %message, "cluster not ready yet; retrying");
                    tokio::time::sleep(SETTLE / 60).await;
                }
                other => break other?,
            }
        };
        info!(
            node = %config.node_id,
            members = node.view.members.len(),
            owned = node.view.owned().len(),
            "joined the cluster"
        );
        let (view_tx, view) = watch::channel(node.view.clone());
        let (stop, stop_rx) = watch::channel(false);
        let task = tokio::spawn(node.run(config.tick(), view_tx, stop_rx));
        Ok(ClusterNode {
            view,
            stop,
            task: Some(task),
        })
    }

    /// The latest view.
    pub fn view(&self) -> ClusterView {
        self.view.borrow().clone()
    }

    /// A receiver of every new view.
    pub fn subscribe(&self) -> watch::Receiver<ClusterView> {
        self.view.clone()
    }

    /// Leaves the cluster: stops acting as owner, releases every partition
    /// it owns (their targets claim them within a round) and removes its
    /// member entry.
    pub async fn leave(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ClusterNode {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// The node's own state, owned by its task.
struct Node {
    buckets: Buckets,
    me: Member,
    lease: Duration,
    view: ClusterView,
}

impl Node {
    /// Opens the buckets, checks this node against the cluster, and runs a
    /// first round.
    async fn start(js: &jetstream::Context, config: &ClusterConfig) -> Result<Node, ClusterError> {
        let buckets = Buckets::open(js, config.replicas, config.lease).await?;
        let cluster = buckets.settle_partitions(config.partitions).await?;
        if cluster != config.partitions {
            return Err(ClusterError::Partitions {
                cluster,
                store: config.partitions,
            });
        }
        let me = Member {
            id: config.node_id.clone(),
            advertise: config.advertise.clone(),
            http: config.advertise_http.clone(),
        };
        if let Some(other) = buckets
            .members()
            .await?
            .into_iter()
            .find(|m| m.id == me.id && m.advertise != me.advertise)
        {
            return Err(ClusterError::NodeIdTaken(me.id, other.advertise));
        }
        let partitions = usize::from(config.partitions);
        let mut node = Node {
            buckets,
            me,
            lease: config.lease,
            view: ClusterView {
                node_id: config.node_id.clone(),
                members: Vec::new(),
                owners: vec![None; partitions],
                owned_until: vec![None; partitions],
                rounds: 0,
                failed_rounds: 0,
            },
        };
        node.round().await?;
        Ok(node)
    }

    /// Rounds every `tick` until stopped; then leaves.
    async fn run(
        mut self,
        tick: Duration,
        view: watch::Sender<ClusterView>,
        mut stop: watch::Receiver<bool>,
    ) {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(tick) => {}
                _ = stop.wait_for(|s| *s) => break,
            }
            if let Err(e) = self.round().await {
                self.view.failed_rounds += 1;
                warn!(error = %e, "cluster round failed; owned partitions lapse a lease after their last renewal");
            }
            view.send_replace(self.view.clone());
        }
        self.leave().await;
        view.send_replace(self.view.clone());
    }

    /// One round: heartbeat, read, plan, write.
    async fn round(&mut self) -> Result<(), ClusterError> {
        self.buckets.announce(&self.me).await?;
        let members = self.buckets.members().await?;
        let owners = self.buckets.owners(self.view.owners.len() as u16).await?;
        let ids: Vec<&str> = members.iter().map(|m| m.id.as_str()).collect();
        let steps = plan(&self.me.id, &ids, &owners);
        for (p, owner) in owners.iter().enumerate() {
            self.view.owners[p] = match owner {
                Owner::Free => None,
                Owner::Node { node, .. } => Some(node.clone()),
            };
            if self.view.owners[p].as_deref() != Some(self.me.id.as_str()) {
                self.view.owned_until[p] = None;
            }
        }
        for step in &steps {
            // A partition being given up stops being served before its
            // entry goes.
            if let Step::Release(p, _) = step {
                self.view.owned_until[usize::from(*p)] = None;
            }
        }
        let buckets = &self.buckets;
        let me = self.me.id.clone();
        let outcomes: Vec<(Step, Instant, Result<u64, String>)> = futures_util::stream::iter(steps)
            .map(|step| {
                let me = me.clone();
                async move {
                    let sent = Instant::now();
                    let outcome = write(buckets, &me, &step).await;
                    (step, sent, outcome)
                }
            })
            .buffer_unordered(WRITES)
            .collect()
            .await;
        for (step, sent, outcome) in outcomes {
            let (p, kept) = match step {
                Step::Claim(p) | Step::Renew(p, _) => (p, true),
                Step::Release(p, _) => (p, false),
            };
            let i = usize::from(p);
            match outcome {
                Ok(_) if kept => {
                    self.view.owners[i] = Some(me.clone());
                    self.view.owned_until[i] = Some(sent + self.lease);
                }
                Ok(_) => self.view.owners[i] = None,
                Err(e) => debug!(partition = p, ?step, error = %e, "ownership write refused"),
            }
        }
        self.view.members = members;
        if !self.view.members.contains(&self.me) {
            self.view.members.push(self.me.clone());
            self.view.members.sort();
        }
        self.view.rounds += 1;
        Ok(())
    }

    /// Leaves: releases what it owns, removes its member entry.
    async fn leave(&mut self) {
        let owned: Vec<u16> = self.view.owned();
        for p in &owned {
            self.view.owned_until[usize::from(*p)] = None;
        }
        for p in owned {
            if let Err(e) = self.buckets.owners.purge(owner_key(p)).await {
                warn!(partition = p, error = %e, "could not release a partition; it lapses a lease after its last renewal");
            }
            self.view.owners[usize::from(p)] = None;
        }
        if let Err(e) = self.buckets.members.purge(&self.me.id).await {
            warn!(error = %e, "could not remove this node's member entry; it lapses a lease after its last heartbeat");
        }
        self.view.members.retain(|m| m.id != self.me.id);
        info!(node = %self.me.id, "left the cluster");
    }
}

/// Runs `step` against the owners bucket: the entry's new revision.
async fn write(buckets: &Buckets, me: &str, step: &Step) -> Result<u64, String> {
    let owners = &buckets.owners;
    let value = || bytes::Bytes::copy_from_slice(me.as_bytes());
    match *step {
        Step::Claim(p) => owners
            .create(owner_key(p), value())
            .await
            .map_err(|e| e.to_string()),
        Step::Renew(p, revision) => owners
            .update(owner_key(p), value(), revision)
            .await
            .map_err(|e| e.to_string()),
        Step::Release(p, revision) => owners
            .purge_expect_revision(owner_key(p), Some(revision))
            .await
            .map(|()| 0)
            .map_err(|e| e.to_string()),
    }
}
