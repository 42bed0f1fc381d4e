//! The store's record decoder on any bytes: a corrupt or hostile store value
//! must give an error, never a panic or a huge allocation. Every record
//! type the store writes is tried (URL, sitemap, host, followed site,
//! refresh schedule, robots rules), and so are the key parsers and the
//! page decoder (a page of URL records).
//!
//! Checked: what decodes re-encodes to bytes that decode to the same bytes
//! again (compared as bytes: a NaN priority is not equal to itself); what
//! the store then does with a decoded record's counters (host trust,
//! change-rate estimates from the visits) does not panic, and the estimates
//! keep their documented range (finite, not negative).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sitemapd_scheduler::estimate::{Estimator, Visit};
use sitemapd_scheduler::internal::record::{
    DueList, HostRecord, Record, RefreshState, RobotsRecord, SiteRecord, SitemapRecord, UrlRecord,
    decode, encode,
};
use sitemapd_scheduler::internal::{due_list, keys, page};

/// Decodes `data` as `T`; if it decodes, checks the round trip.
fn round_trip<T: Record>(data: &[u8]) -> Option<T> {
    let r = decode::<T>(data).ok()?;
    let once = encode(&r);
    let again = decode::<T>(&once).expect("an encoded record decodes");
    assert_eq!(once, encode(&again));
    Some(r)
}

fuzz_target!(|data: &[u8]| {
    if let Some(r) = round_trip::<UrlRecord>(data) {
        let visits: Vec<Visit> = r.visits.iter().map(|&v| v.into()).collect();
        for e in Estimator::ALL {
            if let Some(rate) = e.estimate(&visits) {
                assert!(rate.is_finite() && rate >= 0.0, "{e}: {rate}");
            }
        }
        let _ = r.fetch.last_outcome.map(|o| o.kind());
    }
    let _ = round_trip::<SitemapRecord>(data);
    if let Some(mut h) = round_trip::<HostRecord>(data) {
        let _ = (h.trust.is_trusted(), h.trust.agreement_rate());
        h.trust.observe_fetch(true, false);
        h.trust.observe_sitemap(u64::MAX, u64::MAX, 1);
        let _ = h.trust.is_trusted();
    }
    let _ = round_trip::<SiteRecord>(data);
    if let Some(r) = round_trip::<RobotsRecord>(data) {
        // Stored rules are matched against every leased URL: no pattern
        // may panic the matcher.
        let _ = r.rules.allows_path("/a/b?c");
    }
    let _ = round_trip::<RefreshState>(data);
    if let Some(list) = round_trip::<DueList>(data) {
        let _ = list.entries.iter().map(|e| keys::host_of(&e.url)).count();
    }
    // A due list value with leases in front: what decodes re-encodes to
    // the same list; a lease marked on it keeps the entries' bytes.
    if let Ok(list) = due_list::decode(data) {
        let bytes = due_list::encode(&list);
        let back = due_list::decode(&bytes).expect("an encoded list decodes");
        assert_eq!(due_list::encode(&back), bytes);
        if let Ok(marked) = due_list::remark(data, None, &[(0, (1, 2))]) {
            let marked = due_list::decode(&marked).expect("a marked list decodes");
            assert_eq!(marked.entries.len(), list.entries.len());
            assert_eq!(marked.entries[0].lease, Some((1, 2)));
        }
    }
    let _ = due_list::all_leased(data, 0);
    if let Ok(entries) = page::decode(data) {
        // A page that decodes re-encodes to the same entries, and each URL
        // is found.
        assert_eq!(page::decode(&page::encode(&entries)), Ok(entries.clone()));
        for (url, rec) in &entries {
            assert_eq!(page::find(data, url), Ok(Some(rec.clone())));
        }
    }
    let _ = keys::legacy::parse_due(data).map(|d| keys::legacy::as_list(d.url));
    let _ = keys::suffix_url(data);
});
