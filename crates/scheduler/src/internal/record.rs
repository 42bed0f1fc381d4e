//! The store's records and their on-disk form: a version byte, then the
//! record in postcard (compact varints, no field names). A record that does
//! not decode is reported as corrupt, never a panic.
//!
//! ## Versions
//!
//! | version | change |
//! |---|---|
//! | 1 | first |
//! | 2 | [`UrlRecord::notified`] appended |
//! | 3 | [`LastmodTrust`] (in [`HostRecord`]) split by error kind: `announced`, `missed`, `false_alarms` appended |
//! | 4 | [`UrlRecord`]: `blocked`, `lapsed`, `repeats`, `last_status`, `redirected_from` appended; [`HostRecord`]: `errors_in_a_row` appended |
//! | 5 | `UrlRecord::listed` appended: the due list that held a new URL's due entry (gone in version 9) |
//! | 6 | [`UrlRecord`]: `completed`, `metadata` appended (what a URL frontier client put, [`crate::frontier`]); the host counts (`Tally`): `completed` appended |
//! | 7 | [`Listed`] (a due list entry): `reason` and `meta` appended, and its lease kept in front of its list ([`crate::due_list`]), not in its record |
//! | 8 | [`HostRecord`]: `counts` appended (its URL records counted by state, kept under `t` ‖ host before key layout 8) |
//! | 9 | [`UrlRecord`]: `listed` gone (every queued URL's entry is in a run of its lane), `queue` appended (a URL frontier client's queue); [`Listed`] (a run's entry): `due` appended; [`StoredReason::LastmodTrusted`] appended |
//!
//! Every record is written in the current version and read in any known
//! one ([`Record`]): a version-1 URL record decodes through its legacy
//! layout, without notifications. Enum variants are only ever appended
//! (postcard encodes the variant index), so [`StoredReason::Notified`],
//! added with version 2, needs no conversion.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sitemapd_parser::ChangeFreq;
use sitemapd_parser::date::Precision;

use crate::estimate::Visit;
use crate::keys;
use crate::policy::{FetchOutcome, Reason, Urgency, effective_priority};
use crate::tally::Tally;
use crate::trust::LastmodTrust;

/// The record format version written first in every value.
pub const FORMAT_VERSION: u8 = 9;

/// The read time of a [`UrlRecord::lastmod_history`] entry whose move is
/// not dated.
pub const NOT_DATED: i64 = i64::MIN;
/// Distinct lastmod values remembered per URL.
pub const LASTMOD_HISTORY: usize = 8;
/// Fetch observations remembered per URL for the estimators.
pub const VISIT_HISTORY: usize = 16;
/// Sitemaps remembered per URL (for retirement).
pub const MAX_SOURCES: usize = 8;
/// Complete reads remembered per sitemap: the most `retire_after` can be.
pub const RECENT_READS: usize = 8;

