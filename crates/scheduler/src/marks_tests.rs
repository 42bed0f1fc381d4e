//! Tests of leases kept in due entries ([`crate::marks`]): a lease writes
//! no record, and a lease a record holds (as the layout migration leaves
//! it) stands until the record is written again.

use crate::keys;
use crate::partition::Partition;
use crate::policy::Reason;
use crate::record::{Listed, encode};
use crate::{Completion, LeaseRequest, Outcome, StoreOptions, Timestamp};
use sitemapd_parser::{NormUrl, UrlEntry};
use std::time::Duration;

const T0: i64 = 1_700_000_000;
const SITEMAP: &str = "https://a.example/sitemap.xml";

fn ts(t: i64) -> Timestamp {
    Timestamp::from_unix(t)
}

fn store_with(urls: usize) -> Partition {
    let s = Partition::in_memory(StoreOptions::default()).unwrap();
    let mut ingest = s.ingest(ts(T0));
    for i in 0..urls {
        let url = format!("https://a.example/item-{i}");
        let entry = UrlEntry::new(NormUrl::parse(&url).unwrap());
        ingest.entry(SITEMAP, &entry).unwrap();
    }
    ingest.finish().unwrap();
    s
}

fn lease(s: &Partition, n: usize, at: i64) -> Vec<crate::Leased> {
    let request = LeaseRequest::new(n)
        .per_host(n)
        .ttl(Duration::from_secs(300));
    s.lease(&request, ts(at)).unwrap()
}

/// Every due entry, with its due time.
fn entries(s: &Partition) -> Vec<(i64, Listed)> {
    let mut out = Vec::new();
    for item in s.kv.scan_prefix([keys::DUE]) {
        let (_, value) = item.unwrap();
        let list = crate::due_list::decode(&value).unwrap();
        out.extend(list.entries.into_iter().map(|e| (e.due, e)));
    }
    out
}

fn own_keys(s: &Partition) -> usize {
    s.kv.scan_prefix([keys::URL]).count()
}

#[test]
fn a_lease_of_listed_urls_marks_their_entries_and_writes_no_record() {
    let s = store_with(40);
    let first = lease(&s, 10, T0);
    assert_eq!(first.len(), 10);
    assert_eq!(own_keys(&s), 0, "no record written");
    let marked: Vec<(i64, Listed)> = entries(&s)
        .into_iter()
        .filter(|(_, e)| e.lease.is_some())
        .collect();
    assert_eq!(marked.len(), 10);
    assert!(marked.iter().all(|(at, e)| *at == T0
        && e.lease.map(|l| l.1) == Some(T0 + 300)
        && first.iter().any(|l| l.url == e.url)));
    for l in &first {
        assert_eq!(l.reason, Reason::New);
        assert_eq!(l.expires, Some(ts(T0 + 300)));
        let view = s.url(&l.url).unwrap().unwrap();
        assert_eq!(view.leased_until, Some(ts(T0 + 300)));
        assert_eq!(view.due, ts(T0 + 300), "due again when the lease runs out");
    }
    assert_eq!(s.stats(ts(T0 + 1)).unwrap().leased, 10);
    assert_eq!(s.full_stats(ts(T0 + 1)).unwrap().leased, 10);
    assert!(s.check().unwrap().is_ok(), "{:?}", s.check().unwrap());

    // Passed over while leased; the other 30 come next.
    let second = lease(&s, 40, T0 + 1);
    assert_eq!(second.len(), 30);
    assert!(second.iter().all(|l| !first.iter().any(|f| f.url == l.url)));
    assert_eq!(s.stats(ts(T0 + 2)).unwrap().due_now, 0);
    assert_eq!(
        s.stats(ts(T0 + 2)).unwrap().next_due,
        Some(ts(T0 + 300)),
        "the first lease to run out"
    );

    // Run out: handed out again, marked anew, counted once.
    let again = lease(&s, 40, T0 + 301);
    assert_eq!(again.len(), 40);
    assert!(again.iter().all(|l| l.reason == Reason::LeaseExpired));
    assert_eq!(own_keys(&s), 0);
    assert_eq!(s.stats(ts(T0 + 302)).unwrap().leased, 40);
    assert!(s.check().unwrap().is_ok());

    // A completion ends the lease: the record is written, and its entry
    // moves to when it is due next, without the lease.
    let done = Completion::from(Outcome::NotModified);
    s.complete(&again[0].url, &done, ts(T0 + 310)).unwrap();
    assert_eq!(own_keys(&s), 1);
    let moved: Vec<(i64, Listed)> = entries(&s)
        .into_iter()
        .filter(|(_, e)| e.url == again[0].url)
        .collect();
    assert_eq!(moved.len(), 1);
    assert!(moved[0].0 > T0 + 310 && moved[0].1.lease.is_none());
    let view = s.url(&again[0].url).unwrap().unwrap();
    assert_eq!(view.leased_until, None);
    assert_eq!(s.stats(ts(T0 + 311)).unwrap().leased, 39);
    assert!(s.check().unwrap().is_ok());
}

