//! Tests of the key layout migration: a layout-9 store (ids from sled's
//! generator) is given its id counter and nothing else; a store of layout 7 or 8
//! (due lists per host, second and class; records naming their lists;
//! hosts filed under a client's key) is rebuilt into lanes and heads, its
//! leases and counts kept, its filings turned into queues.

use std::collections::BTreeMap;

use crate::keys;
use crate::partition::Partition;
use crate::record::{HostRecord, Listed, UrlRecord, decode, encode};
use crate::tally::Tally;
use crate::{Completion, LeaseRequest, Outcome, StoreOptions, Timestamp};
use sitemapd_parser::{NormUrl, UrlEntry};

const T0: i64 = 1_700_000_000;

fn ts(t: i64) -> Timestamp {
    Timestamp::from_unix(t)
}

/// Two hosts' URLs, two of them leased and one completed: counts of
/// several states.
fn store() -> Partition {
    let s = Partition::in_memory(StoreOptions::default()).unwrap();
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

/// `s` as key layout 8 wrote it: one due list per host, due second and
/// class (the leases in front of its entries), URL records of format 8
/// naming their list, no heads; and `filed` hosts filed under a client's
/// key.
fn as_layout_8(s: &Partition, filed: &[(&str, &str)]) {
    let mut lists: BTreeMap<(u8, i64, String), Vec<Listed>> = BTreeMap::new();
    let mut batch = crate::kv::Batch::default();
    for prefix in [keys::DUE, keys::HEAD] {
        for item in s.kv.scan_prefix([prefix]) {
            let (key, value) = item.unwrap();
            batch.remove(key.to_vec());
            if let Some(run) = keys::parse_run(&key).filter(|_| prefix == keys::DUE) {
                // Layout 8's classes: changed or new 0, refresh 1,
                // validation 2.
                let class = run.class.saturating_sub(1);
                let list = crate::due_list::decode(&value).unwrap();
                for entry in list.entries {
                    let at = (class, entry.due, run.host.to_string());
                    lists.entry(at).or_default().push(entry);
                }
            }
        }
    }
    for ((class, due, host), entries) in lists {
        #[derive(serde::Serialize)]
        struct V8<'a> {
            entries: Vec<(f32, keys::Rank, &'a str, crate::record::StoredReason, bool)>,
        }
        let body: Vec<_> = entries
            .iter()
            .map(|e| (e.score, e.rank, e.url.as_str(), e.reason, e.meta))
            .collect();
        let mut value = vec![8];
        value.extend(postcard::to_stdvec(&V8 { entries: body }).unwrap());
        let marks: Vec<(usize, (u64, i64))> = entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.lease.map(|l| (i, l)))
            .collect();
        let value = crate::due_list::remark(&value, Some(entries.len()), &marks).unwrap();
        let key = keys::legacy::due(
            class,
            due,
            [0; keys::RANK_BYTES],
            &format!("\0{host}\0{:08x}", 0),
        );
        batch.insert(key, value);
    }
    for item in crate::pages::entries(&s.kv, &[], &[0xff]) {
        let (url, bytes) = item.unwrap();
        let rec = decode::<UrlRecord>(&bytes).unwrap();
        let listed = rec.queued().then_some(0);
        batch.insert(keys::url(&url), crate::record::encode_v8(&rec, listed));
    }
    for (host, key) in filed {
        batch.insert(keys::queue_of(host), key.as_bytes());
        let mut filing = vec![keys::QUEUE_HOST];
        filing.extend_from_slice(key.as_bytes());
        filing.push(0);
        filing.extend_from_slice(host.as_bytes());
        batch.insert(filing, &[][..]);
    }
    batch.insert(keys::LAYOUT, vec![8]);
    s.kv.apply_batch(batch).unwrap();
}

