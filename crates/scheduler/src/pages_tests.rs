//! Tests of [`crate::pages`] through the store: where an ingest, a lease
//! and the next ingest put records, a corrupt page, a layout-5 store. A
//! module of its own, so that the pages module does not import the store
//! and the queue (which import it).

use crate::error::StoreError;
use crate::keys;
use crate::kv::Batch;
use crate::page::{self, origin};
use crate::pages::{OWN_WINDOW, Pages, Placed, entries, record};
use crate::partition::Partition;
use crate::{Completion, LeaseRequest, Outcome, StoreOptions, Timestamp};
use sitemapd_parser::{NormUrl, UrlEntry};
use std::collections::HashSet;

const SITEMAP: &str = "https://a.example/sitemap.xml";

fn ingest(s: &Partition, now: i64, urls: &[String]) {
    let mut ingest = s.ingest(Timestamp::from_unix(now)).with_batch(100);
    for url in urls {
        let entry = UrlEntry::new(NormUrl::parse(url).unwrap());
        ingest.entry(SITEMAP, &entry).unwrap();
    }
    ingest.finish().unwrap();
}

/// 300 URLs of one origin (more than two pages' worth), 5 of another
/// scheme and 5 of another host, in no order.
fn urls() -> Vec<String> {
    let mut urls: Vec<String> = (0..300)
        .map(|i| format!("https://a.example/catalog/{}/item-{i}", i % 7))
        .collect();
    urls.extend((0..5).map(|i| format!("http://a.example/p{i}")));
    urls.extend((0..5).map(|i| format!("https://a.example.org/q{i}")));
    urls.reverse();
    urls
}

fn count(s: &Partition, prefix: u8) -> usize {
    s.kv.scan_prefix([prefix]).count()
}

fn scanned(s: &Partition) -> Vec<String> {
    s.all_url_records().map(|r| r.unwrap().0).collect()
}

fn sorted(mut urls: Vec<String>) -> Vec<String> {
    urls.sort();
    urls
}

#[test]
fn an_ingest_writes_pages_a_completion_keys_of_their_own_and_the_next_ingest_folds_them_back() {
    let s = Partition::in_memory(StoreOptions::default()).unwrap();
    let urls = urls();
    ingest(&s, 1_000, &urls);
    assert_eq!(count(&s, keys::URL), 0);
    // 300 URLs of one origin in pages of at most PAGE_CAP (at least
    // half full but for the last), one page per other origin.
    let pages = count(&s, keys::PAGE);
    let most = 2 + 2 * 300usize.div_ceil(page::PAGE_CAP);
    assert!(
        (2 + 300usize.div_ceil(page::PAGE_CAP)..=most).contains(&pages),
        "{pages} pages"
    );
    for (key, bytes) in s.kv.scan_prefix([keys::PAGE]).map(Result::unwrap) {
        let entries = page::decode(&bytes).unwrap();
        assert!(entries.len() <= page::PAGE_CAP);
        let last = keys::page(&entries[entries.len() - 1].0);
        assert!(key.as_ref() >= last.as_slice());
        assert!(
            entries
                .iter()
                .all(|(u, _)| origin(u) == origin(&entries[0].0))
        );
    }
    for url in &urls {
        assert!(s.url_record(url).unwrap().is_some(), "{url}");
    }
    assert_eq!(s.url_record("https://a.example/catalog/9").unwrap(), None);
    assert_eq!(scanned(&s), sorted(urls.clone()));
    assert_eq!(s.host_urls("a.example").count(), 305);
    assert_eq!(s.host_urls("a.example.org").count(), 5);

    let leased = s
        .lease(&LeaseRequest::new(10), Timestamp::from_unix(1_000))
        .unwrap();
    assert_eq!(leased.len(), 10);
    assert_eq!(
        count(&s, keys::URL),
        0,
        "a lease of listed URLs writes no record"
    );
    assert_eq!(scanned(&s), sorted(urls.clone()), "each URL once");
    for l in &leased {
        let view = s.url(l.url.as_str()).unwrap().unwrap();
        assert!(view.leased_until.is_some(), "its entry holds the lease");
    }
    assert!(s.check().unwrap().is_ok());
    // Five fetched: their records are written under keys of their own.
    let done = Completion::from(Outcome::NotModified);
    let fetched: Vec<&str> = leased[..5].iter().map(|l| l.url.as_str()).collect();
    s.complete_all(
        fetched.iter().map(|u| (*u, &done)),
        Timestamp::from_unix(1_100),
    )
    .unwrap();
    assert_eq!(
        count(&s, keys::URL),
        5,
        "a completion writes keys of their own"
    );
    assert_eq!(scanned(&s), sorted(urls.clone()), "each URL once");
    assert!(s.check().unwrap().is_ok());

    ingest(&s, 2_000, &urls);
    assert_eq!(count(&s, keys::URL), 0, "folded back into their pages");
    for (i, l) in leased.iter().enumerate() {
        let view = s.url(l.url.as_str()).unwrap().unwrap();
        assert_eq!(view.leased_until.is_some(), i >= 5, "the leases are kept");
        assert_eq!(view.fetches, u32::from(i < 5));
        assert_eq!(view.last_seen, Timestamp::from_unix(2_000));
    }
    assert_eq!(scanned(&s), sorted(urls));
    assert!(s.check().unwrap().is_ok());
}

