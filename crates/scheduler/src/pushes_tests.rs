//! Tests of pushes ([`crate::pushes`]) through the store.

use sitemapd_parser::{HostKey, NormUrl, UrlEntry};

use crate::keys;
use crate::pushes::{BATCH, HALVE_AT, MIN_FETCHES, PROBE_EVERY, PushView};
use crate::record::PushRecord;
use crate::{
    Completion, LeaseRequest, Notified, Outcome, Store, StoreError, StoreOptions, Timestamp,
};

const T0: i64 = 1_700_000_000;
const DAY: i64 = 86_400;

fn ts(t: i64) -> Timestamp {
    Timestamp::from_unix(t)
}

fn host(name: &str) -> HostKey {
    NormUrl::parse(&format!("https://{name}/"))
        .unwrap()
        .host_key()
}

/// A store whose sitemap lists `n` URLs of a.example, all due now.
fn backlog(dir: &tempfile::TempDir, n: usize) -> Store {
    let s = Store::open(dir.path(), StoreOptions::default()).unwrap();
    let mut ingest = s.ingest(ts(T0));
    for i in 0..n {
        let url = NormUrl::parse(&format!("https://a.example/old/{i}")).unwrap();
        ingest
            .entry("https://a.example/sitemap.xml", &UrlEntry::new(url))
            .unwrap();
    }
    ingest.finish().unwrap();
    s
}

fn leased(s: &Store, n: usize, now: i64) -> Vec<String> {
    s.lease(&LeaseRequest::new(n).per_host(n), ts(now))
        .unwrap()
        .into_iter()
        .map(|l| l.url)
        .collect()
}

#[test]
fn a_push_is_leased_ahead_of_the_backlog_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let s = backlog(&dir, 50);
    let now = T0 + DAY;
    let pushed = s
        .push(
            &host("a.example"),
            ["https://a.example/new", "https://a.example/old/7"],
            ts(now),
        )
        .unwrap();
    assert_eq!(pushed.found, [Notified::Added, Notified::Known]);
    assert!(pushed.urgent);
    let mut first = leased(&s, 2, now);
    first.sort();
    assert_eq!(first, ["https://a.example/new", "https://a.example/old/7"]);
    let views: Vec<PushView> = s.pushes().map(Result::unwrap).collect();
    assert_eq!(views.len(), 1);
    let v = &views[0];
    assert_eq!((v.host.as_str(), v.pushes, v.urls), ("a.example", 1, 2));
    assert_eq!((v.last, v.fetched, v.key_verified), (ts(now), 0, None));
    assert!(s.check().unwrap().is_ok());
}

#[test]
fn a_push_of_many_batches_counts_once_and_stores_every_url() {
    let dir = tempfile::tempdir().unwrap();
    let s = backlog(&dir, 0);
    let urls: Vec<String> = (0..2 * BATCH + 5)
        .map(|i| format!("https://a.example/n/{i}"))
        .collect();
    let pushed = s
        .push(&host("a.example"), urls.iter().map(String::as_str), ts(T0))
        .unwrap();
    assert_eq!(pushed.found.len(), urls.len());
    assert!(pushed.found.iter().all(|f| *f == Notified::Added));
    let v = s.pushes().next().unwrap().unwrap();
    assert_eq!((v.pushes, v.urls), (1, urls.len() as u64));
    assert_eq!(s.stats(ts(T0)).unwrap().due_now, urls.len() as u64);
    assert!(s.check().unwrap().is_ok());
}

#[test]
fn a_push_naming_a_url_of_another_host_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = backlog(&dir, 3);
    let e = s
        .push(
            &host("a.example"),
            ["https://a.example/x", "https://b.example/y"],
            ts(T0),
        )
        .unwrap_err();
    assert!(matches!(e, StoreError::OffHost { .. }), "{e}");
    let e = s
        .push(&host("a.example"), ["mailto:x@a.example"], ts(T0))
        .unwrap_err();
    assert!(matches!(e, StoreError::InvalidUrl { .. }), "{e}");
    assert!(s.url("https://a.example/x").unwrap().is_none());
    assert_eq!(s.pushes().count(), 0);
}

