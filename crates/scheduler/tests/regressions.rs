//! Regressions from a hostile review of the store and queue: each test
//! failed on the code before its fix.
use std::time::Duration;

use sitemapd_parser::{NormUrl, UrlEntry};
use sitemapd_scheduler::{Completion, Outcome, SitemapFetch, Store, StoreOptions};
use sitemapd_scheduler::{LeaseRequest, Timestamp};

const T0: i64 = 1_700_000_000;
const DAY: i64 = 86_400;

/// Unix seconds as the store's timestamp.
fn ts(t: i64) -> Timestamp {
    Timestamp::from_unix(t)
}

/// Seconds as a lease time to live.
fn secs(s: i64) -> Duration {
    Duration::from_secs(s.unsigned_abs())
}
const SM: &str = "https://a.example/sitemap.xml";

fn store(dir: &tempfile::TempDir) -> Store {
    Store::open(dir.path(), StoreOptions::default()).unwrap()
}
fn entry(url: &str) -> UrlEntry {
    UrlEntry::new(NormUrl::parse(url).unwrap())
}
fn fetch(complete: bool) -> SitemapFetch {
    SitemapFetch {
        status: 200,
        complete,
        ..SitemapFetch::default()
    }
}
fn read_as(
    s: &Store,
    now: i64,
    sm: &str,
    urls: &[&str],
    complete: bool,
) -> sitemapd_scheduler::IngestStats {
    let mut ing = s.ingest(ts(now));
    for u in urls {
        ing.entry(sm, &entry(u)).unwrap();
    }
    ing.sitemap_fetched(sm, &fetch(complete)).unwrap();
    ing.finish().unwrap()
}
fn read(s: &Store, now: i64, sm: &str, urls: &[&str]) -> sitemapd_scheduler::IngestStats {
    read_as(s, now, sm, urls, true)
}
fn retired(s: &Store, u: &str) -> bool {
    s.url(u).unwrap().unwrap().retired
}

const A: &str = "https://a.example/a";
const B: &str = "https://a.example/b";
const C: &str = "https://a.example/c";

/// A revived URL is not counted back into its sitemap's members, so the
/// `distinct < members` gate never opens again and later absences never retire.
#[test]
fn after_a_revival_absent_urls_are_never_retired() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    read(&s, T0, SM, &[A, B, C]);
    for k in 1..=3 {
        read(&s, T0 + k * DAY, SM, &[A, B]);
    }
    assert!(retired(&s, C));
    read(&s, T0 + 4 * DAY, SM, &[A, B, C]); // C revived
    assert!(!retired(&s, C));
    for k in 5..=10 {
        read(&s, T0 + k * DAY, SM, &[B, C]); // A absent 6 complete reads
    }
    assert!(
        retired(&s, A),
        "A absent for 6 complete reads, K = 3; members = {}",
        s.sitemap(SM).unwrap().unwrap().members
    );
}

/// `sitemapd ingest FILE` keys its sitemap as file:///…: the retirement scan
/// looks for URLs on host "" and recounts members to 0; nothing ever retires.
#[test]
fn urls_of_a_file_sitemap_are_never_retired() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let sm = "file:///tmp/sitemap.xml";
    read(&s, T0, sm, &[A, B, C]);
    for k in 1..=6 {
        read(&s, T0 + k * DAY, sm, &[A, B]);
    }
    assert!(
        retired(&s, C),
        "members now {}",
        s.sitemap(sm).unwrap().unwrap().members
    );
}

/// A cut (incomplete) read that lists a URL stamps it with the *next* complete
/// read's sequence, so the first complete absence after it does not count.
#[test]
fn a_cut_read_makes_retirement_need_k_plus_one_absences() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    read(&s, T0, SM, &[A, B, C]);
    read_as(&s, T0 + DAY, SM, &[C], false); // cut after C
    for k in 2..=4 {
        read(&s, T0 + k * DAY, SM, &[A, B]); // 3 complete reads without C
    }
    assert!(
        retired(&s, C),
        "absent from 3 complete reads (K=3) but not retired"
    );
}

/// A host in politeness back-off fills the 2n candidate window and starves
/// every other host.
#[test]
fn a_host_in_backoff_starves_other_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let a: Vec<String> = (0..50).map(|i| format!("https://a.example/p{i}")).collect();
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    read(&s, T0, SM, &a);
    read(
        &s,
        T0 + 1,
        "https://b.example/sitemap.xml",
        &["https://b.example/x"],
    );
    let now = T0 + 10;
    let mut got = Vec::new();
    for _ in 0..20 {
        got.extend(
            s.lease(&LeaseRequest::new(1).per_host(10).ttl(secs(5)), ts(now))
                .unwrap(),
        );
    }
    assert!(
        got.iter().any(|l| l.url.contains("b.example")),
        "b.example never leased; got {} a.example URLs",
        got.len()
    );
}

