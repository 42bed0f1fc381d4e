//! A queue a crawler can follow as it is: robots.txt rules at
//! lease time, Crawl-delay spacing, redirects, gone pages and errors, and
//! the order among URLs of equal urgency. On a sled store on disk.

use std::time::Duration;

use sitemapd_parser::date::Precision;
use sitemapd_parser::{HostKey, Lastmod, NormUrl, RobotsRules, UrlEntry};
use sitemapd_scheduler::policy::Reason;
use sitemapd_scheduler::{
    Completion, LeaseRequest, Outcome, SitemapFetch, Store, StoreOptions, Timestamp, UrlStatus,
};

const T0: i64 = 1_700_000_000;
const DAY: i64 = 86_400;
const SM: &str = "https://a.example/sitemap.xml";

fn ts(t: i64) -> Timestamp {
    Timestamp::from_unix(t)
}

fn host() -> HostKey {
    NormUrl::parse("https://a.example/").unwrap().host_key()
}

fn url(path: &str) -> String {
    format!("https://a.example{path}")
}

fn store(dir: &tempfile::TempDir) -> Store {
    Store::open(dir.path(), StoreOptions::default()).unwrap()
}

fn entry(path: &str, priority: Option<f32>, lastmod: Option<i64>) -> UrlEntry {
    let mut e = UrlEntry::new(NormUrl::parse(&url(path)).unwrap());
    e.priority = priority;
    e.lastmod = lastmod.map(|at| Lastmod {
        unix_seconds: at,
        nanos: 0,
        precision: Precision::Day,
    });
    e
}

fn read(store: &Store, now: i64, entries: &[UrlEntry]) {
    let mut ingest = store.ingest(ts(now));
    for e in entries {
        ingest.entry(SM, e).unwrap();
    }
    let fetch = SitemapFetch {
        status: 200,
        complete: true,
        ..SitemapFetch::default()
    };
    ingest.sitemap_fetched(SM, &fetch).unwrap();
    ingest.finish().unwrap();
}

fn disallow(patterns: &[&str], crawl_delay: Option<f64>) -> RobotsRules {
    RobotsRules::new(
        patterns.iter().map(|p| (false, p.to_string())).collect(),
        crawl_delay,
    )
}

fn due_paths(store: &Store, now: i64) -> Vec<String> {
    due_paths_n(store, now, 100)
}

fn due_paths_n(store: &Store, now: i64, n: usize) -> Vec<String> {
    store
        .peek(n, ts(now))
        .unwrap()
        .into_iter()
        .map(|l| l.url.trim_start_matches("https://a.example").to_string())
        .collect()
}

fn status(store: &Store, path: &str) -> UrlStatus {
    store.url(&url(path)).unwrap().unwrap().status
}

/// `due` is `wait` seconds after `from`, give or take the queue's ±5 %
/// jitter.
fn assert_due(due: Timestamp, from: i64, wait: i64) {
    let off = (due.unix() - (from + wait)).abs();
    assert!(
        off <= wait / 20 + 1,
        "due {} is not {wait} s after {from}",
        due.unix()
    );
}

fn complete(store: &Store, path: &str, outcome: Outcome, now: i64) {
    store
        .complete(&url(path), &Completion::from(outcome), ts(now))
        .unwrap();
}

/// The example site: among six new URLs, the home page (priority 1.0)
/// first, then by priority, then the newest lastmod, then the shortest
/// path; never alphabetical.
#[test]
fn equal_urgency_goes_by_priority_then_newest_lastmod_then_shortest_path() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    read(
        &s,
        T0,
        &[
            entry("/aaa-old", Some(0.1), Some(T0 - 2000 * DAY)),
            entry("/bbb", Some(0.5), None),
            entry("/zzz-home", Some(1.0), Some(T0 - 5 * DAY)),
            entry("/moved", None, None),
            entry("/dead", None, None),
            entry("/ccc-newer", Some(0.5), Some(T0 - DAY)),
        ],
    );
    assert_eq!(
        due_paths(&s, T0),
        [
            "/zzz-home",
            "/ccc-newer",
            "/bbb",
            "/dead",
            "/moved",
            "/aaa-old"
        ]
    );
    let leased: Vec<String> = s
        .lease(&LeaseRequest::new(6).per_host(6), ts(T0))
        .unwrap()
        .into_iter()
        .map(|l| l.url)
        .collect();
    assert_eq!(leased[0], url("/zzz-home"));
    assert_eq!(leased[5], url("/aaa-old"));
}

