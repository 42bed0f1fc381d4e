//! `lastmod`: refetch when the sitemap says the page changed, if the host's
//! lastmods have earned trust (Google 2023, Bing 2023/2025 guidance; SPEC
//! X8 and "What the engines do with the fields").
//!
//! A lastmod is written with a precision (SPEC X7) and stands for a period:
//! `2024-05-01` is "some time that day". Comparisons are conservative: the
//! lastmod is newer than a fetch when the *latest* instant of its period is
//! after the fetch ([`lastmod_is_newer`](super::lastmod_is_newer)). When the fetch fell inside the
//! period the change may predate it, so the URL is due at the end of the
//! period (one fetch after the period resolves it) unless the fallback is
//! due sooner; refetching at once would repeat until the day is over.

use crate::time::Timestamp;

use super::on_change::{lastmod_says_changed, latest, not_refreshed};
use super::{
    Due, FetchOutcome, HostState, Params, Policy, Reason, UrlState, WeightedPage, common_due,
    importance, planning_rate,
};

pub use sitemapd_parser::date::precision_span;

/// `lastmod`: crawl on change where a host's lastmods have earned it, the
/// fallback policy's schedule where they have not.
///
/// - **Trusted host** ([`HostState::lastmod_trusted`], or one still on
///   [probation](HostState::lastmod_probation)), lastmod (not in
///   the future, SPEC X8) newer than the last successful fetch: due at
///   the lastmod ([`Reason::LastmodNewer`], or at the fallback's due time
///   if that is earlier; a coarse lastmod that moved after a read made
///   since the fetch counts as newer, [`lastmod_says_changed`]), or at the
///   end of the lastmod's period when its precision leaves the order open
///   (on a complete host a refresh,
///   [`Reason::LastmodPeriod`], scored by how likely another change in
///   that time is).
/// - **Complete host** ([`HostState::lastmod_complete`]: trusted, and its
///   lastmods announce nearly every change), lastmod not moved: not
///   refetched on a rate schedule. A [`Params::validation_share`] of such
///   URLs (chosen by [`UrlState::sample`], a new draw per fetch) are
///   validation samples due when the fallback would have them
///   ([`Reason::Validation`]); the others are due after the
///   [`Params::safety_interval`] ([`Reason::Safety`]).
/// - Otherwise (untrusted, no lastmod, or a trusted host that misses
///   changes and whose lastmod has not moved): the fallback's schedule.
///
/// Score: the importance. The adaptive interval is the fallback's.
#[derive(Debug)]
pub struct Lastmod {
    params: Params,
    fallback: Box<dyn Policy>,
}

impl Lastmod {
    /// The policy with these parameters, deferring to `fallback`.
    pub fn new(params: Params, fallback: Box<dyn Policy>) -> Self {
        Lastmod { params, fallback }
    }
}

impl Policy for Lastmod {
    fn name(&self) -> &'static str {
        "lastmod"
    }

    fn next_due(&self, url: &UrlState, host: &HostState, now: Timestamp) -> Due {
        let score = importance(url);
        let last = match common_due(url, &self.params, score) {
            Err(due) => return due,
            Ok(last) => last,
        };
        let fallback = self.fallback.next_due(url, host, now);
        // A host on probation has its moved lastmods fetched as if it were
        // trusted: each such fetch is what earns (or denies) the trust.
        let believed = host.lastmod_trusted || host.lastmod_probation;
        let Some(lm) = url.lastmod.filter(|&lm| believed && lm <= now) else {
            return fallback;
        };
        let newer = |at: Timestamp| Due {
            at,
            score,
            reason: Reason::LastmodNewer,
        };
        if lastmod_says_changed(lm, url.lastmod_precision, url.lastmod_moved_after, last) {
            // Due at the change, or earlier if the fallback already had it
            // due (an overdue URL in a backlog must not be sent to the back
            // of the queue because the sitemap confirmed it changed).
            return newer(lm.min(fallback.at));
        }
        // A coarse lastmod whose period ends after the last fetch may be a
        // change after it: due when the period is over. A complete host's is
        // a refresh, not a known change (urgent as likely as another change
        // in that time is); elsewhere it is, if the fallback would wait longer.
        let end = latest(lm, url.lastmod_precision).plus_secs(1);
        if end > last.plus_secs(1) {
            if host.lastmod_complete {
                // A page that changes often within one period is refreshed
                // on the fallback's schedule meanwhile.
                if fallback.at < end {
                    return fallback;
                }
                let open_secs = end.secs_since(last) as f64;
                let likely = -(-planning_rate(url, &self.params) * open_secs).exp_m1();
                return Due {
                    at: end,
                    score: score * likely,
                    reason: Reason::LastmodPeriod,
                };
            }
            if end <= fallback.at {
                return newer(end);
            }
        }
        if !host.lastmod_complete {
            return fallback;
        }
        not_refreshed(url, &self.params, last, fallback.at, score)
    }

    /// The fallback's: a rate fallback is calibrated as it would be alone.
    fn allocation_multiplier(&self, pages: &[WeightedPage], params: &Params) -> Option<f64> {
        self.fallback.allocation_multiplier(pages, params)
    }

    fn next_interval(&self, url: &UrlState, outcome: FetchOutcome) -> Option<f64> {
        self.fallback.next_interval(url, outcome)
    }

    /// Unchanged: an announced change is lastmod's to schedule, not the
    /// fallback's to learn from.
    fn next_interval_announced(&self, url: &UrlState, _outcome: FetchOutcome) -> Option<f64> {
        url.interval
    }
}
