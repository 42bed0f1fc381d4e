//! The write log carries a store whole: any sequence of reads, leases,
//! completions, notifications, sites and crawl puts on a store that logs its
//! writes, replayed into an empty store, leaves every key and value of
//! every keyspace the same; replaying it again changes nothing; and a batch
//! the log refuses changes nothing.

use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use sitemapd_parser::date::Precision;
use sitemapd_parser::{Lastmod, NormUrl, UrlEntry};

use crate::ingest_tests::complete;
use crate::{
    Completion, LeaseRequest, Outcome, Store, StoreError, StoreOptions, Timestamp, WriteLog,
};

/// A write log in memory: every entry with its partition and position;
/// appends to the partitions in `refused` fail.
#[derive(Debug, Default)]
struct MemoryLog {
    entries: Mutex<Vec<(u16, u64, Vec<u8>)>>,
    refused: Mutex<Vec<u16>>,
    /// The partitions [`WriteLog::unapplied`] named, in order.
    unapplied: Mutex<Vec<u16>>,
}

impl WriteLog for MemoryLog {
    fn append(&self, partition: u16, entry: &[u8]) -> Result<u64, String> {
        if self.refused.lock().unwrap().contains(&partition) {
            return Err(format!("partition {partition} is not ours"));
        }
        let mut entries = self.entries.lock().unwrap();
        let position = entries.iter().filter(|e| e.0 == partition).count() as u64 + 1;
        entries.push((partition, position, entry.to_vec()));
        Ok(position)
    }

    fn unapplied(&self, partition: u16) {
        self.unapplied.lock().unwrap().push(partition);
    }
}

const PARTITIONS: u16 = 3;

fn store() -> Store {
    Store::in_memory(StoreOptions {
        partitions: PARTITIONS,
        ..StoreOptions::default()
    })
    .unwrap()
}

/// A keyspace's name and every key and value in it.
type Keyspace = (String, Vec<(Vec<u8>, Vec<u8>)>);

/// Every key and value of every keyspace of `s` (its own partitions and its
/// crawls'), by keyspace.
fn contents(s: &Store) -> Vec<Keyspace> {
    let mut stores = vec![(String::new(), None)];
    stores.extend(s.crawl_names().into_iter().map(|n| (n.clone(), Some(n))));
    let mut out = Vec::new();
    for (label, crawl) in stores {
        let opened;
        let store = match crawl {
            Some(name) => {
                opened = s.crawl(&name).unwrap();
                &opened
            }
            None => s,
        };
        for part in store.parts() {
            let keys = part
                .kv
                .scan_prefix([])
                .map(|item| {
                    let (k, v) = item.unwrap();
                    (k.to_vec(), v.to_vec())
                })
                .collect();
            out.push((format!("{label}/{}", part.kv.keyspace_name()), keys));
        }
    }
    out
}

#[derive(Debug, Clone)]
enum Op {
    /// A complete read of host `host`'s sitemap `sitemap` listing `count`
    /// URLs, lastmods from `salt`.
    Read {
        host: u8,
        sitemap: u8,
        count: u8,
        salt: u16,
    },
    Lease {
        n: u8,
    },
    /// Completes what is leased, each with the outcome `outcome` picks.
    Complete {
        outcome: u8,
    },
    Notify {
        host: u8,
        page: u8,
    },
    AddSite {
        host: u8,
    },
    /// A URL frontier client puts a URL in crawl `other`.
    CrawlPut {
        host: u8,
        page: u8,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..5u8, 0..2u8, 1..25u8, any::<u16>())
            .prop_map(|(host, sitemap, count, salt)| Op::Read { host, sitemap, count, salt }),
        2 => (1..40u8).prop_map(|n| Op::Lease { n }),
        2 => any::<u8>().prop_map(|outcome| Op::Complete { outcome }),
        1 => (0..5u8, 0..25u8).prop_map(|(host, page)| Op::Notify { host, page }),
        1 => (0..5u8).prop_map(|host| Op::AddSite { host }),
        1 => (0..5u8, 0..25u8).prop_map(|(host, page)| Op::CrawlPut { host, page }),
    ]
}

