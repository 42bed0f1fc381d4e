//! The service as one node of a cluster: what it asks of the cluster
//! ([`ClusterMap`]: the live nodes, and who owns a partition), and its
//! clients to the other nodes, for the calls it sends on (routed to a
//! partition's owner, or sent to every node and summed).
//!
//! A call a node sends on carries [`FORWARDED`]: the node that receives it
//! answers from its own partitions and never sends it on again, so a call
//! whose owner moved meanwhile fails (FAIL, UNAVAILABLE: the client
//! retries) instead of going round.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tonic::metadata::{AsciiMetadataValue, MetadataMap};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};

use super::{Inner, lock};
use crate::proto::url_frontier_client::UrlFrontierClient;

/// The gRPC metadata a node adds to a call it sends on to another.
pub const FORWARDED: &str = "sitemapd-forwarded";

/// How long a node waits for another to connect.
const CONNECT: Duration = Duration::from_secs(5);
/// How long a call sent on to another node may take.
pub(super) const PEER_CALL: Duration = Duration::from_secs(30);

/// What a node of a cluster knows of the others, as the service asks it
/// (the daemon answers it from the cluster's membership and owners).
pub trait ClusterMap: Send + Sync {
    /// The live nodes' advertised addresses (`host:port`), sorted: what
    /// ListNodes answers, the same on every node.
    fn nodes(&self) -> Vec<String>;
    /// The other live nodes' addresses: where a call with `local=false`
    /// goes besides this node.
    fn peers(&self) -> Vec<String>;
    /// The address of the node that owns `partition`, when that is another
    /// node; `None` when no node does, or this one does.
    fn owner(&self, partition: u16) -> Option<String>;
}

/// Adds [`FORWARDED`] and the token to every call to another node.
#[derive(Clone)]
pub(super) struct Forward {
    token: Option<AsciiMetadataValue>,
}

impl Interceptor for Forward {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        let metadata = request.metadata_mut();
        metadata.insert(FORWARDED, AsciiMetadataValue::from_static("1"));
        if let Some(token) = &self.token {
            metadata.insert("authorization", token.clone());
        }
        Ok(request)
    }
}

/// A client to another node.
pub(super) type PeerClient = UrlFrontierClient<InterceptedService<Channel, Forward>>;

/// The service's place in a cluster: the map, and a client per node it
/// has sent calls to (connected on first use, reconnecting by itself).
pub(super) struct Peers {
    pub(super) map: Arc<dyn ClusterMap>,
    forward: Forward,
    clients: Mutex<HashMap<String, PeerClient>>,
}

impl Peers {
    /// The service in the cluster `map`, its calls to other nodes carrying
    /// `token` (the bearer token every node asks) when set.
    pub(super) fn new(map: Arc<dyn ClusterMap>, token: Option<&str>) -> Peers {
        let token = token.and_then(|t| AsciiMetadataValue::try_from(format!("Bearer {t}")).ok());
        Peers {
            map,
            forward: Forward { token },
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// The client to the node at `addr` (`host:port`).
    pub(super) fn client(&self, addr: &str) -> Result<PeerClient, Status> {
        let mut clients = lock(&self.clients);
        if let Some(c) = clients.get(addr) {
            return Ok(c.clone());
        }
        let endpoint = Endpoint::from_shared(format!("http://{addr}"))
            .map_err(|e| Status::unavailable(format!("node {addr}: {e}")))?
            .connect_timeout(CONNECT)
            .timeout(PEER_CALL)
            .tcp_nodelay(true);
        let client =
            UrlFrontierClient::with_interceptor(endpoint.connect_lazy(), self.forward.clone())
                .max_decoding_message_size(super::MAX_MESSAGE_BYTES);
        // The map forgets nodes that left: so does the cache, once it
        // holds more clients than there are live nodes.
        if clients.len() > self.map.nodes().len() {
            clients.clear();
        }
        clients.insert(addr.to_string(), client.clone());
        Ok(client)
    }
}

/// Whether a call came from another node ([`FORWARDED`]).
pub(super) fn forwarded(metadata: &MetadataMap) -> bool {
    metadata.contains_key(FORWARDED)
}

/// A call to another node that failed, as this node answers it: the
/// client may retry (UNAVAILABLE) when the node could not be reached or
/// did not answer in time; a status the other node answered is passed on.
pub(super) fn peer_failed(addr: &str, status: Status) -> Status {
    match status.code() {
        tonic::Code::Unavailable | tonic::Code::DeadlineExceeded => {
            tracing::warn!(node = addr, error = %status, "urlfrontier: a call to another node failed");
            Status::unavailable(format!("node {addr}: {}", status.message()))
        }
        _ => status,
    }
}

/// Where a keyed call is answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Route {
    /// By this node: the store serves the partition (every partition, out
    /// of a cluster).
    Here,
    /// By the node at this address, its owner.
    Node(String),
    /// By none right now: no node owns the partition, or this node was sent
    /// the call by another and does not serve it (the client retries).
    Nowhere,
}

impl Inner {
    /// Where the calls on `partition` are answered; `forwarded`: the call
    /// came from another node, and is never sent on again.
    pub(super) fn route(&self, partition: u16, forwarded: bool) -> Route {
        let Some(peers) = self.peers.get() else {
            return Route::Here;
        };
        if self.store.serves_partition(partition) {
            return Route::Here;
        }
        if forwarded {
            return Route::Nowhere;
        }
        match peers.map.owner(partition) {
            Some(addr) => Route::Node(addr),
            None => Route::Nowhere,
        }
    }

