//! `Store`: the crawl store (sled on disk, or in memory) as Python sees it:
//! ingest documents, lease due URLs, report fetch outcomes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pythonize::pythonize;
use sitemapd_parser::Event;
use sitemapd_scheduler::{
    Completion, LeaseRequest, Leased, Notified, Outcome, Put, Store as Inner, StoreError as Error,
    StoreOptions, Timestamp,
};

use crate::discover::{WalkArgs, WalkRun};
use crate::errors::StoreError;
use crate::glue;
use crate::options::ParseArgs;
use crate::store_tables;
use crate::table::Table;

pub(crate) fn store_error(e: Error) -> PyErr {
    match e {
        Error::InvalidUrl { .. } => PyValueError::new_err(e.to_string()),
        Error::UnknownUrl(_) => pyo3::exceptions::PyKeyError::new_err(e.to_string()),
        e => StoreError::new_err(e.to_string()),
    }
}

/// Seconds since the Unix epoch, or the system clock when `None`.
fn at(now: Option<f64>) -> PyResult<Timestamp> {
    match now {
        None => Ok(Timestamp::now()),
        Some(s) if s.is_finite() => Ok(Timestamp::from_unix(s.floor() as i64)),
        Some(s) => Err(PyValueError::new_err(format!("now={s} is not a time"))),
    }
}

/// A URL handed out by `Store.lease` (or shown by `Store.peek`).
#[pyclass(frozen, get_all, module = "sitemapd._native")]
pub(crate) struct Lease {
    /// The URL, normalised.
    url: String,
    /// Its queue: its host (`host[:port]`).
    queue: String,
    /// When it became due, seconds since the Unix epoch.
    due: i64,
    /// Urgency (higher first).
    score: f32,
    /// Why it is due: `new`, `lastmod-newer`, `adaptive`, `retry`…
    reason: String,
    /// The lease id (`None` from `peek`).
    lease_id: Option<u64>,
    /// Until when the lease holds, seconds since the Unix epoch.
    expires: Option<i64>,
    /// Fetch it no earlier than this (host politeness), seconds since the epoch.
    not_before: i64,
    /// The `ETag` of its last fetch, for `If-None-Match`.
    etag: Option<String>,
    /// The `Last-Modified` of its last fetch, for `If-Modified-Since`.
    last_modified: Option<String>,
}

#[pymethods]
impl Lease {
    fn __repr__(&self) -> String {
        format!(
            "Lease(url={:?}, reason={:?}, score={})",
            self.url, self.reason, self.score
        )
    }
}

fn lease_of(store: &Inner, leased: Leased) -> Result<Lease, Error> {
    let view = store.url(&leased.url)?;
    let (etag, last_modified) = view.map(|v| (v.etag, v.last_modified)).unwrap_or_default();
    Ok(Lease {
        queue: leased.queue,
        due: leased.due.unix(),
        score: leased.score,
        reason: leased.reason.to_string(),
        lease_id: leased.lease,
        expires: leased.expires.map(Timestamp::unix),
        not_before: leased.not_before.unix(),
        url: leased.url,
        etag,
        last_modified,
    })
}

fn outcome(name: &str, status: Option<u16>, redirect_to: Option<String>) -> PyResult<Outcome> {
    Ok(match (name, redirect_to) {
        ("changed", None) => Outcome::Changed,
        ("not_modified", None) => Outcome::NotModified,
        ("gone", None) => Outcome::Gone(status.unwrap_or(0)),
        ("error", None) => Outcome::Error(status.unwrap_or(0)),
        ("redirected", Some(to)) => Outcome::Redirected {
            to,
            status: status.unwrap_or(0),
        },
        ("redirected", None) => {
            return Err(PyValueError::new_err(
                "outcome 'redirected' needs redirect_to",
            ));
        }
        (_, Some(_)) => {
            return Err(PyValueError::new_err(
                "redirect_to goes with outcome 'redirected' only",
            ));
        }
        (other, None) => {
            return Err(PyValueError::new_err(format!(
                "unknown outcome {other:?}: changed, not_modified, gone, error or redirected"
            )));
        }
    })
}

/// The crawl store: every URL with its sitemap metadata and fetch history,
/// and the queue of what to fetch next. `path=None` keeps it in memory.
#[pyclass(frozen, module = "sitemapd._native")]
pub(crate) struct Store {
    store: Arc<Inner>,
    path: Option<PathBuf>,
    /// Flush after every write, so that what a call returned survives a
    /// `kill -9` (the daemon's rule for what it acknowledges).
    durable: bool,
}

impl Store {
    /// Runs a write, then flushes it to disk when the store is durable.
    fn write<T>(&self, f: impl FnOnce(&Inner) -> Result<T, Error>) -> Result<T, Error> {
        let done = f(&self.store)?;
        if self.durable {
            self.store.flush()?;
        }
        Ok(done)
    }
}

