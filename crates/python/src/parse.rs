//! `parse`, `iter_entries` and `iter_batches`: one document, whole or as a
//! stream.

use std::collections::VecDeque;
use std::sync::Mutex;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use sitemapd_parser::{Event, Parser};

use crate::columns::{
    BATCH_ROWS, DIAGNOSTIC_SCHEMA, DiagnosticColumns, SITEMAP_SCHEMA, SitemapColumns, URL_SCHEMA,
    UrlColumns,
};
use crate::entries::{Diagnostic, SitemapRef, Summary, UrlEntry};
use crate::options::ParseArgs;
use crate::table::{BatchReader, Table};

/// The three tables of one document and its summary.
#[pyclass(frozen, get_all, module = "sitemapd._native")]
pub(crate) struct Parsed {
    /// Page URLs: loc, lastmod, lastmod_precision, changefreq, priority and
    /// the extensions' columns.
    urls: Py<Table>,
    /// Child sitemaps of an index: loc, lastmod, lastmod_precision.
    sitemaps: Py<Table>,
    /// Every drop or repair: rule, severity, line, column, message.
    diagnostics: Py<Table>,
    /// Totals, format and encoding.
    summary: Py<Summary>,
}

#[pymethods]
impl Parsed {
    fn __repr__(&self) -> String {
        format!(
            "<sitemapd.Parsed {} urls, {} sitemaps, {} diagnostics>",
            self.urls.get().num_rows(),
            self.sitemaps.get().num_rows(),
            self.diagnostics.get().num_rows(),
        )
    }
}

/// Tables under construction, cut into batches of [`BATCH_ROWS`].
#[derive(Default)]
struct Tables {
    urls: UrlColumns,
    url_batches: Vec<RecordBatch>,
    sitemaps: SitemapColumns,
    sitemap_batches: Vec<RecordBatch>,
    diagnostics: DiagnosticColumns,
    diagnostic_batches: Vec<RecordBatch>,
}

impl Tables {
    fn push(&mut self, event: &Event) {
        match event {
            Event::Url(entry) => {
                self.urls.push(entry);
                if self.urls.len() == BATCH_ROWS {
                    self.url_batches.push(self.urls.finish());
                }
            }
            Event::Sitemap(sitemap) => {
                self.sitemaps.push(sitemap);
                if self.sitemaps.len() == BATCH_ROWS {
                    self.sitemap_batches.push(self.sitemaps.finish());
                }
            }
            Event::Diagnostic(diagnostic) => {
                self.diagnostics.push(diagnostic);
                if self.diagnostics.len() == BATCH_ROWS {
                    self.diagnostic_batches.push(self.diagnostics.finish());
                }
            }
            _ => {}
        }
    }

    fn finish(mut self) -> [Table; 3] {
        self.url_batches.push(self.urls.finish());
        self.sitemap_batches.push(self.sitemaps.finish());
        self.diagnostic_batches.push(self.diagnostics.finish());
        [
            Table::new(URL_SCHEMA.clone(), self.url_batches),
            Table::new(SITEMAP_SCHEMA.clone(), self.sitemap_batches),
            Table::new(DIAGNOSTIC_SCHEMA.clone(), self.diagnostic_batches),
        ]
    }
}

/// Parses one sitemap, index, feed or text list (gzip or not, any
/// encoding) into Arrow tables.
///
/// `src` is a path, bytes, or a binary file. `url` is the document's own
/// address: the base for relative locs and for the scope rule (`scope`:
/// `directory`, `host` or `none`). The parse runs without the GIL.
#[pyfunction]
#[pyo3(signature = (src, *, url = None, scope = "directory", strict = false,
    max_bytes = 52_428_800, max_entries = 50_000, fast_lane = true))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn parse(
    py: Python<'_>,
    src: &Bound<'_, PyAny>,
    url: Option<&str>,
    scope: &str,
    strict: bool,
    max_bytes: u64,
    max_entries: u64,
    fast_lane: bool,
) -> PyResult<Parsed> {
    let args = ParseArgs {
        fast_lane,
        ..ParseArgs::new(url, scope, strict, max_bytes, max_entries)
    };
    let parser = args.parser(src)?;
    let (tables, summary) = py.detach(move || {
        let mut parser = parser;
        let mut tables = Tables::default();
        for event in parser.by_ref() {
            tables.push(&event);
        }
        (tables.finish(), Summary::from(parser.summary()))
    });
    let [urls, sitemaps, diagnostics] = tables;
    Ok(Parsed {
        urls: Py::new(py, urls)?,
        sitemaps: Py::new(py, sitemaps)?,
        diagnostics: Py::new(py, diagnostics)?,
        summary: Py::new(py, summary)?,
    })
}

