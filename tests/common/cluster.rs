//! What the cluster tests share: a daemon as a node of a cluster on
//! loopback NATS servers, and `sitemapd cluster status` read and polled.

use std::time::{Duration, Instant};

use serde_json::Value;
use sitemapd_testsite::nats::NatsCluster;

use super::daemon::Daemon;
use super::frontier::frontier_addr;

/// `sitemapd daemon` as node `id` of the cluster on `nats`, its store of
/// `partitions` in `dir`, its lease 3 s, with `extra` arguments: the daemon
/// and its URLFrontier address.
pub(crate) fn node_with(
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
pub(crate) fn status(nats: &NatsCluster) -> Value {
    try_status(nats).unwrap_or_else(|e| panic!("{e}"))
}

/// `sitemapd cluster status --json`, or why it failed (while a NATS
/// server rejoins, a bucket may have no leader for a few seconds).
fn try_status(nats: &NatsCluster) -> Result<Value, String> {
    let out = super::run(&[
        "cluster",
        "status",
        "--json",
        "--cluster",
        &nats.urls().join(","),
    ]);
    if !out.status.success() {
        return Err(super::stderr(&out));
    }
    serde_json::from_str(&super::stdout(&out)).map_err(|e| e.to_string())
}

/// Polls the status until `done` holds (60 s at most; a status that cannot
/// be read meanwhile is read again).
pub(crate) fn status_until(
    nats: &NatsCluster,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> (Value, Duration) {
    let start = Instant::now();
    loop {
        let s = try_status(nats);
        if let Ok(s) = &s
            && done(s)
        {
            return (s.clone(), start.elapsed());
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{what}: {s:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub(crate) fn member_ids(s: &Value) -> Vec<&str> {
    s["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect()
}

/// CountURLs of the DEFAULT crawl, of the node's own partitions (`local`)
/// or of the cluster's.
pub(crate) async fn count(c: &mut super::frontier::Client, local: bool) -> u64 {
    let p = sitemapd_urlfrontier::proto::CountUrlParams {
        key: String::new(),
        crawl_id: String::new(),
        filter: None,
        ignore_case: None,
        local: Some(local),
    };
    c.count_ur_ls(p).await.unwrap().into_inner().value
}