/// A record could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Empty value.
    #[error("empty record")]
    Empty,
    /// Written by a newer (or unknown) format.
    #[error("record format version {0} is not known (this build reads 1 to {FORMAT_VERSION})")]
    Version(u8),
    /// The bytes do not decode.
    #[error("corrupt record: {0}")]
    Corrupt(#[from] postcard::Error),
    /// The page of records it is in does not decode.
    #[error("corrupt page: {0}")]
    Page(#[from] crate::page::PageError),
    /// A compressed record ([`encode_squeezed`]) that does not decompress.
    #[error("compressed record does not decompress")]
    Squeezed,
    /// The leases in front of a due list's entries do not read, or name
    /// entries it does not hold ([`crate::due_list`]).
    #[error("corrupt leases in a due list")]
    ListLeases,
}

/// The first byte of a record compressed by [`encode_squeezed`]: a zstd
/// frame of the record's [`encode`]d bytes follows.
pub const SQUEEZED: u8 = 0xc5;

/// Bytes a compressed record may decompress to, at most.
const MAX_SQUEEZED: usize = 4 << 20;

/// [`encode`], compressed ([`crate::squeeze`]) when that makes it smaller:
/// for the records that hold many URLs (due lists).
pub fn encode_squeezed<T: Serialize>(record: &T) -> Vec<u8> {
    let plain = encode(record);
    let frame = crate::squeeze::compress(&plain);
    if frame.is_empty() || frame.len() + 1 >= plain.len() {
        return plain;
    }
    let mut out = Vec::with_capacity(1 + frame.len());
    out.push(SQUEEZED);
    out.extend_from_slice(&frame);
    out
}

/// Encodes a record: version byte + postcard.
pub fn encode<T: Serialize>(record: &T) -> Vec<u8> {
    // Room for a typical URL record, so that it is written without
    // growing the vector (or copied after).
    let mut out = Vec::with_capacity(192);
    out.push(FORMAT_VERSION);
    // Serialising these plain structs into a Vec cannot fail.
    postcard::to_extend(record, out).unwrap_or_else(|_| vec![FORMAT_VERSION])
}

/// A record the store writes, and how to read its older format versions.
pub trait Record: Serialize + DeserializeOwned {
    /// Reads the body of a value written in the older format `version`
    /// (1 up to [`FORMAT_VERSION`] − 1). The default: the layout has not
    /// changed.
    fn from_older(version: u8, body: &[u8]) -> Result<Self, postcard::Error> {
        let _ = version;
        postcard::from_bytes(body)
    }
}

/// Decodes a record written by [`encode`] (or [`encode_squeezed`]), in
/// this format version or an older one.
pub fn decode<T: Record>(bytes: &[u8]) -> Result<T, RecordError> {
    if let Some((&SQUEEZED, frame)) = bytes.split_first() {
        let plain = crate::squeeze::decompress(frame, MAX_SQUEEZED).ok_or(RecordError::Squeezed)?;
        if plain.first() == Some(&SQUEEZED) {
            return Err(RecordError::Squeezed);
        }
        return decode(&plain);
    }
    match bytes.split_first() {
        None => Err(RecordError::Empty),
        Some((&FORMAT_VERSION, body)) => Ok(postcard::from_bytes(body)?),
        Some((&v, body)) if (1..FORMAT_VERSION).contains(&v) => Ok(T::from_older(v, body)?),
        Some((&v, _)) => Err(RecordError::Version(v)),
    }
}

/// A lastmod as stored: unix seconds and precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredLastmod {
    /// Unix seconds (UTC).
    pub at: i64,
    /// How precisely the sitemap gave it.
    pub precision: StoredPrecision,
}

/// [`Precision`] in the store's own stable encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
// Names in JSON as the CLI prints them; postcard stores the variant index.
#[serde(rename_all = "kebab-case")]
pub enum StoredPrecision {
    Year,
    Month,
    Day,
    Minute,
    Second,
    Fraction,
}

impl From<Precision> for StoredPrecision {
    fn from(p: Precision) -> Self {
        match p {
            Precision::Year => Self::Year,
            Precision::Month => Self::Month,
            Precision::Day => Self::Day,
            Precision::Minute => Self::Minute,
            Precision::Second => Self::Second,
            Precision::Fraction => Self::Fraction,
        }
    }
}

impl From<StoredPrecision> for Precision {
    fn from(p: StoredPrecision) -> Self {
        match p {
            StoredPrecision::Year => Self::Year,
            StoredPrecision::Month => Self::Month,
            StoredPrecision::Day => Self::Day,
            StoredPrecision::Minute => Self::Minute,
            StoredPrecision::Second => Self::Second,
            StoredPrecision::Fraction => Self::Fraction,
        }
    }
}

/// [`ChangeFreq`] in the store's own stable encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
// Names in JSON as the CLI prints them; postcard stores the variant index.
#[serde(rename_all = "kebab-case")]
pub enum StoredChangeFreq {
    Always,
    Hourly,
    Daily,
    Weekly,
    Monthly,
    Yearly,
    Never,
}

