//! `discover` and `iter_discover`: a site's robots.txt, its sitemap
//! indexes and sitemaps, walked over the network on one tokio runtime in
//! short slices, so that Ctrl-C (a notebook's interrupt too) stops it.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use sitemapd_discovery::walk::{Via, follow_patterns};
use sitemapd_discovery::{
    FetchConfig, Fetcher, FollowRule, Seed, SitemapMemory, WalkConfig, WalkEvent, WalkStream,
    Walker,
};
use tokio::runtime::Runtime;

use crate::columns::{
    BATCH_ROWS, DISCOVERED_DIAGNOSTIC_SCHEMA, DISCOVERED_URL_SCHEMA, DiagnosticColumns,
    FETCH_SCHEMA, FetchColumns, FetchRow, UrlColumns,
};
use crate::entries::UrlEntry;
use crate::errors::DiscoveryError;
use crate::options::ParseArgs;
use crate::table::Table;

/// How long the GIL stays released before signals are checked again.
const SLICE: Duration = Duration::from_millis(100);

/// The one runtime every walk of the process runs on.
fn runtime() -> PyResult<&'static Runtime> {
    static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("sitemapd-walk")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| DiscoveryError::new_err(format!("cannot start the network runtime: {e}")))
}

/// The keywords of a walk, shared by `discover`, `iter_discover` and
/// `Store.ingest_site`.
pub(crate) struct WalkArgs {
    seeds: Vec<Seed>,
    walk: WalkConfig,
    fetch: FetchConfig,
    total_timeout: Duration,
}

fn seeds(site: &Bound<'_, PyAny>) -> PyResult<Vec<Seed>> {
    let sites: Vec<String> = if site.is_instance_of::<PyString>() {
        vec![site.extract()?]
    } else {
        site.extract()
            .map_err(|_| PyTypeError::new_err("site must be a str or a list of str"))?
    };
    sites
        .iter()
        .map(|s| {
            Seed::parse(s)
                .map_err(|e| PyValueError::new_err(format!("site {s:?} is not usable: {e}")))
        })
        .collect()
}

fn seconds(name: &str, value: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value).map_err(|_| {
        PyValueError::new_err(format!("{name} must be a number of seconds, 0 or more"))
    })
}

/// The text of one `follow` pattern: a `str`, or a compiled `re.Pattern`
/// whose flags `re.I`, `re.M`, `re.S` and `re.X` become Rust's inline
/// flags (`re.U` is Rust's default; any other flag is refused). Rust's `x`
/// also ignores whitespace inside `[...]`, which Python's keeps.
fn pattern_text(item: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(text) = item.extract::<String>() {
        return Ok(text);
    }
    let (Ok(text), Ok(flags)) = (
        item.getattr("pattern").and_then(|p| p.extract::<String>()),
        item.getattr("flags").and_then(|f| f.extract::<u32>()),
    ) else {
        return Err(PyTypeError::new_err(
            "follow takes str patterns or re.Pattern objects of str",
        ));
    };
    const UNICODE: u32 = 32;
    const INLINE: [(u32, char); 4] = [(2, 'i'), (8, 'm'), (16, 's'), (64, 'x')];
    let known = INLINE.iter().fold(UNICODE, |all, (bit, _)| all | bit);
    if flags & !known != 0 {
        return Err(PyValueError::new_err(format!(
            "follow: the flags of {text:?} are not all re.I, re.M, re.S, re.X or re.U"
        )));
    }
    let inline: String = INLINE
        .iter()
        .filter(|(bit, _)| flags & bit != 0)
        .map(|(_, c)| *c)
        .collect();
    Ok(if inline.is_empty() {
        text
    } else {
        format!("(?{inline}){text}")
    })
}

/// `follow`: `None`, a pattern, or a list of patterns (see
/// [`pattern_text`]), for [`follow_patterns`]; a pattern it cannot compile
/// is a `ValueError`.
fn follow_rule(value: &Bound<'_, PyAny>) -> PyResult<Option<FollowRule>> {
    if value.is_none() {
        return Ok(None);
    }
    let patterns: Vec<String> = if value.is_instance_of::<PyString>() || value.hasattr("pattern")? {
        vec![pattern_text(value)?]
    } else {
        value
            .try_iter()
            .map_err(|_| PyTypeError::new_err("follow takes a pattern or a list of patterns"))?
            .map(|item| pattern_text(&item?))
            .collect::<PyResult<_>>()?
    };
    follow_patterns(&patterns)
        .map(Some)
        .map_err(|e| PyValueError::new_err(format!("follow: {e}")))
}

