//! The store's record decoder on arbitrary bytes: a corrupt or hostile
//! store value must give an error, never a panic or a huge allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sitemapd_scheduler::record::{HostRecord, SitemapRecord, UrlRecord, decode, encode};

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = decode::<UrlRecord>(data) {
        // What decodes re-encodes to bytes that decode to the same bytes
        // again (compared as bytes: a NaN priority is not equal to itself).
        let once = encode(&r);
        let twice = encode(&decode::<UrlRecord>(&once).unwrap());
        assert_eq!(once, twice);
    }
    let _ = decode::<SitemapRecord>(data);
    let _ = decode::<HostRecord>(data);
});
