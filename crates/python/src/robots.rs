//! `parse_robots`: a robots.txt's sitemaps, rules and crawl delay.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use sitemapd_discovery::RobotsTxt;
use sitemapd_parser::NormUrl;

use crate::entries::Diagnostic;

/// A parsed robots.txt, for one user agent.
#[pyclass(frozen, module = "sitemapd._native")]
pub(crate) struct Robots {
    robots: RobotsTxt,
    base: Option<NormUrl>,
}

#[pymethods]
impl Robots {
    /// The sitemaps its `Sitemap:` lines declare, normalised, de-duplicated,
    /// in file order.
    #[getter]
    fn sitemaps(&self) -> Vec<&str> {
        self.robots
            .sitemaps
            .iter()
            .map(|s| s.url.as_str())
            .collect()
    }

    /// `Crawl-delay` in seconds for the agent (its own group, else `*`).
    #[getter]
    fn crawl_delay(&self) -> Option<f64> {
        self.robots.crawl_delay
    }

    /// Repairs and drops, with rule ids and lines.
    #[getter]
    fn diagnostics(&self) -> Vec<Diagnostic> {
        self.robots
            .diagnostics
            .iter()
            .cloned()
            .map(Diagnostic)
            .collect()
    }

    /// The body was longer than robots.txt's size limit and the rest was ignored.
    #[getter]
    fn truncated(&self) -> bool {
        self.robots.truncated
    }

    /// Whether the agent may fetch `url` (absolute, or relative to the
    /// robots.txt's own URL).
    fn is_allowed(&self, url: &str) -> PyResult<bool> {
        let parsed = match &self.base {
            Some(base) => base.join(url),
            None => NormUrl::parse(url),
        }
        .map_err(|e| PyValueError::new_err(format!("url {url:?} is not usable: {e}")))?;
        Ok(self.robots.is_allowed(&parsed))
    }

    fn __repr__(&self) -> String {
        format!(
            "<sitemapd.Robots {} sitemaps, crawl_delay={:?}>",
            self.robots.sitemaps.len(),
            self.robots.crawl_delay
        )
    }
}

/// Parses a robots.txt `body` found at `url`, for the crawler whose user
/// agent is `user_agent` (its product token selects the group).
#[pyfunction]
#[pyo3(signature = (body, *, url = None, user_agent = "sitemapd"))]
pub(crate) fn parse_robots(
    py: Python<'_>,
    body: &[u8],
    url: Option<&str>,
    user_agent: &str,
) -> PyResult<Robots> {
    let base = url
        .map(|u| {
            NormUrl::parse(u)
                .map_err(|e| PyValueError::new_err(format!("url {u:?} is not usable: {e}")))
        })
        .transpose()?;
    let robots = py.detach(|| RobotsTxt::parse(body, base.as_ref(), user_agent));
    Ok(Robots { robots, base })
}