impl WalkArgs {
    /// Reads the keywords; an unknown one is a `TypeError`, as for any
    /// Python function.
    pub(crate) fn new(
        site: &Bound<'_, PyAny>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let mut walk = WalkConfig::default();
        let mut fetch = FetchConfig::default();
        let mut total_timeout = Duration::from_secs(600);
        let mut parse = ParseArgs::default();
        let (mut scope, mut strict) = (String::from("directory"), false);
        if let Some(kwargs) = kwargs {
            for (key, value) in kwargs.iter() {
                let key: String = key.extract()?;
                match key.as_str() {
                    "max_depth" => walk.max_depth = value.extract()?,
                    "max_sitemaps" => walk.max_sitemaps_per_site = value.extract()?,
                    "probe" => walk.probe = value.extract()?,
                    "total_timeout_s" => {
                        total_timeout = seconds("total_timeout_s", value.extract()?)?
                    }
                    "per_host_delay_s" => {
                        fetch.min_delay = seconds("per_host_delay_s", value.extract()?)?
                    }
                    "request_timeout_s" => {
                        fetch.deadline = seconds("request_timeout_s", value.extract()?)?
                    }
                    "user_agent" => fetch.user_agent = value.extract()?,
                    "allow_private" => fetch.allow_private = value.extract()?,
                    "allow_addresses" => {
                        let addresses: Vec<String> = value.extract()?;
                        fetch.allow_addresses = addresses
                            .iter()
                            .map(|a| {
                                a.parse().map_err(|_| {
                                    PyValueError::new_err(format!("{a:?} is not an IP address"))
                                })
                            })
                            .collect::<PyResult<_>>()?;
                    }
                    "follow" => walk.follow = follow_rule(&value)?,
                    "scope" => scope = value.extract()?,
                    "strict" => strict = value.extract()?,
                    "max_bytes" => parse.max_bytes = value.extract()?,
                    "max_entries" => parse.max_entries = value.extract()?,
                    other => {
                        return Err(PyTypeError::new_err(format!(
                            "unexpected keyword argument {other:?}"
                        )));
                    }
                }
            }
        }
        parse.scope = &scope;
        parse.strict = strict;
        walk.parse = parse.options()?;
        Ok(Self {
            seeds: seeds(site)?,
            walk,
            fetch,
            total_timeout,
        })
    }
}

/// A walk in progress: its events, pulled a slice at a time.
pub(crate) struct WalkRun {
    stream: Option<WalkStream>,
    /// `None`: a budget past what an `Instant` can hold, so none.
    deadline: Option<Instant>,
    timed_out: bool,
}

impl WalkRun {
    /// Starts walking; `memory` is what a store remembers of earlier reads.
    pub(crate) fn start(args: WalkArgs, memory: Option<Arc<dyn SitemapMemory>>) -> PyResult<Self> {
        let runtime = runtime()?;
        let fetcher = Fetcher::new(args.fetch)
            .map_err(|e| DiscoveryError::new_err(format!("cannot make the HTTP client: {e}")))?;
        let walker = Walker::new(
            fetcher,
            WalkConfig {
                memory,
                ..args.walk
            },
        );
        let _entered = runtime.enter();
        Ok(Self {
            stream: Some(walker.walk(args.seeds)),
            deadline: Instant::now().checked_add(args.total_timeout),
            timed_out: false,
        })
    }

    /// The next event; `None` at the end of the walk or at its deadline.
    /// The GIL is released while waiting, and taken back every
    /// [`SLICE`] to let Python raise `KeyboardInterrupt`.
    pub(crate) fn next(&mut self, py: Python<'_>) -> PyResult<Option<WalkEvent>> {
        let runtime = runtime()?;
        loop {
            let Some(stream) = self.stream.as_mut() else {
                return Ok(None);
            };
            let left = self
                .deadline
                .map_or(SLICE, |d| d.saturating_duration_since(Instant::now()));
            if left.is_zero() {
                // Dropping the stream aborts the walk's tasks.
                self.stream = None;
                self.timed_out = true;
                return Ok(None);
            }
            let waited = py.detach(|| {
                // The timer is made inside the runtime, which drives it.
                runtime
                    .block_on(async { tokio::time::timeout(SLICE.min(left), stream.next()).await })
            });
            match waited {
                Ok(Some(event)) => return Ok(Some(event)),
                Ok(None) => {
                    self.stream = None;
                    return Ok(None);
                }
                Err(_) => {
                    if let Err(e) = py.check_signals() {
                        self.stream = None;
                        return Err(e);
                    }
                }
            }
        }
    }

    /// Whether the walk stopped at its deadline.
    pub(crate) fn timed_out(&self) -> bool {
        self.timed_out
    }
}

fn via(via: Via) -> &'static str {
    match via {
        Via::Seed => "seed",
        Via::Robots => "robots",
        Via::Probe => "probe",
        Via::Index => "index",
        _ => "other",
    }
}

/// A discovery's tables.
#[pyclass(frozen, get_all, module = "sitemapd._native")]
pub(crate) struct Discovered {
    /// Page URLs with the sitemap that listed each (`sitemap` column).
    urls: Py<Table>,
    /// Every sitemap fetched or failed: url, status, format, urls,
    /// sitemaps, complete, not_modified, parent, depth, via, error, bytes,
    /// etag, last_modified.
    sitemaps: Py<Table>,
    /// Parse diagnostics, with the sitemap concerned.
    diagnostics: Py<Table>,
    /// The walk stopped at `total_timeout_s`: the tables hold what was
    /// read by then.
    timed_out: bool,
}