impl From<ChangeFreq> for StoredChangeFreq {
    fn from(c: ChangeFreq) -> Self {
        match c {
            ChangeFreq::Always => Self::Always,
            ChangeFreq::Hourly => Self::Hourly,
            ChangeFreq::Daily => Self::Daily,
            ChangeFreq::Weekly => Self::Weekly,
            ChangeFreq::Monthly => Self::Monthly,
            ChangeFreq::Yearly => Self::Yearly,
            ChangeFreq::Never => Self::Never,
        }
    }
}

impl From<StoredChangeFreq> for ChangeFreq {
    fn from(c: StoredChangeFreq) -> Self {
        match c {
            StoredChangeFreq::Always => Self::Always,
            StoredChangeFreq::Hourly => Self::Hourly,
            StoredChangeFreq::Daily => Self::Daily,
            StoredChangeFreq::Weekly => Self::Weekly,
            StoredChangeFreq::Monthly => Self::Monthly,
            StoredChangeFreq::Yearly => Self::Yearly,
            StoredChangeFreq::Never => Self::Never,
        }
    }
}

impl StoredChangeFreq {
    /// Shorter intervals first: `Always` < `Hourly` < … < `Never`.
    pub fn rank(self) -> u8 {
        self as u8
    }
}

/// Counts of extension data the sitemaps gave for a URL.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extensions {
    /// `image:image` entries.
    pub images: u16,
    /// `video:video` entries.
    pub videos: u16,
    /// A `news:news` block.
    pub news: bool,
    /// hreflang alternates.
    pub alternates: u16,
}

/// A fetch outcome as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
// Names in JSON as the CLI prints them; postcard stores the variant index.
#[serde(rename_all = "kebab-case")]
pub enum StoredOutcome {
    Changed,
    NotModified,
    Gone,
    Error(u16),
    Redirected,
}

impl StoredOutcome {
    /// Its name, as [`Outcome::name`](crate::Outcome::name) gives it.
    pub fn name(self) -> &'static str {
        match self {
            StoredOutcome::Changed => "changed",
            StoredOutcome::NotModified => "not-modified",
            StoredOutcome::Gone => "gone",
            StoredOutcome::Error(_) => "error",
            StoredOutcome::Redirected => "redirected",
        }
    }

    /// The policy's view.
    pub fn kind(self) -> FetchOutcome {
        match self {
            StoredOutcome::Changed => FetchOutcome::Changed,
            StoredOutcome::NotModified => FetchOutcome::NotModified,
            StoredOutcome::Gone => FetchOutcome::Gone,
            StoredOutcome::Error(_) => FetchOutcome::Error,
            StoredOutcome::Redirected => FetchOutcome::Redirected,
        }
    }
}

/// What the crawler's fetches of a URL found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FetchState {
    /// Last fetch (any outcome).
    pub last_fetch: Option<i64>,
    /// Last successful fetch (changed or not modified).
    pub last_success: Option<i64>,
    /// Its outcome.
    pub last_outcome: Option<StoredOutcome>,
    /// Last fetch that found a change.
    pub last_change: Option<i64>,
    /// Fetches reported.
    pub fetches: u32,
    /// Of which found a change.
    pub changes: u32,
    /// Errors since the last success.
    pub errors_in_a_row: u32,
    /// The page's `ETag`.
    pub etag: Option<String>,
    /// The page's `Last-Modified`.
    pub last_modified: Option<String>,
    /// Where it redirected to, last time.
    pub redirected_to: Option<String>,
}

/// A visit as stored (whole seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredVisit {
    /// Seconds since the previous fetch.
    pub interval: u32,
    /// Found a change.
    pub changed: bool,
    /// Visit − lastmod, seconds, for a changed visit with a lastmod.
    pub since_lastmod: Option<u32>,
}

impl From<StoredVisit> for Visit {
    fn from(v: StoredVisit) -> Self {
        Visit {
            interval: f64::from(v.interval),
            changed: v.changed,
            since_lastmod: v.since_lastmod.map(f64::from),
        }
    }
}

/// Where the URL is in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    /// When it is due (unix seconds); its due-index key.
    pub due: i64,
    /// Urgency within a due window (higher first).
    pub score: f32,
    /// Why it is due.
    pub reason: StoredReason,
    /// Leased until this time, with this lease id.
    pub lease: Option<(u64, i64)>,
}