#[pymethods]
impl Store {
    /// Opens (or creates) the store at `path`, or one in memory. `policy`
    /// names the scheduling policy (`lastmod`, `adaptive`, `changefreq`,
    /// `hints`…); a store remembers the last one given. `min_delay_s`
    /// spaces two URLs of one host in a lease (default 1). With `durable`
    /// (the default), every ingest, lease, completion and notification is
    /// on disk before the call returns, so it survives `kill -9`.
    #[new]
    #[pyo3(signature = (path = None, *, policy = None, min_delay_s = None, durable = true))]
    fn new(
        py: Python<'_>,
        path: Option<PathBuf>,
        policy: Option<String>,
        min_delay_s: Option<f64>,
        durable: bool,
    ) -> PyResult<Self> {
        let mut options = StoreOptions {
            policy,
            ..StoreOptions::default()
        };
        if let Some(delay) = min_delay_s {
            if !(delay.is_finite() && delay >= 0.0) {
                return Err(PyValueError::new_err("min_delay_s must be 0 or more"));
            }
            options.min_delay = delay;
        }
        let opened = py.detach(|| match &path {
            Some(p) => Inner::open(p, options),
            None => Inner::in_memory(options),
        });
        Ok(Self {
            store: Arc::new(opened.map_err(store_error)?),
            durable: durable && path.is_some(),
            path,
        })
    }

    /// The store's directory (`None` in memory).
    #[getter]
    fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The scheduling policy's name.
    #[getter]
    fn policy(&self) -> String {
        self.store.policy().name().to_owned()
    }

