//! Tests of [`crate::ingest`] that look at what one sitemap read writes:
//! its URLs, its record and its host's lastmod trust, in one batch, and
//! the key that makes it a child of its index.

use crate::keys;
use crate::partition::Partition;
use crate::{SitemapFetch, StoreOptions, Timestamp};
use sitemapd_parser::date::Precision;
use sitemapd_parser::{Lastmod, NormUrl, UrlEntry};

const SITEMAP: &str = "https://a.example/sitemap.xml";

/// One complete read of [`SITEMAP`] at `now`: 100 URLs of its host, all
/// with the same lastmod (a sitemap that stamps its generation time).
fn read(s: &Partition, now: i64) {
    let mut session = s.ingest(Timestamp::from_unix(now));
    for i in 0..100 {
        let mut entry = UrlEntry::new(NormUrl::parse(&format!("https://a.example/p/{i}")).unwrap());
        entry.lastmod = Some(Lastmod {
            unix_seconds: 1_000,
            nanos: 0,
            precision: Precision::Second,
        });
        session.entry(SITEMAP, &entry).unwrap();
    }
    session.sitemap_fetched(SITEMAP, &complete(None)).unwrap();
    session.finish().unwrap();
}

/// A complete 200 read, listed by `parent` if given.
pub(crate) fn complete(parent: Option<&str>) -> SitemapFetch {
    SitemapFetch {
        status: 200,
        complete: true,
        parent: parent.map(str::to_string),
        ..SitemapFetch::default()
    }
}

#[test]
fn a_read_writes_its_hosts_trust_with_the_counts_its_urls_change() {
    let s = Partition::in_memory(StoreOptions::default()).unwrap();
    let host = keys::host_of(SITEMAP);
    for (n, now) in [(1, 2_000), (2, 9_000)] {
        read(&s, now);
        // The trust the read observed and the counts its URLs changed are
        // both in the host record: neither write lost the other.
        let record = s.stored_host_record(host).unwrap();
        assert_eq!(record.trust.identical_sitemaps, n, "read {n}");
        assert_eq!(record.counts.unwrap_or_default().active, 100, "read {n}");
        let at = Timestamp::from_unix(now);
        assert_eq!(s.stats(at).unwrap().active, 100);
        assert_eq!(s.full_stats(at).unwrap().active, 100);
        // The sitemap's record (its read sequence) and its schedule.
        let sitemap = s.sitemap_record(SITEMAP).unwrap().unwrap();
        assert_eq!(sitemap.seq, n as u64);
        assert_eq!(sitemap.recent_complete.last(), Some(&(n as u64)));
        assert!(s.refresh_state(SITEMAP).unwrap().is_some());
        // The second read listed it unchanged: its record keeps the first
        // read's stamp, which stands for both.
        let url = s.url_record("https://a.example/p/7").unwrap().unwrap();
        assert_eq!(url.sources, vec![(sitemap.id, 1)]);
        assert!(crate::record::Listing::of(&sitemap).lists(1));
        let view = s.url("https://a.example/p/7").unwrap().unwrap();
        assert_eq!(view.last_seen, at, "seen by read {n}");
    }
}

#[test]
fn a_child_read_names_a_parent_this_session_has_not_stored_yet() {
    let s = Partition::in_memory(StoreOptions::default()).unwrap();
    let index = "https://a.example/index.xml";
    let child = "https://a.example/child.xml";
    let mut session = s.ingest(Timestamp::from_unix(2_000));
    // The index's reading opens (and its id is handed out) with an entry
    // of its own; its record is not stored until a batch writes it.
    let entry = UrlEntry::new(NormUrl::parse("https://a.example/p/1").unwrap());
    session.entry(index, &entry).unwrap();
    assert!(s.sitemap_record(index).unwrap().is_none());
    session
        .sitemap_fetched(child, &complete(Some(index)))
        .unwrap();
    session.finish().unwrap();
    assert_eq!(s.children(index).unwrap(), [child]);
}

