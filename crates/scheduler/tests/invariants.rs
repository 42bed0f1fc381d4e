//! Randomized invariants of the store (review of the kept counts and due
//! lists): after every ingest, lease, completion, notification, robots
//! change, retirement, peek and lapse of time, `check` finds nothing wrong
//! and the counts `stats` keeps equal those `full_stats` counts over every
//! record. Seeded, so a failure names the seed and step that shows it.

use std::collections::HashMap;
use std::time::Duration;

use sitemapd_parser::date::Precision;
use sitemapd_parser::{HostKey, Lastmod, NormUrl, RobotsRules, UrlEntry};
use sitemapd_scheduler::internal::{keys, record};
use sitemapd_scheduler::{
    Completion, LeaseRequest, Outcome, SitemapFetch, Stats, Store, StoreOptions, Timestamp,
};

const T0: i64 = 1_700_000_000;
const DAY: i64 = 86_400;

/// xorshift64*: a small seeded generator.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

fn ts(t: i64) -> Timestamp {
    Timestamp::from_unix(t)
}

fn host_key(url: &str) -> HostKey {
    NormUrl::parse(url).unwrap().host_key()
}

/// The URLs the runs draw from: two hosts, http and https of the first,
/// a home page, plain pages and pages a robots rule may disallow.
fn pool() -> Vec<String> {
    let mut urls = Vec::new();
    for base in ["https://a.example", "http://a.example", "https://b.example"] {
        urls.push(format!("{base}/"));
        for i in 0..24 {
            urls.push(format!("{base}/p{i}"));
        }
        for i in 0..6 {
            urls.push(format!("{base}/private/x{i}"));
        }
    }
    urls
}

const SITEMAPS: [&str; 3] = [
    "https://a.example/sitemap.xml",
    "http://a.example/other.xml",
    "https://b.example/sitemap.xml",
];

fn entry(rng: &mut Rng, url: &str, now: i64) -> UrlEntry {
    let mut e = UrlEntry::new(NormUrl::parse(url).unwrap());
    if rng.chance(40) {
        e.priority = Some(*rng.pick(&[0.0, 0.1, 0.5, 0.8, 1.0]));
    }
    if rng.chance(50) {
        e.lastmod = Some(Lastmod {
            unix_seconds: now - rng.below(30 * DAY as u64) as i64,
            nanos: 0,
            precision: *rng.pick(&[Precision::Day, Precision::Second]),
        });
    }
    e
}

/// The counts `stats` keeps and `full_stats` counts, that must agree
/// (`leased` differs by design).
fn counts(s: &Stats) -> impl PartialEq + std::fmt::Debug {
    let hosts: Vec<_> = s
        .hosts
        .iter()
        .map(|(h, c)| (h.clone(), c.active, c.retired, c.blocked, c.lastmod_trusted))
        .collect();
    (
        (
            s.active,
            s.retired,
            s.blocked,
            s.gone,
            s.moved,
            s.never_fetched,
            s.with_lastmod,
            s.due_now,
        ),
        s.last_outcomes.clone(),
        s.sitemaps,
        s.sitemap_failures,
        hosts,
    )
}

fn assert_consistent(s: &Store, now: i64, context: &str) -> Stats {
    let report = s.check().unwrap();
    assert!(report.is_ok(), "{context}: check {report:#?}");
    let kept = s.stats(ts(now)).unwrap();
    let full = s.full_stats(ts(now)).unwrap();
    assert_eq!(
        counts(&kept),
        counts(&full),
        "{context}: stats != full_stats"
    );
    // Later on too: every lease run out, every URL due.
    let later = now + 400 * DAY;
    let (later_kept, later_full) = (
        s.stats(ts(later)).unwrap(),
        s.full_stats(ts(later)).unwrap(),
    );
    assert_eq!(
        counts(&later_kept),
        counts(&later_full),
        "{context}: at +400 days"
    );
    kept
}

/// What the runs reached, so that a run that exercises nothing fails.
#[derive(Default, Debug)]
struct Reached {
    leased: usize,
    leased_again: usize,
    blocked: u64,
    retired: u64,
    gone: u64,
    moved: u64,
    redirected: u64,
    due_lists_past_cap: bool,
}

