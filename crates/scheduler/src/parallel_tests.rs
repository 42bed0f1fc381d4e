//! The runs and pages a batch rewrites, encoded on several threads
//! ([`crate::parallel`]), are the bytes one thread writes: the same reads,
//! leases and completions on two partitions, one on one thread and one on
//! four, leave every key and value the same, and both pass `check`.

use crate::ingest_tests::complete;
use crate::parallel::tests::with_threads;
use crate::partition::Partition;
use crate::{Completion, LeaseRequest, Outcome, StoreOptions, Timestamp};
use sitemapd_parser::date::Precision;
use sitemapd_parser::{Lastmod, NormUrl, UrlEntry};

const SITEMAP: &str = "https://big.example/sitemap.xml";
const URLS: u64 = 20_000;

/// A read of [`SITEMAP`] at `now`: every URL of one host (one lane), each
/// with a lastmod from `salt` (so their due entries fall all over the lane,
/// and a later read with another salt moves most of them), in batches of
/// 5,000 (hundreds of runs and pages each).
fn read(s: &Partition, now: i64, salt: u64) {
    let mut session = s.ingest(Timestamp::from_unix(now)).with_batch(5_000);
    for i in 0..URLS {
        let url = format!("https://big.example/item/{}/{i}", i % 37);
        let mut entry = UrlEntry::new(NormUrl::parse(&url).unwrap());
        let spread = (i.wrapping_mul(2_654_435_761).wrapping_add(salt)) % 500_000;
        entry.lastmod = Some(Lastmod {
            unix_seconds: now - 1_000_000 + spread as i64,
            nanos: 0,
            precision: Precision::Second,
        });
        entry.priority = Some((i % 10) as f32 / 10.0);
        session.entry(SITEMAP, &entry).unwrap();
    }
    session.sitemap_fetched(SITEMAP, &complete(None)).unwrap();
    session.finish().unwrap();
}

/// Two reads, a lease of up to 2,000 and their completions (every outcome in
/// turn), a third read; every key and value after it.
fn history(s: &Partition) -> Vec<(Vec<u8>, Vec<u8>)> {
    read(s, 2_000_000, 1);
    read(s, 2_100_000, 7);
    let request = LeaseRequest::new(2_000).per_host(2_000);
    let leased = s.lease(&request, Timestamp::from_unix(2_100_100)).unwrap();
    // As many as the host's politeness admits at once.
    assert!(leased.len() >= 200, "{} leased", leased.len());
    let outcomes = [
        Completion::from(Outcome::NotModified),
        Completion::from(Outcome::Changed),
        Completion::from(Outcome::Gone(404)),
        Completion::from(Outcome::Error(503)),
    ];
    let done: Vec<(&str, &Completion)> = leased
        .iter()
        .enumerate()
        .map(|(i, l)| (l.url.as_str(), &outcomes[i % outcomes.len()]))
        .collect();
    let unknown = s
        .complete_all(done, Timestamp::from_unix(2_100_200))
        .unwrap();
    assert!(unknown.is_empty(), "{unknown:?}");
    read(s, 2_200_000, 13);
    let report = s.check().unwrap();
    assert!(report.is_ok(), "{report:?}");
    s.kv.scan_prefix([])
        .map(|item| {
            let (k, v) = item.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

#[test]
fn a_batch_spread_over_threads_writes_what_one_thread_writes() {
    let (one, spread) = with_threads(1, || {
        history(&Partition::in_memory(StoreOptions::default()).unwrap())
    });
    assert!(spread.is_empty());
    let (four, spread) = with_threads(4, || {
        history(&Partition::in_memory(StoreOptions::default()).unwrap())
    });
    // Runs decoded and written, and pages written, each on several threads.
    for what in ["Bytes", "RunWrite", "Listed>)", "pages::Loaded"] {
        let n = spread.iter().filter(|t| t.ends_with(what)).count();
        assert!(n >= 3, "{what} spread {n} times: {spread:?}");
    }
    assert_eq!(one.len(), four.len());
    for (a, b) in one.iter().zip(&four) {
        assert_eq!(a, b, "key {:?}", String::from_utf8_lossy(&a.0));
    }
}