/// Events pulled per release of the GIL.
const EVENTS_PER_PULL: usize = 512;

struct EntryState {
    parser: Parser,
    pending: VecDeque<Event>,
    done: bool,
}

/// The entries of one document, one at a time, in memory that stays flat
/// however long the document.
#[pyclass(module = "sitemapd._native")]
pub(crate) struct EntryIterator {
    state: Mutex<EntryState>,
    diagnostics: bool,
}

#[pymethods]
impl EntryIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the iterator failed earlier"))?;
        loop {
            while let Some(event) = state.pending.pop_front() {
                match event {
                    Event::Url(entry) => {
                        return Ok(Some(Py::new(py, UrlEntry::new(entry))?.into_any()));
                    }
                    Event::Sitemap(sitemap) => {
                        return Ok(Some(Py::new(py, SitemapRef(sitemap))?.into_any()));
                    }
                    Event::Diagnostic(d) if self.diagnostics => {
                        return Ok(Some(Py::new(py, Diagnostic(d))?.into_any()));
                    }
                    _ => {}
                }
            }
            if state.done {
                return Ok(None);
            }
            let state = &mut *state;
            py.detach(|| {
                state
                    .pending
                    .extend(state.parser.by_ref().take(EVENTS_PER_PULL));
                state.done = state.pending.len() < EVENTS_PER_PULL;
            });
        }
    }

    /// Totals so far (final once the iterator is exhausted).
    #[getter]
    fn summary(&self) -> PyResult<Summary> {
        let state = self
            .state
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the iterator failed earlier"))?;
        Ok(Summary::from(state.parser.summary()))
    }
}

/// Iterates a document's `UrlEntry` and `SitemapRef` items (and its
/// `Diagnostic`s with `diagnostics=True`) as they are read.
#[pyfunction]
#[pyo3(signature = (src, *, url = None, scope = "directory", strict = false,
    max_bytes = 52_428_800, max_entries = 50_000, diagnostics = false))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn iter_entries(
    src: &Bound<'_, PyAny>,
    url: Option<&str>,
    scope: &str,
    strict: bool,
    max_bytes: u64,
    max_entries: u64,
    diagnostics: bool,
) -> PyResult<EntryIterator> {
    let args = ParseArgs::new(url, scope, strict, max_bytes, max_entries);
    Ok(EntryIterator {
        state: Mutex::new(EntryState {
            parser: args.parser(src)?,
            pending: VecDeque::with_capacity(EVENTS_PER_PULL),
            done: false,
        }),
        diagnostics,
    })
}

/// URL batches of `rows` rows, parsed as they are asked for.
struct UrlBatches {
    parser: Parser,
    rows: usize,
    columns: UrlColumns,
    done: bool,
}

impl Iterator for UrlBatches {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        for event in self.parser.by_ref() {
            if let Event::Url(entry) = event {
                self.columns.push(&entry);
                if self.columns.len() == self.rows {
                    return Some(Ok(self.columns.finish()));
                }
            }
        }
        self.done = true;
        (self.columns.len() > 0).then(|| Ok(self.columns.finish()))
    }
}

impl RecordBatchReader for UrlBatches {
    fn schema(&self) -> SchemaRef {
        URL_SCHEMA.clone()
    }
}

/// The `urls` table of a document as a stream of Arrow record batches of
/// `rows` rows: memory stays flat, and `pyarrow.RecordBatchReader.from_stream`
/// or polars read it as it is parsed.
#[pyfunction]
#[pyo3(signature = (src, *, rows = 65_536, url = None, scope = "directory", strict = false,
    max_bytes = 52_428_800, max_entries = 50_000))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn iter_batches(
    src: &Bound<'_, PyAny>,
    rows: usize,
    url: Option<&str>,
    scope: &str,
    strict: bool,
    max_bytes: u64,
    max_entries: u64,
) -> PyResult<BatchReader> {
    if rows == 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "rows must be at least 1",
        ));
    }
    let args = ParseArgs::new(url, scope, strict, max_bytes, max_entries);
    let batches = UrlBatches {
        parser: args.parser(src)?,
        rows,
        columns: UrlColumns::new(),
        done: false,
    };
    Ok(BatchReader::new(Box::new(batches)))
}
