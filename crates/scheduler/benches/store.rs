//! The store on generated observations: first ingest, unchanged re-ingest,
//! `lease(1000)` latency (wall clock and the thread's CPU time), disk bytes
//! per URL and peak RSS, on a fresh store on disk. Prints figures; asserts
//! nothing.
//!
//! `cargo bench -p sitemapd-scheduler --bench store [-- --urls N --hosts H --batch B --keep DIR --crawl ROUNDS --cache-mib M --partitions P --calibrate --repartition P]`
//!
//! `--cache-mib M` sets sled's cache (`StoreOptions::cache_bytes`; default 32 MiB).
//!
//! `--partitions P` sets the partitions of the new store (`StoreOptions::partitions`; default 1).
//!
//! `--crawl ROUNDS` then leases and completes 1,000 URLs ROUNDS times (a
//! crawler at work: each completed record gets a key of its own) and
//! ingests again (which folds them back into their pages), printing the
//! disk after each. With `--compact`, the crawl calls
//! `Store::compact_if_grown` after every round, as the daemon does now and
//! then, and prints the largest the directory was, the compactions and how
//! long writes waited for them; `--compact-growth-tenths G` sets
//! `StoreOptions::compact_growth` to G / 10 (default 20: 2.0).
//!
//! `--calibrate` then opens the store again with the `freshness-optimal`
//! policy and calibrates it (a pass over every URL), printing its time and
//! the resident memory it took above what the process held before.
//!
//! `--repartition P` then opens the store (of one partition) again with P
//! partitions, which moves its hosts into them, printing the time, the
//! resident memory it took above what the process held before, the disk
//! after, and `lease(1000)` on the result.
//!
//! `--keep DIR` builds the store in `DIR` (which must not exist yet) and
//! leaves it there, for measuring the commands on a big store.

use sitemapd_scheduler::{Completion, LeaseRequest, Outcome, Timestamp};
use std::time::Duration;
use std::time::Instant;

// The binary's allocator, jemalloc: sled allocates a node copy per write.
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use sitemapd_parser::date::Precision;
use sitemapd_parser::{ChangeFreq, Lastmod, NormUrl, UrlEntry};
use sitemapd_scheduler::{SitemapFetch, Store, StoreOptions};
use sitemapd_storebench::{dir_bytes, peak_rss_mib, reset_peak_rss, rss_mib, thread_cpu_ms};

/// Unix seconds as the store's timestamp.
fn ts(t: i64) -> Timestamp {
    Timestamp::from_unix(t)
}