/// A host whose pushed URLs keep being found unchanged loses the
/// urgency, save a probe every few pushes, and wins it back when the
/// fetches find changes again.
#[test]
fn pushes_that_find_no_change_lose_their_urgency_and_changes_win_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let s = backlog(&dir, 40);
    // Each fetched once: the policy has them due later.
    let first = leased(&s, 40, T0);
    assert_eq!(first.len(), 40);
    let done = Completion::from(Outcome::NotModified);
    s.complete_all(first.iter().map(|u| (u.as_str(), &done)), ts(T0))
        .unwrap();
    let a = host("a.example");
    let mut now = T0;
    let mut n = 0;
    let mut push_and_fetch = |outcome: Outcome| {
        now += 3_600;
        n += 1;
        let url = format!("https://a.example/old/{}", n % 40);
        let pushed = s.push(&a, [url.as_str()], ts(now)).unwrap();
        let due_now = s.url(&url).unwrap().unwrap().due <= ts(now);
        if pushed.urgent {
            assert_eq!(leased(&s, 10, now), std::slice::from_ref(&url));
        }
        s.complete(&url, &Completion::from(outcome.clone()), ts(now + 60))
            .unwrap();
        (pushed.urgent, due_now)
    };
    let urgent: Vec<(bool, bool)> = (0..MIN_FETCHES)
        .map(|_| push_and_fetch(Outcome::NotModified))
        .collect();
    assert!(urgent.iter().all(|u| *u == (true, true)), "{urgent:?}");
    // Eight fetches that found nothing: the next pushes are scheduled
    // by the policy (not due now: the URLs were fetched an hour ago and
    // found unchanged), but for a probe.
    let later: Vec<(bool, bool)> = (0..PROBE_EVERY)
        .map(|_| push_and_fetch(Outcome::NotModified))
        .collect();
    assert!(later.iter().all(|(urgent, due)| urgent == due), "{later:?}");
    assert_eq!(later.iter().filter(|u| u.0).count(), 1, "{later:?}");
    let v = s.pushes().next().unwrap().unwrap();
    assert!(!v.urgent && v.fetched == MIN_FETCHES + 1 && v.changed == 0);
    // Probes that find changes bring it back.
    let mut back = false;
    for _ in 0..4 * PROBE_EVERY {
        back = push_and_fetch(Outcome::Changed).0 && s.pushes().next().unwrap().unwrap().urgent;
        if back {
            break;
        }
    }
    assert!(back, "{:?}", s.pushes().next());
    assert!(s.check().unwrap().is_ok());
}

#[test]
fn counts_are_halved_and_a_verified_key_is_kept() {
    let mut r = PushRecord::default();
    for i in 0..HALVE_AT + 10 {
        r.fetch_found(i % 2 == 0);
    }
    assert!(r.fetched < HALVE_AT && r.changed <= r.fetched, "{r:?}");
    let dir = tempfile::tempdir().unwrap();
    let s = backlog(&dir, 0);
    let b = host("b.example:8443");
    s.key_verified(&b, Some(ts(T0))).unwrap();
    let v = s.pushes().next().unwrap().unwrap();
    assert_eq!(
        (v.host.as_str(), v.key_verified),
        ("b.example:8443", Some(ts(T0)))
    );
    s.key_verified(&b, None).unwrap();
    assert_eq!(s.pushes().next().unwrap().unwrap().key_verified, None);
}

#[test]
fn a_push_record_that_does_not_decode_is_named_by_check_and_counted_anew() {
    let dir = tempfile::tempdir().unwrap();
    let s = backlog(&dir, 0);
    let a = host("a.example");
    let part = s.part_of_host("a.example");
    let mut batch = crate::kv::Batch::default();
    batch.insert(keys::pushes("a.example"), vec![0xffu8, 1, 2]);
    part.kv.apply_batch(batch).unwrap();
    assert!(!s.check().unwrap().is_ok());
    s.push(&a, ["https://a.example/x"], ts(T0)).unwrap();
    let v = s.pushes().next().unwrap().unwrap();
    assert_eq!((v.pushes, v.urls), (1, 1));
    assert!(s.check().unwrap().is_ok());
}
