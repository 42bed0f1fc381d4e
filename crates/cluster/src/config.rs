//! What a node needs to join a cluster.

use std::time::Duration;

use crate::ClusterError;

/// The default time a member's or an owner's entry lives without a
/// heartbeat: a dead node's partitions are claimed about this long after
/// its last heartbeat (plus one round, a third of it). Longer than a NATS
/// server's failover (4 to 9 s for a killed stream leader), so that the
/// loss of one NATS server does not make every node lose its partitions.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(15);

/// The longest node id, bytes.
pub const MAX_NODE_ID: usize = 64;

/// A node's cluster settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterConfig {
    /// NATS server URLs (`nats://host:port`); any one reachable is enough.
    pub servers: Vec<String>,
    /// This node's name, unique in the cluster and the same across its
    /// restarts: ASCII letters, digits, `-` and `_`, at most
    /// [`MAX_NODE_ID`] bytes.
    pub node_id: String,
    /// The URLFrontier address (`host:port`) crawlers and other nodes use
    /// to reach this node; ListNodes answers the live members' addresses.
    pub advertise: String,
    /// The HTTP API's address (`host:port`) other nodes send the calls of
    /// its partitions to; `None`: they are not sent on.
    pub advertise_http: Option<String>,
    /// The partition count of this node's store. Every node's must be the
    /// cluster's: the first node to join records it.
    pub partitions: u16,
    /// Replicas of each JetStream bucket: 3 (or 5) in production, at most
    /// the number of NATS servers.
    pub replicas: usize,
    /// How long a member's or owner's entry lives without a heartbeat. A
    /// node heartbeats every third of it.
    pub lease: Duration,
}

impl ClusterConfig {
    /// A config with 3 replicas and [`DEFAULT_LEASE`].
    pub fn new(
        servers: Vec<String>,
        node_id: impl Into<String>,
        advertise: impl Into<String>,
        partitions: u16,
    ) -> ClusterConfig {
        ClusterConfig {
            servers,
            node_id: node_id.into(),
            advertise: advertise.into(),
            advertise_http: None,
            partitions,
            replicas: 3,
            lease: DEFAULT_LEASE,
        }
    }

    /// Checks every setting.
    pub fn validate(&self) -> Result<(), ClusterError> {
        let bad = |setting, reason: &str| {
            Err(ClusterError::Setting {
                setting,
                reason: reason.to_string(),
            })
        };
        if self.servers.is_empty() {
            return bad(
                "cluster",
                "name at least one NATS server (nats://host:port)",
            );
        }
        if !valid_node_id(&self.node_id) {
            return bad(
                "node_id",
                "1 to 64 ASCII letters, digits, '-' and '_' (a node's name, stable across restarts)",
            );
        }
        if self.advertise.is_empty() || !self.advertise.contains(':') {
            return bad(
                "advertise",
                "the HOST:PORT crawlers and other nodes reach this node's URLFrontier service at",
            );
        }
        if self.partitions == 0 {
            return bad("partitions", "at least 1");
        }
        if !(1..=5).contains(&self.replicas) {
            return bad("replicas", "between 1 and 5 (JetStream's limit)");
        }
        if !(Duration::from_secs(1)..=Duration::from_secs(3_600)).contains(&self.lease) {
            return bad("lease", "between 1 s and 1 h");
        }
        Ok(())
    }

    /// How often the node heartbeats and rebalances.
    pub(crate) fn tick(&self) -> Duration {
        self.lease / 3
    }
}

/// Whether `id` is a node id: 1 to [`MAX_NODE_ID`] letters, digits, `-`, `_`.
pub fn valid_node_id(id: &str) -> bool {
    (1..=MAX_NODE_ID).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ClusterConfig {
        ClusterConfig::new(
            vec!["nats://127.0.0.1:4222".into()],
            "n1",
            "127.0.0.1:7071",
            16,
        )
    }

    #[test]
    fn settings_out_of_range_are_named() {
        assert!(config().validate().is_ok());
        type Change = fn(&mut ClusterConfig);
        let cases: [(&str, Change); 6] = [
            ("cluster", |c| c.servers.clear()),
            ("node_id", |c| c.node_id = "a.b".into()),
            ("advertise", |c| c.advertise = "host".into()),
            ("partitions", |c| c.partitions = 0),
            ("replicas", |c| c.replicas = 7),
            ("lease", |c| c.lease = Duration::from_millis(10)),
        ];
        for (setting, change) in cases {
            let mut c = config();
            change(&mut c);
            match c.validate() {
                Err(ClusterError::Setting { setting: s, .. }) => assert_eq!(s, setting),
                other => panic!("{setting}: {other:?}"),
            }
        }
    }

    #[test]
    fn node_ids_are_key_safe() {
        assert!(valid_node_id("node-1_a"));
        for bad in ["", "a b", "a.b", "a/b", "é", &"x".repeat(65)] {
            assert!(!valid_node_id(bad), "{bad:?}");
        }
    }
}
