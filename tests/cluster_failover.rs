//! Nodes of a cluster killed with SIGKILL at random points while four
//! crawler clients put URLs and take them with GetURLs through every live
//! node, on real nats-server processes and the real binary:
//! - every partition is owned again within 30 s of each kill;
//! - one NATS server of three killed and restarted under the same load
//!   loses nothing either;
//! - a fourth node joining under the same load gets its even share of the
//!   partitions within 60 s;
//! - no URL a put acked OK is missing afterwards;
//! - no URL is handed out twice within a live lease (the clients' log);
//! - every URL handed out and never completed comes back once its lease is
//!   over;
//! - each partition's store, on the node that holds it, equals a replay of
//!   the partition's log into an empty store.
//!
//! Three kills by default; `SITEMAPD_TEST_KILLS` asks for more, and
//! `SITEMAPD_TEST_SEED` repeats a run's random points (each run prints its
//! seed).

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::cluster::{count, member_ids, node_with, status, status_until};
use common::daemon::{Daemon, TOKEN};
use common::frontier::{Client, discovered, runtime, try_client};
use serde_json::Value;
use sitemapd_cluster::JetStreamLog;
use sitemapd_scheduler::{Store, StoreOptions};
use sitemapd_testsite::nats::NatsCluster;
use sitemapd_urlfrontier::proto::{self, ack_message::Status as Ack};

const NODES: [&str; 3] = ["a", "b", "c"];
/// The node that joins the three under load.
const JOINS: &str = "d";
const PARTITIONS: u16 = 8;
/// How long a URL GetURLs hands out stays leased (`delay_requestable`).
const HOLD: Duration = Duration::from_secs(10);
/// Crawler clients putting and getting at once.
const CLIENTS: usize = 4;
/// Sites the clients' URLs are spread over.
const SITES: u64 = 40;
/// Longest a call may take before the client gives it up.
const CALL: Duration = Duration::from_secs(10);

/// A small random source (splitmix64): the test's random points, repeated
/// from its seed.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v} is not a number"))
    })
}

/// What the clients saw, shared with the test.
#[derive(Default)]
struct Seen {
    /// Each node's URLFrontier address, `None` while it is down.
    addrs: Mutex<Vec<Option<String>>>,
    /// URLs a put acked OK.
    acked: Mutex<HashSet<String>>,
    /// Each URL handed out: the instant before its GetURLs call was sent
    /// and the instant its answer ended.
    handed: Mutex<Vec<(String, Instant, Instant)>>,
    /// Calls that failed or timed out (a node down, a partition moving).
    failed_calls: Mutex<u64>,
    /// Put items acked FAIL (to resend).
    fail_acks: Mutex<u64>,
    /// When each failed call or put with items acked FAIL ended.
    failed_at: Mutex<Vec<Instant>>,
    stop: AtomicBool,
}

impl Seen {
    fn live(&self) -> Vec<String> {
        self.addrs
            .lock()
            .unwrap()
            .iter()
            .flatten()
            .cloned()
            .collect()
    }

    fn failed(&self) {
        *self.failed_calls.lock().unwrap() += 1;
        self.failed_at.lock().unwrap().push(Instant::now());
    }

    /// Failed calls and puts with items acked FAIL in each second from
    /// `from`, for `seconds`.
    fn failures_per_second(&self, from: Instant, seconds: usize) -> Vec<u32> {
        let mut per = vec![0; seconds];
        for at in self.failed_at.lock().unwrap().iter() {
            if let Some(n) = at
                .checked_duration_since(from)
                .and_then(|d| per.get_mut(d.as_secs() as usize))
            {
                *n += 1;
            }
        }
        per
    }
}

/// A client to `addr`, kept between calls; `None` when it cannot connect.
async fn connected<'c>(
    clients: &'c mut HashMap<String, Client>,
    addr: &str,
) -> Option<&'c mut Client> {
    if !clients.contains_key(addr) {
        let c = tokio::time::timeout(CALL, try_client(addr, Some(TOKEN)))
            .await
            .ok()?
            .ok()?;
        clients.insert(addr.to_string(), c);
    }
    clients.get_mut(addr)
}

/// PutURLs of `urls` through `c`: the URLs acked OK, and how many were
/// acked FAIL.
async fn put(c: &mut Client, urls: &[String]) -> Result<(Vec<String>, u64), ()> {
    let call = async {
        let items: Vec<_> = urls.iter().map(|u| discovered(u, "")).collect();
        let mut acks = c
            .put_ur_ls(tokio_stream::iter(items))
            .await
            .map_err(drop)?
            .into_inner();
        let (mut ok, mut fail) = (Vec::new(), 0);
        while let Some(ack) = acks.message().await.map_err(drop)? {
            match Ack::try_from(ack.status) {
                Ok(Ack::Ok) => ok.push(ack.id),
                Ok(Ack::Fail) => fail += 1,
                _ => {}
            }
        }
        Ok((ok, fail))
    };
    tokio::time::timeout(CALL, call).await.map_err(drop)?
}

