//! The store's contract: ingest merge and idempotence, retirement and
//! revival, the queue (lease, politeness, expiry, complete), the check.

use std::time::Duration;

use sitemapd_parser::date::Precision;
use sitemapd_parser::{ChangeFreq, Lastmod, NormUrl, UrlEntry};
use sitemapd_scheduler::{Completion, Outcome, SitemapFetch, Store, StoreError, StoreOptions};
use sitemapd_scheduler::{LeaseRequest, Timestamp, UrlView};

const T0: i64 = 1_700_000_000;
const DAY: i64 = 86_400;

/// The key of host `h`.
fn host(h: &str) -> sitemapd_parser::HostKey {
    NormUrl::parse(&format!("https://{h}/")).unwrap().host_key()
}

/// Unix seconds as the store's timestamp.
fn ts(t: i64) -> Timestamp {
    Timestamp::from_unix(t)
}

/// Seconds as a lease time to live.
fn secs(s: i64) -> Duration {
    Duration::from_secs(s.unsigned_abs())
}

fn store(dir: &tempfile::TempDir) -> Store {
    Store::open(dir.path(), StoreOptions::default()).unwrap()
}

fn entry(url: &str) -> UrlEntry {
    UrlEntry::new(NormUrl::parse(url).unwrap())
}

fn with_lastmod(url: &str, at: i64, precision: Precision) -> UrlEntry {
    let mut e = entry(url);
    e.lastmod = Some(Lastmod {
        unix_seconds: at,
        nanos: 0,
        precision,
    });
    e
}

fn complete_read() -> SitemapFetch {
    SitemapFetch {
        status: 200,
        complete: true,
        ..SitemapFetch::default()
    }
}

/// One complete read of `sitemap` listing `entries`, at `now`.
fn read(
    store: &Store,
    now: i64,
    sitemap: &str,
    entries: &[UrlEntry],
) -> sitemapd_scheduler::IngestStats {
    let mut ingest = store.ingest(ts(now));
    for e in entries {
        ingest.entry(sitemap, e).unwrap();
    }
    ingest.sitemap_fetched(sitemap, &complete_read()).unwrap();
    ingest.finish().unwrap()
}

const SM: &str = "https://a.example/sitemap.xml";

#[test]
fn new_urls_are_due_at_once_and_reingest_changes_only_last_seen() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let entries: Vec<UrlEntry> = (0..50)
        .map(|i| with_lastmod(&format!("https://a.example/p{i}"), T0 - DAY, Precision::Day))
        .collect();
    let stats = read(&s, T0, SM, &entries);
    assert_eq!((stats.entries, stats.new), (50, 50));
    let before = s.url("https://a.example/p7").unwrap().unwrap();
    assert_eq!(before.due.unix(), T0);
    assert_eq!(s.peek(100, ts(T0)).unwrap().len(), 50);
    assert!(s.check().unwrap().is_ok());

    let stats = read(&s, T0 + 3600, SM, &entries);
    assert_eq!((stats.new, stats.updated, stats.unchanged), (0, 0, 50));
    let after = s.url("https://a.example/p7").unwrap().unwrap();
    assert_eq!(after.last_seen.unix(), T0 + 3600);
    assert_eq!(
        UrlRecordView::of(&after),
        UrlRecordView::of(&before),
        "only last-seen and the source stamp may change"
    );
    assert_eq!(s.sitemap(SM).unwrap().unwrap().reads, 2);
    assert!(s.check().unwrap().is_ok());
}

/// The fields an unchanged re-ingest must not touch.
#[derive(Debug, PartialEq)]
struct UrlRecordView {
    first_seen: i64,
    lastmod: Option<i64>,
    history: usize,
    priority: Option<f32>,
    due: i64,
    retired: bool,
}

impl UrlRecordView {
    fn of(r: &UrlView) -> Self {
        Self {
            first_seen: r.first_seen.unix(),
            lastmod: r.lastmod.map(Timestamp::unix),
            history: r.lastmod_changes,
            priority: r.priority,
            due: r.due.unix(),
            retired: r.retired,
        }
    }
}

#[test]
fn merge_rule_across_sitemaps_and_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let url = "https://a.example/page";
    let mut a = with_lastmod(url, T0 - 10 * DAY, Precision::Second);
    a.priority = Some(0.3);
    a.changefreq = Some(ChangeFreq::Monthly);
    let mut b = with_lastmod(url, T0 - 2 * DAY, Precision::Second);
    b.priority = Some(0.8);
    b.changefreq = Some(ChangeFreq::Daily);
    let future = with_lastmod(url, T0 + 30 * DAY, Precision::Second);
    let mut ingest = s.ingest(ts(T0));
    ingest.entry("https://a.example/one.xml", &a).unwrap();
    ingest.entry("https://a.example/two.xml", &b).unwrap();
    ingest
        .entry("https://a.example/three.xml", &future)
        .unwrap();
    ingest.finish().unwrap();
    let r = s.url(url).unwrap().unwrap();
    assert_eq!(
        r.lastmod.unwrap().unix(),
        T0 - 2 * DAY,
        "newest believable, not the future one"
    );
    assert_eq!(r.priority, Some(0.8));
    assert_eq!(r.changefreq, Some(ChangeFreq::Daily));
    assert_eq!(r.sources, 3);

    // A later session: the site lowered its hints, and an older lastmod
    // from a stale sitemap does not move lastmod back.
    let mut c = with_lastmod(url, T0 - 20 * DAY, Precision::Second);
    c.priority = Some(0.1);
    let mut ingest = s.ingest(ts(T0 + DAY));
    ingest.entry("https://a.example/one.xml", &c).unwrap();
    ingest.finish().unwrap();
    let r = s.url(url).unwrap().unwrap();
    assert_eq!(r.priority, Some(0.1));
    assert_eq!(r.changefreq, None);
    assert_eq!(r.lastmod.unwrap().unix(), T0 - 2 * DAY);
    // b, then c (a was merged away within the first batch: b is newer).
    assert_eq!(r.lastmod_changes, 2);
}

