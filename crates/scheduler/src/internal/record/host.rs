//! [`HostRecord`]: what the store knows of one host, and the layouts older
//! format versions wrote it in.

use serde::{Deserialize, Serialize};

use crate::tally::Tally;
use crate::trust::LastmodTrust;

use super::*;

/// What the store knows of one host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostRecord {
    /// Seconds between two fetches handed out for this host. The store
    /// sets it to its `StoreOptions::min_delay` whenever it reads the
    /// record, so a changed setting applies to hosts already stored.
    pub min_delay: f64,
    /// Not before this time may another URL of the host be leased.
    pub next_allowed: i64,
    /// Lastmod trust.
    pub trust: LastmodTrust,
    /// No longer kept (layout 4 counts a host's URLs in its `Tally`); stays
    /// in the format, written as read.
    pub urls: u64,
    /// Fetches of its URLs that failed in a row (errors, 5xx): from
    /// [`HOST_FAILURES`](crate::queue::HOST_FAILURES) on, the host backs off.
    pub errors_in_a_row: u32,
    /// Its URL records counted by state, changed in the batch that changes
    /// them ([`crate::writes::UrlWrites`]): what `stats` reads. `None` for a
    /// host no URL of which was ever stored (a sitemap's host): not a queue.
    /// Format version 8; key layouts 4 to 7 kept them under a key of their
    /// own. A host record that does not decode loses them with the rest:
    /// its host counts as none (and its leases in due lists are not looked
    /// for) until `stats --repair` counts its records again; `stats --check`
    /// names it.
    pub(crate) counts: Option<Tally>,
}

impl Record for HostRecord {
    fn from_older(version: u8, body: &[u8]) -> Result<Self, postcard::Error> {
        let v7 = match version {
            // Unchanged since version 8.
            8.. => return postcard::from_bytes(body),
            4..=7 => postcard::from_bytes::<HostRecordV7>(body)?,
            3 => {
                let v3: HostRecordV3 = postcard::from_bytes(body)?;
                HostRecordV7 {
                    min_delay: v3.min_delay,
                    next_allowed: v3.next_allowed,
                    trust: v3.trust,
                    urls: v3.urls,
                    errors_in_a_row: 0,
                }
            }
            // Versions 1 and 2: the trust counts without their split.
            _ => {
                let v2: HostRecordV2 = postcard::from_bytes(body)?;
                HostRecordV7 {
                    min_delay: v2.min_delay,
                    next_allowed: v2.next_allowed,
                    trust: LastmodTrust {
                        agreements: v2.trust.0,
                        disagreements: v2.trust.1,
                        identical_sitemaps: v2.trust.2,
                        future_lastmods: v2.trust.3,
                        observations: v2.trust.4,
                        ..LastmodTrust::default()
                    },
                    urls: v2.urls,
                    errors_in_a_row: 0,
                }
            }
        };
        // Without the counts before version 8 (the layout migration puts
        // them in).
        Ok(HostRecord {
            min_delay: v7.min_delay,
            next_allowed: v7.next_allowed,
            trust: v7.trust,
            urls: v7.urls,
            errors_in_a_row: v7.errors_in_a_row,
            counts: None,
        })
    }
}

/// The host record stored under `key` as `value`; a fresh one if there is
/// none, or if it does not decode (logged: its politeness, trust and
/// counts start over). What the store and the layout migration read.
pub fn host_record_or_fresh(key: &[u8], value: Option<&[u8]>) -> HostRecord {
    let Some(value) = value else {
        return HostRecord::default();
    };
    decode::<HostRecord>(value).unwrap_or_else(|error| {
        let key = String::from_utf8_lossy(key.get(1..).unwrap_or_default());
        tracing::warn!(%key, %error, "corrupt host record: starting over");
        HostRecord::default()
    })
}

/// [`HostRecord`] as versions 4 to 7 wrote it (no counts).
#[derive(Deserialize)]
struct HostRecordV7 {
    min_delay: f64,
    next_allowed: i64,
    trust: LastmodTrust,
    urls: u64,
    errors_in_a_row: u32,
}

/// [`HostRecord`] as version 3 wrote it (no host error count).
#[derive(Deserialize)]
struct HostRecordV3 {
    min_delay: f64,
    next_allowed: i64,
    trust: LastmodTrust,
    urls: u64,
}

/// [`HostRecord`] as versions 1 and 2 wrote it (five trust counts).
#[derive(Deserialize)]
struct HostRecordV2 {
    min_delay: f64,
    next_allowed: i64,
    trust: (u32, u32, u32, u32, u32),
    urls: u64,
}

/// What a host's pushes did: the notifications its URLs received
/// (IndexNow, `Store::notify`) and what the fetches they caused found. Kept
/// under a key of its own, written only by a push and by the completion of
/// a URL a push made due.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PushRecord {
    /// Pushes received (one per request, whatever its URL count).
    pub pushes: u64,
    /// URLs they named.
    pub urls: u64,
    /// When the last one came (unix seconds).
    pub last: i64,
    /// Fetches of URLs a push made due, since the counts were last halved.
    pub fetched: u32,
    /// Of those, the ones that found a change.
    pub changed: u32,
    /// When an IndexNow key of the host was last verified (unix seconds);
    /// `None` when none is, or its file stopped naming it.
    pub key_verified: Option<i64>,
}

impl Record for PushRecord {}
