//! Cluster mode through the real binary, on real nats-server processes:
//! daemons join, every node's ListNodes answers the same live addresses,
//! `sitemapd cluster status` shows who owns which partition, a node killed
//! with SIGKILL gives its partitions up within 30 s, and one stopped with
//! SIGTERM leaves at once; the partitions' data goes with them: the node
//! that takes a killed owner's partition over serves its URLs, and the
//! URLs the dead node had leased stay leased.

mod common;

use std::time::{Duration, Instant};

use common::daemon::{Daemon, TOKEN};
use common::frontier::{client, frontier_addr, runtime};
use serde_json::Value;
use sitemapd_testsite::nats::NatsCluster;
use sitemapd_urlfrontier::proto;

const PARTITIONS: &str = "8";

fn node(dir: &tempfile::TempDir, nats: &NatsCluster, id: &str) -> (Daemon, String) {
    node_with(dir, nats, id, PARTITIONS, &[])
}

fn node_with(
    dir: &tempfile::TempDir,
    nats: &NatsCluster,
    id: &str,
    partitions: &str,
    extra: &[&str],
) -> (Daemon, String) {
    let urls = nats.urls().join(",");
    let args = [
        &[
            "--urlfrontier-listen",
            "127.0.0.1:0",
            "--partitions",
            partitions,
            "--cluster",
            &urls,
            "--node-id",
            id,
            "--cluster-lease-secs",
            "3",
        ][..],
        extra,
    ]
    .concat();
    let d = Daemon::start(&dir.path().join(id), &args);
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
    // What a daemon given `args` besides a store and a listener says as it
    // fails.
    let fails = |args: &[&str]| {
        let start = [
            "daemon",
            "--store",
            store.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ];
        let out = common::run(&[&start[..], args].concat());
        assert!(!out.status.success());
        common::stderr(&out)
    };
    let nowhere = ["--cluster", "nats://127.0.0.1:9"];
    let err = fails(&nowhere);
    assert!(err.contains("cluster.node_id"), "{err}");
    let err = fails(
        &[
            &nowhere[..],
            &["--node-id", "a", "--advertise", "127.0.0.1:7071"],
        ]
        .concat(),
    );
    assert!(
        err.contains("cannot connect to NATS at nats://127.0.0.1:9"),
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

/// The URLs a lease of up to `n` hands out.
fn lease(d: &Daemon, n: u64) -> Vec<String> {
    let answer = d.post(
        "/v1/lease",
        serde_json::json!({"n": n, "ttl_secs": 3600, "per_host": 1000}),
    );
    answer["urls"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|u| u["url"].as_str().unwrap().to_string())
        .collect()
}

/// Node a following a loopback site of `sitemaps` × `per` URLs (one
/// partition) until it holds them all, then node b: once the partition is
/// owned, the site, its owner (serving every URL), the other node and its
/// id.
fn site_and_two_nodes(
    nats: &NatsCluster,
    dir: &tempfile::TempDir,
    sitemaps: usize,
    per: usize,
) -> (sitemapd_testsite::TestSite, Daemon, Daemon, &'static str) {
    let site = common::indexed_site(sitemaps, per);
    let urls = (sitemaps * per) as u64;
    let root = site.url("/");
    let extra = ["--lease-delay", "0", "--per-host", "1000"];
    let (a, _) = node_with(
        dir,
        nats,
        "a",
        "1",
        &[&extra[..], &[root.as_str()]].concat(),
    );
    // a owns the only partition, takes it over and walks the site.
    a.wait_for("a to store the site's URLs", |d| d.active() == urls);
    let (b, _) = node_with(dir, nats, "b", "1", &extra);
    // Whichever the partition's target is, its owner serves every URL.
    let (s, _) = status_until(nats, "both members, the partition owned", |s| {
        member_ids(s) == ["a", "b"] && s["free"].as_array().unwrap().is_empty()
    });
    let (owner, other, other_id) = if s["owners"][0] == "a" {
        (a, b, "b")
    } else {
        (b, a, "a")
    };
    owner.wait_for("the owner to hold every URL", |d| d.active() == urls);
    (site, owner, other, other_id)
}

#[test]
fn a_killed_owners_urls_and_leases_are_served_by_the_node_that_takes_over() {
    let nats = NatsCluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    let (_site, dead, survivor, survivor_id) = site_and_two_nodes(&nats, &dir, 2, 50);
    let leased = lease(&dead, 10);
    assert_eq!(leased.len(), 10);

    let (killed, _) = dead.kill_9();
    assert!(killed);
    let (_, took) = status_until(&nats, "the survivor owning the partition", |s| {
        member_ids(s) == [survivor_id] && s["owners"][0] == survivor_id
    });
    assert!(took < Duration::from_secs(30), "failover took {took:?}");
    // The survivor took the partition over with its data: every URL, and
    // the ten the first owner leased still leased.
    survivor.wait_for("the survivor to serve the 100 URLs", |d| d.active() == 100);
    // It follows the site too (a's SITE argument, added by a once it held
    // the site's partition, replicated with the rest).
    let sites = survivor.get("/v1/sites");
    assert_eq!(sites["sites"].as_array().map(Vec::len), Some(1), "{sites}");
    let rest = lease(&survivor, 200);
    assert_eq!(rest.len(), 90, "{rest:?}");
    assert!(leased.iter().all(|u| !rest.contains(u)));
}

/// Sends `signal` to the daemon's process.
fn signal(d: &Daemon, signal: i32) {
    // SAFETY: kill(2) on the pid of a child the test started and has not
    // waited for.
    assert_eq!(
        unsafe { libc::kill(d.child.id() as libc::pid_t, signal) },
        0
    );
}

#[test]
fn a_paused_owner_hands_out_nothing_once_another_node_took_over() {
    let nats = NatsCluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    let (_site, paused, other, other_id) = site_and_two_nodes(&nats, &dir, 1, 40);
    assert_eq!(lease(&paused, 1).len(), 1);

    // Paused past its lease: the other node takes the partition over.
    signal(&paused, libc::SIGSTOP);
    status_until(&nats, "the other node owning the partition", |s| {
        member_ids(s) == [other_id] && s["owners"][0] == other_id
    });
    other.wait_for("the other node to serve", |d| d.active() == 40);
    assert_eq!(lease(&other, 100).len(), 39);

    // Resumed, the old owner still counts itself the owner until its next
    // round: its first write (a site added) and its lease, sent at once,
    // are refused by the fence. (Rounds later it may own the partition
    // again, legitimately: it is back, and may be the partition's target;
    // it then takes it over first.)
    signal(&paused, libc::SIGCONT);
    let took_over = |d: &Daemon| d.log().matches("partition taken over: served").count();
    let before = took_over(&paused);
    let (status, body) = paused.call(
        "POST",
        "/v1/sites",
        Some(serde_json::json!({"sites": ["added-while-paused.example"]})),
    );
    assert_eq!(status, 503, "{body}");
    let ask = serde_json::json!({"n": 100, "ttl_secs": 60, "per_host": 1000});
    let (status, body) = paused.call("POST", "/v1/lease", Some(ask));
    let handed = body["urls"].as_array().map_or(0, Vec::len);
    assert!(
        status == 503 || (status == 200 && handed == 0),
        "{status} {body}"
    );
    // Nothing it tried reached the log. Seen from the log itself: the
    // other node dies, the resumed one takes the partition over by
    // replaying it, and then holds one followed site, not two, and the
    // 39 URLs the other node leased are leased (with its own one, all 40).
    let (killed, _) = other.kill_9();
    assert!(killed);
    let id = if other_id == "a" { "b" } else { "a" };
    status_until(&nats, "the resumed node owning the partition", |s| {
        member_ids(s) == [id] && s["owners"][0] == id
    });
    // Served: taken over since it resumed, and not given up since.
    paused.wait_for("the resumed node to serve", |d| {
        let log = d.log();
        took_over(d) > before
            && log.rfind("partition taken over: served") > log.rfind("partition given up")
    });
    let sites = paused.get("/v1/sites");
    assert_eq!(sites["sites"].as_array().map(Vec::len), Some(1), "{sites}");
    assert!(lease(&paused, 100).is_empty());
}