#[test]
fn urls_are_retired_after_k_complete_absences_and_revived() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let all: Vec<UrlEntry> = (0..10)
        .map(|i| entry(&format!("https://a.example/p{i}")))
        .collect();
    read(&s, T0, SM, &all);
    let fewer = &all[..8];
    for k in 1..=2 {
        let stats = read(&s, T0 + k * DAY, SM, fewer);
        assert_eq!(stats.retired, 0, "read {k}: not yet");
    }
    // A failed read counts for nothing.
    let mut ingest = s.ingest(ts(T0 + 3 * DAY));
    ingest
        .sitemap_fetched(
            SM,
            &SitemapFetch {
                status: 503,
                ..SitemapFetch::default()
            },
        )
        .unwrap();
    assert_eq!(ingest.finish().unwrap().retired, 0);
    let stats = read(&s, T0 + 4 * DAY, SM, fewer);
    assert_eq!(stats.retired, 2);
    let gone = s.url("https://a.example/p9").unwrap().unwrap();
    assert!(gone.retired);
    assert!(
        s.peek(100, ts(T0 + 100 * DAY))
            .unwrap()
            .iter()
            .all(|l| !l.url.ends_with("/p9"))
    );
    assert!(s.check().unwrap().is_ok());

    // Listed elsewhere too: absence from one sitemap is not enough.
    let other = "https://a.example/other.xml";
    read(&s, T0 + 5 * DAY, other, &[entry("https://a.example/p0")]);
    for k in 6..=9 {
        read(&s, T0 + k * DAY, SM, &all[1..8]);
    }
    assert!(!s.url("https://a.example/p0").unwrap().unwrap().retired);

    // It comes back.
    let stats = read(&s, T0 + 10 * DAY, SM, &all);
    assert_eq!(stats.revived, 2);
    assert!(!s.url("https://a.example/p9").unwrap().unwrap().retired);
    assert!(s.check().unwrap().is_ok());
}

#[test]
fn lease_respects_host_share_politeness_and_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let mut entries: Vec<UrlEntry> = (0..20)
        .map(|i| entry(&format!("https://a.example/p{i}")))
        .collect();
    entries.extend((0..20).map(|i| entry(&format!("https://b.example/p{i}"))));
    let mut ingest = s.ingest(ts(T0));
    for e in &entries {
        ingest.entry(SM, e).unwrap();
    }
    ingest.finish().unwrap();

    let leased = s
        .lease(&LeaseRequest::new(10).per_host(3).ttl(secs(300)), ts(T0))
        .unwrap();
    assert_eq!(leased.len(), 6, "3 per host: {leased:?}");
    let a: Vec<i64> = leased
        .iter()
        .filter(|l| l.url.contains("a.example"))
        .map(|l| l.not_before.unix())
        .collect();
    assert_eq!(a, [T0, T0 + 1, T0 + 2], "spaced by the host's delay");
    assert!(
        leased
            .iter()
            .all(|l| l.reason.as_str() == "new" && l.lease.is_some())
    );
    // Leased URLs are not handed out again while the lease holds.
    let again = s
        .lease(
            &LeaseRequest::new(100).per_host(100).ttl(secs(300)),
            ts(T0 + 10),
        )
        .unwrap();
    assert!(again.iter().all(|l| !leased.iter().any(|m| m.url == l.url)));
    // After the lease expires without an outcome, they are due again.
    let later = s.peek(1000, ts(T0 + 301)).unwrap();
    let expired: Vec<_> = later
        .iter()
        .filter(|l| l.reason.as_str() == "lease-expired")
        .collect();
    assert_eq!(expired.len(), 6);
    assert!(s.check().unwrap().is_ok());
}

#[test]
fn complete_updates_the_record_and_reschedules() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    read(&s, T0, SM, &[entry("https://a.example/x")]);
    let leased = s
        .lease(&LeaseRequest::new(1).per_host(1).ttl(secs(300)), ts(T0))
        .unwrap();
    let done = Completion {
        outcome: Outcome::Changed,
        status: None,
        etag: Some("\"e1\"".into()),
        last_modified: None,
    };
    s.complete(&leased[0].url, &done, ts(T0 + 10)).unwrap();
    let r = s.url("https://a.example/x").unwrap().unwrap();
    assert_eq!(r.fetches, 1);
    assert_eq!(r.last_success, Some(ts(T0 + 10)));
    assert_eq!(r.etag.as_deref(), Some("\"e1\""));
    assert_eq!(r.leased_until, None);
    assert!(r.due.unix() > T0 + 10);
    s.complete(
        "https://a.example/x",
        &Completion::from(Outcome::NotModified),
        ts(T0 + DAY),
    )
    .unwrap();
    let r = s.url("https://a.example/x").unwrap().unwrap();
    assert_eq!(r.visits.len(), 1);
    assert_eq!(r.visits[0].interval as i64, DAY - 10);
    assert!(!r.visits[0].changed);
    s.complete(
        "https://a.example/x",
        &Completion::from(Outcome::Error(503)),
        ts(T0 + 2 * DAY),
    )
    .unwrap();
    assert_eq!(
        s.url("https://a.example/x")
            .unwrap()
            .unwrap()
            .errors_in_a_row,
        1
    );
    let err = s
        .complete(
            "https://a.example/unknown",
            &Completion::from(Outcome::Changed),
            ts(T0),
        )
        .unwrap_err();
    assert!(matches!(err, StoreError::UnknownUrl(_)), "{err}");
    assert!(err.to_string().contains("unknown URL"));
    assert!(s.check().unwrap().is_ok());
}