fn page(host: u8, page: u8) -> String {
    format!("https://h{host}.example/p{page}")
}

/// Runs `ops` on `s`, the clock moving a minute per op.
fn run(s: &Store, ops: &[Op]) {
    let mut leased: Vec<String> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let now = Timestamp::from_unix(1_700_000_000 + 60 * i as i64);
        match *op {
            Op::Read {
                host,
                sitemap,
                count,
                salt,
            } => {
                let url = format!("https://h{host}.example/s{sitemap}.xml");
                let mut ingest = s.ingest(now);
                for p in 0..count {
                    let mut e = UrlEntry::new(NormUrl::parse(&page(host, p)).unwrap());
                    e.lastmod = Some(Lastmod {
                        unix_seconds: 1_600_000_000 + i64::from(salt) * 7 + i64::from(p),
                        nanos: 0,
                        precision: Precision::Second,
                    });
                    ingest.entry(&url, &e).unwrap();
                }
                ingest.sitemap_fetched(&url, &complete(None)).unwrap();
                ingest.finish().unwrap();
            }
            Op::Lease { n } => {
                let request = LeaseRequest::new(usize::from(n)).per_host(5);
                leased.extend(s.lease(&request, now).unwrap().into_iter().map(|l| l.url));
            }
            Op::Complete { outcome } => {
                let outcomes = [
                    Completion::from(Outcome::Changed),
                    Completion::from(Outcome::NotModified),
                    Completion::from(Outcome::Gone(410)),
                    Completion::from(Outcome::Error(503)),
                ];
                let c = &outcomes[usize::from(outcome) % outcomes.len()];
                s.complete_all(leased.iter().map(|u| (u.as_str(), c)), now)
                    .unwrap();
                leased.clear();
            }
            Op::Notify { host, page: p } => {
                s.notify(&page(host, p), now).unwrap();
            }
            Op::AddSite { host } => {
                s.add_site(&format!("h{host}.example"), now).unwrap();
            }
            Op::CrawlPut { host, page: p } => {
                let crawl = s.crawl("other").unwrap();
                crawl
                    .discover([crate::DiscoveredUrl::new(page(host, p))], now)
                    .unwrap();
            }
        }
    }
}

/// Replays `log` into `replica`: how many entries it applied.
fn replay(log: &MemoryLog, replica: &Store) -> usize {
    let entries = log.entries.lock().unwrap().clone();
    entries
        .iter()
        .filter(|(_, position, bytes)| replica.apply_logged(*position, bytes).unwrap())
        .count()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn a_replayed_log_is_the_store_key_for_key(ops in proptest::collection::vec(op(), 1..30)) {
        let log = Arc::new(MemoryLog::default());
        let primary = store();
        primary.log_writes_to(log.clone());
        run(&primary, &ops);

        let replica = store();
        let applied = replay(&log, &replica);
        prop_assert_eq!(applied, log.entries.lock().unwrap().len());
        prop_assert_eq!(contents(&replica), contents(&primary));
        prop_assert!(replica.check().unwrap().is_ok());
        for p in 0..PARTITIONS {
            prop_assert_eq!(replica.log_position(p).unwrap(), primary.log_position(p).unwrap());
        }
        // Every entry again: nothing applied, nothing changed.
        prop_assert_eq!(replay(&log, &replica), 0);
        prop_assert_eq!(contents(&replica), contents(&primary));
    }
}

