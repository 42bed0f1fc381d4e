//! What can go wrong joining or reading a cluster.

/// An error of the cluster layer: the settings, NATS, or a cluster whose
/// record disagrees with this node.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// A setting is out of range (which, and why).
    #[error("cluster setting {setting}: {reason}")]
    Setting {
        /// The setting's name.
        setting: &'static str,
        /// What it must be.
        reason: String,
    },
    /// No NATS server of the list could be reached.
    #[error("cannot connect to NATS at {servers}: {source}")]
    Connect {
        /// The servers tried, comma-separated.
        servers: String,
        /// NATS's error.
        #[source]
        source: async_nats::ConnectError,
    },
    /// The cluster has another partition count than this node's store.
    #[error(
        "the cluster has {cluster} partitions and this node's store {store}: every node's store \
         must have the cluster's partition count (store.partitions when the store is created)"
    )]
    Partitions {
        /// The count the cluster recorded when its first node joined.
        cluster: u16,
        /// This node's.
        store: u16,
    },
    /// Another live member already uses this node id.
    #[error("node id {0:?} is taken by a live member with another address ({1})")]
    NodeIdTaken(String, String),
    /// No cluster has been set up on these servers (for a reader such as
    /// `sitemapd cluster status`).
    #[error("no sitemapd cluster on these NATS servers (no node has joined yet)")]
    NoCluster,
    /// A JetStream call failed (what was being done, and NATS's error).
    #[error("NATS JetStream: {what}: {message}")]
    JetStream {
        /// What was being done.
        what: String,
        /// NATS's error, as text.
        message: String,
    },
}

impl ClusterError {
    /// A JetStream failure while doing `what`.
    pub(crate) fn jetstream(what: impl Into<String>, error: impl std::fmt::Display) -> Self {
        ClusterError::JetStream {
            what: what.into(),
            message: error.to_string(),
        }
    }
}
