//! The record encoding's own tests: older versions read, corrupt bytes refused.

use super::*;
use crate::keys;
use crate::policy::Reason;
use crate::trust::LastmodTrust;

#[test]
fn a_format_6_due_list_reads_as_legacy_entries_without_leases() {
    #[derive(Serialize)]
    struct V6 {
        entries: Vec<(f32, keys::Rank, String)>,
    }
    let v6 = V6 {
        entries: vec![(0.25, [7; keys::RANK_BYTES], "https://a.example/x".into())],
    };
    let mut bytes = vec![6];
    bytes.extend(postcard::to_stdvec(&v6).unwrap());
    let list: DueList = decode(&bytes).unwrap();
    assert_eq!(
        list.entries,
        [Listed {
            score: 0.25,
            rank: [7; keys::RANK_BYTES],
            url: "https://a.example/x".into(),
            reason: StoredReason::New,
            meta: false,
            due: i64::MIN,
            lease: None,
            legacy: true,
        }]
    );
}

/// A full due list of 32 URLs, some of them leased.
fn full_list() -> DueList {
    DueList {
        entries: (0..32)
            .map(|i| Listed {
                score: 0.5,
                rank: [1; keys::RANK_BYTES],
                url: format!("https://a.example/catalog/section-{}/item-{i}.html", i % 7),
                reason: StoredReason::New,
                meta: i % 5 == 0,
                due: 1_700_000_000 + i / 4,
                lease: (i % 3 == 0).then_some((i as u64, 1_700_000_000 + i)),
                legacy: false,
            })
            .collect(),
    }
}

/// `list` as its body reads back: the leases are kept in front of a
/// stored list (`due_list`), not in its body.
fn without_leases(list: &DueList) -> DueList {
    let mut read = list.clone();
    for entry in &mut read.entries {
        entry.lease = None;
    }
    read
}

#[test]
fn due_lists_are_stored_compressed_and_read_back() {
    let list = full_list();
    let squeezed = encode_squeezed(&list);
    assert_eq!(squeezed[0], SQUEEZED);
    assert!(
        squeezed.len() * 3 < encode(&list).len(),
        "{}",
        squeezed.len()
    );
    let back: DueList = decode(&squeezed).unwrap();
    assert_eq!(back, without_leases(&list));
    // Too small to gain: stored as it is.
    assert_eq!(
        encode_squeezed(&DueList::default()),
        encode(&DueList::default())
    );
    // A frame that does not decompress, or a record compressed twice.
    assert!(matches!(
        decode::<DueList>(&squeezed[..squeezed.len() - 2]),
        Err(RecordError::Squeezed)
    ));
    let mut twice = vec![SQUEEZED];
    twice.extend(crate::squeeze::compress(&squeezed));
    assert!(matches!(
        decode::<DueList>(&twice),
        Err(RecordError::Squeezed)
    ));
}

/// A due list of formats 7 and 8 (key layouts 7 and 8, plain or
/// compressed) reads as legacy entries, without their due time (only
/// the layout migration reads them); a URL record of format 8 reads as
/// written, without the due list it named.
#[test]
fn format_8_lists_and_url_records_read() {
    let list = full_list();
    let v8: Vec<ListedV8> = list
        .entries
        .iter()
        .map(|e| ListedV8 {
            score: e.score,
            rank: e.rank,
            url: e.url.clone(),
            reason: e.reason,
            meta: e.meta,
        })
        .collect();
    let mut plain = vec![8];
    plain.extend(postcard::to_stdvec(&(v8,)).unwrap());
    let legacy = DueList {
        entries: without_leases(&list)
            .entries
            .into_iter()
            .map(|e| Listed {
                due: i64::MIN,
                legacy: true,
                ..e
            })
            .collect(),
    };
    assert_eq!(decode::<DueList>(&plain).unwrap(), legacy);
    let mut squeezed = vec![SQUEEZED];
    squeezed.extend(crate::squeeze::compress(&plain));
    assert_eq!(decode::<DueList>(&squeezed).unwrap(), legacy);
    let mut rec = UrlRecord::new(1_700_000_000, &[]);
    rec.completed = true;
    rec.metadata = vec![("k".into(), vec!["v".into()])];
    let bytes = encode_v8(&rec, Some(3));
    assert_eq!(decode::<UrlRecord>(&bytes).unwrap(), rec);
    // Written again, in this format: with its queue.
    rec.queue = Some("shard-1".into());
    assert_eq!(decode::<UrlRecord>(&encode(&rec)).unwrap(), rec);
}