/// `s` as key layout 7 wrote its counts: under `t` ‖ host, its host
/// records in format 7 (without them).
fn counts_as_layout_7(s: &Partition) {
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

fn hosts(s: &Partition) -> Vec<(String, HostRecord)> {
    s.kv.scan_prefix([keys::HOST])
        .map(|item| {
            let (key, value) = item.unwrap();
            let name = String::from_utf8(key[1..].to_vec()).unwrap();
            (name, decode::<HostRecord>(&value).unwrap())
        })
        .collect()
}

/// Each URL's lease, as views show it.
fn leases(s: &Partition) -> Vec<(String, Option<Timestamp>)> {
    s.queue_urls(None, ts(T0 + 2))
        .map(|v| {
            let v = v.unwrap();
            (v.url, v.leased_until)
        })
        .collect()
}

#[test]
fn a_layout_8_store_is_rebuilt_with_its_leases_and_counts() {
    let s = store();
    let stats = s.stats(ts(T0 + 2)).unwrap();
    assert_eq!((stats.active, stats.leased), (10, 2));
    let before = hosts(&s);
    let held = leases(&s);
    assert_eq!(held.iter().filter(|(_, l)| l.is_some()).count(), 2);
    as_layout_8(&s, &[]);
    assert!(
        s.check().is_ok_and(|r| !r.is_ok()),
        "a layout-8 index is not this layout's"
    );

    crate::migrate::to_current_layout(&s.kv).unwrap();
    assert!(s.check().unwrap().is_ok(), "{:?}", s.check().unwrap());
    assert_eq!(hosts(&s), before, "counts, clock and trust as they were");
    assert_eq!(leases(&s), held);
    let mut again = s.stats(ts(T0 + 2)).unwrap();
    again.disk_bytes = stats.disk_bytes; // records rewritten, with their leases
    assert_eq!(format!("{again:?}"), format!("{stats:?}"));
    // The leased URLs are passed over until their leases run out.
    let next = s
        .lease(&LeaseRequest::new(10).per_host(10), ts(T0 + 10))
        .unwrap();
    assert_eq!(next.len(), 7);
    assert!(
        next.iter()
            .all(|l| !held.iter().any(|(u, h)| *u == l.url && h.is_some()))
    );
    // Opened again: nothing left to do.
    let keys_now = s.kv.scan_prefix([]).count();
    crate::migrate::to_current_layout(&s.kv).unwrap();
    assert_eq!(s.kv.scan_prefix([]).count(), keys_now);
}

/// Layout 7 kept each host's counts under `t`: they are counted again
/// into the host records, and no `t` key is left.
#[test]
fn a_layout_7_stores_counts_are_counted_into_its_host_records() {
    let s = store();
    let before = hosts(&s);
    as_layout_8(&s, &[]);
    counts_as_layout_7(&s);
    assert_eq!(s.kv.scan_prefix([keys::TALLY]).count(), 2);
    assert!(hosts(&s).iter().all(|(_, h)| h.counts.is_none()));
    crate::migrate::to_current_layout(&s.kv).unwrap();
    assert_eq!(s.kv.scan_prefix([keys::TALLY]).count(), 0, "no `t` left");
    assert_eq!(hosts(&s), before);
    assert!(s.check().unwrap().is_ok(), "{:?}", s.check().unwrap());
}

/// A host filed under a client's key (layouts 6 to 8): its URLs are in
/// that queue now, and the filing is gone.
#[test]
fn a_filed_host_s_urls_go_in_its_key_s_queue() {
    let s = store();
    as_layout_8(&s, &[("b.example", "shard-2")]);
    crate::migrate::to_current_layout(&s.kv).unwrap();
    assert!(s.check().unwrap().is_ok(), "{:?}", s.check().unwrap());
    for prefix in [keys::QUEUE_OF, keys::QUEUE_HOST] {
        assert_eq!(s.kv.scan_prefix([prefix]).count(), 0);
    }
    let names: Vec<String> = s.queues().map(|q| q.unwrap().0).collect();
    assert_eq!(names, ["a.example", "shard-2"]);
    let queue = s.queue("shard-2").unwrap().unwrap();
    assert_eq!(queue.total(), 5);
    let listed: Vec<String> = s
        .queue_urls(Some("shard-2"), ts(T0))
        .map(|v| v.unwrap().url)
        .collect();
    assert_eq!(listed.len(), 5);
    assert!(listed.iter().all(|u| u.starts_with("https://b.example/")));
}

/// A crash midway (every write failing from some point on): the next open
/// starts over and finishes, the leases kept.
#[test]
fn a_migration_cut_short_finishes_on_the_next_open() {
    for writes in [1, 3, 6] {
        let s = store();
        let before = hosts(&s);
        let held = leases(&s);
        as_layout_8(&s, &[("b.example", "shard-2")]);
        s.inject_write_failures(Some(writes));
        assert!(
            crate::migrate::to_current_layout(&s.kv).is_err(),
            "{writes}"
        );
        s.inject_write_failures(None);
        crate::migrate::to_current_layout(&s.kv).unwrap();
        let report = s.check().unwrap();
        assert!(report.is_ok(), "{writes}: {report:?}");
        assert_eq!(leases(&s), held, "{writes}");
        assert_eq!(hosts(&s)[0], before[0], "{writes}");
    }
}

/// `stats --repair` counts every queue again into its record: a host
/// record that does not decode is replaced, and a name left with no URL is
/// no longer a queue; the leases the runs held stay.
#[test]
fn repair_counts_into_the_host_records() {
    let s = store();
    let before = hosts(&s);
    let held = leases(&s);
    let mut batch = crate::kv::Batch::default();
    batch.insert(keys::host("a.example"), vec![9, 0xff, 0xff]);
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
    assert_eq!(leases(&s), held);
}

/// A layout-9 store (its ids from sled's database-wide generator, no id
/// counter) opens as layout 10 with nothing rebuilt: its counter past
/// every id sled handed out, its queue as it was.
#[test]
fn a_layout_9_store_gets_its_id_counter_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let (before, queued) = {
        let s = Partition::open(dir.path(), StoreOptions::default()).unwrap();
        let mut ingest = s.ingest(ts(T0));
        for i in 0..5 {
            let url = format!("https://a.example/item-{i}");
            let entry = UrlEntry::new(NormUrl::parse(&url).unwrap());
            ingest
                .entry("https://a.example/sitemap.xml", &entry)
                .unwrap();
        }
        ingest.finish().unwrap();
        let keys: Vec<_> =
            s.kv.scan_prefix([])
                .map(|i| i.unwrap().0.to_vec())
                .collect();
        (keys, s.stats(ts(T0)).unwrap().active)
    };
    let handed_out = {
        // The store just dropped keeps sled's lock until its flusher
        // thread ends (up to its 1 s tick, longer on a loaded machine).
        let started = std::time::Instant::now();
        let db = loop {
            match sled::open(dir.path()) {
                Ok(db) => break db,
                Err(e) if started.elapsed() < std::time::Duration::from_secs(60) => {
                    assert!(e.to_string().contains("could not acquire lock"), "{e}");
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => panic!("{e}"),
            }
        };
        let tree = db.open_tree("sitemapd").unwrap();
        tree.insert(keys::LAYOUT, &[9]).unwrap();
        tree.remove(keys::IDS).unwrap();
        let last = (0..3).map(|_| db.generate_id().unwrap()).max().unwrap();
        db.flush().unwrap();
        last
    };
    let s = Partition::open(dir.path(), StoreOptions::default()).unwrap();
    assert_eq!(
        s.kv.get(keys::LAYOUT).unwrap().unwrap().as_ref(),
        [keys::LAYOUT_VERSION]
    );
    assert!(s.kv.next_id() > handed_out);
    let after: Vec<_> =
        s.kv.scan_prefix([])
            .map(|i| i.unwrap().0.to_vec())
            .collect();
    let changed: Vec<_> = after
        .iter()
        .filter(|k| !before.contains(k))
        .chain(before.iter().filter(|k| !after.contains(k)))
        .collect();
    assert!(changed.iter().all(|k| k.starts_with(b"~")), "{changed:?}");
    assert_eq!(s.stats(ts(T0)).unwrap().active, queued);
    assert!(s.check().unwrap().is_ok());
}

/// The member keys of a sitemap on `a.example` listing `urls` on other
/// hosts, by their suffix (a host, or a URL in a layout-11 store).
fn member_keys(s: &Partition) -> Vec<String> {
    s.kv.scan_prefix([keys::MEMBER])
        .map(|i| keys::suffix(&i.unwrap().0).unwrap().to_string())
        .collect()
}

/// A layout-11 store kept one member key per URL a sitemap lists on
/// another host: opened (also after a migration cut short), it keeps one
/// per host, its layout key says 12, and a complete read that leaves out
/// a URL on another host marks it absent from there.
#[test]
fn a_layout_11_stores_member_keys_become_one_per_host() {
    const SITEMAP: &str = "https://a.example/sitemap.xml";
    let s = Partition::in_memory(StoreOptions::default()).unwrap();
    let read = |now: i64, from: usize| {
        let mut ingest = s.ingest(ts(now));
        for i in from..6 {
            let host = ["b.example", "c.example:8080"][i % 2];
            let url = format!("https://{host}/item-{i}");
            ingest
                .entry(SITEMAP, &UrlEntry::new(NormUrl::parse(&url).unwrap()))
                .unwrap();
        }
        ingest
            .sitemap_fetched(SITEMAP, &crate::ingest_tests::complete(None))
            .unwrap();
        ingest.finish().unwrap();
    };
    read(T0, 0);
    assert_eq!(member_keys(&s), ["b.example", "c.example:8080"]);
    // As layout 11 wrote them, one per URL, and as a migration cut short
    // leaves them: c.example's turned into its host's key but for one.
    let id = s.sitemap_record(SITEMAP).unwrap().unwrap().id;
    let mut batch = crate::kv::Batch::default();
    batch.remove(keys::member(id, "b.example"));
    for i in [0, 2, 4, 5] {
        let host = ["b.example", "c.example:8080"][i % 2];
        batch.insert(keys::member(id, &format!("https://{host}/item-{i}")), []);
    }
    batch.insert(keys::LAYOUT, [11]);
    s.kv.apply_batch(batch).unwrap();
    assert_eq!(member_keys(&s).len(), 5);

    crate::migrate::to_current_layout(&s.kv).unwrap();
    assert_eq!(member_keys(&s), ["b.example", "c.example:8080"]);
    assert_eq!(
        s.kv.get(keys::LAYOUT).unwrap().unwrap().as_ref(),
        [keys::LAYOUT_VERSION]
    );
    assert!(s.check().unwrap().is_ok());
    // item-0 (on b.example) left out of the next complete read: absent.
    read(T0 + 100, 1);
    let gone = s.url_record("https://b.example/item-0").unwrap().unwrap();
    assert_ne!(gone.sources[0].1 & crate::record::ABSENT, 0);
    let kept = s
        .url_record("https://c.example:8080/item-1")
        .unwrap()
        .unwrap();
    assert_eq!(kept.sources[0].1 & crate::record::ABSENT, 0);
    // Absent, not retired yet (after three absences): still a member.
    assert_eq!(s.sitemap_record(SITEMAP).unwrap().unwrap().members, 6);
}
