//! Taking the fetch outcomes back ([`Store::complete`](crate::Store::complete)): what a fetch
//! found is recorded, and the URL is scheduled anew. Handing URLs out is
//! `lease.rs`'s ([`Store::peek`](crate::Store::peek), [`Store::lease`](crate::Store::lease)); its types are
//! re-exported here.

use std::collections::hash_map::Entry;

pub use crate::lease::{DUE_COUNT_LIMIT, LeaseRequest, Leased, Politeness};

use crate::error::StoreError;
use crate::hash::FastMap;
use crate::keys;
use crate::partition::Partition;
use crate::policy::{lastmod_is_newer, lastmod_says_changed};
use crate::record::{
    HostRecord, Lapse, PushRecord, StoredOutcome, StoredReason, StoredVisit, UrlRecord,
    VISIT_HISTORY, encode,
};
use crate::robots::RulesCache;
use crate::time::Timestamp;
use crate::writes::{Before, UrlWrites};

/// What a crawler found when it fetched a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The page changed (a 200 with new content).
    Changed,
    /// The page did not change (a 304, or the same content).
    NotModified,
    /// Not there, with its HTTP status: 410 retires the URL at once, a 404
    /// (or any other status, 0 when not known) after [`GONE_AFTER`] in a
    /// row; until then it backs off as an error does.
    Gone(u16),
    /// Any other failure, with its HTTP status (0: no response): retried
    /// with an exponential back-off per URL, and per host after
    /// [`HOST_FAILURES`] failures of its URLs in a row.
    Error(u16),
    /// A redirect to `to` (absolute, or relative to the URL), with its
    /// HTTP status. The target joins the store as a new URL when it is on
    /// the same host (robots rules applied, its source recorded); a
    /// permanent redirect (301, 308) retires the URL after [`MOVED_AFTER`]
    /// in a row, any other backs it off.
    Redirected {
        /// Where to.
        to: String,
        /// 301, 302, 303, 307, 308 (0: not known, taken as temporary).
        status: u16,
    },
}

/// The longest `ETag` stored, bytes: a longer one is not kept (the next
/// GET is unconditional), so a crawler cannot make the store keep and
/// serve back megabytes per URL.
pub const MAX_ETAG_BYTES: usize = 1024;
/// The longest `Last-Modified` stored, bytes (an HTTP date has 29).
pub const MAX_LAST_MODIFIED_BYTES: usize = 128;

/// 404s in a row that retire a URL as gone.
pub const GONE_AFTER: u32 = 3;
/// Permanent redirects in a row that retire a URL as moved.
pub const MOVED_AFTER: u32 = 2;
/// Failures (errors, 5xx) of one host's URLs in a row after which the
/// whole host backs off.
pub const HOST_FAILURES: u32 = 5;

impl Outcome {
    /// Its name in reports and metrics: `changed`, `not-modified`, `gone`,
    /// `error`, `redirected`.
    pub fn name(&self) -> &'static str {
        self.stored().name()
    }

    pub(crate) fn stored(&self) -> StoredOutcome {
        match self {
            Outcome::Changed => StoredOutcome::Changed,
            Outcome::NotModified => StoredOutcome::NotModified,
            Outcome::Gone(_) => StoredOutcome::Gone,
            Outcome::Error(s) => StoredOutcome::Error(*s),
            Outcome::Redirected { .. } => StoredOutcome::Redirected,
        }
    }

    /// The HTTP status it carries (0: none).
    fn status(&self) -> u16 {
        match self {
            Outcome::Changed | Outcome::NotModified => 0,
            Outcome::Gone(s) | Outcome::Error(s) | Outcome::Redirected { status: s, .. } => *s,
        }
    }
}

/// What repeats of an outcome count toward: the outcome, and for a 410 or a
/// redirect, how final it is.
fn repeat_class(outcome: StoredOutcome, status: u16) -> (StoredOutcome, bool) {
    match outcome {
        StoredOutcome::Gone => (outcome, status == 410),
        StoredOutcome::Redirected => (outcome, permanent_redirect(status)),
        StoredOutcome::Error(_) => (StoredOutcome::Error(0), false),
        other => (other, false),
    }
}

fn permanent_redirect(status: u16) -> bool {
    matches!(status, 301 | 308)
}

