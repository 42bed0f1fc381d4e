//! Tests of the key layout migration to layout 8: each host's counts move
//! from `t` ‖ host into its host record.

use crate::keys;
use crate::record::{HostRecord, decode, encode};
use crate::store::Store;
use crate::tally::Tally;
use crate::{Completion, LeaseRequest, Outcome, StoreOptions, Timestamp};
use sitemapd_parser::{NormUrl, UrlEntry};

const T0: i64 = 1_700_000_000;

fn ts(t: i64) -> Timestamp {
    Timestamp::from_unix(t)
}

/// Two hosts' URLs, one of them leased and one completed: counts of
/// several states.
fn store() -> Store {
    let s = Store::in_memory(StoreOptions::default()).unwrap();
    let mut ingest = s.ingest(ts(T0));
    for host in ["a.example", "b.example"] {
        for i in 0..5 {
            let url = format!("https://{host}/item-{i}");
            let entry = UrlEntry::new(NormUrl::parse(&url).unwrap());
            ingest
                .entry(&format!("https://{host}/sitemap.xml"), &entry)
                .unwrap();
        }
    }
    ingest.finish().unwrap();
    let leased = s.lease(&LeaseRequest::new(3).per_host(2), ts(T0)).unwrap();
    s.complete(
        &leased[0].url,
        &Completion::from(Outcome::NotModified),
        ts(T0 + 1),
    )
    .unwrap();
    s
}

/// `s` as key layout 7 wrote it: each host's counts under `t` ‖ host, its
/// host record in format 7 (without them).
fn as_layout_7(s: &Store) {
    let mut batch = crate::kv::Batch::default();
    for item in s.kv.scan_prefix([keys::HOST]) {
        let (key, value) = item.unwrap();
        let host = decode::<HostRecord>(&value).unwrap();
        let name = std::str::from_utf8(&key[1..]).unwrap();
        if let Some(counts) = host.counts {
            let mut t = encode(&counts);
            t[0] = 7;
            batch.insert(keys::tally(name), t);
        }
        let mut h = vec![7];
        h.extend(
            postcard::to_stdvec(&(
                host.min_delay,
                host.next_allowed,
                &host.trust,
                host.urls,
                host.errors_in_a_row,
            ))
            .unwrap(),
        );
        batch.insert(key, h);
    }
    batch.insert(keys::LAYOUT, vec![7]);
    s.kv.apply_batch(batch).unwrap();
}

fn hosts(s: &Store) -> Vec<(String, HostRecord)> {
    s.kv.scan_prefix([keys::HOST])
        .map(|item| {
            let (key, value) = item.unwrap();
            let name = String::from_utf8(key[1..].to_vec()).unwrap();
            (name, decode::<HostRecord>(&value).unwrap())
        })
        .collect()
}

#[test]
fn a_layout_7_stores_counts_move_into_its_host_records() {
    let s = store();
    let stats = s.stats(ts(T0 + 2)).unwrap();
    assert_eq!((stats.active, stats.leased), (10, 2));
    let before = hosts(&s);
    assert!(before.iter().any(|(_, h)| h.next_allowed > 0));
    as_layout_7(&s);
    assert_eq!(s.kv.scan_prefix([keys::TALLY]).count(), 2);
    // Read as format 7, before the migration: no counts.
    assert!(hosts(&s).iter().all(|(_, h)| h.counts.is_none()));

    crate::migrate::to_current_layout(&s.kv).unwrap();
    assert_eq!(s.kv.scan_prefix([keys::TALLY]).count(), 0, "no `t` left");
    assert_eq!(hosts(&s), before, "counts, clock and trust as they were");
    let again = s.stats(ts(T0 + 2)).unwrap();
    assert_eq!(format!("{again:?}"), format!("{stats:?}"));
    assert!(s.check().unwrap().is_ok(), "{:?}", s.check().unwrap());
    // Opened again: nothing left to do.
    crate::migrate::to_current_layout(&s.kv).unwrap();
    assert_eq!(hosts(&s), before);
}

/// A crash midway: some hosts' counts moved, others still under `t`. The
/// next open moves the rest; a count that does not decode is dropped, and
/// `stats --check` names its host until `stats --repair` counts it again.
#[test]
fn a_migration_cut_short_finishes_on_the_next_open() {
    let s = store();
    let before = hosts(&s);
    as_layout_7(&s);
    // a.example moved, b.example's count corrupt.
    let mut batch = crate::kv::Batch::default();
    batch.remove(keys::tally("a.example"));
    batch.insert(keys::host("a.example"), encode(&before[0].1));
    batch.insert(keys::tally("b.example"), vec![7, 0xff]);
    s.kv.apply_batch(batch).unwrap();

    crate::migrate::to_current_layout(&s.kv).unwrap();
    assert_eq!(s.kv.scan_prefix([keys::TALLY]).count(), 0);
    let after = hosts(&s);
    assert_eq!(after[0], before[0]);
    assert_eq!(after[1].1.counts, None);
    let report = s.check().unwrap();
    assert_eq!(report.miscounted.len(), 1, "{report:?}");
    assert!(report.miscounted[0].starts_with("b.example: no counts kept"));
    s.repair().unwrap();
    assert_eq!(hosts(&s), before);
    assert!(s.check().unwrap().is_ok());
}

/// `stats --repair` counts every host again into its host record: a host
/// record that does not decode is replaced, and a host left with no URL is
/// no longer a queue.
#[test]
fn repair_counts_into_the_host_records() {
    let s = store();
    let before = hosts(&s);
    let mut batch = crate::kv::Batch::default();
    batch.insert(keys::host("a.example"), vec![8, 0xff, 0xff]);
    let mut lost = before[1].1.clone();
    lost.counts = Some(Tally::default());
    batch.insert(keys::host("b.example"), encode(&lost));
    batch.insert(
        keys::host("c.example"),
        encode(&HostRecord {
            counts: Some(Tally::default()),
            ..HostRecord::default()
        }),
    );
    s.kv.apply_batch(batch).unwrap();
    let report = s.check().unwrap();
    assert_eq!(report.corrupt, ["ha.example"], "{report:?}");
    assert_eq!(report.miscounted.len(), 2, "{report:?}");
    s.repair().unwrap();
    assert!(s.check().unwrap().is_ok(), "{:?}", s.check().unwrap());
    let after = hosts(&s);
    assert_eq!(after[0].1.counts, before[0].1.counts);
    assert_eq!(after[1], before[1]);
    assert_eq!(after[2].1.counts, None, "no URL of c.example: not a queue");
    let names: Vec<String> = s.queues().map(|q| q.unwrap().0).collect();
    assert_eq!(names, ["a.example", "b.example"]);
}