/// One random run of `steps` operations.
fn run(seed: u64, steps: usize, on_disk: bool, reached: &mut Reached) {
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        if on_disk {
            Store::open(dir.path(), StoreOptions::default()).unwrap()
        } else {
            Store::in_memory(StoreOptions::default()).unwrap()
        }
    };
    let mut s = open();
    let urls = pool();
    let mut now = T0;
    let mut leased: Vec<String> = Vec::new();
    let mut extra = 0u32;
    let mut log: Vec<String> = Vec::new();
    for step in 0..steps {
        // Time: mostly the same second or a few seconds on, sometimes past
        // every lease, sometimes days.
        now += match rng.below(10) {
            0..=3 => 0,
            4..=6 => 1 + rng.below(5) as i64,
            7 | 8 => 60 + rng.below(300) as i64,
            _ => DAY + rng.below(DAY as u64) as i64,
        };
        let op = rng.below(100);
        let what = match op {
            0..=19 => {
                // An ingest of some of the pool (and sometimes a big batch
                // of new URLs of one host in this second, past a list's cap).
                let sitemap = *rng.pick(&SITEMAPS);
                let batch = *rng.pick(&[1usize, 3, 7, 1000]);
                let mut ingest = s.ingest(ts(now)).with_batch(batch);
                let n = rng.below(urls.len() as u64) as usize;
                for _ in 0..n {
                    let url = rng.pick(&urls).clone();
                    ingest.entry(sitemap, &entry(&mut rng, &url, now)).unwrap();
                }
                if rng.chance(15) {
                    let base = *rng.pick(&["https://a.example", "https://b.example"]);
                    let many = 120 + rng.below(20);
                    reached.due_lists_past_cap = true;
                    for _ in 0..many {
                        extra += 1;
                        let url = format!("{base}/bulk{extra}");
                        ingest.entry(sitemap, &entry(&mut rng, &url, now)).unwrap();
                    }
                }
                let fetch = SitemapFetch {
                    status: 200,
                    complete: rng.chance(80),
                    ..SitemapFetch::default()
                };
                ingest.sitemap_fetched(sitemap, &fetch).unwrap();
                ingest.finish().unwrap();
                format!("ingest {sitemap} n={n} batch={batch}")
            }
            20..=39 => {
                let request = LeaseRequest::new(1 + rng.below(60) as usize)
                    .per_host(1 + rng.below(20) as usize)
                    .ttl(Duration::from_secs(1 + rng.below(200)));
                let got = s.lease(&request, ts(now)).unwrap();
                reached.leased += got.len();
                reached.leased_again += got
                    .iter()
                    .filter(|l| l.reason == sitemapd_scheduler::policy::Reason::LeaseExpired)
                    .count();
                leased.extend(got.iter().map(|l| l.url.clone()));
                format!("lease {request:?} -> {}", got.len())
            }
            40..=59 => {
                // Completions, some of leased URLs, some of any; sometimes
                // one URL twice, redirects to new URLs of its host.
                let k = 1 + rng.below(12) as usize;
                let mut batch: Vec<(String, Completion)> = Vec::new();
                for _ in 0..k {
                    let url = if !leased.is_empty() && rng.chance(70) {
                        let i = rng.below(leased.len() as u64) as usize;
                        leased.swap_remove(i)
                    } else {
                        rng.pick(&urls).clone()
                    };
                    let outcome = match rng.below(8) {
                        0 => Outcome::Changed,
                        1 => Outcome::NotModified,
                        2 => Outcome::Gone(*rng.pick(&[404, 410])),
                        3 => Outcome::Error(*rng.pick(&[0, 500, 503])),
                        _ => {
                            extra += 1;
                            let to = match rng.below(6) {
                                0 => format!("/moved{}", extra % 7),
                                1 => format!("r{}", extra % 5),
                                2 => format!("http://a.example/s{}", extra % 4),
                                3 => "https://c.example/elsewhere".to_string(),
                                4 => rng.pick(&urls).clone(),
                                _ => format!("https://b.example/private/r{}", extra % 3),
                            };
                            Outcome::Redirected {
                                to,
                                status: *rng.pick(&[301, 302, 307, 308]),
                            }
                        }
                    };
                    batch.push((url.clone(), Completion::from(outcome)));
                    if rng.chance(10) {
                        batch.push((url, Completion::from(Outcome::NotModified)));
                    }
                }
                let unknown = s
                    .complete_all(batch.iter().map(|(u, c)| (u.as_str(), c)), ts(now))
                    .unwrap();
                format!("complete {} ({} unknown)", batch.len(), unknown.len())
            }
            60..=67 => {
                let mut pushed = Vec::new();
                for _ in 0..1 + rng.below(6) {
                    if rng.chance(50) {
                        extra += 1;
                        let base = *rng.pick(&[
                            "https://a.example",
                            "http://a.example",
                            "https://b.example",
                        ]);
                        pushed.push(format!("{base}/n{}", extra % 9));
                    } else {
                        pushed.push(rng.pick(&urls).clone());
                    }
                }
                if rng.chance(20) {
                    pushed.push(pushed[0].clone());
                }
                s.notify_all(pushed.iter().map(String::as_str), ts(now))
                    .unwrap();
                format!("notify {pushed:?}")
            }
            68..=77 => {
                let host = *rng.pick(&["https://a.example/", "https://b.example/"]);
                let rules = match rng.below(4) {
                    0 => RobotsRules::allow_all(),
                    1 => RobotsRules::new(vec![(false, "/private/".into())], None),
                    2 => RobotsRules::new(vec![(false, "/p1".into())], None),
                    _ => RobotsRules::new(vec![(false, "/".into())], None),
                };
                s.set_robots(&host_key(host), &rules, ts(now)).unwrap();
                format!("robots {host} {rules:?}")
            }
            78..=81 => {
                let host = *rng.pick(&["https://a.example/", "https://b.example/"]);
                let n = s.retire_host(&host_key(host)).unwrap();
                format!("retire_host {host} -> {n}")
            }
            82..=89 => {
                let n = 1 + rng.below(80) as usize;
                let got = s.peek(n, ts(now)).unwrap();
                assert!(got.len() <= n);
                format!("peek {n} -> {}", got.len())
            }
            90..=93 if on_disk => {
                drop(s);
                s = open();
                "reopen".to_string()
            }
            _ => "time passes".to_string(),
        };
        log.push(format!("{step} @ +{}: {what}", now - T0));
        let context = format!(
            "seed {seed}, step {step}; last steps:\n{}",
            log[log.len().saturating_sub(6)..].join("\n")
        );
        let st = assert_consistent(&s, now, &context);
        reached.blocked = reached.blocked.max(st.blocked);
        reached.retired = reached.retired.max(st.retired);
        reached.gone = reached.gone.max(st.gone);
        reached.moved = reached.moved.max(st.moved);
        let redirected = st.last_outcomes.get("redirected").copied();
        reached.redirected = reached.redirected.max(redirected.unwrap_or(0));
    }
}