/// A big site's first queue: of 500 new URLs due in the same second, the
/// five with the newest lastmods, newest first; not the first five by URL.
#[test]
fn many_urls_due_at_once_come_newest_first_not_alphabetically() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    // /post-000 is the oldest post, /post-499 the newest.
    let entries: Vec<UrlEntry> = (0..500)
        .map(|i| entry(&format!("/post-{i:03}"), None, Some(T0 - (500 - i) * DAY)))
        .collect();
    read(&s, T0, &entries);
    assert_eq!(
        due_paths_n(&s, T0, 5),
        [
            "/post-499",
            "/post-498",
            "/post-497",
            "/post-496",
            "/post-495"
        ]
    );
    let leased = s.lease(&LeaseRequest::new(3).per_host(3), ts(T0)).unwrap();
    assert_eq!(leased[0].url, url("/post-499"));
    // Without lastmods: the shortest URL first.
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let mut entries: Vec<UrlEntry> = (0..300)
        .map(|i| entry(&format!("/a/{i:03}/deep"), None, None))
        .collect();
    entries.push(entry("/zz", None, None));
    read(&s, T0, &entries);
    assert_eq!(due_paths_n(&s, T0, 1), ["/zz"]);
}

/// Disallowed URLs are never due nor leased, stay in the store marked
/// blocked, and come back when the rules change; a URL first seen under the
/// rules is blocked from the start.
#[test]
fn robots_rules_block_at_lease_time_and_lift() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    read(
        &s,
        T0,
        &[
            entry("/", None, None),
            entry("/private/secret", Some(0.9), None),
        ],
    );
    let update = s
        .set_robots(&host(), &disallow(&["/private/"], None), ts(T0))
        .unwrap();
    assert_eq!(
        (update.changed, update.blocked, update.unblocked),
        (true, 1, 0)
    );
    assert_eq!(due_paths(&s, T0), ["/"]);
    assert_eq!(status(&s, "/private/secret"), UrlStatus::Blocked);
    let leased = s.lease(&LeaseRequest::new(10), ts(T0)).unwrap();
    assert_eq!(leased.len(), 1);
    assert_eq!(leased[0].url, url("/"));
    let stats = s.stats(ts(T0)).unwrap();
    assert_eq!((stats.active, stats.blocked), (1, 1));
    assert!(s.check().unwrap().is_ok());

    // A URL a later read brings in is blocked from the start.
    read(
        &s,
        T0 + 10,
        &[
            entry("/", None, None),
            entry("/private/secret", Some(0.9), None),
            entry("/private/new", None, None),
        ],
    );
    assert_eq!(status(&s, "/private/new"), UrlStatus::Blocked);
    assert!(s.check().unwrap().is_ok());

    // The same rules again: nothing to do.
    let same = s
        .set_robots(&host(), &disallow(&["/private/"], None), ts(T0 + 20))
        .unwrap();
    assert!(!same.changed);

    // The rules lift: both back, due now.
    let lifted = s
        .set_robots(&host(), &RobotsRules::allow_all(), ts(T0 + 30))
        .unwrap();
    assert_eq!((lifted.blocked, lifted.unblocked), (0, 2));
    assert_eq!(status(&s, "/private/secret"), UrlStatus::Queued);
    assert_eq!(due_paths(&s, T0 + 30), ["/private/secret", "/private/new"]);
    assert!(s.check().unwrap().is_ok());
}

/// A URL a sitemap brings in under rules that disallow it is blocked from
/// its first sighting: never due, never leased.
#[test]
fn a_url_first_seen_under_the_rules_is_blocked_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    s.set_robots(&host(), &disallow(&["/*.pdf$"], None), ts(T0))
        .unwrap();
    read(
        &s,
        T0,
        &[entry("/a.pdf", None, None), entry("/b", None, None)],
    );
    assert_eq!(status(&s, "/a.pdf"), UrlStatus::Blocked);
    let leased = s.lease(&LeaseRequest::new(10), ts(T0)).unwrap();
    assert_eq!(
        leased.iter().map(|l| l.url.as_str()).collect::<Vec<_>>(),
        [url("/b")]
    );
    assert!(s.check().unwrap().is_ok());
}