/// A completed fetch: the outcome, its HTTP status and the page's
/// validators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// What happened.
    pub outcome: Outcome,
    /// The HTTP status of a changed or not-modified page, when the crawler
    /// says (a 200 with the same content is not modified too); without it,
    /// 200 for a changed page and 304 for a not-modified one. The other
    /// outcomes carry their own ([`Outcome::Gone`] …).
    pub status: Option<u16>,
    /// The page's `ETag`, for the crawler's next conditional GET.
    pub etag: Option<String>,
    /// The page's `Last-Modified`.
    pub last_modified: Option<String>,
}

impl From<Outcome> for Completion {
    fn from(outcome: Outcome) -> Self {
        Completion {
            outcome,
            status: None,
            etag: None,
            last_modified: None,
        }
    }
}

impl Completion {
    /// The HTTP status the URL records as its last ([`Completion::status`]).
    fn last_status(&self) -> u16 {
        match self.outcome {
            Outcome::Changed => self.status.unwrap_or(200),
            Outcome::NotModified => self.status.unwrap_or(304),
            ref other => other.status(),
        }
    }
}

/// The push records ([`crate::pushes`]) a batch of completions changes, by
/// host.
#[derive(Default)]
pub(crate) struct PushOutcomes(FastMap<String, PushRecord>);

impl PushOutcomes {
    /// `completion` of `url`, whose schedule's reason was `reason` before:
    /// counted on its host's record when a notification made it due and
    /// the fetch succeeded.
    pub(crate) fn completed(
        &mut self,
        store: &Partition,
        url: &str,
        reason: StoredReason,
        completion: &Completion,
    ) -> Result<(), StoreError> {
        if reason != StoredReason::Notified {
            return Ok(());
        }
        let changed = match completion.outcome.stored() {
            StoredOutcome::Changed => true,
            StoredOutcome::NotModified => false,
            _ => return Ok(()),
        };
        let host = keys::host_of(url);
        if !self.0.contains_key(host) {
            self.0.insert(host.to_string(), store.push_record(host)?);
        }
        self.0
            .get_mut(host)
            .expect("inserted above")
            .fetch_found(changed);
        Ok(())
    }

    /// Their records into `writes`' batch.
    pub(crate) fn write(self, writes: &mut UrlWrites<'_>) {
        for (host, record) in self.0 {
            writes.batch().insert(keys::pushes(&host), encode(&record));
        }
    }
}

impl Partition {
    /// Records what a fetch of `url` found at `now`, updates the host's
    /// lastmod trust and the URL's estimator history, and reschedules it.
    /// `url` is normalised on the way in ([`NormUrl`](sitemapd_parser::NormUrl)):
    /// a URL the store does not hold, or that is not an http(s) URL, is
    /// [`StoreError::UnknownUrl`].
    pub(crate) fn complete(
        &self,
        url: &str,
        completion: &Completion,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        match self.complete_all([(url, completion)], now)?.pop() {
            Some(unknown) => Err(StoreError::UnknownUrl(unknown)),
            None => Ok(()),
        }
    }