fn assert_reached(r: &Reached) {
    assert!(
        r.leased > 0
            && r.leased_again > 0
            && r.blocked > 0
            && r.retired > 0
            && r.gone > 0
            && r.moved > 0
            && r.redirected > 0
            && r.due_lists_past_cap,
        "{r:?}"
    );
}

#[test]
fn random_operations_keep_the_store_consistent_in_memory() {
    let mut reached = Reached::default();
    for seed in 1..=9 {
        run(seed, 100, false, &mut reached);
    }
    assert_reached(&reached);
}

#[test]
fn random_operations_keep_the_store_consistent_on_disk() {
    let mut reached = Reached::default();
    for seed in 101..=103 {
        run(seed, 80, true, &mut reached);
    }
    println!("{reached:?}");
}

/// Every run of the due index in the store at `s_dir` (closed), by key.
/// Options of a store of one partition: its keys all in the one tree the
/// tests read and damage by hand.
fn one_partition() -> StoreOptions {
    StoreOptions {
        partitions: 1,
        ..StoreOptions::default()
    }
}

fn list_urls(s_dir: &std::path::Path) -> Vec<(Vec<u8>, record::DueList)> {
    let db = sled::open(s_dir).unwrap();
    let tree = db.open_tree("sitemapd").unwrap();
    tree.scan_prefix([keys::DUE])
        .map(Result::unwrap)
        .map(|(k, v)| (k.to_vec(), record::decode(&v).unwrap()))
        .collect()
}

/// Exactly `RUN_CAP` new URLs of a host in one second fill one run; one
/// more, in the same second, cuts it in two; a lease of all of them per
/// host leaves both consistent; the peek order is the rank order.
/// Entries a run holds.
const CAP: usize = sitemapd_scheduler::internal::keys::RUN_CAP;