/// A host's lease spacing is the longer of the lease delay and its
/// Crawl-delay, capped at 30 s.
#[test]
fn crawl_delay_spaces_leases() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let entries: Vec<UrlEntry> = (0..4)
        .map(|i| entry(&format!("/p{i}"), None, None))
        .collect();
    read(&s, T0, &entries);
    s.set_robots(&host(), &disallow(&[], Some(2.0)), ts(T0))
        .unwrap();
    let leased = s
        .lease(
            &LeaseRequest::new(3)
                .per_host(3)
                .ttl(Duration::from_secs(60)),
            ts(T0),
        )
        .unwrap();
    let starts: Vec<i64> = leased.iter().map(|l| l.not_before.unix()).collect();
    assert_eq!(starts, [T0, T0 + 2, T0 + 4]);
    assert_eq!(s.host(&host()).unwrap().lease_delay, Duration::from_secs(2));
    s.set_robots(&host(), &disallow(&[], Some(3600.0)), ts(T0))
        .unwrap();
    assert_eq!(
        s.host(&host()).unwrap().lease_delay,
        Duration::from_secs(30)
    );
}

/// A redirect stores its target (same host, robots applied, source
/// recorded), never makes the source due at once, and a permanent one
/// retires the source the second time; a temporary one only backs off.
#[test]
fn redirects_store_the_target_and_retire_a_permanent_source() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    read(
        &s,
        T0,
        &[entry("/moved", Some(0.8), None), entry("/temp", None, None)],
    );
    s.set_robots(&host(), &disallow(&["/private/"], None), ts(T0))
        .unwrap();
    let permanent = |to: &str| Outcome::Redirected {
        to: to.into(),
        status: 301,
    };
    complete(&s, "/moved", permanent("/new-home"), T0 + 10);
    let moved = s.url(&url("/moved")).unwrap().unwrap();
    assert!(moved.due.unix() > T0 + 10, "not due at once: {moved:?}");
    assert_eq!(moved.reason, Reason::Retry);
    assert_eq!(moved.status, UrlStatus::Queued);
    let target = s.url(&url("/new-home")).unwrap().unwrap();
    assert_eq!(
        target.redirected_from.as_deref(),
        Some(url("/moved").as_str())
    );
    assert_eq!((target.reason, target.priority), (Reason::New, Some(0.8)));
    assert_eq!(due_paths(&s, T0 + 10), ["/temp", "/new-home"]);

    // The second permanent redirect retires it: probed in 30 days.
    complete(
        &s,
        "/moved",
        permanent("https://a.example/new-home"),
        moved.due.unix(),
    );
    let retired = s.url(&url("/moved")).unwrap().unwrap();
    assert_eq!(retired.status, UrlStatus::Moved);
    assert_eq!(retired.reason, Reason::Probe);
    assert_due(retired.due, moved.due.unix(), 30 * DAY);

    // Temporary redirects back off, doubling, and never retire.
    let mut last_wait = 0;
    for k in 0..4 {
        let now = T0 + 100 + k * DAY;
        let temporary = Outcome::Redirected {
            to: "/private/x".into(),
            status: 302,
        };
        complete(&s, "/temp", temporary, now);
        let v = s.url(&url("/temp")).unwrap().unwrap();
        assert_eq!((v.status, v.reason), (UrlStatus::Queued, Reason::Retry));
        let wait = v.due.unix() - now;
        assert!(wait > last_wait, "backs off: {wait} after {last_wait}");
        last_wait = wait;
    }
    // Its target is stored, blocked by the rules.
    assert_eq!(status(&s, "/private/x"), UrlStatus::Blocked);
    // Another host's target is not stored.
    complete(
        &s,
        "/temp",
        Outcome::Redirected {
            to: "https://elsewhere.example/x".into(),
            status: 301,
        },
        T0 + 10 * DAY,
    );
    assert!(s.url("https://elsewhere.example/x").unwrap().is_none());
    assert!(s.check().unwrap().is_ok());
}

