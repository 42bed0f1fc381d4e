//! [`DueList`]: a run of the due index, its entries ([`Listed`]), and the
//! layouts older format versions wrote it in.

use serde::{Deserialize, Serialize};

use crate::keys;

use super::*;

/// A run of the due index ([`keys::run`]): due entries of one lane (queue,
/// host, urgency class), in queue order ([`Listed::order`]), from the run's
/// key up to the next run's. Key layouts 5 to 8 kept such lists per host,
/// due second and class ("due lists"); the layout migration reads their
/// leases.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DueList {
    /// The entries, sorted.
    pub entries: Vec<Listed>,
}

/// A due entry, with what a lease orders it by and what it hands out, so
/// that a lease reads no record of the URLs it hands out (but those whose
/// record holds a URL frontier client's metadata): the lease, too, is kept
/// here (the record's [`Schedule::lease`] is written empty; a reader of the
/// record overlays this one, see `marks.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Listed {
    /// The policy's score ([`Schedule::score`]).
    pub score: f32,
    /// The sitemap's order ([`UrlRecord::rank`]).
    pub rank: keys::Rank,
    /// The URL.
    pub url: String,
    /// Why it is due ([`Schedule::reason`]; format version 7).
    pub reason: StoredReason,
    /// Its record holds a URL frontier client's metadata, which a lease
    /// hands out with it (format version 7).
    pub meta: bool,
    /// When it is due ([`Schedule::due`]; format version 9).
    pub due: i64,
    /// Leased until this time, with this lease id: kept in front of the
    /// run's entries ([`crate::due_list`]), not with them.
    #[serde(skip)]
    pub lease: Option<(u64, i64)>,
    /// Read from a due list of format 6 to 8 (key layouts 5 to 8): what it
    /// does not hold is not known. Only the layout migration reads these.
    #[serde(skip)]
    pub legacy: bool,
}

impl Listed {
    /// `rec`'s entry, `url` its URL.
    pub fn of(url: &str, rec: &UrlRecord) -> Listed {
        Listed {
            score: rec.schedule.score,
            rank: rec.rank(url),
            url: url.to_string(),
            reason: rec.schedule.reason,
            meta: !rec.metadata.is_empty(),
            due: rec.schedule.due,
            lease: rec.schedule.lease,
            legacy: false,
        }
    }

    /// Its place in its lane ([`keys::position`]).
    pub fn position(&self) -> Vec<u8> {
        keys::position(self.due, self.score, self.rank, &self.url)
    }

    /// The queue order within one lane: the earlier due time first, then
    /// the higher score, the rank, the URL: the order of
    /// [`Listed::position`]'s bytes.
    pub fn order(&self, other: &Listed) -> std::cmp::Ordering {
        self.due
            .cmp(&other.due)
            .then(other.score.total_cmp(&self.score))
            .then(self.rank.cmp(&other.rank))
            .then(self.url.cmp(&other.url))
    }

    /// Whether it is leased at `now` (a lease that ran out is due again).
    pub fn leased_at(&self, now: i64) -> bool {
        lease_holds(self.lease, now)
    }
}

/// Whether `lease` (id, expiry) holds at `now`: one that ran out does not.
pub fn lease_holds(lease: Option<(u64, i64)>, now: i64) -> bool {
    lease.is_some_and(|(_, until)| until > now)
}

/// `rec` as format version 8 wrote it, naming due list `listed`: what the
/// layout migration's tests store as an older build would have.
#[cfg(test)]
pub(crate) fn encode_v8(rec: &UrlRecord, listed: Option<u32>) -> Vec<u8> {
    let v8 = UrlRecordV8 {
        v5: UrlRecordV5 {
            v4: UrlRecordV4 {
                v3: UrlRecordV3 {
                    v1: UrlRecordV1 {
                        first_seen: rec.first_seen,
                        first_source: rec.first_source,
                        last_seen: rec.last_seen,
                        lastmod: rec.lastmod,
                        lastmod_history: rec.lastmod_history.clone(),
                        changefreq: rec.changefreq,
                        priority: rec.priority,
                        extensions: rec.extensions,
                        fetch: rec.fetch.clone(),
                        visits: rec.visits.clone(),
                        interval: rec.interval,
                        schedule: rec.schedule,
                        retired: rec.retired,
                        sources: rec.sources.clone(),
                    },
                    notified: rec.notified,
                },
                blocked: rec.blocked,
                lapsed: rec.lapsed,
                repeats: rec.repeats,
                last_status: rec.last_status,
                redirected_from: rec.redirected_from.clone(),
            },
            listed,
        },
        completed: rec.completed,
        metadata: rec.metadata.clone(),
    };
    let mut bytes = vec![8];
    bytes.extend(postcard::to_stdvec(&v8).unwrap_or_default());
    bytes
}

/// [`Listed`] as format version 6 wrote it.
#[derive(Deserialize)]
struct ListedV6 {
    score: f32,
    rank: keys::Rank,
    url: String,
}

/// [`DueList`] as format version 6 wrote it.
#[derive(Deserialize)]
struct DueListV6 {
    entries: Vec<ListedV6>,
}

/// [`Listed`] as format versions 7 and 8 wrote it: without `due`.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(super) struct ListedV8 {
    pub(super) score: f32,
    pub(super) rank: keys::Rank,
    pub(super) url: String,
    pub(super) reason: StoredReason,
    pub(super) meta: bool,
}

/// [`DueList`] as format versions 7 and 8 wrote it.
#[derive(Deserialize)]
struct DueListV8 {
    entries: Vec<ListedV8>,
}

impl Record for DueList {
    fn from_older(version: u8, body: &[u8]) -> Result<Self, postcard::Error> {
        if version >= 9 {
            // Unchanged since version 9.
            return postcard::from_bytes(body);
        }
        // The due lists of key layouts 5 to 8, which only the layout
        // migration reads: what they do not hold is not known.
        let legacy = |score, rank, url, reason, meta| Listed {
            score,
            rank,
            url,
            reason,
            meta,
            due: i64::MIN,
            lease: None,
            legacy: true,
        };
        let entries = if version >= 7 {
            let v8: DueListV8 = postcard::from_bytes(body)?;
            v8.entries
                .into_iter()
                .map(|e| legacy(e.score, e.rank, e.url, e.reason, e.meta))
                .collect()
        } else {
            let v6: DueListV6 = postcard::from_bytes(body)?;
            v6.entries
                .into_iter()
                .map(|e| legacy(e.score, e.rank, e.url, StoredReason::New, false))
                .collect()
        };
        Ok(DueList { entries })
    }
}