#[test]
fn a_list_at_exactly_its_cap() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = Store::open(dir.path(), one_partition()).unwrap();
        let mut ingest = s.ingest(ts(T0));
        for i in 0..CAP as i64 {
            let mut e =
                UrlEntry::new(NormUrl::parse(&format!("https://a.example/u{i:03}")).unwrap());
            e.lastmod = Some(Lastmod {
                unix_seconds: T0 - DAY + i,
                nanos: 0,
                precision: Precision::Second,
            });
            ingest.entry(SITEMAPS[0], &e).unwrap();
        }
        ingest.finish().unwrap();
        assert_consistent(&s, T0, "a full list");
        let mut ingest = s.ingest(ts(T0));
        let e = UrlEntry::new(NormUrl::parse("https://a.example/").unwrap());
        ingest.entry(SITEMAPS[0], &e).unwrap();
        ingest.finish().unwrap();
        assert_consistent(&s, T0, "one more");
        // The newest lastmod first (one list read in rank order).
        let first = s.peek(1, ts(T0)).unwrap();
        assert_eq!(first[0].url, format!("https://a.example/u{:03}", CAP - 1));
        s.flush().unwrap();
    }
    let lists = list_urls(dir.path());
    let sizes: Vec<usize> = lists.iter().map(|(_, l)| l.entries.len()).collect();
    assert_eq!(sizes, [CAP / 2 + 1, CAP / 2]);
    let s = Store::open(dir.path(), one_partition()).unwrap();
    let got = s
        .lease(&LeaseRequest::new(200).per_host(200), ts(T0))
        .unwrap();
    assert_eq!(got.len(), CAP + 1);
    assert_consistent(&s, T0, "leased all");
    let got = s
        .lease(&LeaseRequest::new(200).per_host(7), ts(T0 + 10 * DAY))
        .unwrap();
    assert_eq!(got.len(), 7);
    assert_consistent(&s, T0 + 10 * DAY, "re-leased 7");
}

/// `peek` among ≤`LIST_CAP` new URLs of a host found in one second: the home
/// page, then by priority, the newest lastmod, the shortest URL; http and
/// https of the host together.
#[test]
fn peek_orders_new_urls_of_a_host_in_one_second() {
    let s = Store::in_memory(StoreOptions::default()).unwrap();
    let mut ingest = s.ingest(ts(T0));
    let mk = |url: &str, priority: Option<f32>, lastmod: Option<i64>| {
        let mut e = UrlEntry::new(NormUrl::parse(url).unwrap());
        e.priority = priority;
        e.lastmod = lastmod.map(|at| Lastmod {
            unix_seconds: at,
            nanos: 0,
            precision: Precision::Day,
        });
        e
    };
    let entries = [
        mk(
            "https://a.example/aaa-old",
            Some(0.1),
            Some(T0 - 2000 * DAY),
        ),
        mk("http://a.example/bbb", Some(0.5), None),
        mk("https://a.example/", Some(1.0), Some(T0 - 5 * DAY)),
        mk("https://a.example/dead", None, None),
        mk("http://a.example/ccc-newer", Some(0.5), Some(T0 - DAY)),
    ];
    for e in &entries {
        ingest.entry(SITEMAPS[0], e).unwrap();
    }
    // Filler, so that the order is not that of a tiny list.
    for i in 0..100 {
        ingest
            .entry(
                SITEMAPS[0],
                &mk(&format!("https://a.example/f{i}"), Some(0.2), None),
            )
            .unwrap();
    }
    ingest.finish().unwrap();
    let got = peeked(&s, 5, T0);
    assert_eq!(
        got,
        [
            "https://a.example/",
            "http://a.example/ccc-newer",
            "http://a.example/bbb",
            "https://a.example/dead",
            "https://a.example/f0",
        ]
    );
    assert_consistent(&s, T0, "peek order");
}