/// i64 overflow: the API takes any i64 `now`.
#[test]
fn ingest_near_i64_max_does_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let mut e = entry(A);
    e.lastmod = Some(sitemapd_parser::Lastmod {
        unix_seconds: 0,
        nanos: 0,
        precision: sitemapd_parser::date::Precision::Day,
    });
    let mut ing = s.ingest(ts(i64::MAX - 10));
    ing.entry(SM, &e).unwrap();
    let stats = ing.finish().unwrap();
    assert_eq!((stats.entries, stats.new), (1, 1), "{stats:?}");
    // Stored, with its lastmod, in the queue, and consistent.
    let rec = s.url(A).unwrap().expect("A stored");
    assert!(!rec.retired);
    assert_eq!(s.stats(ts(i64::MAX - 10)).unwrap().active, 1);
    assert_eq!(s.stats(ts(i64::MAX - 10)).unwrap().with_lastmod, 1);
    assert!(s.check().unwrap().is_ok());
}

#[test]
fn lease_near_i64_max_does_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    read(&s, T0, SM, &[A]);
    // A is due (since T0): the lease hands it out, its expiry saturating
    // rather than overflowing, and a second lease finds it leased.
    let leased = s
        .lease(
            &LeaseRequest::new(1).per_host(1).ttl(secs(300)),
            ts(i64::MAX - 10),
        )
        .unwrap();
    assert_eq!(leased.len(), 1, "{leased:?}");
    assert_eq!(leased[0].url, A);
    let again = s
        .lease(
            &LeaseRequest::new(1).per_host(1).ttl(secs(300)),
            ts(i64::MAX - 5),
        )
        .unwrap();
    assert!(again.is_empty(), "{again:?}");
    assert!(s.check().unwrap().is_ok());
}

#[test]
fn complete_with_time_going_far_back_does_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    read(&s, T0, SM, &[A]);
    s.complete(A, &Completion::from(Outcome::Changed), ts(i64::MAX - 5))
        .unwrap();
    s.complete(A, &Completion::from(Outcome::Changed), ts(i64::MIN + 5))
        .unwrap();
    assert!(s.check().unwrap().is_ok());
}

/// A store at `dir` where A, B and C were read at T0, and A's record was
/// then overwritten with bytes that do not decode (its due entry kept).
fn with_a_corrupt(dir: &tempfile::TempDir) -> Store {
    {
        // One partition: its keys all in the one tree damaged by hand.
        let one = StoreOptions {
            partitions: 1,
            ..StoreOptions::default()
        };
        let s = Store::open(dir.path(), one).unwrap();
        read(&s, T0, SM, &[A, B, C]);
        s.flush().unwrap();
    }
    {
        // The store just closed keeps its lock until sled's flusher thread
        // ends (up to 1 s, longer on a loaded machine): waited for as it
        // happens, 60 s at most.
        let started = std::time::Instant::now();
        let db = loop {
            match sled::open(dir.path()) {
                Ok(db) => break db,
                Err(e) if started.elapsed() > std::time::Duration::from_secs(60) => {
                    panic!("the store's lock was never released: {e}")
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(50)),
            }
        };
        let t = db.open_tree("sitemapd").unwrap();
        let mut k = vec![b'u'];
        k.extend_from_slice(A.as_bytes());
        t.insert(k, &b"\x01\xff\xff\xff"[..]).unwrap();
        db.flush().unwrap();
    }
    store(dir)
}

/// One corrupt URL record under a due entry blocks the whole queue.
#[test]
fn one_corrupt_record_blocks_lease_and_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let s = with_a_corrupt(&dir);
    let check = s.check().unwrap();
    assert!(!check.is_ok());
    // The full count skips the bad record and counts the others; the kept
    // counts (changed behind the store's back) still say 3, the check
    // names the host, and a repair puts it right.
    assert_eq!(s.full_stats(ts(T0)).unwrap().active, 2);
    assert_eq!(s.stats(ts(T0)).unwrap().active, 3);
    assert_eq!(check.miscounted.len(), 1, "{check:?}");
    assert!(
        check.miscounted[0].starts_with("a.example: kept"),
        "{check:?}"
    );
    s.repair().unwrap();
    assert_eq!(s.stats(ts(T0)).unwrap().active, 2);
    assert!(s.check().unwrap().miscounted.is_empty());
    let lease = s.lease(
        &LeaseRequest::new(10).per_host(10).ttl(secs(300)),
        ts(T0 + 1),
    );
    assert!(
        lease.is_ok() && lease.unwrap().len() == 2,
        "B and C are due but the queue is blocked"
    );
    // Ingest replaces the corrupt record instead of failing on it.
    let mut ing = s.ingest(ts(T0 + DAY));
    for u in [A, B, C] {
        ing.entry(SM, &entry(u)).unwrap();
    }
    ing.sitemap_fetched(SM, &fetch(true)).unwrap();
    ing.finish().unwrap();
    assert!(s.url(A).unwrap().is_some());
}

