//! Cluster mode through the real binary, on real nats-server processes:
//! daemons join, every node's ListNodes answers the same live addresses,
//! `sitemapd cluster status` shows who owns which partition, a node killed
//! with SIGKILL gives its partitions up within 30 s, and one stopped with
//! SIGTERM leaves at once.

mod common;

use std::time::{Duration, Instant};

use common::daemon::{Daemon, TOKEN};
use common::frontier::{client, frontier_addr, runtime};
use serde_json::Value;
use sitemapd_testsite::nats::NatsCluster;
use sitemapd_urlfrontier::proto;

const PARTITIONS: &str = "8";

fn node(dir: &tempfile::TempDir, nats: &NatsCluster, id: &str) -> (Daemon, String) {
    let urls = nats.urls().join(",");
    let d = Daemon::start(
        &dir.path().join(id),
        &[
            "--urlfrontier-listen",
            "127.0.0.1:0",
            "--partitions",
            PARTITIONS,
            "--cluster",
            &urls,
            "--node-id",
            id,
            "--cluster-lease-secs",
            "3",
        ],
    );
    let addr = frontier_addr(&d);
    (d, addr)
}

/// `sitemapd cluster status --json`.
fn status(nats: &NatsCluster) -> Value {
    let out = common::run(&[
        "cluster",
        "status",
        "--json",
        "--cluster",
        &nats.urls().join(","),
    ]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    serde_json::from_str(&common::stdout(&out)).unwrap()
}

/// Polls the status until `done` holds (60 s at most).
fn status_until(
    nats: &NatsCluster,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> (Value, Duration) {
    let start = Instant::now();
    loop {
        let s = status(nats);
        if done(&s) {
            return (s, start.elapsed());
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{what}: {s}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn member_ids(s: &Value) -> Vec<&str> {
    s["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect()
}

fn list_nodes(addr: &str) -> Vec<String> {
    runtime().block_on(async {
        let mut c = client(addr, Some(TOKEN)).await;
        c.list_nodes(proto::Empty {})
            .await
            .unwrap()
            .into_inner()
            .values
    })
}

#[test]
fn daemons_form_one_cluster_and_hand_partitions_over() {
    let nats = NatsCluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    let (a, addr_a) = node(&dir, &nats, "a");
    let (b, addr_b) = node(&dir, &nats, "b");

    // Both members, every partition owned by one of them.
    let (s, _) = status_until(&nats, "two members owning every partition", |s| {
        member_ids(s) == ["a", "b"]
            && s["free"].as_array().unwrap().is_empty()
            && s["members"]
                .as_array()
                .unwrap()
                .iter()
                .all(|m| !m["owns"].as_array().unwrap().is_empty())
    });
    assert_eq!(s["partitions"], 8);
    let advertised: Vec<&str> = s["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["advertise"].as_str().unwrap())
        .collect();
    assert_eq!(advertised, [addr_a.as_str(), addr_b.as_str()]);

    // ListNodes: the same sorted live addresses on either node.
    let mut both = vec![addr_a.clone(), addr_b.clone()];
    both.sort();
    a.wait_for("a to see b", |_| list_nodes(&addr_a) == both);
    assert_eq!(list_nodes(&addr_b), both);
    let metrics = common::http(a.addr, "GET", "/metrics", Some(TOKEN), None).1;
    assert!(metrics.contains("sitemapd_cluster_members 2"), "{metrics}");

    // kill -9: b's partitions go to a within 30 s.
    let (killed, _) = b.kill_9();
    assert!(killed);
    let (_, took) = status_until(&nats, "a owning everything", |s| {
        member_ids(s) == ["a"] && s["members"][0]["owns"].as_array().unwrap().len() == 8
    });
    assert!(took < Duration::from_secs(30), "failover took {took:?}");
    assert_eq!(list_nodes(&addr_a), std::slice::from_ref(&addr_a));

    // SIGTERM: a leaves, releasing everything before it exits.
    let (exit, _, log) = a.terminate();
    assert!(exit.success(), "{log}");
    let s = status(&nats);
    assert!(member_ids(&s).is_empty(), "{s}");
    assert_eq!(s["free"].as_array().unwrap().len(), 8, "{s}");
}

#[test]
fn cluster_mode_needs_a_node_id_and_reachable_servers() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let store = store.to_str().unwrap();
    let out = common::run(&[
        "daemon",
        "--store",
        store,
        "--listen",
        "127.0.0.1:0",
        "--cluster",
        "nats://127.0.0.1:9",
    ]);
    assert!(!out.status.success());
    assert!(
        common::stderr(&out).contains("cluster.node_id"),
        "{}",
        common::stderr(&out)
    );

    let out = common::run(&[
        "daemon",
        "--store",
        store,
        "--listen",
        "127.0.0.1:0",
        "--cluster",
        "nats://127.0.0.1:9",
        "--node-id",
        "a",
        "--advertise",
        "127.0.0.1:7071",
    ]);
    assert!(!out.status.success());
    let err = common::stderr(&out);
    assert!(
        err.contains("cannot join the cluster on nats://127.0.0.1:9"),
        "{err}"
    );

    let out = common::run(&["cluster", "status", "--cluster", "nats://127.0.0.1:9"]);
    assert!(!out.status.success());
    assert!(
        common::stderr(&out).contains("cannot read the cluster"),
        "{}",
        common::stderr(&out)
    );
}