    /// Reads one sitemap document (a path, bytes, or a binary file) into
    /// the store, as the sitemap `url` (a path's default is its `file://`
    /// URL). Returns the ingest's counts: entries, new, updated,
    /// unchanged, duplicates, revived, retired, sitemaps.
    #[pyo3(signature = (src, *, url = None, now = None, scope = "directory",
        max_bytes = 52_428_800, max_entries = 50_000))]
    #[allow(clippy::too_many_arguments)]
    fn ingest<'py>(
        &self,
        py: Python<'py>,
        src: &Bound<'py, PyAny>,
        url: Option<&str>,
        now: Option<f64>,
        scope: &str,
        max_bytes: u64,
        max_entries: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let key = match url {
            Some(u) => u.to_owned(),
            None => file_key(src)?,
        };
        let mut parser = ParseArgs::new(url, scope, false, max_bytes, max_entries).parser(src)?;
        let now = at(now)?;
        let stats = py.detach(|| {
            self.write(|store| {
                let mut ingest = store.ingest(now);
                for event in parser.by_ref() {
                    if let Event::Url(entry) = event {
                        ingest.entry(&key, &entry)?;
                    }
                }
                ingest.sitemap_fetched(&key, &glue::read_whole(parser.summary()))?;
                ingest.finish()
            })
        });
        Ok(pythonize(py, &stats.map_err(store_error)?)?)
    }

    /// Walks `site` (as `discover` does, same keywords) into the store:
    /// every sitemap's entries, its validators for the next walk's
    /// conditional GETs, and the site's robots.txt rules, which leases
    /// obey. Returns the ingest's counts.
    #[pyo3(signature = (site, **kwargs))]
    fn ingest_site<'py>(
        &self,
        py: Python<'py>,
        site: &Bound<'py, PyAny>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let args = WalkArgs::new(site, kwargs)?;
        let memory = Arc::new(glue::StoreMemory::new(self.store.clone()));
        let mut run = WalkRun::start(args, Some(memory))?;
        let mut ingest = self.store.ingest(Timestamp::now());
        while let Some(event) = run.next(py)? {
            py.detach(|| glue::record(&mut ingest, &event))
                .map_err(store_error)?;
        }
        let stats = py
            .detach(|| self.write(|_| ingest.finish()))
            .map_err(store_error)?;
        Ok(pythonize(py, &stats)?)
    }

    /// Up to `n` due URLs, leased for `ttl_s` seconds (at most `per_host`
    /// of one host, spaced by the host's delay). Each comes with the
    /// validators of its last fetch, for a conditional GET.
    #[pyo3(signature = (n, *, per_host = 10, ttl_s = 300.0, now = None))]
    fn lease(
        &self,
        py: Python<'_>,
        n: usize,
        per_host: usize,
        ttl_s: f64,
        now: Option<f64>,
    ) -> PyResult<Vec<Lease>> {
        let max = LeaseRequest::MAX_TTL.as_secs_f64();
        if !(ttl_s.is_finite() && ttl_s > 0.0 && ttl_s <= max) {
            return Err(PyValueError::new_err(format!(
                "ttl_s must be more than 0 and at most {max} (7 days)"
            )));
        }
        let request = LeaseRequest::new(n)
            .per_host(per_host)
            .ttl(Duration::from_secs_f64(ttl_s));
        let now = at(now)?;
        py.detach(|| {
            let leased = self.write(|store| store.lease(&request, now))?;
            leased
                .into_iter()
                .map(|l| lease_of(&self.store, l))
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(store_error)
    }

    /// The next `n` due URLs in lease order, without leasing them.
    #[pyo3(signature = (n, *, now = None))]
    fn peek(&self, py: Python<'_>, n: usize, now: Option<f64>) -> PyResult<Vec<Lease>> {
        let now = at(now)?;
        py.detach(|| {
            let peeked = self.store.peek(n, now)?;
            peeked
                .into_iter()
                .map(|l| lease_of(&self.store, l))
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(store_error)
    }

    /// Reports how fetching `url` ended: `changed`, `not_modified`, `gone`
    /// (with its `status`, 404 or 410), `error` (its `status`, 0 for no
    /// response) or `redirected` (with `redirect_to`). `etag` and
    /// `last_modified` are kept for the next conditional GET.
    #[pyo3(signature = (url, outcome, *, status = None, etag = None, last_modified = None,
        redirect_to = None, now = None))]
    #[allow(clippy::too_many_arguments)]
    fn complete(
        &self,
        py: Python<'_>,
        url: &str,
        outcome: &str,
        status: Option<u16>,
        etag: Option<String>,
        last_modified: Option<String>,
        redirect_to: Option<String>,
        now: Option<f64>,
    ) -> PyResult<()> {
        let completion = Completion {
            outcome: self::outcome(outcome, status, redirect_to)?,
            status,
            etag,
            last_modified,
        };
        let now = at(now)?;
        py.detach(|| self.write(|store| store.complete(url, &completion, now)))
            .map_err(store_error)
    }

    /// Adds URLs found while crawling (a link, a redirect target): one the
    /// store does not hold is added, due now; one it holds is left as it
    /// is. Returns, in order, `"added"`, `"known"` or `"invalid"` (not an
    /// absolute http(s) URL) for each.
    #[pyo3(signature = (urls, *, now = None))]
    fn add(
        &self,
        py: Python<'_>,
        urls: Vec<String>,
        now: Option<f64>,
    ) -> PyResult<Vec<&'static str>> {
        let now = at(now)?;
        let items = urls.into_iter().map(|url| (url, Vec::new()));
        let puts = py
            .detach(|| self.write(|store| store.discover(items, now)))
            .map_err(store_error)?;
        Ok(puts
            .into_iter()
            .map(|put| match put {
                Put::Stored => "added",
                Put::Known => "known",
                _ => "invalid",
            })
            .collect())
    }

    /// A push signal that `url` changed: it is due now. Returns whether the
    /// store already held it.
    #[pyo3(signature = (url, *, now = None))]
    fn notify(&self, py: Python<'_>, url: &str, now: Option<f64>) -> PyResult<bool> {
        let now = at(now)?;
        let notified = py
            .detach(|| self.write(|store| store.notify(url, now)))
            .map_err(store_error)?;
        Ok(notified == Notified::Known)
    }

    /// What the store knows of `url`, as a dict, or `None`.
    fn url<'py>(&self, py: Python<'py>, url: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        let view = py.detach(|| self.store.url(url)).map_err(store_error)?;
        view.map(|v| pythonize(py, &v).map_err(PyErr::from))
            .transpose()
    }

    /// Totals: active, retired, blocked, gone, completed, leased, due
    /// now, sitemaps, and per-host counts.
    #[pyo3(signature = (*, now = None))]
    fn stats<'py>(&self, py: Python<'py>, now: Option<f64>) -> PyResult<Bound<'py, PyAny>> {
        let now = at(now)?;
        let stats = py.detach(|| self.store.stats(now)).map_err(store_error)?;
        Ok(pythonize(py, &stats)?)
    }

    /// Every URL the store holds, retired ones included, as a table with
    /// the columns of `sitemapd export` (times as UTC timestamps).
    fn urls(&self, py: Python<'_>) -> PyResult<Table> {
        py.detach(|| store_tables::urls(&self.store))
            .map_err(store_error)
    }

    /// One row per host the store holds URLs of: its counts (`active`,
    /// `retired`, `blocked`), the spacing of its URLs in a lease, when the
    /// next may be handed out, and its lastmod trust.
    #[pyo3(signature = (*, now = None))]
    fn hosts(&self, py: Python<'_>, now: Option<f64>) -> PyResult<Table> {
        let now = at(now)?;
        py.detach(|| store_tables::hosts(&self.store, now))
            .map_err(store_error)
    }

    /// Writes everything the store holds to disk now (a store opened with
    /// `durable=False` flushes on its own only every half second).
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.store.flush()).map_err(store_error)
    }

    fn __repr__(&self) -> String {
        match &self.path {
            Some(p) => format!("<sitemapd.Store {}>", p.display()),
            None => "<sitemapd.Store in memory>".to_owned(),
        }
    }
}

/// The sitemap key of a document given as a path: its `file://` URL.
fn file_key(src: &Bound<'_, PyAny>) -> PyResult<String> {
    let path: PathBuf = src.extract().map_err(|_| {
        PyValueError::new_err("give url=: a document given as bytes or a file has no address")
    })?;
    let path = std::fs::canonicalize(&path).map_err(|e| {
        pyo3::exceptions::PyOSError::new_err(format!("cannot open {}: {e}", path.display()))
    })?;
    Ok(format!("file://{}", path.display()))
}
