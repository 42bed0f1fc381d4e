//! Mode 5 (`cargo bench --bench daemon_api -- --indexnow`): the IndexNow
//! intake.
//!
//! The daemon serves a store of `--urls` URLs (default 100,000 over 1,000
//! hosts, all due now) and takes IndexNow pushes from any host
//! (`indexnow_hosts = ["any"]`, quotas raised out of the way). `--push-hosts`
//! loopback sites (default 8, each a host `127.0.0.1:PORT`) publish a key
//! file; each key is verified first. Then, `--seconds` (10) each:
//!
//! 1. one thread loops `POST /v1/lease` (n 100) alone: its latency;
//! 2. `--workers` (2) threads POST pushes of 10,000 new URLs each, round
//!    robin over the hosts: URLs/s accepted (200 answers, stored and
//!    flushed) and the POSTs' latency;
//! 3. both at once: the pushes' figures and the lease latency beside them.
//!
//! Then `--random-pushes` (1,000,000) single-URL pushes from random hosts
//! (`127.0.0.1:PORT` for a random port) under random keys, from the same
//! workers: the answers by status and the daemon's RSS along the way (every
//! table of the intake has a cap: it should level off). A key file on a
//! random loopback port is asked for by the daemon's fetcher (nothing
//! answers there, or whatever listens does; never another address).
//! Asserts nothing.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use sitemapd_testsite::{Reply, TestSite, client};

use super::{Api, Daemon, arg, log_path, ms, percentiles, rss_mib};

const KEY: &str = "bench-indexnow-key-0001";

