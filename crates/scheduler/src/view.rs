//! What the store shows of a URL, a sitemap and a host: views built from
//! the stored records. The records (with internal ids, sequence numbers and
//! the disk encoding) stay private, so the disk format can change without
//! changing this API, and no serde derive serves both.

use std::time::Duration;

use serde::Serialize;
use sitemapd_parser::date::Precision;
use sitemapd_parser::{ChangeFreq, HostKey};

use crate::estimate::Visit;
use crate::policy::{FetchOutcome, Reason, Urgency};
use crate::record::RefreshState;
use crate::record::{HostRecord, Lapse, SiteRecord, SitemapRecord, UrlRecord};
use crate::time::Timestamp;

fn ts(secs: i64) -> Timestamp {
    Timestamp::from_unix(secs)
}

/// Everything the store knows of one URL ([`Store::url`](crate::Store::url),
/// [`Store::export`](crate::Store::export)).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct UrlView {
    /// The normalised URL.
    pub url: String,
    /// When a sitemap first listed it.
    pub first_seen: Timestamp,
    /// When a sitemap last listed it: the last read that wrote its record,
    /// or the last complete read of a sitemap that listed it unchanged.
    pub last_seen: Timestamp,
    /// The newest believable lastmod (the crate docs' merge rule).
    pub lastmod: Option<Timestamp>,
    /// How precisely the sitemap gave that lastmod.
    #[serde(serialize_with = "precision_name")]
    pub lastmod_precision: Option<Precision>,
    /// Distinct lastmod values seen (the last 8 are kept).
    pub lastmod_changes: usize,
    /// The most frequent changefreq any sitemap gave.
    #[serde(serialize_with = "changefreq_name")]
    pub changefreq: Option<ChangeFreq>,
    /// The highest priority any sitemap gave; absent stays absent.
    pub priority: Option<f32>,
    /// `image:image` entries at the last sighting.
    pub images: u16,
    /// `video:video` entries at the last sighting.
    pub videos: u16,
    /// A `news:news` block at the last sighting.
    pub news: bool,
    /// hreflang alternates at the last sighting.
    pub alternates: u16,
    /// Fetches the crawler reported.
    pub fetches: u32,
    /// Of which found a change.
    pub changes: u32,
    /// The last reported fetch, any outcome.
    pub last_fetch: Option<Timestamp>,
    /// The last successful fetch (changed or not modified).
    pub last_success: Option<Timestamp>,
    /// The last fetch that found a change.
    pub last_change: Option<Timestamp>,
    /// How the last fetch ended.
    pub last_outcome: Option<FetchOutcome>,
    /// Failed fetches since the last success.
    pub errors_in_a_row: u32,
    /// The last successful fetches as the change-rate estimators see them
    /// (oldest first, at most 16).
    #[serde(skip)]
    pub visits: Vec<Visit>,
    /// The page's `ETag`, as the crawler last reported it.
    pub etag: Option<String>,
    /// The page's `Last-Modified`, as the crawler last reported it.
    pub last_modified: Option<String>,
    /// Where it redirected to, the last time it did.
    pub redirected_to: Option<String>,
    /// Push notifications received ([`Store::notify`](crate::Store::notify)).
    pub notifications: u32,
    /// When it is next due (or when its lease runs out).
    pub due: Timestamp,
    /// Its urgency among URLs due at once (higher first).
    pub score: f32,
    /// Why it is due: [`Reason::Leased`] while a lease holds it,
    /// [`Reason::LeaseExpired`] once that lease ran out without an outcome.
    pub reason: Reason,
    /// The urgency class it is due in (docs/queue.md): `pushed`,
    /// `announced`, `changed`, `refresh` or `validation`.
    pub urgency: Urgency,
    /// Leased until then (a lease that ran out shows too, until completed).
    pub leased_until: Option<Timestamp>,
    /// Out of the regular queue: absent from all its sitemaps long enough
    /// (status `retired`), or found gone or moved for good by its fetches
    /// (status `gone`, `moved`: probed now and then in case it answers
    /// again).
    pub retired: bool,
    /// Where it stands: queued, blocked by robots.txt, retired (absent),
    /// gone or moved (probed only).
    pub status: UrlStatus,
    /// The HTTP status of the last fetch, when the crawler gave one.
    pub last_status: Option<u16>,
    /// The URL whose redirect brought it into the store.
    pub redirected_from: Option<String>,
    /// Sitemaps listing it (the store remembers 8 at most).
    pub sources: usize,
    /// The queue it is in: its host (`host[:port]`), or the URL frontier
    /// queue a client put it in.
    pub queue: String,
    /// What a URL frontier client stored with it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub metadata: Vec<(String, Vec<String>)>,
}