#[test]
fn complete_all_is_the_same_as_one_complete_after_another() {
    let urls: Vec<String> = (0..6).map(|i| format!("https://a.example/p{i}")).collect();
    let entries: Vec<UrlEntry> = urls.iter().map(|u| entry(u)).collect();
    // Every outcome, a URL twice (in order), and one the store lacks.
    let reports: Vec<(String, Completion)> = vec![
        (urls[0].clone(), Completion::from(Outcome::Changed)),
        (urls[1].clone(), Completion::from(Outcome::NotModified)),
        (urls[2].clone(), Completion::from(Outcome::Gone(404))),
        (
            "https://a.example/unknown".into(),
            Completion::from(Outcome::Changed),
        ),
        (urls[3].clone(), Completion::from(Outcome::Error(503))),
        (
            urls[4].clone(),
            Completion::from(Outcome::Redirected {
                to: "https://a.example/new".into(),
                status: 301,
            }),
        ),
        (urls[0].clone(), Completion::from(Outcome::NotModified)),
    ];
    let (one, all) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (one, all) = (store(&one), store(&all));
    for s in [&one, &all] {
        read(s, T0, SM, &entries);
        // A first visit each, so the second one feeds the estimators.
        for u in &urls {
            s.complete(u, &Completion::from(Outcome::Changed), ts(T0 + 10))
                .unwrap();
        }
    }
    let now = T0 + DAY;
    let mut unknown_one = Vec::new();
    for (url, c) in &reports {
        if let Err(StoreError::UnknownUrl(u)) = one.complete(url, c, ts(now)) {
            unknown_one.push(u);
        }
    }
    let unknown_all = all
        .complete_all(reports.iter().map(|(u, c)| (u.as_str(), c)), ts(now))
        .unwrap();
    assert_eq!(unknown_all, vec!["https://a.example/unknown".to_string()]);
    assert_eq!(unknown_one, unknown_all);
    for u in &urls {
        assert_eq!(one.url(u).unwrap(), all.url(u).unwrap(), "{u}");
    }
    assert_eq!(all.url(&urls[0]).unwrap().unwrap().fetches, 3);
    assert_eq!(
        one.host(&host("a.example")).unwrap(),
        all.host(&host("a.example")).unwrap()
    );
    assert_eq!(
        one.peek(10, ts(now + 400 * DAY)).unwrap(),
        all.peek(10, ts(now + 400 * DAY)).unwrap()
    );
    assert!(all.check().unwrap().is_ok());
}

#[test]
fn the_lease_delay_applies_to_hosts_already_in_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let entries: Vec<UrlEntry> = (0..20)
        .map(|i| entry(&format!("https://a.example/p{i}")))
        .collect();
    {
        let s = store(&dir); // 1 s by default
        read(&s, T0, SM, &entries);
        let leased = s
            .lease(&LeaseRequest::new(5).per_host(5).ttl(secs(300)), ts(T0))
            .unwrap();
        let spacing: Vec<i64> = leased.iter().map(|l| l.not_before.unix() - T0).collect();
        assert_eq!(spacing, vec![0, 1, 2, 3, 4]);
    }
    let s = Store::open(
        dir.path(),
        StoreOptions {
            min_delay: 0.0,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let leased = s
        .lease(
            &LeaseRequest::new(15).per_host(100).ttl(secs(300)),
            ts(T0 + 1),
        )
        .unwrap();
    assert_eq!(leased.len(), 15);
    assert!(
        leased.iter().all(|l| l.not_before.unix() == T0 + 5),
        "{leased:?}"
    );
}

#[test]
fn the_store_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = store(&dir);
        read(&s, T0, SM, &[entry("https://a.example/x")]);
        s.flush().unwrap();
    }
    let s = store(&dir);
    assert!(s.url("https://a.example/x").unwrap().is_some());
    assert_eq!(s.stats(ts(T0)).unwrap().active, 1);
}

#[test]
fn a_lease_reaches_across_many_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let mut ingest = s.ingest(ts(T0));
    for h in 0..50 {
        for i in 0..30 {
            ingest
                .entry(SM, &entry(&format!("https://host-{h}.example/p{i}")))
                .unwrap();
        }
    }
    ingest.finish().unwrap();
    let leased = s
        .lease(&LeaseRequest::new(200).per_host(4).ttl(secs(300)), ts(T0))
        .unwrap();
    assert_eq!(leased.len(), 200);
    let mut per_host = std::collections::HashMap::new();
    for l in &leased {
        *per_host
            .entry(l.url.split('/').nth(2).unwrap().to_string())
            .or_insert(0) += 1;
    }
    assert_eq!(per_host.len(), 50);
    assert!(per_host.values().all(|&n| n == 4));
}

#[test]
fn rate_policies_are_calibrated_over_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let options = || StoreOptions {
        policy: Some("freshness-optimal".into()),
        ..StoreOptions::default()
    };
    let m = {
        let s = Store::open(dir.path(), options()).unwrap();
        let entries: Vec<UrlEntry> = (0..30)
            .map(|i| {
                let mut e = entry(&format!("https://a.example/p{i}"));
                e.changefreq =
                    Some([ChangeFreq::Hourly, ChangeFreq::Daily, ChangeFreq::Monthly][i % 3]);
                e
            })
            .collect();
        read(&s, T0, SM, &entries);
        let m = s.calibrate().unwrap().unwrap();
        assert!(m.is_finite() && m > 0.0, "{m}");
        m
    };
    // Remembered: the policy too (opening without naming one).
    let s = Store::open(dir.path(), StoreOptions::default()).unwrap();
    assert_eq!(s.policy().name(), "freshness-optimal");
    assert_eq!(s.calibrate().unwrap(), Some(m));
    let fixed = Store::open(
        tempfile::tempdir().unwrap().path(),
        StoreOptions {
            policy: Some("fixed".into()),
            ..StoreOptions::default()
        },
    )
    .unwrap();
    assert_eq!(fixed.calibrate().unwrap(), None);
}