#[test]
fn exact_lastmods_give_the_observed_change_rate_and_the_move_time() {
    let mut r = UrlRecord::new(0, &[]);
    assert_eq!(r.observed_rate(100), None);
    let at = |at: i64, precision| StoredLastmod { at, precision };
    r.lastmod = Some(at(1_000, StoredPrecision::Second));
    r.lastmod_history = vec![(1_000, NOT_DATED)];
    assert_eq!(r.observed_rate(5_000), None, "one value: no change seen");
    assert_eq!(r.lastmod_moved_after(), None);
    r.lastmod = Some(at(3_000, StoredPrecision::Second));
    r.lastmod_history.push((3_000, 2_500));
    // One change since 1,000, watched until 5,000: (1 + ½)/(4,000 + ½).
    assert_eq!(r.observed_rate(5_000), Some(1.5 / 4_000.5));
    assert_eq!(r.lastmod_moved_after(), Some(2_500));
    // A value that went back, and one in the future, are no changes.
    r.lastmod_history.push((2_000, NOT_DATED));
    r.lastmod_history.push((9_000, 4_000));
    assert_eq!(r.observed_rate(5_000), Some(1.5 / 4_000.5));
    // The current lastmod is not the last value seen: not dated.
    assert_eq!(r.lastmod_moved_after(), None);
    r.lastmod_history.truncate(2);
    r.lastmod = Some(at(1_000, StoredPrecision::Second));
    assert_eq!(r.lastmod_moved_after(), None);
}

#[test]
fn round_trip_and_version() {
    let r = SitemapRecord {
        id: 7,
        seq: 3,
        etag: Some("\"x\"".into()),
        ..SitemapRecord::default()
    };
    let bytes = encode(&r);
    assert_eq!(bytes[0], FORMAT_VERSION);
    assert_eq!(decode::<SitemapRecord>(&bytes).unwrap(), r);
    let mut future = bytes.clone();
    future[0] = FORMAT_VERSION + 1;
    assert!(matches!(
        decode::<SitemapRecord>(&future),
        Err(RecordError::Version(v)) if v == FORMAT_VERSION + 1
    ));
    assert!(matches!(
        decode::<SitemapRecord>(&[]),
        Err(RecordError::Empty)
    ));
    assert!(decode::<UrlRecord>(&bytes[..3]).is_err());
}

fn url_record_v1() -> UrlRecordV1 {
    UrlRecordV1 {
        first_seen: 1_700_000_000,
        first_source: 3,
        last_seen: 1_700_086_400,
        lastmod: Some(StoredLastmod {
            at: 1_699_000_000,
            precision: StoredPrecision::Day,
        }),
        lastmod_history: vec![(1_699_000_000, 1_700_000_000)],
        changefreq: Some(StoredChangeFreq::Weekly),
        priority: Some(0.7),
        extensions: Extensions {
            images: 2,
            ..Extensions::default()
        },
        fetch: FetchState {
            fetches: 4,
            etag: Some("\"e\"".into()),
            ..FetchState::default()
        },
        visits: vec![StoredVisit {
            interval: 86_400,
            changed: true,
            since_lastmod: Some(600),
        }],
        interval: Some(3600.0),
        schedule: Schedule {
            due: 1_700_090_000,
            score: 0.5,
            reason: StoredReason::LeaseExpired,
            lease: Some((9, 1_700_090_000)),
        },
        retired: false,
        sources: vec![(3, 2), (5, 1)],
    }
}