impl Schedule {
    /// Where a policy's [`Due`](crate::policy::Due) puts a URL, with no
    /// lease.
    pub fn of(due: &crate::policy::Due) -> Schedule {
        Schedule {
            due: due.at.unix(),
            score: due.score as f32,
            reason: due.reason.into(),
            lease: None,
        }
    }
}

/// [`Reason`] as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
// Names in JSON as the CLI prints them; postcard stores the variant index.
#[serde(rename_all = "kebab-case")]
pub enum StoredReason {
    New,
    LastmodNewer,
    Interval,
    Changefreq,
    Adaptive,
    Optimal,
    Retry,
    LeaseExpired,
    /// Appended in format version 2: variants are never reordered.
    Notified,
    /// Appended with key layout 2.
    Validation,
    /// Appended with key layout 2.
    Safety,
    /// Appended with key layout 2.
    LastmodPeriod,
    /// Appended in format version 4.
    Probe,
    /// Appended in format version 6.
    Requested,
    /// A newer lastmod on a host whose lastmods have earned trust (not
    /// one on probation): a change announced by a source the store
    /// trusts, in the announced class. Shown as [`Reason::LastmodNewer`].
    /// Appended in format version 9.
    LastmodTrusted,
}

impl StoredReason {
    /// Its urgency class.
    pub fn urgency(self) -> Urgency {
        match self {
            StoredReason::LastmodTrusted => Urgency::Announced,
            other => Reason::from(other).urgency(),
        }
    }
}

impl From<Reason> for StoredReason {
    fn from(r: Reason) -> Self {
        match r {
            Reason::New => Self::New,
            Reason::LastmodNewer => Self::LastmodNewer,
            Reason::Interval => Self::Interval,
            Reason::Changefreq => Self::Changefreq,
            Reason::Adaptive => Self::Adaptive,
            Reason::Optimal => Self::Optimal,
            Reason::Retry => Self::Retry,
            // A live lease is shown, never stored: the record keeps the
            // reason it was leased for.
            Reason::LeaseExpired | Reason::Leased => Self::LeaseExpired,
            Reason::Notified => Self::Notified,
            Reason::Validation => Self::Validation,
            Reason::Safety => Self::Safety,
            Reason::LastmodPeriod => Self::LastmodPeriod,
            Reason::Probe => Self::Probe,
            Reason::Requested => Self::Requested,
        }
    }
}

impl From<StoredReason> for Reason {
    fn from(r: StoredReason) -> Self {
        match r {
            StoredReason::New => Self::New,
            StoredReason::LastmodNewer | StoredReason::LastmodTrusted => Self::LastmodNewer,
            StoredReason::Interval => Self::Interval,
            StoredReason::Changefreq => Self::Changefreq,
            StoredReason::Adaptive => Self::Adaptive,
            StoredReason::Optimal => Self::Optimal,
            StoredReason::Retry => Self::Retry,
            StoredReason::LeaseExpired => Self::LeaseExpired,
            StoredReason::Notified => Self::Notified,
            StoredReason::Validation => Self::Validation,
            StoredReason::Safety => Self::Safety,
            StoredReason::LastmodPeriod => Self::LastmodPeriod,
            StoredReason::Probe => Self::Probe,
            StoredReason::Requested => Self::Requested,
        }
    }
}

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
struct UrlRecordV1 {
    first_seen: i64,
    first_source: u64,
    last_seen: i64,
    lastmod: Option<StoredLastmod>,
    lastmod_history: Vec<(i64, i64)>,
    changefreq: Option<StoredChangeFreq>,
    priority: Option<f32>,
    extensions: Extensions,
    fetch: FetchState,
    visits: Vec<StoredVisit>,
    interval: Option<f32>,
    schedule: Schedule,
    retired: bool,
    sources: Vec<(u64, u64)>,
}

