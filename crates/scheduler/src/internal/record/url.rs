//! [`UrlRecord`]: everything the store knows of one URL, and the layouts
//! older format versions wrote it in.

use serde::{Deserialize, Serialize};

use crate::keys;
use crate::policy::effective_priority;

use super::*;

/// Everything the store knows of one URL (keyed by its normalised URL).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UrlRecord {
    /// First seen (unix seconds).
    pub first_seen: i64,
    /// The sitemap (id) it was first seen in.
    pub first_source: u64,
    /// Last seen in any sitemap.
    pub last_seen: i64,
    /// The newest believable lastmod (see the merge rule in the crate docs).
    pub lastmod: Option<StoredLastmod>,
    /// Distinct lastmod values in the order first seen, at most
    /// [`LASTMOD_HISTORY`], each with the time of the last sitemap read
    /// that still showed the value before it ([`NOT_DATED`] when that is
    /// not known: the first value, a URL several sitemaps list, a second
    /// value in one read). Records written before this was kept hold the
    /// time each value was first seen there instead; the store does not
    /// date moves recorded before it was opened by a build that keeps it
    /// ([`keys::DATED_FROM`](crate::keys::DATED_FROM)).
    pub lastmod_history: Vec<(i64, i64)>,
    /// The most frequent changefreq any sitemap gave.
    pub changefreq: Option<StoredChangeFreq>,
    /// The highest priority any sitemap gave; absent stays absent.
    pub priority: Option<f32>,
    /// Extension counts from the last sighting.
    pub extensions: Extensions,
    /// Fetch outcomes reported by the crawler.
    pub fetch: FetchState,
    /// The last fetches, for the estimators (at most [`VISIT_HISTORY`]).
    pub visits: Vec<StoredVisit>,
    /// The adaptive policy's current interval, seconds.
    pub interval: Option<f32>,
    /// The queue position.
    pub schedule: Schedule,
    /// Absent from all its sitemaps for K complete fetches: out of the queue.
    pub retired: bool,
    /// Sitemaps listing it: (sitemap id, that sitemap's fetch sequence when
    /// it last listed the URL), at most [`MAX_SOURCES`].
    pub sources: Vec<(u64, u64)>,
    /// Push notifications that it changed ([`Store::notify`](crate::Store::notify));
    /// `None` before the first (and in version-1 records).
    pub notified: Option<Notifications>,
    /// Its host's robots.txt disallows it: out of the queue until the
    /// rules change.
    pub blocked: bool,
    /// Retired by what its fetches found (gone, or moved for good): in the
    /// queue only for a revival probe on a long interval.
    pub lapsed: Option<Lapse>,
    /// Fetches in a row that ended the same way ([`StoredOutcome`] and, for
    /// redirects, permanence): what retires a 404 or a moved page.
    pub repeats: u32,
    /// The HTTP status of the last fetch, when the crawler gave one.
    pub last_status: u16,
    /// The URL whose redirect brought it into the store.
    pub redirected_from: Option<String>,
    /// A URL frontier client completed it (a known item with no refetch
    /// date, [`crate::frontier`]): out of the queue for good, until a
    /// client schedules it again.
    pub completed: bool,
    /// What a URL frontier client stored with it (keys with their values),
    /// returned with it when it is handed out: at most
    /// [`MAX_METADATA_BYTES`](crate::frontier::MAX_METADATA_BYTES).
    pub metadata: Vec<(String, Vec<String>)>,
    /// The URL frontier queue a client put it in, when that is not its
    /// host (`host[:port]`, [`keys::host_of`]): the queue it is counted,
    /// listed and handed out under ([`UrlRecord::queue_name`]).
    pub queue: Option<String>,
}

/// Why a URL was retired by its fetches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Lapse {
    /// 410, or 404 repeated.
    Gone,
    /// A permanent redirect (301, 308), repeated.
    Moved,
}

