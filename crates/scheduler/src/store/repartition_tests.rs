//! A store of one partition opened with several is the same store: every
//! view, count and lease order of the repartitioned store equals the
//! original's, before and after more work on both; a repartition cut short
//! at any write finishes on the next open with the same result.

use crate::kv::Kv;
use crate::store::test_history::{
    DAY, T0, assert_same, complete_leases_held, history, lease_order, options, read_all, ts, views,
};
use crate::{Store, StoreOptions, keys};
use sitemapd_storebench::copy_dir;

/// A store of one partition with [`history`], closed, in a directory.
fn one_partition() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(dir.path(), options(1)).unwrap();
    history(&s);
    assert_eq!(s.partitions(), 1);
    dir
}

/// The store of one partition and its copy opened with `partitions`
/// agree on every view, lease order and later read.
fn same_store(original: &Store, moved: &Store, partitions: usize) {
    assert_eq!(moved.partitions(), partitions);
    let report = moved.check().unwrap();
    assert!(report.is_ok(), "{partitions}: {report:?}");
    let now = ts(T0 + 5 * DAY + 1);
    assert_same(
        &views(original, now),
        &views(moved, now),
        &partitions.to_string(),
    );
    // The leases handed out before the move complete as they would have.
    complete_leases_held([original, moved], now);
    assert_same(
        &views(original, now),
        &views(moved, now),
        &format!("{partitions}, leases completed"),
    );
    // A read on both: the URLs each partition holds retire as they would.
    read_all(original, 1, ts(T0 + 6 * DAY));
    read_all(moved, 1, ts(T0 + 6 * DAY));
    let later = ts(T0 + 30 * DAY);
    assert_same(
        &views(original, later),
        &views(moved, later),
        &partitions.to_string(),
    );
    assert_eq!(lease_order(original, later), lease_order(moved, later));
    let report = moved.check().unwrap();
    assert!(report.is_ok(), "{partitions}: {report:?}");
}

#[test]
fn a_store_of_one_partition_opens_as_the_same_store_in_several() {
    let source = one_partition();
    for partitions in [4u16, 16] {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        copy_dir(source.path(), a.path());
        copy_dir(source.path(), b.path());
        let original = Store::open(a.path(), options(1)).unwrap();
        let moved = Store::open(b.path(), options(partitions)).unwrap();
        // Partition 0 keeps only its own hosts' URLs.
        let routes = crate::routing::Routes::new(partitions);
        for item in moved.parts()[0].kv.scan_prefix([keys::URL]) {
            let (key, _) = item.unwrap();
            let url = std::str::from_utf8(&key[1..]).unwrap();
            assert_eq!(routes.of_url(url), 0, "{url}");
        }
        same_store(&original, &moved, usize::from(partitions));
        drop(moved);
        // Opened again, with any count: it has its partitions.
        let again = Store::open(b.path(), options(1)).unwrap();
        assert_eq!(again.partitions(), usize::from(partitions));
    }
}

/// Every write failing from some point on (a crash there), for every
/// point from the first write to the last: the next open finishes the
/// repartition, and the store is the one an uncut repartition makes.
#[test]
fn a_repartition_cut_short_finishes_on_the_next_open() {
    let source = one_partition();
    let reference = tempfile::tempdir().unwrap();
    copy_dir(source.path(), reference.path());
    let reference = Store::open(reference.path(), options(4)).unwrap();
    let mut writes = 1;
    loop {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(source.path(), dir.path());
        let kv = Kv::open(dir.path(), StoreOptions::default().cache_bytes).unwrap();
        kv.inject_write_failures(Some(writes));
        let cut = Store::with_kv(kv, String::new(), options(4));
        let finished = cut.is_ok();
        drop(cut);
        let s = Store::open(dir.path(), options(4)).unwrap();
        assert_eq!(s.partitions(), 4, "cut after {writes} writes");
        let now = ts(T0 + 5 * DAY + 1);
        let what = format!("cut after {writes} writes");
        assert_same(&views(&reference, now), &views(&s, now), &what);
        let report = s.check().unwrap();
        assert!(report.is_ok(), "cut after {writes} writes: {report:?}");
        if finished {
            // Cut at every write of a move through both phases.
            assert!(writes > 20, "a move of {writes} writes");
            return;
        }
        writes += 1;
    }
}

/// An empty store made with one partition takes the count it is opened
/// with.
#[test]
fn an_empty_store_of_one_partition_takes_the_count() {
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open(dir.path(), options(1)).unwrap());
    let s = Store::open(dir.path(), options(8)).unwrap();
    assert_eq!(s.partitions(), 8);
    assert!(s.check().unwrap().is_ok());
}
