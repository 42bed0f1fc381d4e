//! The parts of records in the store's own stable encoding: lastmods,
//! changefreqs, fetch outcomes and visits, schedules, reasons.

use serde::{Deserialize, Serialize};
use sitemapd_parser::ChangeFreq;
use sitemapd_parser::date::Precision;

use crate::estimate::Visit;
use crate::policy::{FetchOutcome, Reason, Urgency};

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