#[test]
fn version_1_url_records_decode_without_notifications() {
    let v1 = url_record_v1();
    let mut bytes = vec![1];
    bytes.extend(postcard::to_allocvec(&v1).unwrap());
    let rec: UrlRecord = decode(&bytes).unwrap();
    assert_eq!(rec, UrlRecord::from(v1.clone()));
    assert_eq!(rec.notified, None);
    assert_eq!(rec.sources, v1.sources);
    assert_eq!(rec.schedule, v1.schedule);
    // Written back in the current version, with notifications, and read again.
    let mut v2 = rec.clone();
    v2.notified = Some(Notifications {
        count: 3,
        first: 1_700_000_000,
        last: 1_700_007_200,
    });
    v2.schedule.reason = StoredReason::Notified;
    let bytes2 = encode(&v2);
    assert_eq!(bytes2[0], FORMAT_VERSION);
    assert_eq!(decode::<UrlRecord>(&bytes2).unwrap(), v2);
    // A version-1 body read as version 2 is not silently accepted.
    let mut wrong = bytes.clone();
    wrong[0] = 2;
    assert!(decode::<UrlRecord>(&wrong).is_err());
    // A host record of versions 1 and 2: five trust counts.
    let host = HostRecord {
        min_delay: 2.0,
        next_allowed: 5,
        trust: LastmodTrust {
            agreements: 9,
            disagreements: 1,
            observations: 10,
            ..LastmodTrust::default()
        },
        urls: 7,
        errors_in_a_row: 0,
        counts: None,
    };
    for version in [1, 2] {
        let mut old = vec![version];
        old.extend(
            postcard::to_allocvec(&(2.0f64, 5i64, (9u32, 1u32, 0u32, 0u32, 10u32), 7u64)).unwrap(),
        );
        assert_eq!(decode::<HostRecord>(&old).unwrap(), host);
    }
    let current = encode(&host);
    assert_eq!(decode::<HostRecord>(&current).unwrap(), host);
    let sitemap = SitemapRecord {
        id: 4,
        seq: 9,
        ..SitemapRecord::default()
    };
    let mut old = vec![1];
    old.extend(postcard::to_allocvec(&sitemap).unwrap());
    assert_eq!(decode::<SitemapRecord>(&old).unwrap(), sitemap);
}

/// Versions 2 and 3 wrote URL records without what version 4 appended,
/// and version 3 host records without the host error count: both read
/// with those fields empty.
#[test]
fn version_3_records_decode_without_what_version_4_appended() {
    let notified = Some(Notifications {
        count: 2,
        first: 1,
        last: 2,
    });
    let v3 = UrlRecordV3 {
        v1: url_record_v1(),
        notified,
    };
    for version in [2, 3] {
        let mut bytes = vec![version];
        bytes.extend(postcard::to_allocvec(&v3).unwrap());
        let rec: UrlRecord = decode(&bytes).unwrap();
        assert_eq!(rec.notified, notified);
        assert_eq!(rec.sources, v3.v1.sources);
        assert!(!rec.blocked && rec.lapsed.is_none() && rec.redirected_from.is_none());
        assert_eq!((rec.repeats, rec.last_status), (0, 0));
    }
    let trust = LastmodTrust {
        agreements: 4,
        ..LastmodTrust::default()
    };
    let mut bytes = vec![3];
    bytes.extend(postcard::to_allocvec(&(1.5f64, 9i64, trust, 3u64)).unwrap());
    let host: HostRecord = decode(&bytes).unwrap();
    assert_eq!(
        (host.urls, host.errors_in_a_row, host.trust.agreements),
        (3, 0, 4)
    );
}

#[test]
fn version_4_records_decode() {
    let v4 = UrlRecordV4 {
        v3: UrlRecordV3 {
            v1: url_record_v1(),
            notified: None,
        },
        blocked: true,
        lapsed: Some(Lapse::Gone),
        repeats: 3,
        last_status: 410,
        redirected_from: Some("https://a.example/old".into()),
    };
    let mut bytes = vec![4];
    bytes.extend(postcard::to_allocvec(&v4).unwrap());
    let rec: UrlRecord = decode(&bytes).unwrap();
    assert_eq!(rec.queue, None);
    assert!(rec.blocked);
    assert_eq!(
        (rec.lapsed, rec.repeats, rec.last_status),
        (Some(Lapse::Gone), 3, 410)
    );
    assert_eq!(rec.redirected_from, v4.redirected_from);
    assert_eq!(rec.sources, v4.v3.v1.sources);
}

#[test]
fn stored_reasons_keep_their_encoding() {
    // postcard writes the variant index: appending keeps old records.
    let all = [
        StoredReason::New,
        StoredReason::LastmodNewer,
        StoredReason::Interval,
        StoredReason::Changefreq,
        StoredReason::Adaptive,
        StoredReason::Optimal,
        StoredReason::Retry,
        StoredReason::LeaseExpired,
        StoredReason::Notified,
        StoredReason::Validation,
        StoredReason::Safety,
        StoredReason::LastmodPeriod,
        StoredReason::Probe,
        StoredReason::Requested,
    ];
    for (i, r) in all.into_iter().enumerate() {
        assert_eq!(postcard::to_allocvec(&r).unwrap(), [i as u8]);
        assert_eq!(StoredReason::from(Reason::from(r)), r);
    }
}

proptest::proptest! {
    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
        let _ = decode::<UrlRecord>(&bytes);
        let _ = decode::<SitemapRecord>(&bytes);
        let _ = decode::<HostRecord>(&bytes);
    }
}