#[test]
fn calibrate_applies_the_multiplier_without_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let budget = 4.0 / DAY as f64; // four fetches a day
    let s = Store::open(
        dir.path(),
        StoreOptions {
            policy: Some("uniform".into()),
            params: sitemapd_scheduler::policy::Params {
                budget,
                ..Default::default()
            },
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let entries: Vec<UrlEntry> = (0..8)
        .map(|i| entry(&format!("https://a.example/p{i}")))
        .collect();
    read(&s, T0, SM, &entries);
    // Eight pages, four fetches a day: each page every two days.
    assert_eq!(s.calibrate().unwrap(), Some(budget / 8.0));
    let due = s
        .lease(&LeaseRequest::new(1).per_host(1).ttl(secs(60)), ts(T0))
        .unwrap();
    s.complete(&due[0].url, &Completion::from(Outcome::Changed), ts(T0))
        .unwrap();
    let rec = s.url(&due[0].url).unwrap().unwrap();
    let wait = rec.due.unix() - T0;
    assert!((wait - 2 * DAY).abs() <= DAY / 10, "{wait}");
    // proportional: c = B/Σλ̂ (λ̂ = the prior 1/day for every page here).
    let dir = tempfile::tempdir().unwrap();
    let p = Store::open(
        dir.path(),
        StoreOptions {
            policy: Some("proportional".into()),
            params: sitemapd_scheduler::policy::Params {
                budget,
                ..Default::default()
            },
            ..StoreOptions::default()
        },
    )
    .unwrap();
    read(&p, T0, SM, &entries);
    let c = p.calibrate().unwrap().unwrap();
    assert!((c - budget / (8.0 / DAY as f64)).abs() < 1e-12, "{c}");
    // Not a rate policy: nothing to do.
    let dir = tempfile::tempdir().unwrap();
    let f = Store::open(
        dir.path(),
        StoreOptions {
            policy: Some("fixed".into()),
            ..StoreOptions::default()
        },
    )
    .unwrap();
    assert_eq!(f.calibrate().unwrap(), None);
    assert_eq!(f.policy().name(), "fixed");
}

#[test]
fn a_page_never_seen_changing_backs_off_instead_of_parking() {
    // bias-reduced says 0 after an unchanged visit; the store plans with
    // half a change over the time watched (here 1 day: every 2 days), not
    // with the 365-day floor a zero rate would get.
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(
        dir.path(),
        StoreOptions {
            policy: Some("freshness-optimal".into()),
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let url = "https://a.example/quiet";
    read(&s, T0, SM, &[entry(url)]);
    s.complete(url, &Completion::from(Outcome::Changed), ts(T0))
        .unwrap();
    s.complete(url, &Completion::from(Outcome::NotModified), ts(T0 + DAY))
        .unwrap();
    let wait = s.url(url).unwrap().unwrap().due.unix() - (T0 + DAY);
    assert!((wait - 2 * DAY).abs() <= DAY / 10, "{wait}");
    // Three more quiet days: the wait grows with the time watched.
    s.complete(
        url,
        &Completion::from(Outcome::NotModified),
        ts(T0 + 4 * DAY),
    )
    .unwrap();
    let wait = s.url(url).unwrap().unwrap().due.unix() - (T0 + 4 * DAY);
    assert!((wait - 8 * DAY).abs() <= DAY, "{wait}");
}

#[test]
fn an_index_read_replaces_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let index = "https://a.example/index.xml";
    let child = |c: &str| format!("https://a.example/{c}.xml");
    let read_index = |now: i64, listed: &[&str], complete: bool| {
        let mut ingest = s.ingest(ts(now));
        ingest
            .sitemap_fetched(
                index,
                &SitemapFetch {
                    status: 200,
                    complete,
                    children: Some(listed.iter().map(|c| child(c)).collect()),
                    ..SitemapFetch::default()
                },
            )
            .unwrap();
        ingest.finish().unwrap();
    };
    let children = || {
        assert!(s.sitemap(index).unwrap().is_some());
        s.children(index).unwrap()
    };
    read_index(T0, &["a", "b"], true);
    assert_eq!(children(), [child("a"), child("b")]);
    read_index(T0 + DAY, &["b", "c"], true);
    assert_eq!(children(), [child("b"), child("c")]);

    // A cut read's list is partial: it adds, it does not remove.
    read_index(T0 + 2 * DAY, &["d"], false);
    assert_eq!(children(), [child("b"), child("c"), child("d")]);
    // A failed read leaves the set alone.
    let mut ingest = s.ingest(ts(T0 + 3 * DAY));
    ingest
        .sitemap_fetched(
            index,
            &SitemapFetch {
                status: 503,
                children: Some(Vec::new()),
                ..SitemapFetch::default()
            },
        )
        .unwrap();
    ingest.finish().unwrap();
    assert_eq!(children().len(), 3);

    // A child fetched with the index as parent still joins the set.
    let mut ingest = s.ingest(ts(T0 + 4 * DAY));
    ingest
        .sitemap_fetched(
            &child("e"),
            &SitemapFetch {
                status: 200,
                complete: true,
                parent: Some(index.to_string()),
                ..SitemapFetch::default()
            },
        )
        .unwrap();
    ingest.finish().unwrap();
    assert!(children().contains(&child("e")));

    // Many children go through several batches.
    let many: Vec<String> = (0..5_000).map(|i| format!("m{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    read_index(T0 + 5 * DAY, &many, true);
    assert_eq!(children().len(), 5_000);
    read_index(T0 + 6 * DAY, &["b"], true);
    assert_eq!(children(), [child("b")]);
    assert!(s.check().unwrap().is_ok());
}

#[test]
fn each_read_advances_the_sitemap_refresh_schedule() {
    use sitemapd_scheduler::refresh::jitter_unit;
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let fetch = |now: i64, entries: &[UrlEntry], f: SitemapFetch| {
        let mut ingest = s.ingest(ts(now));
        for e in entries {
            ingest.entry(SM, e).unwrap();
        }
        ingest.sitemap_fetched(SM, &f).unwrap();
        ingest.finish().unwrap();
        s.refresh_state(SM).unwrap().unwrap()
    };
    // The wait to next_at, less the sitemap's jitter.
    let wait = |state: sitemapd_scheduler::RefreshView, now: i64| {
        let w = state.next_at.secs_since(ts(now)) as f64;
        (w / (1.0 + 0.05 * jitter_unit(SM))).round() as i64
    };
    let a = [entry("https://a.example/a"), entry("https://a.example/b")];
    let b = [a[1].clone(), a[0].clone()];
    assert!(s.sitemap_due(SM, ts(T0)).unwrap(), "no schedule: due");
    let first = fetch(T0, &a, complete_read());
    assert_eq!((first.interval, first.changed), (secs(86_400), 1));
    assert!((wait(first, T0) - DAY).abs() <= 1);
    assert!(!s.sitemap_due(SM, ts(T0 + 3600)).unwrap());
    assert!(s.sitemap_due(SM, first.next_at).unwrap());

    // The same entries in another order: unchanged.
    let same = fetch(T0 + DAY, &b, complete_read());
    assert_eq!((same.interval, same.unchanged), (secs(129_600), 1));
    // A 304: unchanged.
    let not_modified = fetch(
        T0 + 3 * DAY,
        &[],
        SitemapFetch {
            status: 304,
            ..SitemapFetch::default()
        },
    );
    assert_eq!(
        (not_modified.interval, not_modified.unchanged),
        (secs(194_400), 2)
    );
    // A new entry: changed, the interval halves.
    let changed = fetch(
        T0 + 5 * DAY,
        &[a[0].clone(), a[1].clone(), entry("https://a.example/c")],
        complete_read(),
    );
    assert_eq!((changed.interval, changed.changed), (secs(97_200), 2));
    // A failure: backoff, the interval kept.
    let failed = fetch(
        T0 + 6 * DAY,
        &[],
        SitemapFetch {
            status: 503,
            ..SitemapFetch::default()
        },
    );
    assert_eq!((failed.interval, failed.errors_in_a_row), (secs(97_200), 1));
    assert!((wait(failed, T0 + 6 * DAY) - 900).abs() <= 1);
    assert!(s.check().unwrap().is_ok());
}

#[test]
fn a_failed_fetch_with_a_2xx_status_is_a_failure() {
    // A 200 that was not a sitemap (an HTML page), or was cut before its
    // format was known: a failure, not a read.
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let mut ingest = s.ingest(ts(T0));
    ingest.entry(SM, &entry("https://a.example/p")).unwrap();
    let good = SitemapFetch {
        etag: Some("\"v1\"".into()),
        ..complete_read()
    };
    ingest.sitemap_fetched(SM, &good).unwrap();
    ingest.finish().unwrap();
    let before = s.refresh_state(SM).unwrap().unwrap();
    let mut ingest = s.ingest(ts(T0 + DAY));
    let html = SitemapFetch {
        status: 200,
        failed: true,
        ..SitemapFetch::default()
    };
    ingest.sitemap_fetched(SM, &html).unwrap();
    ingest.finish().unwrap();
    let record = s.sitemap(SM).unwrap().unwrap();
    assert_eq!(record.last_status, 200);
    assert_eq!(record.errors, 1);
    assert_eq!(record.last_success, Some(ts(T0)), "not a success");
    assert_eq!(record.etag.as_deref(), Some("\"v1\""), "validators kept");
    assert_eq!((record.reads, record.entries), (1, 1), "not a read");
    let after = s.refresh_state(SM).unwrap().unwrap();
    assert_eq!(after.errors_in_a_row, 1);
    assert_eq!(
        (after.changed, after.unchanged),
        (before.changed, before.unchanged)
    );
    // Retried after the error backoff (15 min, ±5 % jitter), not in a day.
    let wait = after.next_at.secs_since(ts(T0 + DAY));
    assert!((855..=945).contains(&wait), "{wait}");
    assert!(s.check().unwrap().is_ok());
}

#[test]
fn a_feed_stays_a_feed_through_bodiless_reads() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let feed = "https://a.example/feed.xml";
    let fetch = |now: i64, f: SitemapFetch| {
        let mut ingest = s.ingest(ts(now));
        ingest.sitemap_fetched(feed, &f).unwrap();
        ingest.finish().unwrap();
        s.refresh_state(feed).unwrap().unwrap()
    };
    let first = fetch(
        T0,
        SitemapFetch {
            feed: true,
            ..complete_read()
        },
    );
    assert_eq!(first.interval, secs(3_600));
    assert!(first.feed);
    let mut state = first;
    for i in 1..20 {
        state = fetch(
            T0 + i * DAY,
            SitemapFetch {
                status: 304,
                ..SitemapFetch::default()
            },
        );
    }
    assert!(state.feed);
    assert_eq!(
        state.interval,
        secs(86_400),
        "a feed is read at least daily"
    );
}

#[test]
fn followed_sites_are_added_updated_listed_and_removed() {
    use sitemapd_scheduler::SiteWalk;
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    assert!(s.add_site("https://b.example/", ts(T0)).unwrap());
    assert!(s.add_site("a.example", ts(T0 + 1)).unwrap());
    assert!(
        !s.add_site("a.example", ts(T0 + 2)).unwrap(),
        "already followed"
    );
    let a = s.site("a.example").unwrap().unwrap();
    assert_eq!(
        (a.site.as_str(), a.added_at, a.next_walk, a.last_walk),
        ("a.example", ts(T0 + 1), ts(T0 + 1), None)
    );
    let walk = SiteWalk {
        ended: ts(T0 + 60),
        next_walk: ts(T0 + DAY),
        sitemaps: 3,
        failed: 1,
        entries: 1234,
    };
    assert!(s.site_walked("a.example", &walk).unwrap());
    assert!(!s.site_walked("c.example", &walk).unwrap(), "not followed");
    assert!(
        s.site("c.example").unwrap().is_none(),
        "not added by a walk"
    );
    let walked = s.site("a.example").unwrap().unwrap();
    assert_eq!(
        (walked.added_at, walked.next_walk, walked.last_walk),
        (ts(T0 + 1), ts(T0 + DAY), Some(ts(T0 + 60)))
    );
    assert_eq!(
        (
            walked.last_sitemaps,
            walked.last_failed,
            walked.last_entries
        ),
        (3, 1, 1234)
    );
    let all: Vec<String> = s.sites().map(|v| v.unwrap().site).collect();
    assert_eq!(all, ["a.example", "https://b.example/"]);
    // JSON for the daemon's API.
    let json = serde_json::to_value(&walked).unwrap();
    assert_eq!(json["last_entries"], 1234);
    assert!(s.check().unwrap().is_ok());

    assert!(s.remove_site("a.example").unwrap());
    assert!(!s.remove_site("a.example").unwrap());
    assert_eq!(s.site("a.example").unwrap(), None);
    assert_eq!(s.sites().count(), 1);
    // Survives reopening.
    s.flush().unwrap();
    drop(s);
    let s = store(&dir);
    assert!(s.site("https://b.example/").unwrap().is_some());
}

#[test]
fn retiring_a_host_takes_its_urls_out_of_the_queue() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let mut entries: Vec<UrlEntry> = (0..30)
        .map(|i| entry(&format!("https://a.example/p{i}")))
        .collect();
    entries.extend((0..5).map(|i| entry(&format!("http://a.example/h{i}"))));
    entries.extend((0..4).map(|i| entry(&format!("https://a.example:8443/x{i}"))));
    entries.extend((0..7).map(|i| entry(&format!("https://b.example/p{i}"))));
    entries.push(entry("https://a.example.org/p"));
    read(&s, T0, SM, &entries);
    assert_eq!(s.host(&host("a.example")).unwrap().urls, 35);
    // A leased one is retired too (its due entry is at the lease's end).
    let leased = s
        .lease(&LeaseRequest::new(1).per_host(1).ttl(secs(300)), ts(T0))
        .unwrap();
    assert_eq!(leased[0].url, "http://a.example/h0");

    assert_eq!(s.retire_host(&host("a.example")).unwrap(), 35);
    assert_eq!(s.host(&host("a.example")).unwrap().urls, 0);
    assert!(s.url("https://a.example/p3").unwrap().unwrap().retired);
    assert!(s.url("http://a.example/h0").unwrap().unwrap().retired);
    assert!(!s.url("https://a.example:8443/x0").unwrap().unwrap().retired);
    assert!(!s.url("https://a.example.org/p").unwrap().unwrap().retired);
    let due = s.peek(1000, ts(T0 + 100 * DAY)).unwrap();
    assert_eq!(due.len(), 4 + 7 + 1);
    assert!(due.iter().all(|l| !l.url.contains("://a.example/")));
    assert!(s.check().unwrap().is_ok());
    assert_eq!(
        s.retire_host(&host("a.example")).unwrap(),
        0,
        "nothing left"
    );
    assert_eq!(s.retire_host(&host("nowhere.example")).unwrap(), 0);

    // Listed again: revived.
    let stats = read(&s, T0 + DAY, SM, &entries);
    assert_eq!(stats.revived, 35);
    assert_eq!(s.host(&host("a.example")).unwrap().urls, 35);
    assert!(s.check().unwrap().is_ok());
}

#[test]
fn retiring_a_big_host_goes_in_batches() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let entries: Vec<UrlEntry> = (0..4_500)
        .map(|i| entry(&format!("https://a.example/p{i}")))
        .collect();
    read(&s, T0, SM, &entries);
    assert_eq!(s.retire_host(&host("a.example")).unwrap(), 4_500);
    assert_eq!(s.host(&host("a.example")).unwrap().urls, 0);
    assert_eq!(s.stats(ts(T0)).unwrap().active, 0);
    assert!(s.check().unwrap().is_ok());
}

#[test]
fn a_notification_makes_a_url_due_now() {
    use sitemapd_scheduler::Notified;
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    read(
        &s,
        T0,
        SM,
        &[entry("https://a.example/x"), entry("https://a.example/y")],
    );
    let leased = s
        .lease(&LeaseRequest::new(10).per_host(10).ttl(secs(300)), ts(T0))
        .unwrap();
    for l in &leased {
        s.complete(&l.url, &Completion::from(Outcome::Changed), ts(T0 + 10))
            .unwrap();
    }
    let later = s.url("https://a.example/x").unwrap().unwrap().due.unix();
    assert!(later > T0 + 3600);
    assert!(s.peek(10, ts(T0 + 3600)).unwrap().is_empty());

    // Known: due now, reason notified; the URL as given is normalised.
    let now = T0 + 3600;
    assert_eq!(
        s.notify("HTTPS://A.example:443/x#frag", ts(now)).unwrap(),
        Notified::Known
    );
    let due = s.peek(10, ts(now)).unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(
        (due[0].url.as_str(), due[0].reason.as_str()),
        ("https://a.example/x", "notified")
    );
    assert_eq!(due[0].due.unix(), now);
    let r = s.url("https://a.example/x").unwrap().unwrap();
    assert_eq!(r.notifications, 1);
    assert!(s.check().unwrap().is_ok());

    // A leased URL: due now again, its lease dropped.
    let leased = s
        .lease(&LeaseRequest::new(1).per_host(1).ttl(secs(300)), ts(now))
        .unwrap();
    assert_eq!(leased[0].reason.as_str(), "notified");
    s.notify("https://a.example/x", ts(now + 5)).unwrap();
    let r = s.url("https://a.example/x").unwrap().unwrap();
    assert_eq!((r.due.unix(), r.leased_until), (now + 5, None));
    assert_eq!(r.notifications, 2);
    assert!(s.check().unwrap().is_ok());

    // Unknown: added, due now, counted for its host, never retired by
    // absence from a sitemap.
    assert_eq!(s.host(&host("a.example")).unwrap().urls, 2);
    assert_eq!(
        s.notify("https://a.example/new", ts(now)).unwrap(),
        Notified::Added
    );
    let r = s.url("https://a.example/new").unwrap().unwrap();
    assert_eq!(
        (r.first_seen.unix(), r.sources, r.due.unix()),
        (now, 0, now),
        "no sitemap lists it"
    );
    assert_eq!(s.host(&host("a.example")).unwrap().urls, 3);
    for k in 1..=5 {
        read(&s, now + k * DAY, SM, &[entry("https://a.example/x")]);
    }
    assert!(!s.url("https://a.example/new").unwrap().unwrap().retired);
    assert!(s.url("https://a.example/y").unwrap().unwrap().retired);
    assert_eq!(s.host(&host("a.example")).unwrap().urls, 2);

    // Retired: revived.
    assert_eq!(
        s.notify("https://a.example/y", ts(now + 6 * DAY)).unwrap(),
        Notified::Known
    );
    let r = s.url("https://a.example/y").unwrap().unwrap();
    assert!(!r.retired);
    assert_eq!(r.due.unix(), now + 6 * DAY);
    assert_eq!(s.host(&host("a.example")).unwrap().urls, 3);
    assert!(s.check().unwrap().is_ok());

    // Not a URL.
    let err = s.notify("not a url", ts(now)).unwrap_err();
    assert!(matches!(err, StoreError::InvalidUrl { .. }), "{err}");
    let err = s.notify("ftp://a.example/x", ts(now)).unwrap_err();
    assert!(err.to_string().contains("ftp://a.example/x"), "{err}");
}

#[test]
fn queue_depth_counts_what_is_due() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    assert_eq!(s.queue_depth(ts(T0)).unwrap(), 0);
    let entries: Vec<UrlEntry> = (0..25)
        .map(|i| entry(&format!("https://a.example/p{i}")))
        .collect();
    read(&s, T0, SM, &entries);
    assert_eq!(s.queue_depth(ts(T0 - 1)).unwrap(), 0);
    assert_eq!(s.queue_depth(ts(T0)).unwrap(), 25);
    // Leased: not due until the lease runs out.
    let leased = s
        .lease(&LeaseRequest::new(10).per_host(10).ttl(secs(300)), ts(T0))
        .unwrap();
    assert_eq!(s.queue_depth(ts(T0)).unwrap(), 15);
    assert_eq!(s.queue_depth(ts(T0 + 300)).unwrap(), 25);
    // Completed: due later; retired: out.
    for l in &leased {
        s.complete(&l.url, &Completion::from(Outcome::Changed), ts(T0 + 1))
            .unwrap();
    }
    assert_eq!(s.queue_depth(ts(T0 + 300)).unwrap(), 15);
    assert_eq!(s.retire_host(&host("a.example")).unwrap(), 25);
    assert_eq!(s.queue_depth(ts(i64::MAX)).unwrap(), 0);
}