/// Every child fetched through an index rewrites the index's record with
/// its whole (growing) children list: quadratic.
#[test]
fn many_children_of_one_index() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let n: usize = 3_000;
    let mut ing = s.ingest(ts(T0));
    ing.sitemap_fetched("https://a.example/sitemap_index.xml", &fetch(true))
        .unwrap();
    for i in 0..n {
        let child = format!("https://a.example/sitemaps/sitemap-products-{i:06}.xml");
        ing.sitemap_fetched(
            &child,
            &SitemapFetch {
                status: 200,
                complete: true,
                parent: Some("https://a.example/sitemap_index.xml".into()),
                ..SitemapFetch::default()
            },
        )
        .unwrap();
    }
    ing.finish().unwrap();
    // One key per child: linear, and all of them remembered.
    assert_eq!(
        s.children("https://a.example/sitemap_index.xml")
            .unwrap()
            .len(),
        n
    );
}

/// Retired while leased, completed after the lease ran out, revived, completed twice.
#[test]
fn lease_retire_complete_revive_sequences_stay_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    read(&s, T0, SM, &[A, B, C]);
    let l = s
        .lease(&LeaseRequest::new(3).per_host(3).ttl(secs(300)), ts(T0))
        .unwrap();
    assert_eq!(l.len(), 3);
    for k in 1..=3 {
        read(&s, T0 + k, SM, &[B, C]);
    }
    assert!(retired(&s, A));
    assert!(s.check().unwrap().is_ok());
    read(&s, T0 + 10, SM, &[A, B, C]); // revived while leased
    assert!(s.check().unwrap().is_ok());
    s.complete(A, &Completion::from(Outcome::Changed), ts(T0 + 400))
        .unwrap();
    s.complete(A, &Completion::from(Outcome::Changed), ts(T0 + 400))
        .unwrap();
    s.complete(B, &Completion::from(Outcome::Gone(404)), ts(T0 + 400))
        .unwrap();
    for k in 11..=13 {
        read(&s, T0 + k * DAY, SM, &[A]);
    }
    assert!(retired(&s, B));
    s.complete(B, &Completion::from(Outcome::Changed), ts(T0 + 14 * DAY))
        .unwrap();
    assert!(s.check().unwrap().is_ok());
    let mut ing = s.ingest(ts(T0 + 15 * DAY));
    let mut e = entry(C);
    e.lastmod = Some(sitemapd_parser::Lastmod {
        unix_seconds: T0 + 15 * DAY - 5,
        nanos: 0,
        precision: sitemapd_parser::date::Precision::Second,
    });
    ing.entry(SM, &e).unwrap();
    ing.entry(SM, &e).unwrap();
    ing.entry("https://a.example/two.xml", &e).unwrap();
    ing.finish().unwrap();
    assert!(s.check().unwrap().is_ok());
    let _ = s
        .lease(
            &LeaseRequest::new(10).per_host(10).ttl(secs(1)),
            ts(T0 + 15 * DAY),
        )
        .unwrap();
    let _ = s
        .lease(
            &LeaseRequest::new(10).per_host(10).ttl(secs(1)),
            ts(T0 + 15 * DAY + 5),
        )
        .unwrap();
    assert!(s.check().unwrap().is_ok());
}

/// NaN priority (library callers can build one) makes every re-ingest an update.
#[test]
fn nan_priority_breaks_idempotence() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let mut e = entry(A);
    e.priority = Some(f32::NAN);
    for k in 0..2 {
        let mut ing = s.ingest(ts(T0 + k * DAY));
        ing.entry(SM, &e).unwrap();
        let st = ing.finish().unwrap();
        if k == 1 {
            assert_eq!(st.unchanged, 1, "{st:?}");
        }
    }
}