    /// Where the calls on the URL `url` are answered (its host's
    /// partition).
    pub(super) fn route_url(&self, url: &str, forwarded: bool) -> Route {
        if self.peers.get().is_none() {
            return Route::Here;
        }
        self.route(self.store.partition_of_url(url), forwarded)
    }

    /// Where the calls on the queue `key` are answered: the partition of
    /// the host it names, normalised as a URL's host is (a queue is its
    /// host's unless the client named it otherwise).
    pub(super) fn route_key(&self, key: &str, forwarded: bool) -> Route {
        if self.peers.get().is_none() || key.is_empty() {
            return Route::Here;
        }
        let host = sitemapd_parser::NormUrl::parse(&format!("http://{key}/"))
            .map(|u| u.host_key().to_string());
        let partition = self.store.partition_of_site(host.as_deref().unwrap_or(key));
        self.route(partition, forwarded)
    }

    /// The client to the node at `addr`.
    pub(super) fn peer(&self, addr: &str) -> Result<PeerClient, Status> {
        match self.peers.get() {
            Some(peers) => peers.client(addr),
            None => Err(Status::internal("not a node of a cluster")),
        }
    }

    /// The other nodes a call asks too: every other live node when the
    /// service is in a cluster and the call is not `local` nor sent on by
    /// another node; none otherwise.
    fn fan_out(&self, local: bool, forwarded: bool) -> Vec<String> {
        match self.peers.get() {
            Some(peers) if !local && !forwarded => peers.map.peers(),
            _ => Vec::new(),
        }
    }
}

/// UNAVAILABLE for a call no node answers now.
pub(super) fn no_owner(what: &str) -> Status {
    Status::unavailable(format!(
        "no node serves the partition of {what} right now: retry"
    ))
}

/// `ask` of every other live node at once, each with a client to it and
/// its own copy of `asked`, when the service is in a cluster and the call
/// is neither `local` nor sent on by another node (a call sent on is
/// answered by its node alone, so it never goes round): their answers, or
/// the first failure.
pub(super) async fn ask_others<Req, T, Fut>(
    inner: &Inner,
    local: bool,
    forwarded: bool,
    asked: Req,
    ask: impl Fn(PeerClient, Req) -> Fut,
) -> Result<Vec<T>, Status>
where
    Req: Clone,
    T: Send + 'static,
    Fut: std::future::Future<Output = Result<T, Status>> + Send + 'static,
{
    let addrs = inner.fan_out(local, forwarded);
    let mut calls = Vec::with_capacity(addrs.len());
    for addr in addrs {
        let call = tokio::spawn(ask(inner.peer(&addr)?, asked.clone()));
        calls.push((addr, call));
    }
    let mut answers = Vec::with_capacity(calls.len());
    for (addr, call) in calls {
        let answer = call
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(|s| peer_failed(&addr, s))?;
        answers.push(answer);
    }
    Ok(answers)
}

/// A keyed call where `route` says: `None` when this node answers it,
/// the owner's answer to `call` when another node does, UNAVAILABLE when
/// none does now (`what` names the key).
pub(super) async fn routed<T, Fut>(
    inner: &Inner,
    route: Route,
    what: &str,
    call: impl FnOnce(PeerClient) -> Fut,
) -> Result<Option<T>, Status>
where
    Fut: std::future::Future<Output = Result<tonic::Response<T>, Status>>,
{
    match route {
        Route::Here => Ok(None),
        Route::Nowhere => Err(no_owner(what)),
        Route::Node(addr) => match call(inner.peer(&addr)?).await {
            Ok(answer) => Ok(Some(answer.into_inner())),
            Err(status) => Err(peer_failed(&addr, status)),
        },
    }
}

/// `here` plus every other node's count.
pub(super) fn total(here: u64, theirs: &[crate::proto::Long]) -> u64 {
    theirs.iter().fold(here, |n, l| n.saturating_add(l.value))
}