/// Where a URL stands in the queue ([`UrlView::status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum UrlStatus {
    /// In the queue.
    Queued,
    /// Its host's robots.txt disallows it: out of the queue until the
    /// rules change.
    Blocked,
    /// Absent from all its sitemaps long enough: out of the queue until a
    /// sitemap lists it again.
    Retired,
    /// Gone (410, or 404 repeated): only a revival probe now and then.
    Gone,
    /// Moved for good (a permanent redirect, repeated): only a revival
    /// probe now and then.
    Moved,
    /// A URL frontier client completed it: out of the queue for good.
    Completed,
}

impl UrlStatus {
    /// The name shown to users (`"queued"`, `"retired"` …), as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            UrlStatus::Queued => "queued",
            UrlStatus::Blocked => "blocked",
            UrlStatus::Retired => "retired",
            UrlStatus::Gone => "gone",
            UrlStatus::Moved => "moved",
            UrlStatus::Completed => "completed",
        }
    }

    pub(crate) fn of(r: &UrlRecord) -> UrlStatus {
        // A client's "completed" is final: it stands over a retirement.
        match (r.retired, r.blocked, r.lapsed) {
            _ if r.completed => UrlStatus::Completed,
            (true, _, _) => UrlStatus::Retired,
            (_, true, _) => UrlStatus::Blocked,
            (_, _, Some(Lapse::Gone)) => UrlStatus::Gone,
            (_, _, Some(Lapse::Moved)) => UrlStatus::Moved,
            _ => UrlStatus::Queued,
        }
    }
}

impl UrlView {
    /// The view of `r` at `now` (which tells whether a lease still holds).
    pub(crate) fn of(url: &str, r: &UrlRecord, now: Timestamp) -> UrlView {
        let f = &r.fetch;
        UrlView {
            url: url.to_string(),
            first_seen: ts(r.first_seen),
            last_seen: ts(r.last_seen),
            lastmod: r.lastmod.map(|l| ts(l.at)),
            lastmod_precision: r.lastmod.map(|l| l.precision.into()),
            lastmod_changes: r.lastmod_history.len(),
            changefreq: r.changefreq.map(Into::into),
            priority: r.priority,
            images: r.extensions.images,
            videos: r.extensions.videos,
            news: r.extensions.news,
            alternates: r.extensions.alternates,
            fetches: f.fetches,
            changes: f.changes,
            last_fetch: f.last_fetch.map(ts),
            last_success: f.last_success.map(ts),
            last_change: f.last_change.map(ts),
            last_outcome: f.last_outcome.map(|o| o.kind()),
            errors_in_a_row: f.errors_in_a_row,
            visits: r.visits.iter().map(|v| Visit::from(*v)).collect(),
            etag: f.etag.clone(),
            last_modified: f.last_modified.clone(),
            redirected_to: f.redirected_to.clone(),
            notifications: r.notified.map_or(0, |n| n.count),
            due: ts(r.due_until()),
            score: r.schedule.score,
            reason: match r.schedule.lease {
                Some((_, until)) if until > now.unix() => Reason::Leased,
                Some(_) => Reason::LeaseExpired,
                None => r.schedule.reason.into(),
            },
            urgency: r.schedule.reason.urgency(),
            leased_until: r.schedule.lease.map(|(_, until)| ts(until)),
            retired: matches!(
                UrlStatus::of(r),
                UrlStatus::Retired | UrlStatus::Gone | UrlStatus::Moved
            ),
            status: UrlStatus::of(r),
            queue: r.queue_name(url).to_string(),
            last_status: (r.last_status != 0).then_some(r.last_status),
            redirected_from: r.redirected_from.clone(),
            sources: r.sources.len(),
            metadata: r.metadata.clone(),
        }
    }
}