/// MAX_SOURCES eviction compares sequence numbers of different sitemaps
/// ("listed longest ago") and evicts a sitemap that still lists the URL; the
/// URL is then retired though a sitemap lists it.
#[test]
fn eviction_drops_a_current_lister_and_the_url_is_retired() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let x = "https://a.example/x";
    let busy = "https://a.example/busy.xml";
    for k in 0..10 {
        read(&s, T0 + k, busy, &[A]);
    } // busy's seq = 10
    read(&s, T0 + 20, busy, &[A, x]); // x stamped (busy, 11)
    let others: Vec<String> = (0..8)
        .map(|i| format!("https://a.example/s{i}.xml"))
        .collect();
    for (i, o) in others[..7].iter().enumerate() {
        read(&s, T0 + 30 + i as i64, o, &[x]);
    } // (s_i, 1)
    for k in 0..9 {
        read(&s, T0 + 40 + k, busy, &[A]);
    } // busy dropped x long ago (seq 20)
    read(&s, T0 + 60, &others[7], &[x]); // 9th source: evicts s0 (stamp 1) not busy (stamp 11)
    let r = s.url(x).unwrap().unwrap();
    assert_eq!(r.sources, 8, "{r:?}");
    // busy still lists x; the 8 others drop it, 3 complete reads each.
    // s1..s7 drop x for 3 complete reads; s0 still lists it (not re-read yet).
    for k in 0..3 {
        for o in &others[1..] {
            read(&s, T0 + 100 + k, o, &[]);
        }
    }
    assert!(!retired(&s, x), "x retired though s0.xml still lists it");
}

#[test]
fn cross_host_sitemap_retires_and_304_does_not_count() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let sm = "https://cdn.example/s.xml";
    let f = |complete: bool, status: u16| SitemapFetch {
        status,
        complete,
        authorised_by: Some("https://a.example/".into()),
        ..SitemapFetch::default()
    };
    let go = |now: i64, urls: &[&str], fe: SitemapFetch| {
        let mut ing = s.ingest(ts(now));
        for u in urls {
            ing.entry(sm, &entry(u)).unwrap();
        }
        ing.sitemap_fetched(sm, &fe).unwrap();
        ing.finish().unwrap()
    };
    go(T0, &[A, B, C], f(true, 200));
    go(T0 + 1, &[A, B], f(true, 200));
    go(T0 + 2, &[], f(false, 304));
    go(T0 + 3, &[A], f(false, 200)); // cut
    go(T0 + 4, &[], f(false, 500));
    go(T0 + 5, &[A, B], f(true, 200));
    assert!(!retired(&s, C));
    go(T0 + 6, &[A, B], f(true, 200));
    assert!(retired(&s, C));
    assert!(s.check().unwrap().is_ok());
}

/// Many hosts due, each with one URL of politeness allowance left within
/// the lease: the scan took `per_host` candidates from each of the first
/// hosts it met, filled its window with them, and the lease could hand
/// out only one URL of each (20 of 100 here).
#[test]
fn a_lease_fills_up_when_many_hosts_have_allowance_left() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    let hosts = 150;
    let mut ing = s.ingest(ts(T0));
    for h in 0..hosts {
        let sm = format!("https://host-{h}.example/sitemap.xml");
        for i in 0..12 {
            ing.entry(&sm, &entry(&format!("https://host-{h}.example/p{i}")))
                .unwrap();
        }
    }
    ing.finish().unwrap();
    // Two URLs a host, one second apart: each host is next allowed at T0 + 2.
    let first = s
        .lease(
            &LeaseRequest::new(2 * hosts).per_host(2).ttl(secs(300)),
            ts(T0),
        )
        .unwrap();
    assert_eq!(first.len(), 2 * hosts);
    // A lease to T0 + 2 leaves each host room for exactly one more URL.
    let leased = s
        .lease(&LeaseRequest::new(100).per_host(10).ttl(secs(2)), ts(T0))
        .unwrap();
    let distinct: std::collections::HashSet<&str> = leased
        .iter()
        .map(|l| l.url.split('/').nth(2).unwrap())
        .collect();
    assert_eq!(leased.len(), 100, "{} URLs leased", leased.len());
    assert_eq!(distinct.len(), 100, "one URL per host");
    assert!(leased.iter().all(|l| l.not_before == ts(T0 + 2)));
    assert!(s.check().unwrap().is_ok());
}

/// Ingest replaces a corrupt record but cannot know its old due entry: that
/// entry, left dangling, made lease hand the URL out twice in one lease and
/// again in every later one, leased or not.
#[test]
fn a_dangling_due_entry_does_not_lease_its_url_again() {
    let dir = tempfile::tempdir().unwrap();
    let s = with_a_corrupt(&dir);
    let now = T0 + DAY;
    read(&s, now, SM, &[A, B, C]); // A replaced, due at `now`; T0's entry dangles
    let first = s
        .lease(&LeaseRequest::new(10).per_host(10).ttl(secs(300)), ts(now))
        .unwrap();
    let mut urls: Vec<&str> = first.iter().map(|l| l.url.as_str()).collect();
    urls.sort_unstable();
    assert_eq!(urls, [A, B, C], "each URL once");
    let again = s
        .lease(
            &LeaseRequest::new(10).per_host(10).ttl(secs(300)),
            ts(now + 1),
        )
        .unwrap();
    assert!(again.is_empty(), "leased again: {again:?}");
}
