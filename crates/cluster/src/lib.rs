//! sitemapd's cluster layer on NATS JetStream: which nodes are alive, and
//! which node owns each partition of the store.
//!
//! Nodes join through a few NATS servers. Each heartbeats an entry in a
//! key-value bucket that lapses a lease after its last heartbeat; the live
//! entries are the members. A partition's owner is chosen by rendezvous
//! hashing over the live members, and holds it by compare-and-set on an
//! entry of its own, renewed every round: a join or a leave moves about
//! P/N partitions, and a dead node's partitions are claimed about a lease
//! after its last heartbeat.
//!
//! ```no_run
//! # async fn run() -> Result<(), sitemapd_cluster::ClusterError> {
//! use sitemapd_cluster::{ClusterConfig, ClusterNode};
//!
//! let config = ClusterConfig::new(
//!     vec!["nats://127.0.0.1:4222".into()],
//!     "node-1",          // this node's stable name
//!     "10.0.0.1:7071",   // where crawlers reach its URLFrontier service
//!     16,                // its store's partition count
//! );
//! let node = ClusterNode::join(config).await?;
//! let view = node.view();
//! println!("nodes {:?}, I own {:?}", view.nodes(), view.owned());
//! node.leave().await;
//! # Ok(()) }
//! ```
//!
//! [`ClusterStatus::read`] reads the same state without joining.

mod buckets;
mod config;
mod connect;
mod error;
mod log;
mod node;
mod plan;
mod rendezvous;
mod status;

pub use buckets::Member;
pub use config::{ClusterConfig, DEFAULT_LEASE, MAX_NODE_ID, valid_node_id};
pub use error::ClusterError;
pub use log::{JetStreamLog, TakeOver};
pub use node::{ClusterNode, ClusterView};
pub use rendezvous::targets;
pub use status::{ClusterStatus, LogStatus, Replica};