#[test]
fn a_corrupt_page_is_named_skipped_by_scans_written_around_and_removed_by_repair() {
    let s = Partition::in_memory(StoreOptions::default()).unwrap();
    let urls = urls();
    ingest(&s, 1_000, &urls);
    let (key, bytes) = s.kv.scan_prefix([keys::PAGE]).nth(1).unwrap().unwrap();
    let lost = page::decode(&bytes).unwrap();
    s.kv.insert(key.to_vec(), &b"\x01\xff\xff"[..]).unwrap();
    let report = s.check().unwrap();
    assert_eq!(report.corrupt.len(), 1, "{report:?}");
    assert!(report.corrupt[0].starts_with("page https://"));
    assert!(matches!(
        s.url_record(&lost[0].0),
        Err(StoreError::Record { .. })
    ));
    let intact = s.all_url_records().filter(|item| s.intact(item)).count();
    assert_eq!(intact, urls.len() - lost.len());

    ingest(&s, 2_000, &urls);
    for (url, _) in &lost {
        assert!(
            s.url_record(url).unwrap().is_some(),
            "under a key of its own"
        );
    }
    assert_eq!(
        s.check().unwrap().corrupt,
        report.corrupt,
        "left for repair"
    );
    s.repair().unwrap();
    assert!(s.kv.get(&key).unwrap().is_none(), "removed by repair");
    assert!(s.check().unwrap().is_ok());
    assert_eq!(scanned(&s), sorted(urls));
}

#[test]
fn a_layout_5_store_reads_its_records_and_an_ingest_moves_them_into_pages() {
    let s = Partition::in_memory(StoreOptions::default()).unwrap();
    let urls = urls();
    ingest(&s, 1_000, &urls);
    // Layout 5: every record under a key of its own, no pages.
    let mut batch = Batch::default();
    for (key, bytes) in s.kv.scan_prefix([keys::PAGE]).map(Result::unwrap) {
        for (url, rec) in page::decode(&bytes).unwrap() {
            batch.insert(keys::url(&url), rec);
        }
        batch.remove(key);
    }
    s.kv.apply_batch(batch).unwrap();
    assert_eq!(count(&s, keys::PAGE), 0);
    assert_eq!(scanned(&s), sorted(urls.clone()));
    assert!(s.check().unwrap().is_ok());

    ingest(&s, 2_000, &urls);
    assert_eq!(count(&s, keys::URL), 0);
    assert!(count(&s, keys::PAGE) >= 5);
    assert_eq!(scanned(&s), sorted(urls));
    assert!(s.check().unwrap().is_ok());
}