/// Every key and value of the partition.
fn contents(s: &Partition) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    s.kv.scan_prefix([])
        .map(|item| {
            let (k, v) = item.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

/// The keys whose values differ between `a` and `b` (or that one lacks).
fn changed(
    a: &std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
    b: &std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
) -> std::collections::BTreeSet<Vec<u8>> {
    let keys = a.keys().chain(b.keys());
    keys.filter(|k| a.get(*k) != b.get(*k)).cloned().collect()
}

#[test]
fn an_unchanged_read_writes_only_the_sitemaps_own_records() {
    let s = Partition::in_memory(StoreOptions::default()).unwrap();
    let host = keys::host_of(SITEMAP);
    // The sitemap's record, its refresh schedule and its host's record
    // (the read's lastmod trust): a read writes these whatever it lists.
    let own: std::collections::BTreeSet<Vec<u8>> = [
        keys::sitemap(SITEMAP),
        keys::refresh(SITEMAP),
        keys::host(host),
    ]
    .into_iter()
    .collect();
    read(&s, 2_000);
    let first = contents(&s);
    read(&s, 9_000);
    let second = contents(&s);
    let moved = changed(&first, &second);
    assert!(moved.is_subset(&own), "{:?}", moved.difference(&own));
    assert!(moved.contains(&keys::sitemap(SITEMAP)));
    // Its URLs were seen by it all the same.
    for i in [0, 57, 99] {
        let view = s.url(&format!("https://a.example/p/{i}")).unwrap().unwrap();
        assert_eq!(view.last_seen, Timestamp::from_unix(9_000));
    }

    // One URL's entry changes: its page and its due entry move, the rest
    // stays.
    let mut session = s.ingest(Timestamp::from_unix(20_000));
    for i in 0..100 {
        let mut entry = UrlEntry::new(NormUrl::parse(&format!("https://a.example/p/{i}")).unwrap());
        entry.lastmod = Some(Lastmod {
            unix_seconds: if i == 42 { 15_000 } else { 1_000 },
            nanos: 0,
            precision: Precision::Second,
        });
        session.entry(SITEMAP, &entry).unwrap();
    }
    session.sitemap_fetched(SITEMAP, &complete(None)).unwrap();
    session.finish().unwrap();
    let third = contents(&s);
    let moved = changed(&second, &third);
    let pages: Vec<_> = moved.iter().filter(|k| k[0] == keys::PAGE).collect();
    assert_eq!(pages.len(), 1, "the page of the one changed URL");
    assert!(
        moved
            .iter()
            .all(|k| own.contains(k) || [keys::PAGE, keys::DUE, keys::HEAD].contains(&k[0])),
        "{moved:?}"
    );
}

/// A read of more URLs than it may leave unwritten writes the rest as
/// changed, and the rules hold the same: each URL seen by every read,
/// those left out retired after `retire_after` complete reads.
#[test]
fn a_read_past_its_kept_limit_writes_the_rest() {
    let s = Partition::in_memory(StoreOptions::default()).unwrap();
    let url = |i: usize| format!("https://a.example/p/{i}");
    let read = |now: i64, n: usize| {
        let mut session = s
            .ingest(Timestamp::from_unix(now))
            .with_batch(7)
            .with_max_kept(10);
        for i in 0..n {
            let entry = UrlEntry::new(NormUrl::parse(&url(i)).unwrap());
            session.entry(SITEMAP, &entry).unwrap();
        }
        session.sitemap_fetched(SITEMAP, &complete(None)).unwrap();
        session.finish().unwrap();
    };
    read(1_000, 100);
    let first = contents(&s);
    read(2_000, 100);
    let pages = changed(&first, &contents(&s))
        .into_iter()
        .filter(|k| k[0] == keys::PAGE)
        .count();
    assert!(pages > 0, "90 URLs past the limit written");
    for now in [3_000, 4_000, 5_000] {
        read(now, 95);
        for i in [0, 11, 94] {
            let view = s.url(&url(i)).unwrap().unwrap();
            assert_eq!(view.last_seen, Timestamp::from_unix(now), "{i} at {now}");
        }
        for i in 95..100 {
            let view = s.url(&url(i)).unwrap().unwrap();
            assert_eq!(view.retired, now == 5_000, "{i} at {now}");
            assert_eq!(view.last_seen, Timestamp::from_unix(2_000));
        }
    }
    assert!(s.check().unwrap().is_ok());
}

/// A sitemap record that does not decode reads as no reads: the views of
/// the URLs it listed and an ingest of another sitemap listing them go on.
#[test]
fn a_corrupt_sitemap_record_fails_no_view_and_no_other_ingest() {
    let s = Partition::in_memory(StoreOptions::default()).unwrap();
    read(&s, 2_000);
    let mut batch = crate::kv::Batch::default();
    batch.insert(keys::sitemap(SITEMAP), [0xff, 1, 2]);
    s.kv.apply_batch(batch).unwrap();
    let url = "https://a.example/p/7";
    let view = s.url(url).unwrap().unwrap();
    assert_eq!(view.last_seen, Timestamp::from_unix(2_000));
    assert_eq!(s.export().count(), 100);
    let other = "https://a.example/other.xml";
    let mut session = s.ingest(Timestamp::from_unix(9_000));
    session
        .entry(other, &UrlEntry::new(NormUrl::parse(url).unwrap()))
        .unwrap();
    session.sitemap_fetched(other, &complete(None)).unwrap();
    session.finish().unwrap();
    let view = s.url(url).unwrap().unwrap();
    assert_eq!(view.last_seen, Timestamp::from_unix(9_000));
    assert!(s.export().all(|v| v.is_ok()));
}

/// Calibration sees a URL's last sighting as the views do: a history of
/// reads that leave their unchanged URLs unwritten summarises as the same
/// history with every URL written (`with_max_kept(0)`). The host's
/// lastmods are to the second, its URLs change now and then and are
/// fetched when due (so the host earns trust and is crawled on change),
/// and each URL's observed rate counts from its first sighting to its last.
#[test]
fn calibration_sees_the_sighting_of_a_read_that_wrote_nothing() {
    use crate::{Completion, LeaseRequest, Outcome};
    let summaries = |max_kept: usize| {
        let s = Partition::in_memory(StoreOptions {
            policy: Some("freshness-optimal".into()),
            ..StoreOptions::default()
        })
        .unwrap();
        // Each URL's lastmod as listed, and as its last fetch found it.
        let mut listed = std::collections::HashMap::new();
        let mut fetched = std::collections::HashMap::new();
        for n in 0..16 {
            let now = 100_000 + n * 86_400;
            let mut session = s.ingest(Timestamp::from_unix(now)).with_max_kept(max_kept);
            for i in 0..40 {
                let url = format!("https://a.example/p/{i}");
                let mut entry = UrlEntry::new(NormUrl::parse(&url).unwrap());
                // URL i changes every (i % 5 + 2) reads, the rest of the
                // time listed as it was.
                let every = i % 5 + 2;
                let lastmod = 100_000 + (n - n % every) * 86_400 - 3_600 + i;
                listed.insert(url.clone(), lastmod);
                entry.lastmod = Some(Lastmod {
                    unix_seconds: lastmod,
                    nanos: 0,
                    precision: Precision::Second,
                });
                session.entry(SITEMAP, &entry).unwrap();
            }
            session.sitemap_fetched(SITEMAP, &complete(None)).unwrap();
            session.finish().unwrap();
            // The first days only: later, most URLs are left unfetched
            // and only sighted.
            if n < 8 {
                let at = Timestamp::from_unix(now + 60);
                let leased = s.lease(&LeaseRequest::new(40).per_host(40), at).unwrap();
                let done: Vec<(String, Completion)> = leased
                    .iter()
                    .map(|l| {
                        let now = listed[&l.url];
                        let outcome = match fetched.insert(l.url.clone(), now) {
                            Some(then) if then == now => Outcome::NotModified,
                            _ => Outcome::Changed,
                        };
                        (l.url.clone(), Completion::from(outcome))
                    })
                    .collect();
                s.complete_all(done.iter().map(|(u, c)| (u.as_str(), c)), at)
                    .unwrap();
            }
        }
        let host = s.stored_host_record("a.example").unwrap();
        assert!(host.trust.is_complete(), "{:?}", host.trust);
        let (pages, complete) = s.page_summaries().unwrap();
        (
            format!("{:?}", pages.pages()),
            format!("{:?}", complete.pages()),
        )
    };
    let kept = summaries(usize::MAX);
    let written = summaries(0);
    assert_ne!(written.1, "[]", "no URL is on a complete host");
    assert_eq!(kept, written);
}

/// A URL retired by its sitemap's absence and brought back by a push
/// notification, or by a frontier client's refetch, counts among the
/// sitemap's members again and its absence counts again from the sitemap's
/// last read: the next complete reads that leave it out retire it once
/// there are as many as retired it the first time (three), not sooner, and
/// its last sighting is its own, not the sitemap's reads'.
#[test]
fn a_url_revived_otherwise_than_by_a_read_is_retired_again_by_its_absence() {
    use crate::KnownUrl;
    let gone = "https://a.example/p/0";
    // Complete reads of SITEMAP listing p/0 to p/9, or p/1 to p/9.
    let read = |s: &Partition, now: i64, with_gone: bool| {
        let mut session = s.ingest(Timestamp::from_unix(now));
        for i in (if with_gone { 0 } else { 1 })..10 {
            let url = format!("https://a.example/p/{i}");
            session
                .entry(SITEMAP, &UrlEntry::new(NormUrl::parse(&url).unwrap()))
                .unwrap();
        }
        session.sitemap_fetched(SITEMAP, &complete(None)).unwrap();
        session.finish().unwrap();
    };
    let retired = |s: &Partition| s.url(gone).unwrap().unwrap().retired;
    for how in ["notification", "frontier refetch"] {
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
        read(&s, 1_000, true);
        for now in [2_000, 3_000, 4_000] {
            read(&s, now, false);
        }
        assert!(retired(&s), "{how}: retired by three absences");
        let revived_at = Timestamp::from_unix(4_500);
        match how {
            "notification" => {
                s.notify(gone, revived_at).unwrap();
            }
            _ => {
                let refetch = KnownUrl {
                    url: gone.to_string(),
                    refetch: Some(revived_at),
                    metadata: Vec::new(),
                    queue: None,
                };
                s.put_known(vec![refetch], revived_at, |_, _| None).unwrap();
            }
        }
        assert!(!retired(&s), "{how}: revived");
        let record = s.sitemap_record(SITEMAP).unwrap().unwrap();
        assert_eq!(record.members, 10, "{how}: a member again");
        for (n, now) in [5_000, 6_000, 7_000].into_iter().enumerate() {
            assert!(!retired(&s), "{how}: active before read {n}");
            read(&s, now, false);
            let view = s.url(gone).unwrap().unwrap();
            assert_eq!(view.last_seen, Timestamp::from_unix(1_000), "{how}");
        }
        assert!(retired(&s), "{how}: retired again by three more absences");
        assert!(s.check().unwrap().is_ok(), "{how}");
        // Listed again: back, and seen by that read.
        read(&s, 8_000, true);
        assert!(!retired(&s), "{how}: listed again");
        let view = s.url(gone).unwrap().unwrap();
        assert_eq!(view.last_seen, Timestamp::from_unix(8_000), "{how}");
        assert_eq!(s.sitemap_record(SITEMAP).unwrap().unwrap().members, 10);
    }
}

#[test]
fn a_read_cut_short_by_a_crash_leaves_its_sequence_used() {
    use crate::record::ABSENT;
    let url = |i: usize| format!("https://a.example/p/{i}");
    // Entries of SITEMAP for p/`i`, `i` in `range`, each with the lastmod
    // `lastmod` (so that a read with a new one writes them all).
    let entries = |session: &mut crate::ingest::PartitionIngest<'_>,
                   range: std::ops::Range<usize>,
                   lastmod: i64| {
        for i in range {
            let mut entry = UrlEntry::new(NormUrl::parse(&url(i)).unwrap());
            entry.lastmod = Some(Lastmod {
                unix_seconds: lastmod,
                nanos: 0,
                precision: Precision::Second,
            });
            session.entry(SITEMAP, &entry).unwrap();
        }
    };
    for failed in [false, true] {
        let s = Partition::in_memory(StoreOptions::default()).unwrap();
        let mut first = s.ingest(Timestamp::from_unix(1_000));
        entries(&mut first, 0..10, 500);
        first.sitemap_fetched(SITEMAP, &complete(None)).unwrap();
        first.finish().unwrap();
        let id = s.sitemap_record(SITEMAP).unwrap().unwrap().id;
        // A second read with new lastmods writes its URLs in batches of
        // five and is lost before its record: the process dies after its
        // first batch (the session's memory, and the URLs of the batch it
        // had begun, are gone), or the fetch fails after its entries.
        let mut cut = s.ingest(Timestamp::from_unix(2_000)).with_batch(5);
        entries(&mut cut, if failed { 0..10 } else { 0..7 }, 1_500);
        if failed {
            let fetch = SitemapFetch {
                status: 200,
                failed: true,
                ..SitemapFetch::default()
            };
            cut.sitemap_fetched(SITEMAP, &fetch).unwrap();
            cut.finish().unwrap();
        } else {
            drop(cut);
        }
        let stamp = |i: usize| {
            let record = s.url_record(&url(i)).unwrap().unwrap();
            record.sources.iter().find(|(s, _)| *s == id).unwrap().1
        };
        let cut_seq = stamp(0);
        assert_eq!(cut_seq & ABSENT, 0);
        // The next read, complete, leaves out p/0: its stamp is the cut
        // read's, which the read must not take for its own.
        let mut next = s.ingest(Timestamp::from_unix(3_000));
        entries(&mut next, 1..10, 2_500);
        next.sitemap_fetched(SITEMAP, &complete(None)).unwrap();
        next.finish().unwrap();
        let seq = s.sitemap_record(SITEMAP).unwrap().unwrap().seq;
        assert!(
            seq > cut_seq,
            "failed {failed}: the next read took a new sequence"
        );
        assert_eq!(stamp(1), seq, "failed {failed}");
        assert_eq!(stamp(0), cut_seq | ABSENT, "failed {failed}: p/0 absent");
        assert!(s.check().unwrap().is_ok(), "failed {failed}");
    }
}

#[test]
fn a_sitemap_keeps_one_member_key_per_other_host_it_lists() {
    let s = Partition::in_memory(StoreOptions::default()).unwrap();
    let members = |s: &Partition| -> Vec<String> {
        s.kv.scan_prefix([keys::MEMBER])
            .map(|i| keys::suffix(&i.unwrap().0).unwrap().to_string())
            .collect()
    };
    // 300 URLs on its own host and two others, in batches of 50; then a
    // read that adds a third host.
    for (now, hosts) in [
        (1_000, &["a.example", "b.example", "c.example"][..]),
        (
            2_000,
            &["a.example", "b.example", "c.example", "d.example"][..],
        ),
    ] {
        let mut session = s.ingest(Timestamp::from_unix(now)).with_batch(50);
        for i in 0..300 {
            let host = hosts[i % hosts.len()];
            let url = NormUrl::parse(&format!("https://{host}/p/{i}")).unwrap();
            session.entry(SITEMAP, &UrlEntry::new(url)).unwrap();
        }
        session.sitemap_fetched(SITEMAP, &complete(None)).unwrap();
        session.finish().unwrap();
        let expected: Vec<&str> = hosts[1..].to_vec();
        assert_eq!(members(&s), expected, "read at {now}");
    }
    let record = s.sitemap_record(SITEMAP).unwrap().unwrap();
    // The URLs of both reads (75 are listed by both: those whose host is
    // the same in both): those only the first listed are absent from the
    // second, and members until they retire.
    assert_eq!(record.members, 300 + 300 - 75);
    let absent = s.url_record("https://b.example/p/4").unwrap().unwrap();
    assert_ne!(absent.sources[0].1 & crate::record::ABSENT, 0);
    let listed = s.url_record("https://d.example/p/3").unwrap().unwrap();
    assert_eq!(listed.sources[0].1 & crate::record::ABSENT, 0);
    assert!(s.check().unwrap().is_ok());
}

#[test]
fn a_batch_that_fails_leaves_its_reads_record_and_member_keys_to_the_next() {
    let s = Partition::in_memory(StoreOptions::default()).unwrap();
    let entry =
        |i: usize| UrlEntry::new(NormUrl::parse(&format!("https://b.example/p/{i}")).unwrap());
    let mut session = s.ingest(Timestamp::from_unix(1_000)).with_batch(2);
    // The first batch (two URLs on another host) is refused by the store.
    s.inject_write_failures(Some(0));
    session.entry(SITEMAP, &entry(0)).unwrap();
    assert!(session.entry(SITEMAP, &entry(1)).is_err());
    s.inject_write_failures(None);
    assert!(s.kv.scan_prefix([keys::MEMBER]).next().is_none());
    // The next batch writes what the first was to: the sitemap's record
    // with the read's sequence, and the member key of b.example.
    session.entry(SITEMAP, &entry(2)).unwrap();
    session.entry(SITEMAP, &entry(3)).unwrap();
    let members: Vec<_> =
        s.kv.scan_prefix([keys::MEMBER])
            .map(|i| i.unwrap().0)
            .collect();
    let record = s
        .sitemap_record(SITEMAP)
        .unwrap()
        .expect("its record is stored");
    assert_eq!(record.seq, 1, "the read's sequence is stored as used");
    assert_eq!(members, [keys::member(record.id, "b.example")]);
    session.sitemap_fetched(SITEMAP, &complete(None)).unwrap();
    let stats = session.finish().unwrap();
    assert_eq!(s.sitemap_record(SITEMAP).unwrap().unwrap().members, 2);
    assert!(s.check().unwrap().is_ok());
    // Four entries read; the two the failed batch lost are not counted as
    // stored.
    assert_eq!((stats.entries, stats.new), (4, 2));
}