/// A lease the record holds, as the layout migration leaves it (its entry
/// holds the same): it stands until the record is written again.
#[test]
fn a_lease_a_record_holds_stands_until_the_record_is_written_again() {
    let s = store_with(1);
    let url = "https://a.example/item-0";
    let mut rec = s.url_record(url).unwrap().unwrap();
    rec.schedule.lease = Some((7, T0 + 300));
    let mut host = s.stored_host_record("a.example").unwrap();
    host.counts.get_or_insert_default().add_lease();
    let run = s
        .run_of(&rec.lane(url), &rec.position(url))
        .unwrap()
        .unwrap();
    let mut list = crate::due_list::decode(&s.kv.get(&run).unwrap().unwrap()).unwrap();
    list.entries[0].lease = rec.schedule.lease;
    let mut batch = crate::kv::Batch::default();
    batch.insert(run, crate::due_list::encode(&list));
    batch.insert(keys::url(url), encode(&rec));
    batch.insert(keys::host("a.example"), encode(&host));
    s.kv.apply_batch(batch).unwrap();
    assert!(s.check().unwrap().is_ok(), "{:?}", s.check().unwrap());
    let view = s.url(url).unwrap().unwrap();
    assert_eq!(view.leased_until, Some(ts(T0 + 300)), "the record's lease");

    assert!(lease(&s, 1, T0 + 10).is_empty(), "due when it runs out");
    let again = lease(&s, 1, T0 + 301);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].reason, Reason::LeaseExpired);
    // Its entry holds the new lease, which stands over the record's.
    let view = s.url(url).unwrap().unwrap();
    assert_eq!(view.leased_until, Some(ts(T0 + 601)));
    let listed = entries(&s);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].1.lease, Some((again[0].lease.unwrap(), T0 + 601)));
    assert_eq!(s.stats(ts(T0 + 302)).unwrap().leased, 1);
    assert!(s.check().unwrap().is_ok(), "{:?}", s.check().unwrap());
    // Completed: the record is written without a lease, and so is its entry.
    s.complete(url, &Completion::from(Outcome::NotModified), ts(T0 + 310))
        .unwrap();
    assert_eq!(s.url_record(url).unwrap().unwrap().schedule.lease, None);
    assert_eq!(s.stats(ts(T0 + 311)).unwrap().leased, 0);
    assert!(s.check().unwrap().is_ok(), "{:?}", s.check().unwrap());
}

/// `urls` URLs read again at `at`, each with lastmod `lastmod`.
fn read_with_lastmod(s: &Partition, urls: usize, at: i64, lastmod: i64) {
    let mut ingest = s.ingest(ts(at));
    for i in 0..urls {
        let url = format!("https://a.example/item-{i}");
        let mut entry = UrlEntry::new(NormUrl::parse(&url).unwrap());
        entry.lastmod = Some(sitemapd_parser::Lastmod {
            unix_seconds: lastmod,
            nanos: 0,
            precision: sitemapd_parser::date::Precision::Second,
        });
        ingest.entry(SITEMAP, &entry).unwrap();
    }
    ingest.finish().unwrap();
}

#[test]
fn an_ingest_keeps_a_lease_its_entry_holds_and_counts_it_out_when_the_url_moves() {
    let s = store_with(20);
    let leased = lease(&s, 5, T0);
    assert_eq!(leased.len(), 5);
    // A new lastmod for every URL: the leased ones keep their lease (and
    // their place), the others are scheduled anew.
    read_with_lastmod(&s, 20, T0 + 100, T0 + 50);
    for l in &leased {
        let view = s.url(&l.url).unwrap().unwrap();
        assert_eq!(view.leased_until, Some(ts(T0 + 300)), "{view:?}");
    }
    assert_eq!(s.stats(ts(T0 + 101)).unwrap().leased, 5);
    assert!(s.check().unwrap().is_ok(), "{:?}", s.check().unwrap());
    assert_eq!(own_keys(&s), 0);
    // Their leases ran out; another new lastmod moves them: no lease is
    // counted any more.
    read_with_lastmod(&s, 20, T0 + 400, T0 + 350);
    for l in &leased {
        let view = s.url(&l.url).unwrap().unwrap();
        assert_eq!(view.leased_until, None, "{view:?}");
    }
    assert_eq!(s.stats(ts(T0 + 401)).unwrap().leased, 0);
    assert!(s.check().unwrap().is_ok(), "{:?}", s.check().unwrap());
}

#[test]
fn repair_keeps_the_leases_the_due_lists_held() {
    let s = store_with(10);
    let first = lease(&s, 5, T0);
    assert_eq!(first.len(), 5);
    s.repair().unwrap();
    assert!(s.check().unwrap().is_ok(), "{:?}", s.check().unwrap());
    for l in &first {
        let view = s.url(&l.url).unwrap().unwrap();
        assert_eq!(view.leased_until, Some(ts(T0 + 300)), "{view:?}");
    }
    assert_eq!(s.stats(ts(T0 + 1)).unwrap().leased, 5);
    let others = lease(&s, 10, T0 + 1);
    assert_eq!(others.len(), 5);
    assert!(others.iter().all(|o| !first.iter().any(|f| f.url == o.url)));
    let back = lease(&s, 10, T0 + 301);
    assert_eq!(back.len(), 10, "all leases ran out");
    assert!(back.iter().all(|l| l.reason == Reason::LeaseExpired));
    assert!(s.check().unwrap().is_ok(), "{:?}", s.check().unwrap());
}