#[test]
fn a_scan_from_inside_a_page_starts_there() {
    let s = Partition::in_memory(StoreOptions::default()).unwrap();
    let urls = urls();
    ingest(&s, 1_000, &urls);
    let all = scanned(&s);
    let from = &all[150];
    let got: Vec<String> = entries(&s.kv, from.as_bytes(), b"https://a.example0")
        .map(|r| r.unwrap().0)
        .collect();
    let want: Vec<String> = all[150..]
        .iter()
        .filter(|u| u.starts_with("https://a.example/"))
        .cloned()
        .collect();
    assert_eq!(got, want);
}

/// Takes `order` through one batch's pages as an ingest does (a read,
/// then the record set back): each read gives what the store holds for
/// the URL (its key of its own's value first), each placement says
/// whether it has a key of its own (`has_own`), and no page holds more
/// than a window of keys of their own.
fn check_batch(s: &Partition, order: &[String], has_own: &HashSet<String>) -> Result<(), String> {
    let mut pages = Pages::default();
    for url in order {
        let read = pages.read(&s.kv, url).unwrap().map(|r| r.into_owned());
        if read != record(&s.kv, url).unwrap() || read.is_none() {
            return Err(format!("{url}: read {read:?}"));
        }
        let placed = pages.set(&s.kv, url, Some(b"x".to_vec())).unwrap();
        let want = Placed::Page {
            own: has_own.contains(url),
        };
        if placed != want {
            return Err(format!("{url}: {placed:?}, not {want:?}"));
        }
        if pages.most_own_held() > OWN_WINDOW {
            return Err(format!(
                "{url}: {} keys of their own held",
                pages.most_own_held()
            ));
        }
    }
    Ok(())
}

#[test]
fn a_batch_reads_keys_of_their_own_in_any_order_and_knows_which_urls_have_one() {
    let s = Partition::in_memory(StoreOptions::default()).unwrap();
    let urls = urls();
    ingest(&s, 1_000, &urls);
    let leased = s
        .lease(&LeaseRequest::new(40), Timestamp::from_unix(1_000))
        .unwrap();
    assert!(leased.len() >= 10, "{} leased", leased.len());
    let done = Completion::from(Outcome::NotModified);
    s.complete_all(
        leased.iter().map(|l| (l.url.as_str(), &done)),
        Timestamp::from_unix(1_100),
    )
    .unwrap();
    assert_eq!(count(&s, keys::URL), leased.len());
    let own: HashSet<String> = leased.iter().map(|l| l.url.to_string()).collect();
    // From the last URL back: each read comes before what its page's
    // window of keys of their own holds.
    let mut backwards = sorted(urls);
    backwards.reverse();
    check_batch(&s, &backwards, &own).unwrap();
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Any URLs with keys of their own, taken in any order by one batch.
    /// `layout_5`: every record under a key of its own and no pages (so
    /// that the range of each origin's one page holds more of them than a
    /// window).
    #[test]
    fn a_batch_finds_keys_of_their_own_whatever_the_order(
        own in proptest::collection::vec(proptest::prelude::any::<bool>(), 310),
        layout_5 in proptest::prelude::any::<bool>(),
        order in proptest::strategy::Strategy::prop_shuffle(proptest::strategy::Just(sorted(urls()))),
    ) {
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
        let urls = sorted(urls());
        ingest(&s, 1_000, &urls);
        if layout_5 {
            let pages: Vec<_> = s.kv.scan_prefix([keys::PAGE]).map(|r| r.unwrap().0).collect();
            for key in pages {
                s.kv.remove(key).unwrap();
            }
        }
        let has_own: HashSet<String> = urls
            .iter()
            .zip(&own)
            .filter(|(_, own)| layout_5 || **own)
            .map(|(u, _)| u.clone())
            .collect();
        for url in &has_own {
            s.kv.insert(keys::url(url), format!("own:{url}").into_bytes())
                .unwrap();
        }
        let checked = check_batch(&s, &order, &has_own);
        proptest::prop_assert!(checked.is_ok(), "{:?}", checked);
    }
}