/// GetURLs through `c`, each URL leased for [`HOLD`]: the URLs.
async fn get(c: &mut Client, per_queue: u32, queues: u32) -> Result<Vec<String>, ()> {
    let call = async {
        let p = proto::GetParams {
            max_urls_per_queue: per_queue,
            max_queues: queues,
            key: String::new(),
            delay_requestable: HOLD.as_secs() as u32,
            item: Some(proto::get_params::Item::AnyCrawlId(proto::AnyCrawlId {})),
        };
        let mut s = c.get_ur_ls(p).await.map_err(drop)?.into_inner();
        let mut urls = Vec::new();
        while let Some(info) = s.message().await.map_err(drop)? {
            urls.push(info.url);
        }
        Ok(urls)
    };
    tokio::time::timeout(CALL, call).await.map_err(drop)?
}

/// Client `me`: puts 10 new URLs through one live node and gets through
/// another, in turn, until told to stop.
fn crawler(me: usize, seen: Arc<Seen>) {
    runtime().block_on(async {
        let mut clients = HashMap::new();
        let (mut seq, mut turn) = (0u64, me);
        while !seen.stop.load(Ordering::Relaxed) {
            turn += 1;
            let live = seen.live();
            if live.is_empty() {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            let urls: Vec<String> = (0..10)
                .map(|_| {
                    seq += 1;
                    format!("https://site{}.example/c{me}/{seq}", seq % SITES)
                })
                .collect();
            let addr = &live[turn % live.len()];
            match connected(&mut clients, addr).await {
                Some(c) => match put(c, &urls).await {
                    Ok((ok, fail)) => {
                        seen.acked.lock().unwrap().extend(ok);
                        *seen.fail_acks.lock().unwrap() += fail;
                        if fail > 0 {
                            seen.failed_at.lock().unwrap().push(Instant::now());
                        }
                    }
                    Err(()) => {
                        clients.remove(addr);
                        seen.failed();
                    }
                },
                None => seen.failed(),
            }
            let addr = &live[(turn + 1) % live.len()];
            let before = Instant::now();
            match connected(&mut clients, addr).await {
                Some(c) => match get(c, 5, 20).await {
                    Ok(urls) => {
                        let after = Instant::now();
                        let mut handed = seen.handed.lock().unwrap();
                        handed.extend(urls.into_iter().map(|u| (u, before, after)));
                    }
                    Err(()) => {
                        clients.remove(addr);
                        seen.failed();
                    }
                },
                None => seen.failed(),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}

fn start(dir: &tempfile::TempDir, nats: &NatsCluster, id: &str) -> (Daemon, String) {
    let extra = ["--lease-delay", "0", "--per-host", "100000"];
    node_with(dir, nats, id, &PARTITIONS.to_string(), &extra)
}

/// Whether `s` shows exactly the members `live`, owning every partition.
fn owned_by(s: &Value, live: &[&str]) -> bool {
    member_ids(s) == live
        && s["free"].as_array().unwrap().is_empty()
        && s["owners"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o.as_str().is_some_and(|o| live.contains(&o)))
}

/// Whether `s` shows exactly the members `live`, each partition owned by
/// the member the placement every node computes keeps it with.
fn placed(s: &Value, live: &[&str]) -> bool {
    let owners: Vec<Option<&str>> = s["owners"]
        .as_array()
        .unwrap()
        .iter()
        .map(Value::as_str)
        .collect();
    let targets = sitemapd_cluster::targets(PARTITIONS, live.iter().copied(), &owners);
    member_ids(s) == live && owners.iter().zip(&targets).all(|(o, t)| *o == Some(*t))
}

/// Pairs of one URL's handouts, the second inside the first's lease:
/// for sure, whatever the delays of the calls (a lease's end is counted in
/// whole seconds by the store, hence one second of slack).
fn handed_twice_within_a_lease(handed: &[(String, Instant, Instant)]) -> Vec<String> {
    let mut by_url: HashMap<&str, Vec<(Instant, Instant)>> = HashMap::new();
    for (url, before, after) in handed {
        by_url.entry(url).or_default().push((*before, *after));
    }
    let mut twice = Vec::new();
    for (url, mut times) in by_url {
        times.sort();
        for pair in times.windows(2) {
            let ((before, _), (_, after)) = (pair[0], pair[1]);
            if after + Duration::from_secs(1) < before + HOLD {
                twice.push(format!("{url}: {:?} apart", after - before));
            }
        }
    }
    twice
}

/// URLs handed out more than once (each time after the lease before).
fn handed_more_than_once(handed: &[(String, Instant, Instant)]) -> usize {
    let mut times: HashMap<&str, usize> = HashMap::new();
    for (url, _, _) in handed {
        *times.entry(url).or_default() += 1;
    }
    times.values().filter(|n| **n > 1).count()
}

#[test]
fn nodes_killed_at_random_lose_nothing_acknowledged() {
    let kills = env_number("SITEMAPD_TEST_KILLS").unwrap_or(3);
    let seed = env_number("SITEMAPD_TEST_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    });
    println!("SITEMAPD_TEST_SEED={seed}");
    let mut random = Random(seed);
    let mut nats = NatsCluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    let mut daemons: Vec<Option<Daemon>> = Vec::new();
    let seen = Arc::new(Seen::default());
    for id in NODES {
        let (d, addr) = start(&dir, &nats, id);
        daemons.push(Some(d));
        seen.addrs.lock().unwrap().push(Some(addr));
    }
    status_until(&nats, "three members owning every partition", |s| {
        owned_by(s, &NODES)
    });
    let crawlers: Vec<_> = (0..CLIENTS)
        .map(|me| {
            let seen = seen.clone();
            std::thread::spawn(move || crawler(me, seen))
        })
        .collect();

    let mut failovers = Vec::new();
    for _ in 0..kills {
        std::thread::sleep(Duration::from_millis(1000 + random.below(3000)));
        let victim = random.below(NODES.len() as u64) as usize;
        seen.addrs.lock().unwrap()[victim] = None;
        let (killed, log) = daemons[victim].take().unwrap().kill_9();
        assert!(killed, "{log}");
        let live: Vec<&str> = NODES
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != victim)
            .map(|(_, id)| *id)
            .collect();
        let (_, took) = status_until(&nats, "the others owning every partition", |s| {
            owned_by(s, &live)
        });
        assert!(took < Duration::from_secs(30), "failover took {took:?}");
        failovers.push(took);
        let (d, addr) = start(&dir, &nats, NODES[victim]);
        daemons[victim] = Some(d);
        seen.addrs.lock().unwrap()[victim] = Some(addr);
    }
    // One NATS server of the three killed under the same load, and
    // started again.
    let failed = |seen: &Seen| *seen.failed_calls.lock().unwrap() + *seen.fail_acks.lock().unwrap();
    let before = failed(&seen);
    let server = random.below(3) as usize;
    let killed_at = Instant::now();
    nats.kill(server);
    std::thread::sleep(Duration::from_secs(5));
    nats.restart(server);
    std::thread::sleep(Duration::from_secs(3));
    let while_nats_down = failed(&seen) - before;

    // A fourth node joins under the same load: it gets its even share
    // (two partitions of eight) within 60 s.
    status_until(
        &nats,
        "three members, each partition with its target",
        |s| placed(s, &NODES),
    );
    let joined_at = Instant::now();
    let (d, addr) = start(&dir, &nats, JOINS);
    daemons.push(Some(d));
    seen.addrs.lock().unwrap().push(Some(addr));
    let all = [&NODES[..], &[JOINS]].concat();
    let (joined, rebalanced) =
        status_until(&nats, "four members, each partition with its target", |s| {
            placed(s, &all)
        });
    assert!(rebalanced < Duration::from_secs(60), "{rebalanced:?}");
    let joining = daemons.last().unwrap().as_ref().unwrap();
    joining.wait_for("the fourth node to serve its share", |d| {
        d.log().matches("partition taken over: served").count() >= 2
    });
    let serving = joined_at.elapsed();
    let shares: Vec<usize> = joined["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["owns"].as_array().unwrap().len())
        .collect();
    assert_eq!(shares, [2, 2, 2, 2], "{joined}");
    std::thread::sleep(Duration::from_secs(3));
    seen.stop.store(true, Ordering::Relaxed);
    for c in crawlers {
        c.join().unwrap();
    }
    let acked = seen.acked.lock().unwrap().clone();
    let handed = std::mem::take(&mut *seen.handed.lock().unwrap());
    println!(
        "{kills} kills, failovers {failovers:?}; a fourth node's share owned in {rebalanced:?}, \
         served {serving:?} after its start; \
         {} URLs acked, {} handed out ({} URLs more \
         than once), {} calls failed, {} items acked FAIL; {while_nats_down} failed calls and FAIL \
         items while NATS server {server} was down (5 s) and rejoining, calls with a failure per \
         second from its kill: {:?}",
        acked.len(),
        handed.len(),
        handed_more_than_once(&handed),
        seen.failed_calls.lock().unwrap(),
        seen.fail_acks.lock().unwrap(),
        seen.failures_per_second(killed_at, 15)
    );
    assert!(acked.len() > 1000 && handed.len() > 100, "too little load");

    // No URL handed out twice within its lease.
    let twice = handed_twice_within_a_lease(&handed);
    assert!(
        twice.is_empty(),
        "handed out twice within a lease: {twice:?}"
    );

    // Every URL handed out comes back once its lease is over, and every
    // URL a put acked is there: GetURLs through every node, until each has
    // been handed out again (failing once 30 s pass with none).
    std::thread::sleep(HOLD + Duration::from_secs(1));
    let live = seen.live();
    let mut back: HashSet<String> = HashSet::new();
    runtime().block_on(async {
        let mut clients = HashMap::new();
        for addr in &live {
            let c = connected(&mut clients, addr).await.unwrap();
            common::frontier::no_delay(c).await;
        }
        // A drain's leases are log writes too: it may take a while, but
        // it must not stall.
        let mut progress = (0, Instant::now());
        let want: HashSet<&String> = acked
            .iter()
            .chain(handed.iter().map(|(u, _, _)| u))
            .collect();
        while !want.iter().all(|u| back.contains(*u)) {
            if back.len() > progress.0 {
                progress = (back.len(), Instant::now());
            }
            if progress.1.elapsed() > Duration::from_secs(30) {
                let missing: Vec<&String> = want
                    .iter()
                    .copied()
                    .filter(|u| !back.contains(*u))
                    .collect();
                let c = connected(&mut clients, &live[0]).await.unwrap();
                let mut statuses = Vec::new();
                for url in missing.iter().take(5) {
                    let found = common::frontier::url_status(c, url, "", "").await;
                    statuses.push(format!("{url}: {found:?}"));
                }
                let total = count(c, false).await;
                panic!(
                    "{} URLs acked or handed out never came back ({} acked, {} back, \
                     {total} counted); {statuses:#?}",
                    missing.len(),
                    acked.len(),
                    back.len()
                );
            }
            for addr in &live {
                if let Some(c) = connected(&mut clients, addr).await
                    && let Ok(urls) = get(c, 1000, 1000).await
                {
                    back.extend(urls);
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });

    // Each partition's store equals a replay of its log: every node killed
    // at once (nothing runs), then each holder's store read back and
    // brought up to the end of the log, as the node would at its restart
    // (what a node wrote to the log but not yet to its disk, a lease, is
    // replayed), and compared with the whole log replayed into an empty
    // store.
    let owners = status(&nats)["owners"].clone();
    for d in daemons.iter_mut() {
        d.take().unwrap().kill_9();
    }
    let log = Arc::new(JetStreamLog::open(&nats.urls(), "checker", PARTITIONS, 3).unwrap());
    let replayed = Store::in_memory(StoreOptions {
        partitions: PARTITIONS,
        ..StoreOptions::default()
    })
    .unwrap();
    for p in 0..PARTITIONS {
        log.take_over(p, &replayed).unwrap();
    }
    let mut held: HashMap<String, Store> = HashMap::new();
    let mut caught_up = Vec::new();
    for (p, owner) in owners.as_array().unwrap().iter().enumerate() {
        let owner = owner.as_str().unwrap();
        let store = held.entry(owner.to_string()).or_insert_with(|| {
            Store::open(dir.path().join(owner), StoreOptions::default()).unwrap()
        });
        caught_up.push(log.take_over(p as u16, store).unwrap().applied);
        let of_p = |s: &Store| {
            s.export()
                .map(Result::unwrap)
                .filter(|v| s.partition_of_url(&v.url) == p as u16)
                .collect::<Vec<_>>()
        };
        let (theirs, log_s) = (of_p(store), of_p(&replayed));
        assert!(!log_s.is_empty(), "partition {p} holds nothing");
        if theirs != log_s {
            let a: HashMap<&str, _> = theirs.iter().map(|v| (v.url.as_str(), v)).collect();
            let b: HashMap<&str, _> = log_s.iter().map(|v| (v.url.as_str(), v)).collect();
            let only_store = a.keys().filter(|u| !b.contains_key(*u)).count();
            let only_log = b.keys().filter(|u| !a.contains_key(*u)).count();
            let differ: Vec<_> = a
                .iter()
                .filter(|(u, v)| b.get(*u).is_some_and(|w| w != *v))
                .take(2)
                .map(|(u, v)| format!("{u}: {v:?} vs {:?}", b[u]))
                .collect();
            panic!(
                "partition {p}: {owner}'s store differs from its log: {only_store} URLs only in the store, {only_log} only in the log, {} and {} in all; {differ:#?}",
                theirs.len(),
                log_s.len()
            );
        }
    }
    println!("entries each holder replayed at its restart: {caught_up:?}");
}