/// An embedder's own policy: registered by name, remembered by the store,
/// scheduling its URLs, and calibrated through the trait.
#[test]
fn a_registered_policy_schedules_and_calibrates() {
    use sitemapd_scheduler::policy::{
        Adaptive, Due, HostState, Params, Policy, PolicyRegistry, Reason, UrlState, WeightedPage,
    };

    /// Adaptive, with every URL's score set by the calibrated multiplier.
    #[derive(Debug)]
    struct Scored {
        inner: Adaptive,
        multiplier: f64,
    }

    impl Policy for Scored {
        fn name(&self) -> &'static str {
            "scored"
        }
        fn next_due(&self, url: &UrlState, host: &HostState, now: Timestamp) -> Due {
            let mut due = self.inner.next_due(url, host, now);
            due.score = self.multiplier;
            due
        }
        fn allocation_multiplier(&self, pages: &[WeightedPage], _: &Params) -> Option<f64> {
            Some(pages.iter().map(|p| p.count).sum::<u64>() as f64)
        }
    }

    let mut policies = PolicyRegistry::default();
    policies.register("scored", |params: Params| {
        let multiplier = params.calibration.multiplier;
        Box::new(Scored {
            inner: Adaptive::new(params),
            multiplier,
        }) as Box<dyn Policy>
    });
    let options = || StoreOptions {
        policy: Some("scored".into()),
        policies: policies.clone(),
        ..StoreOptions::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(dir.path(), options()).unwrap();
    assert_eq!(s.policy().name(), "scored");
    let entries: Vec<UrlEntry> = (0..4)
        .map(|i| entry(&format!("https://a.example/p{i}")))
        .collect();
    read(&s, T0, SM, &entries);
    // Uncalibrated: the default multiplier (0) is every score.
    let due = s.peek(10, ts(T0)).unwrap();
    assert_eq!(due.len(), 4);
    assert!(due.iter().all(|d| d.reason == Reason::New), "{due:?}");
    // Calibration goes through the trait: four active pages.
    assert_eq!(s.calibrate().unwrap(), Some(4.0));
    drop(s);
    // Reopened by name, with the saved multiplier; a store that does not
    // know the name refuses to open instead of scheduling with another.
    let s = Store::open(dir.path(), options()).unwrap();
    let leased = s.lease(&LeaseRequest::new(1), ts(T0)).unwrap();
    s.complete(
        &leased[0].url,
        &Completion::from(Outcome::Changed),
        ts(T0 + 1),
    )
    .unwrap();
    assert_eq!(s.url(&leased[0].url).unwrap().unwrap().score, 4.0);
    drop(s);
    let err = Store::open(dir.path(), StoreOptions::default()).unwrap_err();
    assert!(err.to_string().contains("scored"), "{err}");
}

