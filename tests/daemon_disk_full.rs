//! A full disk under the daemon, made real with a file
//! size limit on the daemon's process (RLIMIT_FSIZE: writes past it fail
//! with EFBIG, as on a full disk): a write request answered with an error
//! has changed nothing, health turns red, and the store is whole after a
//! restart.

mod common;

use common::daemon::{Daemon, TOKEN};
use common::{run, stdout};
use serde_json::json;

/// Bytes the daemon's process may write into one file.
const LIMIT: u64 = 4 << 20;

fn limited(cmd: &mut std::process::Command) -> &mut std::process::Command {
    common::daemon::limit_on_exec(cmd.env("SITEMAPD_TOKEN", TOKEN), libc::RLIMIT_FSIZE, LIMIT)
}

#[test]
fn a_full_disk_fails_writes_whole_and_turns_health_red() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let d = Daemon::start_with(&store, &[], limited);
    assert_eq!(common::http(d.addr, "GET", "/readyz", None, None).0, 200);
    // Batches of notifications until one fails.
    let mut stored = 0u64;
    let mut failed = None;
    for batch in 0..200 {
        let urls: Vec<String> = (0..2_000)
            .map(|i| {
                format!(
                    "https://h{}.example/{batch}/{i}/{}",
                    i % 50,
                    "p".repeat(200)
                )
            })
            .collect();
        let (status, answer) = d.call("POST", "/v1/notify", Some(json!({ "urls": urls })));
        match status {
            200 => stored += 2_000,
            _ => {
                failed = Some((batch, status, answer));
                break;
            }
        }
    }
    let (batch, status, answer) = failed.expect("the file size limit was never reached");
    assert_eq!(status, 503, "batch {batch}: {answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("cannot write"),
        "{answer}"
    );
    let (health, body) = common::http(d.addr, "GET", "/healthz", None, None);
    assert_eq!(health, 503, "{body}");
    assert!(body.contains("write"), "{body}");
    assert_eq!(common::http(d.addr, "GET", "/readyz", None, None).0, 503);
    let (exit, _, log) = d.terminate();
    // SIGTERM: the last flush fails, and says so; exit 1 (docs/daemon.md).
    assert_eq!(exit.code(), Some(1), "{log}");
    assert!(log.contains("cannot flush the store"), "{log}");
    // Restarted without the limit: what was acknowledged is there; of the
    // failed batch, each partition's part is there whole or not at all (a
    // batch over several partitions is one atomic write in each), so each
    // host has all 40 of its URLs of that batch or none.
    let o = run(&[
        "stats",
        "--check",
        "--json",
        "--store",
        store.to_str().unwrap(),
    ]);
    let stats: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(o.status.code(), Some(0), "{stats}\n{log}");
    let active = stats["active"].as_u64().unwrap();
    assert!((stored..stored + 2_000).contains(&active), "{stats}");
    let per_host = stored / 50;
    for (host, counts) in stats["hosts"].as_object().unwrap() {
        let n = counts["active"].as_u64().unwrap();
        assert!(
            n == per_host || n == per_host + 40,
            "{host}: {n} of {per_host}: {stats}"
        );
    }
}

/// A full disk met by a write in a crawl other than `DEFAULT` (URLFrontier
/// puts in crawl `c2`): the put is acked FAIL, and the store's health, one
/// for all its crawls, turns red: `/readyz` and `/healthz` answer 503.
#[test]
fn a_full_disk_in_another_crawl_turns_health_red() {
    use common::frontier::*;
    use sitemapd_urlfrontier::proto::ack_message::Status as Ack;
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start_with(
        &dir.path().join("store"),
        &["--urlfrontier-listen", "127.0.0.1:0"],
        limited,
    );
    let addr = frontier_addr(&d);
    let failed = runtime().block_on(async {
        let mut c = client(&addr, Some(TOKEN)).await;
        for batch in 0..200 {
            let items = (0..1_000)
                .map(|i| {
                    let url = format!(
                        "https://h{}.example/{batch}/{i}/{}",
                        i % 50,
                        "p".repeat(200)
                    );
                    discovered(&url, "c2")
                })
                .collect();
            if put(&mut c, items).await.values().any(|a| *a == Ack::Fail) {
                return Some(batch);
            }
        }
        None
    });
    assert!(failed.is_some(), "the file size limit was never reached");
    let (health, body) = common::http(d.addr, "GET", "/healthz", None, None);
    assert_eq!(health, 503, "{body}");
    assert!(body.contains("write"), "{body}");
    assert_eq!(common::http(d.addr, "GET", "/readyz", None, None).0, 503);
}