/// 410 retires at once, 404 on the third in a row; a sitemap still listing
/// a gone URL does not revive it; a probe that answers does.
#[test]
fn gone_retires_and_only_an_answer_revives() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let entries = [entry("/dead", None, None), entry("/missing", None, None)];
    read(&s, T0, &entries);
    complete(&s, "/dead", Outcome::Gone(410), T0 + 10);
    let dead = s.url(&url("/dead")).unwrap().unwrap();
    assert_eq!((dead.status, dead.reason), (UrlStatus::Gone, Reason::Probe));
    assert_due(dead.due, T0 + 10, 30 * DAY);

    for k in 1..=3 {
        let now = T0 + k * DAY;
        complete(&s, "/missing", Outcome::Gone(404), now);
        let v = s.url(&url("/missing")).unwrap().unwrap();
        if k < 3 {
            assert_eq!(
                (v.status, v.reason),
                (UrlStatus::Queued, Reason::Retry),
                "404 #{k}"
            );
        } else {
            assert_eq!(
                (v.status, v.reason),
                (UrlStatus::Gone, Reason::Probe),
                "404 #{k}"
            );
        }
    }

    // Listed again, with a new lastmod even: still gone, still probed only.
    let mut again = entries.clone();
    again[0].lastmod = Some(Lastmod {
        unix_seconds: T0 + 5 * DAY,
        nanos: 0,
        precision: Precision::Second,
    });
    read(&s, T0 + 5 * DAY, &again);
    let dead = s.url(&url("/dead")).unwrap().unwrap();
    assert_eq!((dead.status, dead.reason), (UrlStatus::Gone, Reason::Probe));
    assert!(due_paths(&s, T0 + 5 * DAY).is_empty());
    let stats = s.stats(ts(T0 + 5 * DAY)).unwrap();
    assert_eq!((stats.gone, stats.last_outcomes["gone"]), (2, 2));
    assert!(stats.next_due.is_some());

    // The probe answers: back in the queue on its normal schedule.
    let probe_at = dead.due.unix();
    assert_eq!(due_paths(&s, probe_at), ["/dead"]);
    complete(&s, "/dead", Outcome::Changed, probe_at);
    let revived = s.url(&url("/dead")).unwrap().unwrap();
    assert_eq!(revived.status, UrlStatus::Queued);
    assert_ne!(revived.reason, Reason::Probe);
    assert!(s.check().unwrap().is_ok());
}

/// Errors back off per URL; five failures of one host's URLs in a row
/// back the whole host off; a success ends it.
#[test]
fn errors_back_off_per_url_and_per_host() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let entries: Vec<UrlEntry> = (0..8)
        .map(|i| entry(&format!("/p{i}"), None, None))
        .collect();
    read(&s, T0, &entries);
    for i in 0..5 {
        complete(&s, &format!("/p{i}"), Outcome::Error(503), T0 + 10);
    }
    let v = s.url(&url("/p0")).unwrap().unwrap();
    assert_eq!(v.reason, Reason::Retry);
    assert_due(v.due, T0 + 10, 3600);
    // The host is held back: its other URLs, due now, are not leased.
    assert!(s.host(&host()).unwrap().next_allowed.unix() >= T0 + 10 + 3600);
    assert!(
        s.lease(&LeaseRequest::new(10), ts(T0 + 20))
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        due_paths(&s, T0 + 20).len(),
        3,
        "still due, held by politeness"
    );
    // After the back-off the host is leased again; a success resets it.
    let later = s.host(&host()).unwrap().next_allowed.unix();
    let leased = s.lease(&LeaseRequest::new(1), ts(later)).unwrap();
    assert_eq!(leased.len(), 1);
    complete(
        &s,
        leased[0].url.trim_start_matches("https://a.example"),
        Outcome::Changed,
        later,
    );
    complete(&s, "/p5", Outcome::Error(500), later + 1);
    assert!(s.host(&host()).unwrap().next_allowed.unix() < later + 3600);
}