#[test]
fn a_batch_the_log_refuses_changes_nothing() {
    let log = Arc::new(MemoryLog::default());
    let s = store();
    s.log_writes_to(log.clone());
    let url = page(1, 1);
    let part = s.route_url(&url) as u16;
    run(
        &s,
        &[Op::Read {
            host: 1,
            sitemap: 0,
            count: 3,
            salt: 9,
        }],
    );
    let before = contents(&s);
    let logged = log.entries.lock().unwrap().len();
    log.refused.lock().unwrap().push(part);
    match s.notify(&url, Timestamp::from_unix(1_800_000_000)) {
        Err(StoreError::LogRefused { partition, detail }) => {
            assert_eq!(partition, part);
            assert!(detail.contains("not ours"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(contents(&s), before);
    assert_eq!(log.entries.lock().unwrap().len(), logged);
}

#[test]
fn a_partition_not_served_is_passed_over_by_leases_and_peeks() {
    let s = store();
    let hosts: Vec<u8> = (0..5).collect();
    let ops: Vec<Op> = hosts
        .iter()
        .map(|&host| Op::Read {
            host,
            sitemap: 0,
            count: 4,
            salt: 1,
        })
        .collect();
    run(&s, &ops);
    let now = Timestamp::from_unix(1_800_000_000);
    let off = s.partition_of_site("h0.example");
    assert_eq!(off, s.route_url(&page(0, 0)) as u16);
    s.serve_partition(off, false);
    assert!(!s.serves_partition(off));
    let in_off = |urls: &[String]| urls.iter().filter(|u| s.route_url(u) as u16 == off).count();
    let peeked: Vec<String> = s
        .peek(100, now)
        .unwrap()
        .into_iter()
        .map(|l| l.url)
        .collect();
    assert_eq!(in_off(&peeked), 0);
    assert!(!peeked.is_empty(), "the other partitions' URLs are served");
    let request = LeaseRequest::new(100).per_host(100);
    let lease = || -> Vec<String> {
        s.lease(&request, now)
            .unwrap()
            .into_iter()
            .map(|l| l.url)
            .collect()
    };
    assert_eq!(in_off(&lease()), 0);
    // A crawl's partitions follow the store's, whether opened before or
    // after the change.
    let before = s.crawl("other").unwrap();
    run(&s, &[Op::CrawlPut { host: 0, page: 1 }]);
    assert!(before.lease(&request, now).unwrap().is_empty());
    assert!(s.crawl("other").unwrap().peek(10, now).unwrap().is_empty());
    s.serve_partition(off, true);
    assert_eq!(before.peek(10, now).unwrap().len(), 1);
    let leased = lease();
    assert_eq!(in_off(&leased), leased.len());
    assert!(!leased.is_empty());
}

#[test]
fn a_store_with_a_write_log_keeps_its_crawls() {
    let s = store();
    s.crawl("other").unwrap();
    s.log_writes_to(Arc::new(MemoryLog::default()));
    assert!(s.drop_crawl("other").unwrap_err().is_log_refusal());
    assert_eq!(s.crawl_names(), ["other"]);
}

/// A batch the log took but the store failed to write is reported to the
/// log, and a store replaying the log gets it: the store is behind its log,
/// not apart from it.
#[test]
fn a_logged_batch_the_store_failed_to_write_is_reported_and_replayed() {
    let log = Arc::new(MemoryLog::default());
    let s = store();
    s.log_writes_to(log.clone());
    run(
        &s,
        &[Op::Read {
            host: 2,
            sitemap: 0,
            count: 3,
            salt: 4,
        }],
    );
    let url = page(2, 1);
    let part = s.route_url(&url);
    s.parts()[part].inject_write_failures(Some(0));
    let now = Timestamp::from_unix(1_800_000_000);
    assert!(s.notify(&url, now).unwrap_err().is_write_failure());
    assert_eq!(*log.unapplied.lock().unwrap(), [part as u16]);
    let replica = store();
    replay(&log, &replica);
    let notifications = |st: &Store| st.url(&url).unwrap().unwrap().notifications;
    assert_eq!(notifications(&replica), 1);
    assert_eq!(notifications(&s), 0);
    // The failure makes the store unhealthy while it holds the partition,
    // and no longer once it gives the partition up.
    assert!(s.health().write_failure.is_some());
    s.serve_partition(part as u16, false);
    assert!(s.health().write_failure.is_none());
}

#[test]
fn a_keyspace_names_its_partition() {
    for (keyspace, partition) in [
        ("", 0),
        ("part:3", 3),
        ("crawl:news", 0),
        ("crawl:news/part:12", 12),
        ("crawl:part:7", 0),
    ] {
        assert_eq!(
            super::replication::partition_of_keyspace(keyspace),
            partition,
            "{keyspace}"
        );
    }
}
