//! Instants as Python sees them: `datetime` in UTC, Arrow microseconds.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use sitemapd_parser::Lastmod;

/// Microseconds since the Unix epoch: Arrow's `timestamp[us, UTC]`.
pub(crate) fn micros(lastmod: &Lastmod) -> i64 {
    // Parsed dates lie in 0001-9999, far inside i64 microseconds.
    lastmod
        .unix_seconds
        .saturating_mul(1_000_000)
        .saturating_add(i64::from(lastmod.nanos / 1_000))
}

static EPOCH: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static TIMEDELTA: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `lastmod` as an aware `datetime` in UTC (microseconds kept, finer
/// digits dropped, as `datetime` holds no more).
pub(crate) fn datetime<'py>(py: Python<'py>, lastmod: &Lastmod) -> PyResult<Bound<'py, PyAny>> {
    let epoch = EPOCH.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        let datetime = py.import("datetime")?;
        let utc = datetime.getattr("timezone")?.getattr("utc")?;
        let epoch = datetime
            .getattr("datetime")?
            .call1((1970, 1, 1, 0, 0, 0, 0, utc))?;
        Ok(epoch.unbind())
    })?;
    let timedelta = TIMEDELTA.import(py, "datetime", "timedelta")?;
    let days = lastmod.unix_seconds.div_euclid(86_400);
    let seconds = lastmod.unix_seconds.rem_euclid(86_400);
    let delta = timedelta.call1((days, seconds, lastmod.nanos / 1_000))?;
    epoch.bind(py).add(delta)
}
