//! PLACEHOLDER until the estimate module lands (same API).
/// Visit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Visit {
    /// i
    pub interval: f64,
    /// c
    pub changed: bool,
    /// s
    pub since_lastmod: Option<f64>,
}
/// Estimator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Estimator {
    /// n
    Naive,
    /// b
    BiasReduced,
    /// i
    Irregular,
    /// l
    LastModified,
    /// c
    Complete,
}
impl Estimator {
    /// est
    pub fn estimate(self, visits: &[Visit]) -> Option<f64> {
        let t: f64 = visits.iter().map(|v| v.interval).sum();
        let x = visits.iter().filter(|v| v.changed).count() as f64;
        (t > 0.0).then(|| x / t)
    }
    /// name
    pub fn name(self) -> &'static str {
        "naive"
    }
    /// from
    pub fn from_name(_s: &str) -> Option<Self> {
        Some(Estimator::Naive)
    }
}