/// [`UrlRecord`] as format version 4 wrote it: without `listed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct UrlRecordV4 {
    v3: UrlRecordV3,
    blocked: bool,
    lapsed: Option<Lapse>,
    repeats: u32,
    last_status: u16,
    redirected_from: Option<String>,
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
struct UrlRecordV3 {
    v1: UrlRecordV1,
    notified: Option<Notifications>,
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
struct UrlRecordV5 {
    v4: UrlRecordV4,
    listed: Option<u32>,
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
struct UrlRecordV8 {
    v5: UrlRecordV5,
    completed: bool,
    metadata: Vec<(String, Vec<String>)>,
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

impl Record for SitemapRecord {}

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
struct ListedV8 {
    score: f32,
    rank: keys::Rank,
    url: String,
    reason: StoredReason,
    meta: bool,
}

/// [`DueList`] as format versions 7 and 8 wrote it.
#[derive(Deserialize)]
struct DueListV8 {
    entries: Vec<ListedV8>,
}

impl Record for DueList {
    fn from_older(version: u8, body: &[u8]) -> Result<Self, postcard::Error> {
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

/// What the store knows of one sitemap (keyed by its URL as listed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SitemapRecord {
    /// Stable id, from 1 (member and child keys use it).
    pub id: u64,
    /// Successful (2xx) reads so far: the sequence stamped on the URLs each
    /// read lists.
    pub seq: u64,
    /// The sequence numbers of its last complete reads, oldest first, at
    /// most [`RECENT_READS`]: absences count against these only.
    pub recent_complete: Vec<u64>,
    /// `ETag` of the last response.
    pub etag: Option<String>,
    /// `Last-Modified` of the last response.
    pub last_modified: Option<String>,
    /// Last fetch (unix seconds).
    pub last_fetch: Option<i64>,
    /// Last successful fetch.
    pub last_success: Option<i64>,
    /// Last HTTP status, or 0 when no response came.
    pub last_status: u16,
    /// URL entries in the last read.
    pub entries: u64,
    /// Failed fetches in a row.
    pub errors: u32,
    /// The index that listed it.
    pub parent: Option<String>,
    /// The site whose robots.txt authorised it (R5).
    pub authorised_by: Option<String>,
    /// URLs it lists (not retired), as of its last retirement pass; a
    /// read with fewer distinct URLs triggers the next pass.
    pub members: u64,
}

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

/// A followed site, keyed by its seed as given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteRecord {
    /// When it was added (unix seconds).
    pub added_at: i64,
    /// When it is next to be walked.
    pub next_walk: i64,
    /// When its last walk ended, if it was walked.
    pub last_walk: Option<i64>,
    /// Sitemaps its last walk read.
    pub last_sitemaps: u64,
    /// Sitemaps its last walk failed to read.
    pub last_failed: u64,
    /// URL entries its last walk read.
    pub last_entries: u64,
}

/// One sitemap's refresh schedule, as stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefreshState {
    /// When to read it next (unix seconds).
    pub next_at: i64,
    /// The current interval between successful reads, seconds.
    pub interval: u32,
    /// The fingerprint of the last 2xx read (0 before the first).
    pub fingerprint: u64,
    /// Successful reads that changed (the first one included), in total.
    pub changed: u32,
    /// Successful reads that did not change (304 or same fingerprint), in
    /// total.
    pub unchanged: u32,
    /// Failed reads since the last successful one.
    pub errors_in_a_row: u32,
    /// It is an RSS/Atom feed, as its last read with a body said (a 304 or
    /// a failure has none: the flag is kept).
    pub feed: bool,
}

impl Record for RefreshState {}

impl Record for SiteRecord {}

/// The robots.txt rules a host's URLs are leased under, as its last walk
/// read them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RobotsRecord {
    /// The rules for the store's crawler.
    pub rules: sitemapd_parser::RobotsRules,
    /// When they were read (unix seconds).
    pub read_at: i64,
}

impl Record for RobotsRecord {}

#[cfg(test)]
mod tests {
    use super::*;

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
                postcard::to_allocvec(&(2.0f64, 5i64, (9u32, 1u32, 0u32, 0u32, 10u32), 7u64))
                    .unwrap(),
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
}