/// A batch whose changes fall far apart in a long lane (some in the same
/// run, some dozens of runs apart, before its first run and after its
/// last) moves each entry to its place: the lane stays in the queue order
/// and consistent.
#[test]
fn changes_far_apart_in_a_long_lane_land_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let mk = |url: &str, hours_old: i64| {
        let mut e = UrlEntry::new(NormUrl::parse(url).unwrap());
        e.lastmod = Some(Lastmod {
            unix_seconds: T0 - hours_old * 3600,
            nanos: 0,
            precision: Precision::Second,
        });
        e
    };
    // 2,000 URLs of one host, u0000 the newest, so first.
    let mut lastmod: HashMap<String, i64> = HashMap::new();
    {
        let s = Store::open(dir.path(), one_partition()).unwrap();
        let mut ingest = s.ingest(ts(T0));
        for i in 0..2000 {
            let url = format!("https://a.example/u{i:04}");
            ingest.entry(SITEMAPS[0], &mk(&url, 10 * i + 10)).unwrap();
            lastmod.insert(url, 10 * i + 10);
        }
        ingest.finish().unwrap();
    }
    let runs = list_urls(dir.path());
    assert!(runs.len() > 40, "a lane of many runs: {}", runs.len());
    let first_of = |r: usize| runs[r].1.entries[0].url.clone();
    let last_of = |r: usize| runs[r].1.entries.last().unwrap().url.clone();
    // Moved (to a newer lastmod: an older one is not believed): the first
    // entries of runs far apart (an entry at a run's key), a run's last
    // entry, two of one run to places far apart; new: one before every
    // entry, one after, some between.
    let moved = [
        (first_of(12), 25),
        (first_of(30), 3),
        (last_of(30), 5_005),
        (runs[38].1.entries[5].url.clone(), 12_005),
        (runs[38].1.entries[6].url.clone(), 7),
        (first_of(runs.len() - 1), 15_005),
    ];
    let added = [
        ("https://a.example/n-first".to_string(), 2),
        ("https://a.example/n-last".to_string(), 30_000),
        ("https://a.example/n-mid".to_string(), 9_997),
        ("https://a.example/n-mid2".to_string(), 2_005),
    ];
    let s = Store::open(dir.path(), one_partition()).unwrap();
    let mut ingest = s.ingest(ts(T0));
    for (url, hours) in moved.iter().chain(&added) {
        assert!(lastmod.get(url).is_none_or(|h| h > hours), "{url} newer");
        ingest.entry(SITEMAPS[0], &mk(url, *hours)).unwrap();
        lastmod.insert(url.clone(), *hours);
    }
    ingest.finish().unwrap();
    assert_consistent(&s, T0, "changes far apart");
    let got = peeked(&s, 5000, T0);
    let mut want: Vec<String> = lastmod.keys().cloned().collect();
    want.sort_by_key(|url| lastmod[url]);
    let first = got.iter().zip(&want).position(|(g, w)| g != w);
    assert!(
        got == want,
        "the newest lastmod first; they differ from {first:?} on"
    );
}

/// The URLs of the first `n` entries a lease would take at `now`.
fn peeked(s: &Store, n: usize, now: i64) -> Vec<String> {
    s.peek(n, ts(now))
        .unwrap()
        .into_iter()
        .map(|l| l.url)
        .collect()
}

/// Leases of one URL per host, many times, across many lists of a host in
/// one second: each lease gives each host its share, never two of a host.
#[test]
fn per_host_limits_across_many_lists() {
    let s = Store::in_memory(StoreOptions::default()).unwrap();
    let mut ingest = s.ingest(ts(T0));
    for i in 0..400 {
        let base = if i % 4 == 0 {
            "https://b.example"
        } else {
            "https://a.example"
        };
        let e = UrlEntry::new(NormUrl::parse(&format!("{base}/x{i}")).unwrap());
        ingest.entry(SITEMAPS[0], &e).unwrap();
    }
    ingest.finish().unwrap();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for k in 0..20 {
        let got = s
            .lease(
                &LeaseRequest::new(50)
                    .per_host(3)
                    .ttl(Duration::from_secs(3600)),
                ts(T0 + k),
            )
            .unwrap();
        let mut per: HashMap<&str, usize> = HashMap::new();
        for l in &got {
            *per.entry(keys::host_of(&l.url)).or_default() += 1;
            *seen.entry(l.url.clone()).or_default() += 1;
        }
        assert!(per.values().all(|&n| n <= 3), "{per:?}");
        assert_eq!(got.len(), 6, "lease {k}: {per:?}");
        assert_consistent(&s, T0 + k, "per host");
    }
    assert!(
        seen.values().all(|&n| n == 1),
        "a URL leased twice while held"
    );
}