/// The counts `stats` answers from (kept per host, changed in the batch
/// that changes the records) equal a count over every record after each
/// kind of write: ingest, robots rules, lease, completions (gone, moved,
/// redirected to a new URL, error), a push notification, retirement.
#[test]
fn the_kept_counts_equal_a_full_count_after_every_kind_of_write() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let same = |s: &Store, now: i64, step: &str| {
        let (kept, full) = (s.stats(ts(now)).unwrap(), s.full_stats(ts(now)).unwrap());
        let counts = |x: &sitemapd_scheduler::Stats| {
            (
                x.active,
                x.retired,
                x.blocked,
                x.gone,
                x.moved,
                x.never_fetched,
                x.with_lastmod,
                x.due_now,
                x.last_outcomes.clone(),
                x.sitemaps,
            )
        };
        assert_eq!(counts(&kept), counts(&full), "after {step}");
        assert!(s.check().unwrap().is_ok(), "after {step}");
        kept
    };
    let paths: Vec<String> = (0..20).map(|i| format!("/p{i}")).collect();
    let entries: Vec<UrlEntry> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| entry(p, None, (i % 2 == 0).then_some(T0 - DAY)))
        .collect();
    read(&s, T0, &entries);
    let st = same(&s, T0, "ingest");
    assert_eq!((st.active, st.never_fetched, st.with_lastmod), (20, 20, 10));
    s.set_robots(&host(), &disallow(&["/p1"], None), ts(T0))
        .unwrap();
    // /p1 and /p10../p19 are disallowed.
    assert_eq!(same(&s, T0, "robots").blocked, 11);
    let leased = s
        .lease(
            &LeaseRequest::new(9)
                .per_host(9)
                .ttl(Duration::from_secs(60)),
            ts(T0),
        )
        .unwrap();
    assert_eq!(leased.len(), 9);
    assert_eq!(s.stats(ts(T0)).unwrap().leased, 9);
    same(&s, T0, "lease");
    let outcomes = [
        Outcome::Gone(410),
        Outcome::Redirected {
            to: url("/new"),
            status: 301,
        },
        Outcome::Error(503),
        Outcome::Changed,
        Outcome::NotModified,
    ];
    for (l, outcome) in leased.iter().zip(outcomes) {
        s.complete(&l.url, &Completion::from(outcome), ts(T0 + 10))
            .unwrap();
    }
    let st = same(&s, T0 + 10, "completions");
    assert_eq!((st.gone, st.leased), (1, 4));
    s.notify_all(["https://a.example/pushed"], ts(T0 + 20))
        .unwrap();
    same(&s, T0 + 20, "notification");
    // A complete read without the even paths retires them (in time).
    let odd: Vec<UrlEntry> = entries.iter().skip(1).step_by(2).cloned().collect();
    for k in 1..=4 {
        read(&s, T0 + k * DAY, &odd);
        same(&s, T0 + k * DAY, "a read without half the URLs");
    }
    assert!(s.stats(ts(T0 + 4 * DAY)).unwrap().retired > 0);
}

/// A host with several due lists in one second (300 new URLs) does not
/// starve the next host: once it has its share, the lease passes over the
/// rest of its lists, and the URLs it hands out are its best ranked.
#[test]
fn a_host_with_many_due_lists_gets_its_share_and_no_more() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let mut ingest = s.ingest(ts(T0));
    for i in 0..300 {
        ingest
            .entry(SM, &entry(&format!("/a-{i:03}"), None, Some(T0 - DAY + i)))
            .unwrap();
    }
    let b = "https://b.example/sitemap.xml";
    for i in 0..5 {
        let e = UrlEntry::new(NormUrl::parse(&format!("https://b.example/b-{i}")).unwrap());
        ingest.entry(b, &e).unwrap();
    }
    ingest.finish().unwrap();
    let leased = s.lease(&LeaseRequest::new(20).per_host(5), ts(T0)).unwrap();
    let (a, b): (Vec<_>, Vec<_>) = leased
        .iter()
        .map(|l| l.url.as_str())
        .partition(|u| u.starts_with("https://a.example"));
    assert_eq!((a.len(), b.len()), (5, 5), "{leased:?}");
    // The newest lastmods of a.example first.
    assert!(a.contains(&"https://a.example/a-299"), "{a:?}");
    assert!(s.check().unwrap().is_ok());
}