impl UrlRecord {
    /// The time of a read that still showed the value its current lastmod
    /// replaced ([`UrlState::lastmod_moved_after`](crate::policy::UrlState::lastmod_moved_after)).
    pub fn lastmod_moved_after(&self) -> Option<i64> {
        let current = self.lastmod?;
        match self.lastmod_history.as_slice() {
            [.., _, (value, read)] if *value == current.at && *read != NOT_DATED => Some(*read),
            _ => None,
        }
    }

    /// The change rate its lastmods show when they announce every change
    /// (the caller knows: a complete host, exact lastmods): the remembered
    /// values (at most [`LASTMOD_HISTORY`]) that rose above every earlier
    /// one are changes since the oldest value, [`crate::estimate::complete`]
    /// over the time from it to `now`. Values after `now` are left out.
    /// `None` before a second rising value.
    pub fn observed_rate(&self, now: i64) -> Option<f64> {
        let mut values = self
            .lastmod_history
            .iter()
            .map(|(v, _)| *v)
            .filter(|v| *v <= now);
        let oldest = values.next()?;
        let (mut top, mut rises) = (oldest, 0u64);
        for v in values {
            if v > top {
                top = v;
                rises += 1;
            }
        }
        (rises > 0).then(|| crate::estimate::complete(rises, now.saturating_sub(oldest) as f64))
    }

    /// Whether it has an entry in the due index: not retired as absent
    /// from its sitemaps, not blocked by robots.txt, not completed by a
    /// URL frontier client.
    pub fn queued(&self) -> bool {
        !self.retired && !self.blocked && !self.completed
    }

    /// The queue it is in: the one a URL frontier client put it in, else
    /// its host (`host[:port]`).
    pub fn queue_name<'a>(&'a self, url: &'a str) -> &'a str {
        self.queue.as_deref().unwrap_or_else(|| keys::host_of(url))
    }

    /// Its urgency class, as a byte of its lane.
    pub fn class(&self) -> u8 {
        self.schedule.reason.urgency() as u8
    }

    /// The lane its due entry is in ([`keys::lane`]).
    pub fn lane(&self, url: &str) -> Vec<u8> {
        keys::lane(self.queue_name(url), keys::host_of(url), self.class())
    }

    /// Its due entry's place in its lane ([`keys::position`]).
    pub fn position(&self, url: &str) -> Vec<u8> {
        keys::position(self.schedule.due, self.schedule.score, self.rank(url), url)
    }

    /// Its order among URLs of its lane due at the same time with the same
    /// score: [`due_rank`].
    pub fn rank(&self, url: &str) -> keys::Rank {
        keys::rank(
            due_rank(self.priority),
            self.lastmod.map(|l| l.at),
            url.len(),
        )
    }
}

/// The priority byte of a due entry's rank, lower first: 5 for priority
/// 1.0, 130 for the default 0.5, 230 for 0.1. The rank goes on with the
/// newest lastmod and the shortest URL ([`keys::rank`]).
pub fn due_rank(priority: Option<f32>) -> u8 {
    255 - (effective_priority(priority) * 250.0).round() as u8
}

/// Push notifications received for a URL: each one says it changed then.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notifications {
    /// How many (one per second at most).
    pub count: u32,
    /// The first (unix seconds).
    pub first: i64,
    /// The latest.
    pub last: i64,
}

/// [`UrlRecord`] as format version 1 wrote it: without `notified`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct UrlRecordV1 {
    pub(super) first_seen: i64,
    pub(super) first_source: u64,
    pub(super) last_seen: i64,
    pub(super) lastmod: Option<StoredLastmod>,
    pub(super) lastmod_history: Vec<(i64, i64)>,
    pub(super) changefreq: Option<StoredChangeFreq>,
    pub(super) priority: Option<f32>,
    pub(super) extensions: Extensions,
    pub(super) fetch: FetchState,
    pub(super) visits: Vec<StoredVisit>,
    pub(super) interval: Option<f32>,
    pub(super) schedule: Schedule,
    pub(super) retired: bool,
    pub(super) sources: Vec<(u64, u64)>,
}

