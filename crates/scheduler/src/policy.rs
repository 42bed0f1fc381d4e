//! PLACEHOLDER until the policy module lands (same API).
use sitemapd_parser::ChangeFreq;
use sitemapd_parser::date::Precision;

/// What a policy may know of a URL.
#[derive(Debug, Clone, Default)]
pub struct UrlState {
    /// First seen.
    pub first_seen: i64,
    /// Last successful fetch.
    pub last_fetch: Option<i64>,
    /// Last outcome.
    pub last_outcome: Option<FetchOutcome>,
    /// Newest believable lastmod.
    pub lastmod: Option<i64>,
    /// Its precision.
    pub lastmod_precision: Option<Precision>,
    /// changefreq.
    pub changefreq: Option<ChangeFreq>,
    /// priority.
    pub priority: Option<f32>,
    /// adaptive interval.
    pub interval: Option<f64>,
    /// estimated rate.
    pub rate: Option<f64>,
    /// importance.
    pub importance: f64,
    /// errors in a row.
    pub errors_in_a_row: u32,
}
/// Outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchOutcome {
    /// c
    Changed,
    /// n
    NotModified,
    /// g
    Gone,
    /// e
    Error,
    /// r
    Redirected,
}
/// Host.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostState {
    /// trusted
    pub lastmod_trusted: bool,
}
/// Reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// n
    New,
    /// l
    LastmodNewer,
    /// i
    Interval,
    /// c
    Changefreq,
    /// a
    Adaptive,
    /// o
    Optimal,
    /// r
    Retry,
    /// e
    LeaseExpired,
}
impl Reason {
    /// name
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::New => "new",
            Reason::LastmodNewer => "lastmod-newer",
            Reason::Interval => "interval",
            Reason::Changefreq => "changefreq",
            Reason::Adaptive => "adaptive",
            Reason::Optimal => "optimal",
            Reason::Retry => "retry",
            Reason::LeaseExpired => "lease-expired",
        }
    }
}
/// Due.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Due {
    /// at
    pub at: i64,
    /// score
    pub score: f64,
    /// reason
    pub reason: Reason,
}
/// Calibration.
#[derive(Debug, Clone, Copy, Default)]
pub struct Calibration {
    /// m
    pub multiplier: f64,
}
/// Params.
#[derive(Debug, Clone, Default)]
pub struct Params {
    /// f
    pub fixed_interval: f64,
    /// c
    pub calibration: Calibration,
}
/// Policy.
pub trait Policy: Send + Sync + std::fmt::Debug {
    /// name
    fn name(&self) -> &'static str;
    /// due
    fn next_due(&self, url: &UrlState, host: &HostState, now: i64) -> Due;
    /// interval
    fn next_interval(&self, url: &UrlState, _outcome: FetchOutcome) -> Option<f64> {
        url.interval
    }
}
/// names
pub const POLICY_NAMES: [&str; 6] = [
    "fixed",
    "sitemap-hints",
    "lastmod",
    "adaptive",
    "freshness-optimal",
    "lambda-crawl",
];
/// unknown
#[derive(Debug, thiserror::Error)]
#[error("unknown policy {0:?}")]
pub struct UnknownPolicy(pub String);
#[derive(Debug)]
struct Fixed;
impl Policy for Fixed {
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn next_due(&self, url: &UrlState, _host: &HostState, _now: i64) -> Due {
        match url.last_fetch {
            None => Due {
                at: url.first_seen,
                score: 1.0,
                reason: Reason::New,
            },
            Some(t) => Due {
                at: t + 86_400,
                score: 1.0,
                reason: Reason::Interval,
            },
        }
    }
}
/// build
pub fn policy(name: &str, _params: Params) -> Result<Box<dyn Policy>, UnknownPolicy> {
    if POLICY_NAMES.contains(&name) {
        Ok(Box::new(Fixed))
    } else {
        Err(UnknownPolicy(name.into()))
    }
}