pub(crate) fn run(args: &[String]) {
    let urls: usize = arg(args, "--urls").unwrap_or(100_000);
    let hosts: usize = arg(args, "--push-hosts").unwrap_or(8);
    let workers: usize = arg(args, "--workers").unwrap_or(2);
    let seconds: u64 = arg(args, "--seconds").unwrap_or(10);
    let random: u64 = arg(args, "--random-pushes").unwrap_or(1_000_000);
    let store = tempfile::tempdir().unwrap();
    super::frontier::fill(
        store.path(),
        urls,
        1_000,
        sitemapd_scheduler::DEFAULT_PARTITIONS,
    );
    let sites: Vec<TestSite> = (0..hosts)
        .map(|_| {
            let site = TestSite::start();
            site.route(&format!("/{KEY}.txt"), Reply::ok(KEY));
            site.route("/robots.txt", Reply::ok("User-agent: *\nAllow: /\n"));
            site
        })
        .collect();
    let extra: Vec<String> = [
        "--indexnow-listen",
        "127.0.0.1:0",
        "--indexnow-hosts",
        "any",
        "--indexnow-host-requests-per-minute",
        "100000000",
        "--indexnow-host-urls-per-day",
        "100000000000",
        "--indexnow-client-requests-per-minute",
        "100000000",
        "--indexnow-client-urls-per-day",
        "100000000000",
        "--indexnow-new-hosts-per-day",
        "100000000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let daemon = Daemon::start(store.path(), &extra, &[], log_path("indexnow"));
    let intake = daemon.indexnow_addr();
    let pid = daemon.pid();
    println!(
        "daemon pid {pid}: API {}, IndexNow {intake}; {hosts} pushing hosts, {workers} workers",
        daemon.api.addr
    );
    // Each host's key verified (202, then 200).
    let t = Instant::now();
    for site in &sites {
        let url = site.url("/first");
        loop {
            let path = format!("/indexnow?url={url}&key={KEY}");
            let r = client::request(intake, "GET", &path, None, None).unwrap();
            if r.status == 200 {
                break;
            }
            assert!(r.status == 202, "HTTP {}: {}", r.status, r.text());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    println!(
        "keys verified: {hosts} in {:.2} s",
        t.elapsed().as_secs_f64()
    );

    let window = Duration::from_secs(seconds);
    let mut alone = leases_for(daemon.api, window);
    println!("leases alone: {}", percentiles(&mut alone));

    let alone = pushes_for(intake, &sites, workers, window, 0, || {});
    println!("pushes alone: {alone}");
    let mut beside = Vec::new();
    let with = pushes_for(intake, &sites, workers, window, 1, || {
        beside = leases_for(daemon.api, window);
    });
    println!("pushes beside the leases: {with}");
    println!("leases beside the pushes: {}", percentiles(&mut beside));

    // Random hosts and keys: memory with every table at its cap.
    let (rss0, _) = rss_mib(pid);
    let sent = AtomicU64::new(0);
    let statuses = Mutex::new(BTreeMap::<u16, u64>::new());
    let samples = Mutex::new(vec![(0u64, rss0)]);
    let t = Instant::now();
    std::thread::scope(|s| {
        for w in 0..workers {
            let (sent, statuses, samples) = (&sent, &statuses, &samples);
            s.spawn(move || {
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (w as u64 + 1);
                let mut next = || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                let mut mine = BTreeMap::<u16, u64>::new();
                loop {
                    let i = sent.fetch_add(1, Ordering::SeqCst);
                    if i >= random {
                        break;
                    }
                    let port = 20_000 + next() % 40_000;
                    let key = format!("{:016x}", next());
                    let path = format!("/indexnow?url=http://127.0.0.1:{port}/p{i}&key={key}");
                    let status =
                        client::request(intake, "GET", &path, None, None).map_or(0, |r| r.status);
                    *mine.entry(status).or_default() += 1;
                    if i % 100_000 == 99_999 {
                        samples.lock().unwrap().push((i + 1, rss_mib(pid).0));
                    }
                }
                let mut all = statuses.lock().unwrap();
                for (k, v) in mine {
                    *all.entry(k).or_default() += v;
                }
            });
        }
    });
    let (rss1, peak) = rss_mib(pid);
    println!(
        "{random} pushes of random hosts and keys in {:.1} s: answers {:?}",
        t.elapsed().as_secs_f64(),
        statuses.lock().unwrap()
    );
    let rows: Vec<String> = samples
        .lock()
        .unwrap()
        .iter()
        .map(|(n, rss)| format!("{n}: {rss:.0}"))
        .collect();
    println!(
        "daemon RSS MiB by pushes sent: {}; end {rss1:.0}, peak {peak:.0}",
        rows.join(", ")
    );
    daemon.print_log_summary();
    let (stopped, status) = daemon.stop();
    println!("stopped in {:.1} s: {status}", stopped.as_secs_f64());
}

/// `workers` threads POSTing pushes of 10,000 new URLs (round robin over
/// the sites' hosts; `phase` keeps each phase's URLs apart) while `meanwhile`
/// runs, then for what is left of `window`: URLs/s accepted and the POSTs'
/// latency.
fn pushes_for(
    intake: std::net::SocketAddr,
    sites: &[TestSite],
    workers: usize,
    window: Duration,
    phase: usize,
    meanwhile: impl FnOnce(),
) -> String {
    let accepted = AtomicU64::new(0);
    let posts = Mutex::new(Vec::new());
    let errors = Mutex::new(BTreeMap::<u16, u64>::new());
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    std::thread::scope(|s| {
        for w in 0..workers {
            let (accepted, posts, errors, stop) = (&accepted, &posts, &errors, &stop);
            s.spawn(move || {
                let mut round = 0usize;
                while !stop.load(Ordering::SeqCst) {
                    let site = &sites[(w + round * workers) % sites.len()];
                    let list: Vec<String> = (0..10_000)
                        .map(|i| site.url(&format!("/{phase}/w{w}/r{round}/p{i}")))
                        .collect();
                    let host = format!("127.0.0.1:{}", site.port());
                    let body = json!({ "host": host, "key": KEY, "urlList": list }).to_string();
                    let t = Instant::now();
                    let r =
                        client::request(intake, "POST", "/indexnow", None, Some(body.as_bytes()))
                            .unwrap();
                    posts.lock().unwrap().push(ms(t));
                    if r.status == 200 {
                        accepted.fetch_add(10_000, Ordering::SeqCst);
                    } else {
                        *errors.lock().unwrap().entry(r.status).or_default() += 1;
                    }
                    round += 1;
                }
            });
        }
        meanwhile();
        std::thread::sleep(window.saturating_sub(started.elapsed()));
        stop.store(true, Ordering::SeqCst);
    });
    let took = started.elapsed().as_secs_f64();
    let n = accepted.load(Ordering::SeqCst);
    format!(
        "{n} URLs accepted in {took:.1} s = {:.0} URLs/s; POSTs {}; not 200: {:?}",
        n as f64 / took,
        percentiles(&mut posts.lock().unwrap()),
        errors.lock().unwrap()
    )
}

/// Lease latencies (ms) of one thread looping `POST /v1/lease` (n 100, ttl
/// 600 s) for `window`.
fn leases_for(api: Api, window: Duration) -> Vec<f64> {
    let start = Instant::now();
    let mut lat = Vec::new();
    while start.elapsed() < window {
        let t = Instant::now();
        if let Err(e) = api.json(
            "POST",
            "/v1/lease",
            Some(&json!({ "n": 100, "ttl_secs": 600 })),
        ) {
            eprintln!("lease: {e}");
        }
        lat.push(ms(t));
    }
    lat
}