/// Seconds as a lease time to live.
fn secs(s: i64) -> Duration {
    Duration::from_secs(s.unsigned_abs())
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn ingest(store: &Store, now: i64, hosts: usize, per_host: usize, batch: usize) -> f64 {
    let started = Instant::now();
    let mut session = store.ingest(ts(now)).with_batch(batch);
    for h in 0..hosts {
        let sitemap = format!("https://host-{h}.example/sitemap.xml");
        for i in 0..per_host {
            let url = format!(
                "https://host-{h}.example/catalog/section-{}/item-{i}.html",
                i % 37
            );
            let mut entry = UrlEntry::new(NormUrl::parse(&url).unwrap());
            entry.lastmod = Some(Lastmod {
                unix_seconds: 1_690_000_000 + (i as i64 % 1000) * 3600,
                nanos: 0,
                precision: Precision::Second,
            });
            entry.changefreq = Some(ChangeFreq::Weekly);
            entry.priority = Some(0.5);
            session.entry(&sitemap, &entry).unwrap();
        }
        session
            .sitemap_fetched(
                &sitemap,
                &SitemapFetch {
                    status: 200,
                    complete: true,
                    ..SitemapFetch::default()
                },
            )
            .unwrap();
    }
    session.finish().unwrap();
    started.elapsed().as_secs_f64()
}

/// `rounds` leases of 1,000 URLs, 10 s apart (a day later when none is
/// due), each completed at once (not modified): a crawler working through
/// the store. Prints what the completions cost and the disk the crawled
/// records take (each has a key of its own until the next ingest folds it
/// back); the time it ends at.
fn crawl(store: &Store, mut at: i64, rounds: usize, total: usize, path: &std::path::Path) -> i64 {
    let done = Completion::from(Outcome::NotModified);
    let compact = std::env::args().any(|a| a == "--compact");
    let (mut peak, mut peak_copying, mut compactions, mut waits) = (0u64, 0u64, 0, Vec::new());
    let mut times = Vec::new();
    let mut crawled = 0;
    let started = Instant::now();
    for _ in 0..rounds {
        let leased = store
            .lease(&LeaseRequest::new(1000).per_host(10).ttl(secs(300)), ts(at))
            .unwrap();
        if leased.is_empty() {
            // Nothing due: the crawler comes back a day later.
            at += 86_400;
            continue;
        }
        let t = Instant::now();
        store
            .complete_all(leased.iter().map(|l| (l.url.as_str(), &done)), ts(at))
            .unwrap();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        crawled += leased.len();
        at += 10;
        if compact {
            peak = peak.max(dir_bytes(path).0);
            if let Some(done) = store.compact_if_grown().unwrap() {
                compactions += 1;
                peak_copying = peak_copying.max(done.bytes_before + done.bytes_after);
                waits.push(done.writes_waited.as_secs_f64() * 1000.0);
            }
        }
    }
    store.flush().unwrap();
    if compact {
        waits.sort_by(f64::total_cmp);
        println!(
            "compaction: {compactions} during the crawl, writes waited {:.0} ms in all, at most {:.0} ms; the directory at most {:.0} bytes per URL ({:.0} while a compaction held both copies)",
            waits.iter().sum::<f64>(),
            waits.last().copied().unwrap_or(0.0),
            peak as f64 / total as f64,
            peak_copying as f64 / total as f64
        );
    }
    times.sort_by(f64::total_cmp);
    let at_rank = |q: usize| times.get(times.len() * q / 10).copied().unwrap_or(0.0);
    println!(
        "crawl: {crawled} URLs leased and completed in {:.1} s; complete_all(1000) median {:.1} ms, p90 {:.1} ms; disk {:.0} bytes per URL; peak RSS {:.0} MiB",
        started.elapsed().as_secs_f64(),
        at_rank(5),
        at_rank(9),
        dir_bytes(path).0 as f64 / total as f64,
        peak_rss_mib()
    );
    at
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let urls = arg("--urls", 1_000_000);
    let hosts = arg("--hosts", 1_000).max(1);
    let batch = arg("--batch", sitemapd_scheduler::ingest::DEFAULT_BATCH);
    let per_host = urls / hosts;
    let total = per_host * hosts;
    let args: Vec<String> = std::env::args().collect();
    let keep = args
        .iter()
        .position(|a| a == "--keep")
        .and_then(|i| args.get(i + 1))
        .map(std::path::PathBuf::from);
    // A tempdir, deleted at the end, unless `--keep` names the directory.
    let temp;
    let path = match &keep {
        Some(dir) => {
            assert!(!dir.exists(), "--keep {}: already exists", dir.display());
            dir.as_path()
        }
        None => {
            temp = tempfile::tempdir().unwrap();
            temp.path()
        }
    };
    let default_mib = (StoreOptions::default().cache_bytes >> 20) as usize;
    let cache_mib = arg("--cache-mib", default_mib);
    let partitions = arg(
        "--partitions",
        usize::from(StoreOptions::default().partitions),
    );
    // `--compact-growth` in tenths (20: the default 2.0).
    let growth_tenths = arg(
        "--compact-growth-tenths",
        (StoreOptions::default().compact_growth * 10.0) as usize,
    );
    let options = StoreOptions {
        cache_bytes: (cache_mib as u64) << 20,
        partitions: u16::try_from(partitions).expect("--partitions: 1 to 1024"),
        compact_growth: growth_tenths as f64 / 10.0,
        ..StoreOptions::default()
    };
    let store = Store::open(path, options).unwrap();
    let now = 1_700_000_000;
    println!(
        "{total} URLs over {hosts} hosts, batch {batch}, sled cache {cache_mib} MiB, {} partitions",
        store.partitions()
    );

    let first = ingest(&store, now, hosts, per_host, batch);
    store.flush().unwrap();
    println!(
        "first ingest: {first:.1} s, {:.0} URLs/s; peak RSS {:.0} MiB; disk {:.0} bytes per URL",
        total as f64 / first,
        peak_rss_mib(),
        dir_bytes(path).0 as f64 / total as f64
    );
    let again = ingest(&store, now + 3600, hosts, per_host, batch);
    store.flush().unwrap();
    println!(
        "unchanged re-ingest: {again:.1} s, {:.0} URLs/s; peak RSS {:.0} MiB; disk {:.0} bytes per URL",
        total as f64 / again,
        peak_rss_mib(),
        dir_bytes(path).0 as f64 / total as f64
    );

    let mut times = Vec::new();
    let mut cpu = Vec::new();
    for k in 0..31 {
        // Ten seconds apart, as a crawler would come back: politeness lets a
        // host serve one URL a second.
        let t = Instant::now();
        let c = thread_cpu_ms();
        let leased = store
            .lease(
                &LeaseRequest::new(1000).per_host(10).ttl(secs(300)),
                ts(now + 3600 + 10 * k),
            )
            .unwrap();
        cpu.push(thread_cpu_ms() - c);
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        // Ten per host: fewer than 1,000 from fewer than 100 hosts.
        assert_eq!(leased.len(), (10 * hosts).min(1000));
    }
    times.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    println!(
        "lease(1000), 10 per host: median {:.1} ms, p90 {:.1} ms, max {:.1} ms; CPU time median {:.1} ms, p90 {:.1} ms",
        times[15], times[27], times[30], cpu[15], cpu[27]
    );
    let mut at = now + 3600 + 400;
    let rounds = arg("--crawl", 0);
    if rounds > 0 {
        at = crawl(&store, at, rounds, total, path);
        let again = ingest(&store, at, hosts, per_host, batch);
        store.flush().unwrap();
        println!(
            "re-ingest after the crawl: {again:.1} s, {:.0} URLs/s; disk {:.0} bytes per URL",
            total as f64 / again,
            dir_bytes(path).0 as f64 / total as f64
        );
        at += 3600;
    }
    let t = Instant::now();
    let kept = store.stats(ts(at)).unwrap();
    let kept_ms = t.elapsed().as_secs_f64() * 1000.0;
    let t = Instant::now();
    let full = store.full_stats(ts(at)).unwrap();
    let full_ms = t.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(kept.active, full.active);
    println!("stats (kept counts): {kept_ms:.1} ms; full_stats (every record): {full_ms:.0} ms");
    store.flush().unwrap();
    let disk = dir_bytes(path).0;
    println!(
        "disk: {:.0} MB, {:.0} bytes per URL (sled's own count: {:.0} MB); peak RSS {:.0} MiB",
        disk as f64 / 1e6,
        disk as f64 / total as f64,
        store.size_on_disk().unwrap() as f64 / 1e6,
        peak_rss_mib()
    );
    let options = store.options().clone();
    drop(store);
    if let Some(to) = args
        .iter()
        .position(|a| a == "--repartition")
        .and_then(|i| args.get(i + 1))
    {
        let to: u16 = to.parse().expect("--repartition: 2 to 1024");
        repartition(path, options.clone(), to, full.active, ts(at), total);
    }
    if args.iter().any(|a| a == "--calibrate") {
        let store = Store::open(
            path,
            StoreOptions {
                policy: Some("freshness-optimal".into()),
                ..options
            },
        )
        .unwrap();
        let before = rss_mib();
        assert!(
            reset_peak_rss(),
            "cannot reset the peak RSS (/proc/self/clear_refs)"
        );
        let t = Instant::now();
        let multiplier = store.calibrate().unwrap();
        println!(
            "calibrate (freshness-optimal, every URL): {:.1} s, multiplier {multiplier:?}; \
             peak RSS {:.0} MiB above the {before:.0} MiB held before",
            t.elapsed().as_secs_f64(),
            peak_rss_mib() - before
        );
    }
}

/// Opens the store at `path` again with `to` partitions and reports the
/// repartition (`active`: the active URLs it held).
fn repartition(
    path: &std::path::Path,
    options: StoreOptions,
    to: u16,
    active: u64,
    now: Timestamp,
    total: usize,
) {
    let before = rss_mib();
    assert!(
        reset_peak_rss(),
        "cannot reset the peak RSS (/proc/self/clear_refs)"
    );
    let t = Instant::now();
    let store = Store::open(
        path,
        StoreOptions {
            partitions: to,
            ..options
        },
    )
    .unwrap();
    let took = t.elapsed().as_secs_f64();
    assert_eq!(store.partitions(), usize::from(to));
    let rss = peak_rss_mib() - before;
    store.flush().unwrap();
    println!(
        "repartition into {to}: {took:.1} s, {:.0} URLs/s; peak RSS {rss:.0} MiB above the {before:.0} MiB held before; disk {:.0} bytes per URL",
        total as f64 / took,
        dir_bytes(path).0 as f64 / total as f64
    );
    let t = Instant::now();
    let full = store.full_stats(now).unwrap();
    assert_eq!(full.active, active, "the same active URLs");
    println!(
        "full_stats after: {:.0} ms",
        t.elapsed().as_secs_f64() * 1000.0
    );
    let mut times = Vec::new();
    for k in 0..11 {
        let t = Instant::now();
        let leased = store
            .lease(
                &LeaseRequest::new(1000).per_host(10).ttl(secs(300)),
                ts(now.unix() + 10 * k),
            )
            .unwrap();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(leased.len(), 1000);
    }
    times.sort_by(f64::total_cmp);
    println!("lease(1000) after: median {:.1} ms", times[5]);
}