/// [`UrlRecord`] as format version 4 wrote it: without `listed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct UrlRecordV4 {
    pub(super) v3: UrlRecordV3,
    pub(super) blocked: bool,
    pub(super) lapsed: Option<Lapse>,
    pub(super) repeats: u32,
    pub(super) last_status: u16,
    pub(super) redirected_from: Option<String>,
}

impl From<UrlRecordV4> for UrlRecord {
    fn from(v: UrlRecordV4) -> Self {
        UrlRecord {
            blocked: v.blocked,
            lapsed: v.lapsed,
            repeats: v.repeats,
            last_status: v.last_status,
            redirected_from: v.redirected_from,
            ..v.v3.into()
        }
    }
}

/// [`UrlRecord`] as format versions 2 and 3 wrote it: without what
/// version 4 appended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct UrlRecordV3 {
    pub(super) v1: UrlRecordV1,
    pub(super) notified: Option<Notifications>,
}

impl From<UrlRecordV3> for UrlRecord {
    fn from(v: UrlRecordV3) -> Self {
        UrlRecord {
            notified: v.notified,
            ..v.v1.into()
        }
    }
}

impl From<UrlRecordV1> for UrlRecord {
    fn from(v: UrlRecordV1) -> Self {
        UrlRecord {
            first_seen: v.first_seen,
            first_source: v.first_source,
            last_seen: v.last_seen,
            lastmod: v.lastmod,
            lastmod_history: v.lastmod_history,
            changefreq: v.changefreq,
            priority: v.priority,
            extensions: v.extensions,
            fetch: v.fetch,
            visits: v.visits,
            interval: v.interval,
            schedule: v.schedule,
            retired: v.retired,
            sources: v.sources,
            notified: None,
            blocked: false,
            lapsed: None,
            repeats: 0,
            last_status: 0,
            redirected_from: None,
            completed: false,
            metadata: Vec::new(),
            queue: None,
        }
    }
}

/// [`UrlRecord`] as format version 5 wrote it: without what version 6
/// appended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct UrlRecordV5 {
    pub(super) v4: UrlRecordV4,
    pub(super) listed: Option<u32>,
}

impl From<UrlRecordV5> for UrlRecord {
    /// The due list it names is gone with key layout 9: every queued URL's
    /// entry is in its lane.
    fn from(v: UrlRecordV5) -> Self {
        v.v4.into()
    }
}

/// [`UrlRecord`] as format versions 6 to 8 wrote it: with `listed`,
/// without `queue`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct UrlRecordV8 {
    pub(super) v5: UrlRecordV5,
    pub(super) completed: bool,
    pub(super) metadata: Vec<(String, Vec<String>)>,
}

impl From<UrlRecordV8> for UrlRecord {
    fn from(v: UrlRecordV8) -> Self {
        UrlRecord {
            completed: v.completed,
            metadata: v.metadata,
            ..v.v5.into()
        }
    }
}

impl Record for UrlRecord {
    fn from_older(version: u8, body: &[u8]) -> Result<Self, postcard::Error> {
        match version {
            1 => postcard::from_bytes::<UrlRecordV1>(body).map(Into::into),
            2 | 3 => postcard::from_bytes::<UrlRecordV3>(body).map(Into::into),
            4 => postcard::from_bytes::<UrlRecordV4>(body).map(Into::into),
            5 => postcard::from_bytes::<UrlRecordV5>(body).map(Into::into),
            6..=8 => postcard::from_bytes::<UrlRecordV8>(body).map(Into::into),
            // Unchanged since version 9.
            _ => postcard::from_bytes(body),
        }
    }
}

impl UrlRecord {
    /// When it is due next: its due time, or the end of its lease if
    /// later (a leased URL keeps its due time, and its place in the queue,
    /// while leased).
    pub fn due_until(&self) -> i64 {
        match self.schedule.lease {
            Some((_, until)) => self.schedule.due.max(until),
            None => self.schedule.due,
        }
    }
}
