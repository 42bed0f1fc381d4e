//! `lastmod`: refetch when the sitemap says the page changed, if the host's
//! lastmods have earned trust (Google 2023, Bing 2023/2025 guidance; SPEC
//! X8 and "What the engines do with the fields").
//!
//! A lastmod is written with a precision (SPEC X7) and stands for a period:
//! `2024-05-01` is "some time that day". Comparisons are conservative: the
//! lastmod is newer than a fetch when the *latest* instant of its period is
//! after the fetch ([`lastmod_is_newer`]). When the fetch fell inside the
//! period the change may predate it, so the URL is due at the end of the
//! period (one fetch after the period resolves it) unless the fallback is
//! due sooner; refetching at once would repeat until the day is over.

use crate::time::Timestamp;
use sitemapd_parser::date::{self, Precision};

use super::{
    Due, FetchOutcome, HostState, Params, Policy, Reason, UrlState, common_due, importance,
};

pub use sitemapd_parser::date::precision_span;

/// Whether a lastmod (start of its period, `None` precision = second) may be
/// after a fetch at `last_fetch`: the latest instant of its period is.
pub fn lastmod_is_newer(
    lastmod: Timestamp,
    precision: Option<Precision>,
    last_fetch: Timestamp,
) -> bool {
    latest(lastmod, precision) > last_fetch
}

/// The last second of the lastmod's period ([`date::Lastmod::latest`]).
fn latest(lastmod: Timestamp, precision: Option<Precision>) -> Timestamp {
    Timestamp::from_unix(
        date::Lastmod {
            unix_seconds: lastmod.unix(),
            nanos: 0,
            precision: precision.unwrap_or(Precision::Second),
        }
        .latest(),
    )
}

/// `lastmod`: due when the host is trusted and its lastmod (not in the
/// future, SPEC X8) is newer than the last successful fetch
/// ([`Reason::LastmodNewer`]: at the lastmod, or at the fallback's due time
/// if that is earlier); otherwise whatever the fallback policy says.
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
        let Some(lm) = url.lastmod.filter(|&lm| host.lastmod_trusted && lm <= now) else {
            return self.fallback.next_due(url, host, now);
        };
        if lm > last {
            // Due at the change, or earlier if the fallback already had it
            // due (an overdue URL in a backlog must not be sent to the back
            // of the queue because the sitemap confirmed it changed).
            let fallback = self.fallback.next_due(url, host, now);
            return Due {
                at: lm.min(fallback.at),
                score,
                reason: Reason::LastmodNewer,
            };
        }
        let fallback = self.fallback.next_due(url, host, now);
        let end = latest(lm, url.lastmod_precision).plus_secs(1);
        if end > last.plus_secs(1) && end <= fallback.at {
            return Due {
                at: end,
                score,
                reason: Reason::LastmodNewer,
            };
        }
        fallback
    }

    fn next_interval(&self, url: &UrlState, outcome: FetchOutcome) -> Option<f64> {
        self.fallback.next_interval(url, outcome)
    }
}