    /// [`Store::complete`](crate::Store::complete) for many fetches at once, in order, as one
    /// atomic write (a crawler reporting a batch pays for one, not one per
    /// URL). Returns the URLs the store does not hold; the others are
    /// recorded. A URL reported twice is completed twice, in order. Each
    /// URL is normalised on the way in; one that does not parse is returned
    /// as unknown, as given.
    pub(crate) fn complete_all<'a>(
        &self,
        completions: impl IntoIterator<Item = (&'a str, &'a Completion)>,
        now: Timestamp,
    ) -> Result<Vec<String>, StoreError> {
        let now = now.unix();
        let _lock = self.lock();
        // Records as this call leaves them, with what each was in the store
        // (`None`: a redirect target it adds).
        let mut records: FastMap<String, (UrlRecord, Option<Before>)> = FastMap::default();
        // Each host's record, and whether a completion changed it.
        let mut hosts: FastMap<String, (HostRecord, bool)> = FastMap::default();
        let mut unknown = Vec::new();
        let mut rules = RulesCache::new(self);
        let mut writes = UrlWrites::new(self);
        let mut pushes = PushOutcomes::default();
        for (given, completion) in completions {
            let Ok(norm) = sitemapd_parser::NormUrl::parse(given) else {
                unknown.push(given.to_string());
                continue;
            };
            let url = norm.as_str();
            let (rec, before) = match records.remove(url) {
                Some(known) => known,
                None => match self.url_record(url)? {
                    Some(mut rec) => {
                        let before = writes.before(url, &mut rec)?;
                        (rec, Some(before))
                    }
                    None => {
                        unknown.push(given.to_string());
                        continue;
                    }
                },
            };
            let host_name = keys::host_of(url);
            let (host, host_changed) = match hosts.entry(host_name.to_string()) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => e.insert((self.host_record(host_name)?, false)),
            };
            pushes.completed(self, url, rec.schedule.reason, completion)?;
            let rec = self.apply_completion(url, rec, completion, host, host_changed, now);
            self.add_redirect_target(&norm, &rec, completion, host, &mut rules, &mut records, now)?;
            records.insert(url.to_string(), (rec, before));
        }
        for (url, (rec, before)) in &mut records {
            writes.put(url, before.as_ref(), rec)?;
        }
        for (name, (host, changed)) in hosts {
            if changed {
                writes.host(&name, host);
            }
        }
        pushes.write(&mut writes);
        writes.apply()?;
        Ok(unknown)
    }

    /// After `completion` of `from` (recorded as `rec`): when it is a
    /// redirect to a URL of the same host that neither the store nor
    /// `records` holds, the target goes into `records` as a new URL, due
    /// as the scheduler says, with the source's priority and first source.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add_redirect_target(
        &self,
        from: &sitemapd_parser::NormUrl,
        rec: &UrlRecord,
        completion: &Completion,
        host: &HostRecord,
        rules: &mut RulesCache,
        records: &mut FastMap<String, (UrlRecord, Option<Before>)>,
        now: i64,
    ) -> Result<(), StoreError> {
        let Outcome::Redirected { to, .. } = &completion.outcome else {
            return Ok(());
        };
        let Some(target) = redirect_target(from, to) else {
            return Ok(());
        };
        let target = target.as_str();
        if records.contains_key(target) || !matches!(self.url_record(target), Ok(None)) {
            return Ok(());
        }
        let mut new = UrlRecord::new(now, &[]);
        new.first_source = rec.first_source;
        new.priority = rec.priority;
        new.redirected_from = Some(from.as_str().to_string());
        // In the source's queue (a URL frontier client's, if it put it).
        new.queue = rec.queue.clone();
        rules.mark(target, &mut new)?;
        new.schedule = self.schedule(target, &new, host, now);
        tracing::debug!(from = from.as_str(), to = target, "redirect target added");
        records.insert(target.to_string(), (new, None));
        Ok(())
    }

    /// One completion applied to `rec` (returned) and `host`; the records
    /// are the caller's to write.
    pub(crate) fn apply_completion(
        &self,
        url: &str,
        mut rec: UrlRecord,
        completion: &Completion,
        host: &mut HostRecord,
        host_changed: &mut bool,
        now: i64,
    ) -> UrlRecord {
        let outcome = completion.outcome.stored();
        let status = completion.outcome.status();
        let success = matches!(outcome, StoredOutcome::Changed | StoredOutcome::NotModified);
        let changed = outcome == StoredOutcome::Changed;
        let class = repeat_class(outcome, status);
        let previous = rec
            .fetch
            .last_outcome
            .map(|o| repeat_class(o, rec.last_status));
        rec.repeats = if previous == Some(class) {
            rec.repeats.saturating_add(1)
        } else {
            1
        };
        rec.last_status = completion.last_status();
        let moved_after = self.lastmod_moved_after(&rec).map(Timestamp::from_unix);
        let mut announced = false;
        let f = &mut rec.fetch;
        if success {
            // The estimators see successful fetches only.
            if let Some(previous) = f.last_success {
                let since_lastmod = rec
                    .lastmod
                    .filter(|l| changed && l.at <= now)
                    .map(|l| clamp_u32(now.saturating_sub(l.at)));
                rec.visits.push(StoredVisit {
                    interval: clamp_u32(now.saturating_sub(previous)),
                    changed,
                    since_lastmod,
                });
                if rec.visits.len() > VISIT_HISTORY {
                    rec.visits.remove(0);
                }
                // Lastmod trust: did the sitemap's lastmod predict this? A
                // coarse lastmod whose period holds the last fetch said
                // neither (a day that changed before or after the fetch):
                // no evidence either way.
                if let Some(l) = rec.lastmod {
                    let (at, since) = (Timestamp::from_unix(l.at), Timestamp::from_unix(previous));
                    let precision = Some(l.precision.into());
                    let said = lastmod_says_changed(at, precision, moved_after, since);
                    // A change the host's trusted lastmod announced.
                    announced = said && changed && host.trust.is_trusted();
                    if said || !lastmod_is_newer(at, Some(l.precision.into()), since) {
                        host.trust.observe_fetch(said, changed);
                        *host_changed = true;
                    }
                }
            }
            f.last_success = Some(now);
            f.errors_in_a_row = 0;
            if changed {
                f.last_change = Some(now);
                f.changes = f.changes.saturating_add(1);
            }
            // The page answers: whatever retired it is over.
            rec.lapsed = None;
        } else {
            f.errors_in_a_row = f.errors_in_a_row.saturating_add(1);
        }
        f.last_fetch = Some(now);
        f.last_outcome = Some(outcome);
        f.fetches = f.fetches.saturating_add(1);
        if completion.etag.is_some() || completion.last_modified.is_some() {
            f.etag = bounded(&completion.etag, MAX_ETAG_BYTES);
            f.last_modified = bounded(&completion.last_modified, MAX_LAST_MODIFIED_BYTES);
        }
        if let Outcome::Redirected { to, .. } = &completion.outcome {
            f.redirected_to = bounded(&Some(to.clone()), sitemapd_parser::options::MAX_LOC_CHARS);
        }
        match class {
            (StoredOutcome::Gone, true) => rec.lapsed = Some(Lapse::Gone),
            (StoredOutcome::Gone, false) if rec.repeats >= GONE_AFTER => {
                rec.lapsed = Some(Lapse::Gone);
            }
            (StoredOutcome::Redirected, true) if rec.repeats >= MOVED_AFTER => {
                rec.lapsed = Some(Lapse::Moved);
            }
            _ => {}
        }
        // Host back-off: failures of its URLs in a row (a 5xx, no answer).
        if matches!(outcome, StoredOutcome::Error(_)) {
            host.errors_in_a_row = host.errors_in_a_row.saturating_add(1);
            if host.errors_in_a_row >= HOST_FAILURES {
                let n = host.errors_in_a_row - HOST_FAILURES;
                let wait = self.host_backoff(n);
                host.next_allowed = host.next_allowed.max(now.saturating_add(wait));
            }
            *host_changed = true;
        } else if host.errors_in_a_row > 0 {
            host.errors_in_a_row = 0;
            *host_changed = true;
        }
        let state = self.url_state(url, &rec, now);
        let policy = self.policy();
        rec.interval = if announced {
            policy.next_interval_announced(&state, outcome.kind())
        } else {
            policy.next_interval(&state, outcome.kind())
        }
        .map(|i| i as f32);
        rec.schedule = self.schedule(url, &rec, host, now);
        rec
    }

    /// How long a host backs off after `n` failures beyond
    /// [`HOST_FAILURES`]: the first retry delay, doubling, at most a day.
    fn host_backoff(&self, n: u32) -> i64 {
        let first = self.options.params.retry_after_error;
        let first = if first.is_finite() && first > 0.0 {
            first
        } else {
            3600.0
        };
        (first * 2f64.powi(n.min(32) as i32)).min(86_400.0) as i64
    }
}

/// The URL a redirect of `from` to `to` (absolute, or relative to `from`)
/// adds to the store: normalised, on `from`'s host (`host[:port]`, either
/// scheme: a move to https stays), else none (a sitemap vouches for its
/// own host only; another host's URLs come from that host's sitemaps).
fn redirect_target(from: &sitemapd_parser::NormUrl, to: &str) -> Option<sitemapd_parser::NormUrl> {
    let target = from.join(to.trim()).ok()?.limited().ok()?;
    if target.host_key() != from.host_key() {
        tracing::debug!(
            from = from.as_str(),
            to,
            "redirect to another host not stored"
        );
        return None;
    }
    (target != *from).then_some(target)
}

/// `value` if it is at most `max` bytes long, else none (logged).
fn bounded(value: &Option<String>, max: usize) -> Option<String> {
    match value {
        Some(v) if v.len() > max => {
            tracing::debug!(bytes = v.len(), max, "over-long value not stored");
            None
        }
        other => other.clone(),
    }
}

fn clamp_u32(seconds: i64) -> u32 {
    u32::try_from(seconds.max(0)).unwrap_or(u32::MAX)
}
