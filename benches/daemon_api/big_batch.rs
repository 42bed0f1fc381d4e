//! Mode 4 (`cargo bench --bench daemon_api -- --big-batch`): how long a
//! crawler's lease waits while another client writes one big batch.
//!
//! The daemon serves a store of `--urls` URLs (default 100,000) over 1,000
//! hosts, all due now. One thread loops `POST /v1/lease` (n 5, ttl 60 s)
//! and times each answer, while a URLFrontier client writes `--batch` new
//! URLs (default 100,000 over 100 hosts) three ways, one after the other:
//! as one PutDiscovered batch (the protocol's all-or-nothing message, the
//! daemon writes it in chunks of 1,024), as one PutURLs stream of
//! discovered items (read and written 1,024 at a time), and, for the
//! scale, no write at all (leases alone for as long as the first write
//! took). Per way: the write's time and the leases made meanwhile (count,
//! p50, p99, max). `--rounds` (2) repeats the three. Asserts nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use sitemapd_urlfrontier::proto::{self, ack_message::Status as Ack};

use super::frontier::{Client, client, fill, start};
use super::{arg, ms};

/// How the batch is written.
#[derive(Clone, Copy, Debug)]
enum Way {
    PutDiscovered,
    PutUrls,
    Nothing,
}

pub(crate) fn run(args: &[String]) {
    let urls: usize = arg(args, "--urls").unwrap_or(100_000);
    let batch: usize = arg(args, "--batch").unwrap_or(100_000);
    let rounds: usize = arg(args, "--rounds").unwrap_or(2);
    let store = tempfile::tempdir().unwrap();
    fill(
        store.path(),
        urls,
        1_000,
        sitemapd_scheduler::DEFAULT_PARTITIONS,
    );
    let (daemon, addr, runtime) = start(store.path(), &[], "big-batch");
    let mut rows = Vec::new();
    let mut nothing_for = Duration::from_secs(2);
    for round in 0..rounds {
        for way in [Way::PutDiscovered, Way::PutUrls, Way::Nothing] {
            let leasing = Arc::new(AtomicBool::new(true));
            let waits = Arc::new(Mutex::new(Vec::new()));
            let leaser = {
                let (api, leasing, waits) = (daemon.api, leasing.clone(), waits.clone());
                std::thread::spawn(move || {
                    while leasing.load(Ordering::SeqCst) {
                        let t = Instant::now();
                        let body = json!({ "n": 5, "ttl_secs": 60 });
                        if let Err(e) = api.json("POST", "/v1/lease", Some(&body)) {
                            eprintln!("lease: {e}");
                        }
                        waits.lock().unwrap().push(ms(t));
                    }
                })
            };
            // The leaser's first answers come before the write starts.
            std::thread::sleep(Duration::from_millis(200));
            waits.lock().unwrap().clear();
            let t = Instant::now();
            let (ok, not_ok) = match way {
                Way::Nothing => {
                    std::thread::sleep(nothing_for);
                    (0, 0)
                }
                way => {
                    let items = (0..batch).map(|i| proto::UrlInfo {
                        url: format!("https://b{}.x.test/{round}{}/p{i}", i % 100, way as u8),
                        ..Default::default()
                    });
                    let items: Vec<proto::UrlInfo> = items.collect();
                    runtime.block_on(async {
                        let mut c = client(addr).await;
                        match way {
                            Way::PutDiscovered => put_discovered(&mut c, items).await,
                            _ => put_urls(&mut c, items).await,
                        }
                    })
                }
            };
            let took = t.elapsed();
            if matches!(way, Way::PutDiscovered) {
                nothing_for = took;
            }
            leasing.store(false, Ordering::SeqCst);
            leaser.join().unwrap();
            let mut waits = std::mem::take(&mut *waits.lock().unwrap());
            waits.sort_by(f64::total_cmp);
            let p = |q: f64| waits[((waits.len() - 1) as f64 * q).round() as usize];
            let row = format!(
                "| {} | {way:?} | {:.2} s | {ok} OK, {not_ok} not | {} | {:.1} / {:.1} / {:.1} ms |",
                round + 1,
                took.as_secs_f64(),
                waits.len(),
                p(0.5),
                p(0.99),
                waits[waits.len() - 1]
            );
            println!("{row}");
            rows.push(row);
        }
    }
    println!(
        "\n{urls} URLs in the store; batches of {batch} new URLs; a lease of 5 in a loop meanwhile"
    );
    println!("| round | written as | write | acks | leases | lease p50 / p99 / max |");
    println!("|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
    daemon.print_log_summary();
    let (took, status) = daemon.stop();
    println!(
        "daemon stopped {:.2} s after SIGTERM: {status}",
        took.as_secs_f64()
    );
}

/// One PutDiscovered batch of `items`: (acked OK, acked otherwise).
async fn put_discovered(c: &mut Client, items: Vec<proto::UrlInfo>) -> (u64, u64) {
    let batch = proto::DiscoveredBatch {
        id: "big".into(),
        items,
    };
    let mut acks = c
        .put_discovered(tokio_stream::iter(vec![batch]))
        .await
        .unwrap()
        .into_inner();
    let ack = acks.message().await.unwrap().unwrap();
    let ok = ack
        .statuses
        .iter()
        .filter(|s| **s == Ack::Ok as i32)
        .count() as u64;
    (ok, ack.statuses.len() as u64 - ok)
}

/// One PutURLs stream of `items` as discovered URLs, read to its last ack.
async fn put_urls(c: &mut Client, items: Vec<proto::UrlInfo>) -> (u64, u64) {
    let items = items.into_iter().map(|info| proto::UrlItem {
        id: info.url.clone(),
        creation_date: 0,
        item: Some(proto::url_item::Item::Discovered(
            proto::DiscoveredUrlItem { info: Some(info) },
        )),
    });
    let mut acks = c
        .put_ur_ls(tokio_stream::iter(items))
        .await
        .unwrap()
        .into_inner();
    let (mut ok, mut not_ok) = (0, 0);
    while let Some(ack) = acks.message().await.unwrap() {
        if ack.status == Ack::Ok as i32 {
            ok += 1;
        } else {
            not_ok += 1;
        }
    }
    (ok, not_ok)
}