/// What the store knows of one sitemap ([`Store::sitemap`](crate::Store::sitemap)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SitemapView {
    /// Its URL, as listed.
    pub url: String,
    /// Reads so far that were successful (2xx) or stored URLs before they
    /// failed; a read in progress counts from its first batch of URLs.
    pub reads: u64,
    /// Whether its last read was complete: false when that read was cut
    /// (byte cap, deadline, reset, truncated document) or failed after it
    /// stored URLs, while a read is in progress, and before any read.
    pub last_read_complete: bool,
    /// `ETag` of the last response.
    pub etag: Option<String>,
    /// `Last-Modified` of the last response.
    pub last_modified: Option<String>,
    /// The last fetch, any outcome.
    pub last_fetch: Option<Timestamp>,
    /// The last successful fetch.
    pub last_success: Option<Timestamp>,
    /// The last HTTP status, or 0 when no response came.
    pub last_status: u16,
    /// URL entries in the last read.
    pub entries: u64,
    /// Failed fetches in a row.
    pub errors: u32,
    /// The index that listed it.
    pub parent: Option<String>,
    /// The site whose robots.txt authorised it (SPEC R5).
    pub authorised_by: Option<String>,
    /// URLs it lists that are not retired, as of its last retirement pass.
    pub members: u64,
}

impl SitemapView {
    pub(crate) fn of(url: &str, r: &SitemapRecord) -> SitemapView {
        SitemapView {
            url: url.to_string(),
            reads: r.seq,
            last_read_complete: r.seq > 0 && r.recent_complete.last() == Some(&r.seq),
            etag: r.etag.clone(),
            last_modified: r.last_modified.clone(),
            last_fetch: r.last_fetch.map(ts),
            last_success: r.last_success.map(ts),
            last_status: r.last_status,
            entries: r.entries,
            errors: r.errors,
            parent: r.parent.clone(),
            authorised_by: r.authorised_by.clone(),
            members: r.members,
        }
    }
}

/// What the store knows of one host ([`Store::host`](crate::Store::host)).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct HostView {
    /// The host.
    pub host: HostKey,
    /// Spacing between two of its URLs handed out by leases.
    pub lease_delay: Duration,
    /// No URL of the host is handed out for fetching before this.
    pub next_allowed: Timestamp,
    /// Its lastmods have earned trust: a moved lastmod means a change.
    pub lastmod_trusted: bool,
    /// Not yet judged: too few fetches to earn trust or lose it; its moved
    /// lastmods are fetched as if trusted, to judge them.
    pub lastmod_probation: bool,
    /// Trusted, and its lastmods announce nearly every change: its URLs
    /// are crawled on change.
    pub lastmod_complete: bool,
    /// Of the fetches where its lastmod had moved, the share that found a
    /// change.
    pub lastmod_precision: Option<f64>,
    /// Of the changes fetches found, the share its lastmod had announced.
    pub lastmod_recall: Option<f64>,
    /// Of the fetches where its lastmod had not moved, the share that found
    /// a change all the same.
    pub lastmod_silent_rate: Option<f64>,
    /// Fetches whose result its lastmods predicted, over those observed
    /// (`None` before the first).
    pub lastmod_agreement: Option<f64>,
    /// Fetch observations behind that rate.
    pub lastmod_observations: u32,
    /// Its URLs in the store that are not retired.
    pub urls: u64,
}