/// A day's lastmod that moves to a new day after a fetch that day dates
/// the change after the fetch when a read made since the fetch (a 304
/// counts) still showed the old day: due at once as a known change, not at
/// the day's end. Without such a read since the fetch, or when another
/// sitemap lists the URL too, the move is not dated.
#[test]
fn a_coarse_lastmod_that_moved_after_a_read_since_the_fetch_is_a_known_change() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(
        dir.path(),
        StoreOptions {
            policy: Some("lastmod".into()),
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let day0 = T0 - T0.rem_euclid(DAY);
    let paths: Vec<String> = (0..6).map(|i| format!("/p{i}")).collect();
    let listing = |lastmod: &dyn Fn(&str) -> i64| -> Vec<UrlEntry> {
        paths
            .iter()
            .map(|p| entry(p, None, Some(lastmod(p))))
            .collect()
    };
    // First fetches, then every lastmod moves to the next day and every
    // fetch finds the change: the host earns trust.
    read(&s, day0 + 3_600, &listing(&|_| day0 - DAY));
    for p in &paths {
        complete(&s, p, Outcome::Changed, day0 + 3_700);
    }
    read(&s, day0 + DAY + 3_600, &listing(&|_| day0 + DAY));
    for p in &paths {
        assert_eq!(
            s.url(&url(p)).unwrap().unwrap().reason,
            Reason::LastmodNewer
        );
        complete(&s, p, Outcome::Changed, day0 + DAY + 3_700);
    }
    // On day 2, p0 is fetched at 00:05 and p1 at 07:00; a read at 06:00
    // finds the sitemap unchanged (304: every entry as before, p0's and
    // p1's old day); at 10:00 both show day 2, which started before either
    // fetch. p0's move is dated after its fetch, p1's is not.
    // p2 is listed by a second sitemap too: which read last showed its
    // old day is not known (the other may lag), so its move is not dated.
    let other = "https://a.example/other.xml";
    let mut second = s.ingest(ts(day0 + DAY + 7_200));
    second
        .entry(other, &entry("/p2", None, Some(day0 + DAY)))
        .unwrap();
    let body = SitemapFetch {
        status: 200,
        complete: true,
        ..SitemapFetch::default()
    };
    second.sitemap_fetched(other, &body).unwrap();
    second.finish().unwrap();
    let day2 = day0 + 2 * DAY;
    complete(&s, "/p0", Outcome::NotModified, day2 + 300);
    complete(&s, "/p2", Outcome::NotModified, day2 + 300);
    let mut unchanged = s.ingest(ts(day2 + 6 * 3_600));
    let not_modified = SitemapFetch {
        status: 304,
        ..SitemapFetch::default()
    };
    unchanged.sitemap_fetched(SM, &not_modified).unwrap();
    unchanged.finish().unwrap();
    complete(&s, "/p1", Outcome::NotModified, day2 + 7 * 3_600);
    read(
        &s,
        day2 + 10 * 3_600,
        &listing(&|p| {
            if ["/p0", "/p1", "/p2"].contains(&p) {
                day2
            } else {
                day0 + DAY
            }
        }),
    );
    let p0 = s.url(&url("/p0")).unwrap().unwrap();
    assert_eq!(p0.reason, Reason::LastmodNewer);
    assert!(p0.due.unix() <= day2 + 10 * 3_600, "{}", p0.due.unix());
    for late in ["/p1", "/p2"] {
        let v = s.url(&url(late)).unwrap().unwrap();
        assert_ne!(v.reason, Reason::LastmodNewer, "{late}");
        assert!(v.due.unix() > day2 + 10 * 3_600, "{late}: {}", v.due.unix());
    }
    let leased = s
        .lease(&LeaseRequest::new(10).per_host(10), ts(day2 + 10 * 3_600))
        .unwrap();
    assert_eq!(
        leased.first().map(|l| l.url.as_str()),
        Some(url("/p0").as_str())
    );
    assert!(s.check().unwrap().is_ok());
}
