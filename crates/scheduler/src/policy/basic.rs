//! The interval policies the anchors ship: `fixed` (Nutch
//! DefaultFetchSchedule, StormCrawler DefaultScheduler), `sitemap-hints`
//! (Nutch SitemapProcessor, NUTCH-2976) and `adaptive` (Nutch
//! AdaptiveFetchSchedule, StormCrawler AdaptiveScheduler).

use crate::time::Timestamp;
use sitemapd_parser::ChangeFreq;

use super::{
    DAY, Due, FetchOutcome, HOUR, HostState, Params, Policy, Reason, UrlState, add_secs,
    common_due, effective_priority, importance,
};

/// `fixed`: due `fixed_interval` (clamped) after the last fetch.
#[derive(Debug, Clone)]
pub struct Fixed {
    params: Params,
}

impl Fixed {
    /// The policy with these parameters.
    pub fn new(params: Params) -> Self {
        Fixed { params }
    }
}

impl Policy for Fixed {
    fn name(&self) -> &'static str {
        "fixed"
    }

    fn next_due(&self, url: &UrlState, _host: &HostState, _now: Timestamp) -> Due {
        let score = importance(url);
        match common_due(url, &self.params, score) {
            Err(due) => due,
            Ok(last) => Due {
                at: add_secs(last, self.params.clamp_interval(self.params.fixed_interval)),
                score,
                reason: Reason::Interval,
            },
        }
    }
}

/// The interval a changefreq asks for, clamped to the bounds: always and
/// hourly 1 h, daily 1 d, weekly 7 d, monthly 30 d, yearly 365 d, never the
/// maximum.
pub fn changefreq_interval(changefreq: ChangeFreq, params: &Params) -> f64 {
    let raw = match changefreq {
        ChangeFreq::Always | ChangeFreq::Hourly => HOUR,
        ChangeFreq::Daily => DAY,
        ChangeFreq::Weekly => 7.0 * DAY,
        ChangeFreq::Monthly => 30.0 * DAY,
        ChangeFreq::Yearly => 365.0 * DAY,
        ChangeFreq::Never => f64::INFINITY,
    };
    params.clamp_interval(raw)
}

/// `sitemap-hints`: due the changefreq interval after the last fetch
/// ([`Reason::Changefreq`]); without a changefreq, `fixed_interval`
/// ([`Reason::Interval`]). Score: the effective priority.
#[derive(Debug, Clone)]
pub struct SitemapHints {
    params: Params,
}

impl SitemapHints {
    /// The policy with these parameters.
    pub fn new(params: Params) -> Self {
        SitemapHints { params }
    }
}

impl Policy for SitemapHints {
    fn name(&self) -> &'static str {
        "sitemap-hints"
    }

    fn next_due(&self, url: &UrlState, _host: &HostState, _now: Timestamp) -> Due {
        let score = effective_priority(url.priority);
        let last = match common_due(url, &self.params, score) {
            Err(due) => return due,
            Ok(last) => last,
        };
        let (interval, reason) = match url.changefreq {
            Some(cf) => (changefreq_interval(cf, &self.params), Reason::Changefreq),
            None => (
                self.params.clamp_interval(self.params.fixed_interval),
                Reason::Interval,
            ),
        };
        Due {
            at: add_secs(last, interval),
            score,
            reason,
        }
    }
}

/// `adaptive`: due the URL's adaptive interval after the last fetch
/// (`initial_interval` until the store has one). After a fetch that found a
/// change the interval shrinks by `adaptive_dec`, after one that did not
/// (also a redirect) it grows by `adaptive_inc`; errors and gone URLs leave
/// it unchanged. Always clamped. Factors outside `[0, 1)` for the decrease or
/// below 0 for the increase are treated as 0 (no change).
#[derive(Debug, Clone)]
pub struct Adaptive {
    params: Params,
}

impl Adaptive {
    /// The policy with these parameters.
    pub fn new(params: Params) -> Self {
        Adaptive { params }
    }

    /// The URL's current interval, clamped (`initial_interval` if none).
    fn current(&self, url: &UrlState) -> f64 {
        let i = url
            .interval
            .filter(|i| !i.is_nan())
            .unwrap_or(self.params.initial_interval);
        self.params.clamp_interval(i)
    }
}

impl Policy for Adaptive {
    fn name(&self) -> &'static str {
        "adaptive"
    }

    fn next_due(&self, url: &UrlState, _host: &HostState, _now: Timestamp) -> Due {
        let score = importance(url);
        match common_due(url, &self.params, score) {
            Err(due) => due,
            Ok(last) => Due {
                at: add_secs(last, self.current(url)),
                score,
                reason: Reason::Adaptive,
            },
        }
    }

    fn next_interval(&self, url: &UrlState, outcome: FetchOutcome) -> Option<f64> {
        let i = self.current(url);
        let factor = match outcome {
            FetchOutcome::Changed => {
                let d = self.params.adaptive_dec;
                1.0 - if (0.0..1.0).contains(&d) { d } else { 0.0 }
            }
            FetchOutcome::NotModified | FetchOutcome::Redirected => {
                let inc = self.params.adaptive_inc;
                1.0 + if inc.is_finite() && inc >= 0.0 {
                    inc
                } else {
                    0.0
                }
            }
            FetchOutcome::Gone | FetchOutcome::Error => return url.interval,
        };
        Some(self.params.clamp_interval(i * factor))
    }
}