/// A URL an ingest filed in a due list, given priority 1.0 by a second
/// sitemap in the same second (a sitemap index's children, read in one
/// walk): its schedule keeps its due second and class, so it stays in its
/// list, but with the rank it was filed with. `peek(1)` should give it (as
/// it does when the priority comes with the first read, and as a due key of
/// its own would have moved), but the scan reads the list in its stale
/// order and stops first.
#[test]
fn a_rank_change_within_the_due_second_reorders_its_list() {
    let long = "https://a.example/the-page-every-sitemap-calls-most-important";
    let build = |priority_first: bool| {
        let s = Store::in_memory(StoreOptions::default()).unwrap();
        let mut ingest = s.ingest(ts(T0));
        for i in 0..20 {
            let e = UrlEntry::new(NormUrl::parse(&format!("https://a.example/f{i}")).unwrap());
            ingest.entry(SITEMAPS[0], &e).unwrap();
        }
        let mut e = UrlEntry::new(NormUrl::parse(long).unwrap());
        if priority_first {
            e.priority = Some(1.0);
        }
        ingest.entry(SITEMAPS[0], &e).unwrap();
        ingest.finish().unwrap();
        if !priority_first {
            let mut ingest = s.ingest(ts(T0));
            e.priority = Some(1.0);
            ingest.entry(SITEMAPS[1], &e).unwrap();
            ingest.finish().unwrap();
        }
        assert_consistent(&s, T0, "rank");
        s
    };
    let first = |s: &Store| s.peek(1, ts(T0)).unwrap()[0].url.clone();
    assert_eq!(first(&build(true)), long, "priority read with the URL");
    let s = build(false);
    let view = s.url(long).unwrap().unwrap();
    assert_eq!(view.priority, Some(1.0), "{view:?}");
    assert_eq!(first(&s), long, "priority read a moment later");
}

/// `stats` (from the due index) and `full_stats` (from the records) agree
/// on when the next URL falls due while a lease runs and nothing is due.
#[test]
fn next_due_with_a_lease_running() {
    let s = Store::in_memory(StoreOptions::default()).unwrap();
    let mut ingest = s.ingest(ts(T0));
    let e = UrlEntry::new(NormUrl::parse("https://a.example/only").unwrap());
    ingest.entry(SITEMAPS[0], &e).unwrap();
    ingest.finish().unwrap();
    let got = s
        .lease(&LeaseRequest::new(1).ttl(Duration::from_secs(60)), ts(T0))
        .unwrap();
    assert_eq!(got.len(), 1);
    let (kept, full) = (
        s.stats(ts(T0 + 1)).unwrap(),
        s.full_stats(ts(T0 + 1)).unwrap(),
    );
    assert_eq!((kept.due_now, full.due_now), (0, 0));
    assert_eq!(kept.next_due, full.next_due);
}

/// A due list whose value does not decode: `check` names it, the queue
/// passes over it. Once one of its URLs moves (here: a notification), the
/// batch that edits the list replaces it with what it knows, and the other
/// URLs it held are named as missing by `check` and out of the queue, until
/// `repair` rebuilds the due index from the records.
#[test]
fn a_corrupt_due_list_is_named_and_repair_brings_its_urls_back() {
    let dir = tempfile::tempdir().unwrap();
    let urls = [
        "https://a.example/a",
        "https://a.example/b",
        "https://a.example/c",
    ];
    {
        let s = Store::open(dir.path(), one_partition()).unwrap();
        let mut ingest = s.ingest(ts(T0));
        for u in urls {
            ingest
                .entry(SITEMAPS[0], &UrlEntry::new(NormUrl::parse(u).unwrap()))
                .unwrap();
        }
        ingest.finish().unwrap();
        assert_consistent(&s, T0, "three listed");
        s.flush().unwrap();
    }
    {
        let lists = list_urls(dir.path());
        assert_eq!(lists.len(), 1);
        let db = sled::open(dir.path()).unwrap();
        let tree = db.open_tree("sitemapd").unwrap();
        tree.insert(&lists[0].0, &b"\x05\xff\xff\xff"[..]).unwrap();
        db.flush().unwrap();
    }
    let s = Store::open(dir.path(), one_partition()).unwrap();
    let report = s.check().unwrap();
    assert_eq!(report.corrupt.len(), 1, "{report:?}");
    assert!(s.peek(10, ts(T0)).unwrap().is_empty());
    s.notify_all([urls[0]], ts(T0 + 5)).unwrap();
    let report = s.check().unwrap();
    assert_eq!(report.missing_due, [urls[1], urls[2]], "{report:?}");
    assert_eq!(
        peeked(&s, 10, T0 + DAY),
        [urls[0]],
        "b and c are out of the queue"
    );
    let (kept, full) = (
        s.stats(ts(T0 + DAY)).unwrap(),
        s.full_stats(ts(T0 + DAY)).unwrap(),
    );
    assert_eq!((kept.due_now, full.due_now), (1, 3));
    s.repair().unwrap();
    assert_consistent(&s, T0 + DAY, "repaired");
    let mut back = peeked(&s, 10, T0 + DAY);
    back.sort();
    assert_eq!(back, urls, "back in the queue");
}
