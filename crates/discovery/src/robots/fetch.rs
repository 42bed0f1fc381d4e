//! Fetching a robots.txt with RFC 9309 semantics (SPEC R7): the
//! [`RobotsReport`] of one fetch, and its `Crawl-delay` applied to the
//! fetcher's politeness.

use std::sync::Arc;
use std::time::Duration;

use serde::{Serialize, Serializer};
use sitemapd_parser::{Diagnostic, NormUrl};
use tokio::time::Instant;

use super::parse::{MAX_ROBOTS_BYTES, RobotsTxt};
use crate::fetch::{Body, FetchError, Fetcher, Hop, Validators};

/// The outcome of a robots.txt fetch (SPEC R7, RFC 9309 §2.3).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RobotsOutcome {
    /// 2xx: parsed.
    Parsed {
        /// The parsed file (allow checks, crawl delay, diagnostics).
        #[serde(skip)]
        robots: Arc<RobotsTxt>,
    },
    /// 4xx (or too many redirects): no rules and no sitemaps.
    Unavailable,
    /// 5xx or no response: try later; nothing is assumed allowed.
    Unreachable {
        /// Why.
        reason: String,
    },
}

/// A robots.txt fetch.
#[derive(Debug, Clone, Serialize)]
pub struct RobotsReport {
    /// The site.
    pub site: NormUrl,
    /// The robots.txt URL.
    pub url: NormUrl,
    /// Final HTTP status, when there was a response.
    pub status: Option<u16>,
    /// Parsed, unavailable or unreachable.
    #[serde(flatten)]
    pub outcome: RobotsOutcome,
    /// The sitemaps it declares (de-duplicated).
    pub sitemaps: Vec<NormUrl>,
    /// `Crawl-delay` for our agent, seconds.
    pub crawl_delay: Option<f64>,
    /// Repairs and drops (R2-R4), with lines.
    pub diagnostics: Vec<Diagnostic>,
    /// Redirect hops followed.
    pub redirects: Vec<Hop>,
    /// The report is the one kept from an earlier fetch (see
    /// [`WalkConfig::robots_ttl`](crate::walk::WalkConfig::robots_ttl)): either
    /// still fresh, so robots.txt was not requested, or used because
    /// robots.txt is unreachable now (RFC 9309 §2.4). Its fields other than
    /// `duration` describe that earlier fetch.
    pub from_cache: bool,
    /// Wall time.
    #[serde(serialize_with = "millis")]
    pub duration: Duration,
}

/// Fetches and parses the robots.txt at `url` (R7: 2xx parse, 4xx nothing,
/// 429, 5xx or no response: try later), and applies its `Crawl-delay` to the
/// fetcher's politeness, for the host asked and the host it redirected to.
pub async fn fetch_robots(fetcher: &Fetcher, url: &NormUrl) -> RobotsReport {
    let started = Instant::now();
    let mut report = unanswered(url);
    report.outcome = match fetcher.get(url, &Validators::default()).await {
        Err(e @ (FetchError::TooManyRedirects(_) | FetchError::RedirectLoop(_))) => {
            // RFC 9309 §2.3.1.2: may be treated as unavailable.
            tracing::debug!(%url, error = %e, "robots.txt redirects too much");
            RobotsOutcome::Unavailable
        }
        Err(e) => RobotsOutcome::Unreachable {
            reason: e.to_string(),
        },
        Ok(fetched) => {
            report.status = Some(fetched.status);
            report.redirects = fetched.redirects.clone();
            if fetched.is_success() {
                let progress = fetched.progress();
                let final_url = fetched.url.clone();
                match read_robots(fetched.into_body()).await {
                    Ok(body) => {
                        let robots =
                            RobotsTxt::parse(&body, Some(&final_url), &fetcher.config().user_agent);
                        report.sitemaps = robots.sitemaps.iter().map(|s| s.url.clone()).collect();
                        report.crawl_delay = robots.crawl_delay;
                        report.diagnostics = robots.diagnostics.clone();
                        RobotsOutcome::Parsed {
                            robots: Arc::new(robots),
                        }
                    }
                    Err(e) => RobotsOutcome::Unreachable {
                        reason: progress
                            .error()
                            .map_or_else(|| e.to_string(), |f| f.to_string()),
                    },
                }
            } else if (400..500).contains(&fetched.status) && fetched.status != 429 {
                // 429 asks for fewer requests: "try later", as a 5xx (Google
                // reads it so), not "no rules", which would probe the host.
                RobotsOutcome::Unavailable
            } else {
                RobotsOutcome::Unreachable {
                    reason: format!("HTTP {}", fetched.status),
                }
            }
        }
    };
    apply_crawl_delay(fetcher, &report);
    report.duration = started.elapsed();
    report
}

/// The report of the robots.txt at `url` before any answer: no rules, no
/// sitemaps.
pub(super) fn unanswered(url: &NormUrl) -> RobotsReport {
    RobotsReport {
        site: url.root(),
        url: url.clone(),
        status: None,
        outcome: RobotsOutcome::Unavailable,
        sitemaps: Vec::new(),
        crawl_delay: None,
        diagnostics: Vec::new(),
        redirects: Vec::new(),
        from_cache: false,
        duration: Duration::ZERO,
    }
}

/// Applies a robots.txt report's `Crawl-delay`, if it has one, to the host
/// asked, and to the host a redirect led to, where its sitemaps usually
/// are. For a fresh report and, again, for one taken from the cache (the
/// politeness gate may have forgotten the host since).
pub(super) fn apply_crawl_delay(fetcher: &Fetcher, report: &RobotsReport) {
    let Some(delay) = report.crawl_delay else {
        return;
    };
    let final_url = report.redirects.last().map_or(&report.url, |h| &h.to);
    let gate = fetcher.politeness();
    gate.set_crawl_delay(&report.site.host_key(), delay);
    gate.set_crawl_delay(&final_url.host_key(), delay);
}

/// Reads at most [`MAX_ROBOTS_BYTES`] + 1 of a robots.txt, inflating gzip.
async fn read_robots(body: Body) -> std::io::Result<Vec<u8>> {
    body.read_small(MAX_ROBOTS_BYTES as u64 + 1).await
}

fn millis<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}
