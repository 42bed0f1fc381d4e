//! Membership and ownership on real nats-server processes (loopback):
//! every partition ends with its rendezvous targets, a join moves the
//! newcomer's even share and few others, a crashed node's partitions are claimed within 30 s and
//! a node that leaves hands its partitions over at once.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use sitemapd_cluster::{ClusterConfig, ClusterError, ClusterNode, ClusterStatus, targets};
use sitemapd_testsite::nats::NatsCluster;

const PARTITIONS: u16 = 32;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn config(nats: &NatsCluster, id: &str, replicas: usize, lease: Duration) -> ClusterConfig {
    ClusterConfig {
        replicas,
        lease,
        ..ClusterConfig::new(nats.urls(), id, format!("{id}.test:7071"), PARTITIONS)
    }
}

/// Waits until the cluster's members are `ids` and every partition is owned
/// by its target among them; the status then, and how long it took.
async fn settled(nats: &NatsCluster, ids: &[&str], within: Duration) -> (ClusterStatus, Duration) {
    let start = Instant::now();
    let mut last = None;
    while start.elapsed() < within {
        if let Ok(status) = ClusterStatus::read(&nats.urls()).await {
            let members: Vec<&str> = status.members.iter().map(|m| m.id.as_str()).collect();
            // Placed: every partition with the owner the placement keeps.
            let owners: Vec<Option<&str>> = status.owners.iter().map(|o| o.as_deref()).collect();
            let targets = targets(PARTITIONS, ids.iter().copied(), &owners);
            let placed = (0..usize::from(PARTITIONS)).all(|p| owners[p] == Some(targets[p]));
            if members == ids && placed {
                return (status, start.elapsed());
            }
            last = Some(status);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("not settled on {ids:?} within {within:?}; last status:\n{last:?}");
}

#[test]
fn owners_follow_the_members_through_a_join_a_crash_and_a_leave() {
    let nats = NatsCluster::start(3);
    runtime().block_on(async {
        let lease = Duration::from_secs(6);
        let mut nodes = Vec::new();
        for id in ["a", "b", "c"] {
            nodes.push(
                ClusterNode::join(config(&nats, id, 3, lease))
                    .await
                    .unwrap(),
            );
        }
        let (status, _) = settled(&nats, &["a", "b", "c"], Duration::from_secs(30)).await;

        // Every node lists the same nodes, and the partitions each says it
        // owns are the ones the bucket gives it, disjoint and complete.
        tokio::time::sleep(lease / 3 * 2).await;
        let mut all = BTreeSet::new();
        for node in &nodes {
            let view = node.view();
            assert_eq!(
                view.nodes(),
                ["a.test:7071", "b.test:7071", "c.test:7071"],
                "{view:?}"
            );
            let owned = view.owned();
            assert_eq!(owned, status.owned_by(&view.node_id));
            for p in owned {
                assert!(all.insert(p), "partition {p} owned twice");
            }
        }
        assert_eq!(all.len(), usize::from(PARTITIONS));

        // A join moves the newcomer's even share, and few others.
        nodes.push(
            ClusterNode::join(config(&nats, "d", 3, lease))
                .await
                .unwrap(),
        );
        let (joined, _) = settled(&nats, &["a", "b", "c", "d"], Duration::from_secs(30)).await;
        let moved: Vec<u16> = (0..PARTITIONS)
            .filter(|&p| joined.owners[usize::from(p)] != status.owners[usize::from(p)])
            .collect();
        for id in ["a", "b", "c", "d"] {
            assert_eq!(joined.owned_by(id).len(), 8, "{joined:?}");
        }
        assert!(moved.len() <= 8 + 1, "{moved:?}");

        // A crash (no release): its partitions are claimed once its entries
        // lapse, within 30 s.
        let crashed = nodes.remove(1);
        assert_eq!(crashed.view().node_id, "b");
        drop(crashed);
        let (_, took) = settled(&nats, &["a", "c", "d"], Duration::from_secs(60)).await;
        assert!(took < Duration::from_secs(30), "{took:?}");

        // A leave releases at once: taken over well within a lease.
        let left = nodes.remove(2);
        assert_eq!(left.view().node_id, "d");
        left.leave().await;
        let (after, took) = settled(&nats, &["a", "c"], Duration::from_secs(30)).await;
        assert!(took < lease, "a leave took {took:?}, as long as an expiry");
        assert!(after.free().is_empty());
    });
}

#[test]
fn a_node_that_disagrees_with_the_cluster_is_refused() {
    let nats = NatsCluster::start(1);
    runtime().block_on(async {
        let lease = Duration::from_secs(3);
        match ClusterStatus::read(&nats.urls()).await {
            Err(ClusterError::NoCluster) => {}
            other => panic!("{other:?}"),
        }
        let a = ClusterNode::join(config(&nats, "a", 1, lease))
            .await
            .unwrap();
        assert_eq!(a.view().owned().len(), usize::from(PARTITIONS));

        let more = ClusterConfig {
            partitions: 64,
            ..config(&nats, "b", 1, lease)
        };
        match ClusterNode::join(more).await {
            Err(ClusterError::Partitions {
                cluster: 32,
                store: 64,
            }) => {}
            other => panic!("{:?}", other.map(|n| n.view())),
        }
        let twin = ClusterConfig {
            advertise: "elsewhere.test:7071".into(),
            ..config(&nats, "a", 1, lease)
        };
        match ClusterNode::join(twin).await {
            Err(ClusterError::NodeIdTaken(id, at)) => {
                assert_eq!((id.as_str(), at.as_str()), ("a", "a.test:7071"))
            }
            other => panic!("{:?}", other.map(|n| n.view())),
        }
        // The same node back at its own address (a restart) is welcome.
        let again = ClusterNode::join(config(&nats, "a", 1, lease))
            .await
            .unwrap();
        assert_eq!(again.view().nodes(), ["a.test:7071"]);
        drop(a);
    });
}

#[test]
fn no_server_is_a_connect_error() {
    runtime().block_on(async {
        let nowhere = vec!["nats://127.0.0.1:9".to_string()];
        match ClusterNode::join(ClusterConfig::new(nowhere, "a", "a:1", 4)).await {
            Err(ClusterError::Connect { servers, .. }) => assert_eq!(servers, "nats://127.0.0.1:9"),
            other => panic!("{:?}", other.map(|n| n.view())),
        }
    });
}