#[pymethods]
impl Discovered {
    fn __repr__(&self) -> String {
        format!(
            "<sitemapd.Discovered {} urls, {} sitemaps{}>",
            self.urls.get().num_rows(),
            self.sitemaps.get().num_rows(),
            if self.timed_out { ", timed out" } else { "" }
        )
    }
}

/// Walks `site` (a site such as `example.com`, a sitemap URL, or a list of
/// them): robots.txt, then every sitemap and index it leads to. Keywords:
/// `max_depth`, `max_sitemaps`, `probe`, `total_timeout_s`,
/// `per_host_delay_s`, `request_timeout_s`, `user_agent`, `allow_private`,
/// `allow_addresses`, `scope`, `strict`, `max_bytes`, `max_entries`.
#[pyfunction]
#[pyo3(signature = (site, **kwargs))]
pub(crate) fn discover(
    py: Python<'_>,
    site: &Bound<'_, PyAny>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Discovered> {
    let mut run = WalkRun::start(WalkArgs::new(site, kwargs)?, None)?;
    let mut urls = UrlColumns::with_sitemap();
    let mut url_batches = Vec::new();
    let mut fetches = FetchColumns::default();
    let mut fetch_batches = Vec::new();
    let mut diagnostics = DiagnosticColumns::with_sitemap();
    let mut diagnostic_batches = Vec::new();
    while let Some(event) = run.next(py)? {
        match &event {
            WalkEvent::Entry { sitemap, entry } => {
                urls.push_from(entry, sitemap.as_str());
                if urls.len() == BATCH_ROWS {
                    url_batches.push(urls.finish());
                }
            }
            WalkEvent::Diagnostic {
                sitemap,
                diagnostic,
            } => {
                diagnostics.push_from(diagnostic, sitemap.as_str());
                if diagnostics.len() == BATCH_ROWS {
                    diagnostic_batches.push(diagnostics.finish());
                }
            }
            WalkEvent::SitemapFetched(r) => fetches.push(&FetchRow {
                url: r.url.as_str(),
                status: Some(r.status),
                summary: r.summary.as_ref(),
                complete: r.complete(),
                not_modified: r.not_modified,
                parent: r.parent.as_ref().map(|p| p.as_str()),
                depth: r.depth,
                via: via(r.via),
                error: None,
                bytes: Some(r.bytes),
                etag: r.validators.etag.as_deref(),
                last_modified: r.validators.last_modified.as_deref(),
            }),
            WalkEvent::SitemapFailed(f) => fetches.push(&FetchRow {
                url: f.url.as_str(),
                status: f.status,
                summary: None,
                complete: false,
                not_modified: false,
                parent: f.parent.as_ref().map(|p| p.as_str()),
                depth: f.depth,
                via: via(f.via),
                error: Some(&f.error),
                bytes: None,
                etag: None,
                last_modified: None,
            }),
            _ => {}
        }
        if fetches.len() == BATCH_ROWS {
            fetch_batches.push(fetches.finish());
        }
    }
    url_batches.push(urls.finish());
    fetch_batches.push(fetches.finish());
    diagnostic_batches.push(diagnostics.finish());
    Ok(Discovered {
        urls: Py::new(py, Table::new(DISCOVERED_URL_SCHEMA.clone(), url_batches))?,
        sitemaps: Py::new(py, Table::new(FETCH_SCHEMA.clone(), fetch_batches))?,
        diagnostics: Py::new(
            py,
            Table::new(DISCOVERED_DIAGNOSTIC_SCHEMA.clone(), diagnostic_batches),
        )?,
        timed_out: run.timed_out(),
    })
}

/// The URL entries of a walk as they are read, each with its `sitemap`.
#[pyclass(module = "sitemapd._native")]
pub(crate) struct DiscoverIterator {
    run: Mutex<WalkRun>,
}

#[pymethods]
impl DiscoverIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<UrlEntry>> {
        let mut run = self
            .run
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the walk failed earlier"))?;
        while let Some(event) = run.next(py)? {
            if let WalkEvent::Entry { sitemap, entry } = event {
                return Ok(Some(UrlEntry::from_sitemap(entry, sitemap.as_str())));
            }
        }
        Ok(None)
    }

    /// Whether the walk stopped at `total_timeout_s`.
    #[getter]
    fn timed_out(&self) -> PyResult<bool> {
        let run = self
            .run
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the walk failed earlier"))?;
        Ok(run.timed_out())
    }
}

/// Iterates the URL entries `discover` would collect, as they are read:
/// memory stays flat however large the site. Same keywords as `discover`.
#[pyfunction]
#[pyo3(signature = (site, **kwargs))]
pub(crate) fn iter_discover(
    site: &Bound<'_, PyAny>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<DiscoverIterator> {
    Ok(DiscoverIterator {
        run: Mutex::new(WalkRun::start(WalkArgs::new(site, kwargs)?, None)?),
    })
}