impl HostView {
    pub(crate) fn of(host: &HostKey, r: &HostRecord, urls: u64) -> HostView {
        HostView {
            host: host.clone(),
            lease_delay: Duration::try_from_secs_f64(r.min_delay.max(0.0)).unwrap_or_default(),
            next_allowed: ts(r.next_allowed),
            lastmod_trusted: r.trust.is_trusted(),
            lastmod_probation: r.trust.on_probation(),
            lastmod_complete: r.trust.is_complete(),
            lastmod_precision: r.trust.precision(),
            lastmod_recall: r.trust.recall(),
            lastmod_silent_rate: r.trust.silent_rate(),
            lastmod_agreement: r.trust.agreement_rate(),
            lastmod_observations: r.trust.fetches(),
            urls,
        }
    }
}

/// A followed site ([`Store::site`](crate::Store::site),
/// [`Store::sites`](crate::Store::sites)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SiteView {
    /// The seed, as it was added.
    pub site: String,
    /// When it was added.
    pub added_at: Timestamp,
    /// When it is next to be walked.
    pub next_walk: Timestamp,
    /// When its last walk ended, if it was walked.
    pub last_walk: Option<Timestamp>,
    /// Sitemaps its last walk read.
    pub last_sitemaps: u64,
    /// Sitemaps its last walk failed to read.
    pub last_failed: u64,
    /// URL entries its last walk read.
    pub last_entries: u64,
}

impl SiteView {
    pub(crate) fn of(seed: &str, r: &SiteRecord) -> SiteView {
        SiteView {
            site: seed.to_string(),
            added_at: ts(r.added_at),
            next_walk: ts(r.next_walk),
            last_walk: r.last_walk.map(ts),
            last_sitemaps: r.last_sitemaps,
            last_failed: r.last_failed,
            last_entries: r.last_entries,
        }
    }
}

/// A sitemap's refresh schedule ([`Store::refresh_state`](crate::Store::refresh_state)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RefreshView {
    /// When it is read next.
    pub next_at: Timestamp,
    /// The interval between successful reads now (whole seconds in JSON).
    #[serde(serialize_with = "whole_seconds")]
    pub interval: Duration,
    /// Successful reads that found a change (the first one included).
    pub changed: u32,
    /// Successful reads that found none (304 or the same content).
    pub unchanged: u32,
    /// Failed reads since the last successful one.
    pub errors_in_a_row: u32,
    /// It is an RSS/Atom feed (refreshed more often).
    pub feed: bool,
}

impl RefreshView {
    pub(crate) fn of(r: &RefreshState) -> RefreshView {
        RefreshView {
            next_at: ts(r.next_at),
            interval: Duration::from_secs(u64::from(r.interval)),
            changed: r.changed,
            unchanged: r.unchanged,
            errors_in_a_row: r.errors_in_a_row,
            feed: r.feed,
        }
    }
}

fn whole_seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_secs())
}

fn precision_name<S: serde::Serializer>(p: &Option<Precision>, s: S) -> Result<S::Ok, S::Error> {
    match p {
        Some(p) => s.serialize_some(p.as_str()),
        None => s.serialize_none(),
    }
}

fn changefreq_name<S: serde::Serializer>(c: &Option<ChangeFreq>, s: S) -> Result<S::Ok, S::Error> {
    match c {
        Some(c) => s.serialize_some(c.as_str()),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::UrlStatus;
    use crate::policy::FetchOutcome;

    #[test]
    fn status_and_outcome_names_are_their_serialised_names() {
        for status in [
            UrlStatus::Queued,
            UrlStatus::Blocked,
            UrlStatus::Retired,
            UrlStatus::Gone,
            UrlStatus::Moved,
            UrlStatus::Completed,
        ] {
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{}\"", status.as_str()));
        }
        for outcome in [
            FetchOutcome::Changed,
            FetchOutcome::NotModified,
            FetchOutcome::Gone,
            FetchOutcome::Error,
            FetchOutcome::Redirected,
        ] {
            let json = serde_json::to_string(&outcome).unwrap();
            assert_eq!(json, format!("\"{}\"", outcome.as_str()));
        }
    }
}