/// The queue's urgency classes: a lastmod that moved on a host whose
/// lastmods announce every change, and a new URL, share the first class
/// (the one that waited longer first) and come before rate-based
/// refreshes; the host's unmoved URLs are not refreshed on a rate schedule.
#[test]
fn leases_serve_changes_and_new_urls_before_refreshes() {
    use sitemapd_scheduler::policy::{Reason, Urgency};
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(
        dir.path(),
        StoreOptions {
            policy: Some("lastmod".into()),
            min_delay: 0.0,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    const A: &str = "https://a.example/sitemap.xml";
    const B: &str = "https://b.example/sitemap.xml";
    let a = |i: usize| format!("https://a.example/p{i}");
    let b = |i: usize| format!("https://b.example/p{i}");
    let changed = || Completion::from(Outcome::Changed);
    // Day 0: both hosts read and fetched once.
    let listed = |lastmod: &dyn Fn(usize) -> i64| -> Vec<UrlEntry> {
        (0..10)
            .map(|i| with_lastmod(&a(i), lastmod(i), Precision::Second))
            .collect()
    };
    // Distinct lastmods: ten equal ones would look generated.
    read(&s, T0, A, &listed(&|i| T0 - DAY - i as i64));
    read(
        &s,
        T0,
        B,
        &(0..10).map(|i| entry(&b(i))).collect::<Vec<_>>(),
    );
    for i in 0..10 {
        s.complete(&a(i), &changed(), ts(T0 + 10)).unwrap();
        s.complete(&b(i), &changed(), ts(T0 + 10)).unwrap();
    }
    // Day 1: every lastmod of a.example moved, and every page had changed:
    // ten announced changes earn the host trust and completeness.
    read(&s, T0 + DAY, A, &listed(&|i| T0 + DAY - 100 - i as i64));
    for i in 0..10 {
        s.complete(&a(i), &changed(), ts(T0 + DAY + 10)).unwrap();
    }
    let host = s.host(&host("a.example")).unwrap();
    assert!(host.lastmod_trusted, "{host:?}");
    // Day 3: one page changed, and a new one appeared.
    let mut entries = listed(&|i| {
        if i == 0 {
            T0 + 3 * DAY - 50
        } else {
            T0 + DAY - 100 - i as i64
        }
    });
    entries.push(with_lastmod(&a(99), T0 + 3 * DAY - 60, Precision::Second));
    read(&s, T0 + 3 * DAY, A, &entries);
    let now = ts(T0 + 3 * DAY);
    let leased = s.lease(&LeaseRequest::new(100).per_host(100), now).unwrap();
    let order: Vec<(String, Reason)> = leased.iter().map(|l| (l.url.clone(), l.reason)).collect();
    assert_eq!(order[0], (a(0), Reason::LastmodNewer), "{order:?}");
    assert_eq!(order[1], (a(99), Reason::New), "{order:?}");
    // The rest: b.example's pages, refreshed on the fallback's schedule;
    // none of a.example's unmoved pages (due after the safety interval, or
    // as a validation sample a lease has not paid for yet).
    assert!(
        order[2..]
            .iter()
            .all(|(u, r)| u.starts_with("https://b.example/") && r.urgency() == Urgency::Refresh),
        "{order:?}"
    );
    assert_eq!(order.len(), 12, "{order:?}");
    for i in 1..10 {
        let v = s.url(&a(i)).unwrap().unwrap();
        assert!(
            matches!(v.reason, Reason::Safety | Reason::Validation),
            "{}: {:?}",
            a(i),
            v.reason
        );
        if v.reason == Reason::Safety {
            // 30 days after the fetch, with the store's ±5 % jitter.
            let expected = ts(T0 + DAY + 10 + 30 * DAY);
            let wait = expected.secs_since(now) as f64;
            assert!(
                (v.due.secs_since(expected) as f64).abs() <= 0.05 * wait,
                "{v:?}"
            );
        }
    }
    assert!(s.check().unwrap().is_ok());
}

/// A due key of key layout 1: `d` ‖ due ‖ url.
fn layout1_due(at: i64, url: &str) -> Vec<u8> {
    let mut k = vec![b'd'];
    k.extend_from_slice(&((at as u64) ^ (1 << 63)).to_be_bytes());
    k.extend_from_slice(url.as_bytes());
    k
}

/// A store in `dir` as an older build wrote it, with sled directly: the
/// records of an active URL (`https://a.example/x`) and of the retired
/// `retired`, then whatever `older` adds (its due entries, its layout key),
/// given the active record.
fn older_store(
    dir: &tempfile::TempDir,
    retired: &str,
    older: impl FnOnce(&sled::Tree, &sitemapd_scheduler::internal::record::UrlRecord),
) {
    use sitemapd_scheduler::internal::{keys, record};
    let db = sled::open(dir.path()).unwrap();
    let tree = db.open_tree("sitemapd").unwrap();
    let active = record::UrlRecord::new(T0, &[]);
    let mut gone = record::UrlRecord::new(T0, &[]);
    gone.retired = true;
    for (url, rec) in [("https://a.example/x", &active), (retired, &gone)] {
        tree.insert(keys::url(url), record::encode(rec)).unwrap();
    }
    older(&tree, &active);
    db.flush().unwrap();
}

/// A store written by a build of key layout 1 (no `~layout` key, due
/// entries without their class) opens, is migrated, and is consistent.
#[test]
fn a_layout_1_store_is_migrated_on_open() {
    let dir = tempfile::tempdir().unwrap();
    older_store(&dir, "https://a.example/r", |tree, _| {
        for url in ["https://a.example/x", "https://a.example/r"] {
            // The retired URL's leftover entry goes too.
            tree.insert(layout1_due(T0, url), &[]).unwrap();
        }
    });
    let s = store(&dir);
    let report = s.check().unwrap();
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.due_entries, 1);
    let due = s.peek(10, ts(T0)).unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].url, "https://a.example/x");
    drop(s);
    // Opened again: nothing left to migrate, the same queue.
    let s = store(&dir);
    assert_eq!(s.peek(10, ts(T0)).unwrap().len(), 1);
}

/// A store written by a build of key layout 3 (due index as now, no kept
/// counts) opens, its hosts are counted once, and `stats` answers from
/// those counts.
#[test]
fn a_layout_3_store_gets_its_counts_on_open() {
    use sitemapd_scheduler::internal::keys;
    let dir = tempfile::tempdir().unwrap();
    older_store(&dir, "https://b.example/r", |tree, active| {
        let url = "https://a.example/x";
        tree.insert(keys::legacy::due(0, T0, active.rank(url), url), &[])
            .unwrap();
        tree.insert(keys::LAYOUT, &[3]).unwrap();
    });
    let s = store(&dir);
    let report = s.check().unwrap();
    assert!(report.is_ok(), "{report:?}");
    let stats = s.stats(ts(T0)).unwrap();
    assert_eq!((stats.active, stats.retired, stats.due_now), (1, 1, 1));
    assert_eq!(stats.hosts.len(), 2);
}
