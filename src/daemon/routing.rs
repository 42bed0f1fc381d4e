//! The HTTP API as one node of a cluster: the URLs of a completion or a
//! notification that live in another node's partitions are sent on to that
//! node's HTTP API (its member entry advertises it), and their answers
//! added to this node's.
//!
//! A request a node sends on carries [`FORWARDED`]: the node that receives
//! it writes the URLs of its own partitions and never sends one on again,
//! so a URL whose partition moved in between is answered as failed (the
//! client resends it) instead of going round.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::http::HeaderMap;
use serde_json::Value;
use sitemapd_cluster::ClusterView;
use sitemapd_scheduler::Store;
use tokio::sync::watch;

/// The header a node adds to a request it sends on to another.
pub(super) const FORWARDED: &str = "sitemapd-forwarded";

/// How long a request sent on to another node may take.
const SEND_ON: Duration = Duration::from_secs(30);
/// The largest answer read from another node: its answer names at most the
/// URLs sent, each at most a URL's bound.
const MAX_ANSWER: usize = 64 << 20;

/// The node's place in its cluster, for the HTTP API.
pub(super) struct Peers {
    /// The node's view of the cluster (who owns which partition).
    pub view: watch::Receiver<ClusterView>,
    client: reqwest::Client,
}

impl Peers {
    /// The HTTP API's peers, from the node's `view`.
    pub(super) fn new(view: watch::Receiver<ClusterView>) -> anyhow::Result<Peers> {
        let client = reqwest::Client::builder()
            .timeout(SEND_ON)
            .connect_timeout(Duration::from_secs(5))
            .no_proxy()
            .build()?;
        Ok(Peers { view, client })
    }
}

/// Where the items of a request are written.
pub(super) struct Routed<T> {
    /// By this node: the store serves their partitions.
    pub here: Vec<T>,
    /// By other nodes, by HTTP address.
    pub nodes: BTreeMap<String, Vec<T>>,
    /// By none right now (no owner, or this node was sent them by another
    /// and does not serve them): answered as failed, to resend.
    pub nowhere: Vec<T>,
}

/// Splits `items` by the node that writes each (`url` names its URL, as
/// normalised). Out of a cluster (`peers` none), all are here.
pub(super) fn route<T>(
    store: &Store,
    peers: Option<&Peers>,
    headers: &HeaderMap,
    items: Vec<T>,
    url: impl Fn(&T) -> &str,
) -> Routed<T> {
    let mut routed = Routed {
        here: Vec::new(),
        nodes: BTreeMap::new(),
        nowhere: Vec::new(),
    };
    let Some(peers) = peers else {
        routed.here = items;
        return routed;
    };
    let forwarded = headers.contains_key(FORWARDED);
    // Borrowed while the items are split (no await): the node's rounds
    // wait for it that long.
    let view = peers.view.borrow();
    for item in items {
        let partition = store.partition_of_url(url(&item));
        if store.serves_partition(partition) {
            routed.here.push(item);
        } else if let Some(addr) = view.owner_http(partition).filter(|_| !forwarded) {
            routed.nodes.entry(addr).or_default().push(item);
        } else {
            routed.nowhere.push(item);
        }
    }
    routed
}

/// POSTs `body` to `path` of the node at `addr` (its HTTP API), with
/// `token` and [`FORWARDED`]: its JSON answer, or why there is none.
pub(super) async fn send_on(
    peers: &Peers,
    addr: &str,
    path: &str,
    token: Option<&str>,
    body: &Value,
) -> Result<Value, String> {
    let mut request = peers
        .client
        .post(format!("http://{addr}{path}"))
        .header(FORWARDED, "1")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let mut answer = request.send().await.map_err(|e| e.to_string())?;
    let status = answer.status();
    let mut bytes = Vec::new();
    while let Some(chunk) = answer.chunk().await.map_err(|e| e.to_string())? {
        if bytes.len() + chunk.len() > MAX_ANSWER {
            return Err(format!("an answer over {MAX_ANSWER} bytes"));
        }
        bytes.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned();
        return Err(format!("answered {status}: {text}"));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("an answer that is not JSON: {e}"))
}
