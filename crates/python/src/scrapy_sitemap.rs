//! `read_sitemap`: one document read whole without the GIL, for the Scrapy
//! spider, whose `sitemap_filter` takes entries as dicts of text. The
//! entries are kept as the parser's structs and made dicts one at a time as
//! Scrapy iterates them.

use std::sync::Mutex;

use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyDict, PyList, PyString};
use sitemapd_parser::{Event, Format, Lastmod, Precision, ScopeMode};

use crate::entries::{Summary, decimal};
use crate::options::ParseArgs;

/// An entry as Scrapy's `Sitemap` gives it.
enum Item {
    Url(sitemapd_parser::UrlEntry),
    Sitemap(sitemapd_parser::SitemapRef),
}

/// A lastmod as W3C text at the precision the sitemap gave: `2024-05-06`
/// for a day, the UTC time to the second (and its fraction) otherwise.
fn lastmod_text(lastmod: &Lastmod) -> String {
    let full = lastmod.to_string();
    let keep = match lastmod.precision {
        Precision::Year => 4,
        Precision::Month => 7,
        Precision::Day => 10,
        _ => full.len(),
    };
    full[..keep.min(full.len())].to_owned()
}

/// Keys, precisions and change frequencies are interned: a crawl can hold
/// millions of these dicts in its requests' meta.
fn entry_dict<'py>(py: Python<'py>, item: &Item) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    let (loc, lastmod) = match item {
        Item::Url(u) => (u.loc.as_str(), u.lastmod.as_ref()),
        Item::Sitemap(s) => (s.loc.as_str(), s.lastmod.as_ref()),
    };
    dict.set_item(intern!(py, "loc"), loc)?;
    if let Some(lastmod) = lastmod {
        dict.set_item(intern!(py, "lastmod"), lastmod_text(lastmod))?;
        dict.set_item(
            intern!(py, "lastmod_precision"),
            PyString::intern(py, lastmod.precision.as_str()),
        )?;
    }
    if let Item::Url(u) = item {
        if let Some(c) = u.changefreq {
            dict.set_item(intern!(py, "changefreq"), PyString::intern(py, c.as_str()))?;
        }
        if let Some(p) = u.priority {
            dict.set_item(intern!(py, "priority"), decimal(p).to_string())?;
        }
        if !u.alternates.is_empty() {
            let hrefs: Vec<&str> = u.alternates.iter().map(|a| a.href.as_str()).collect();
            dict.set_item(intern!(py, "alternate"), PyList::new(py, hrefs)?)?;
        }
        if !u.images.is_empty() {
            let locs: Vec<&str> = u.images.iter().map(|i| i.loc.as_str()).collect();
            dict.set_item(intern!(py, "images"), PyList::new(py, locs)?)?;
        }
    }
    Ok(dict)
}

/// A sitemap read whole, for `sitemapd.scrapy.Sitemap`.
#[pyclass(frozen, module = "sitemapd._native")]
pub(crate) struct ReadSitemap {
    items: Vec<Item>,
    /// `sitemapindex`, `urlset` (text sitemaps and feeds list pages too),
    /// or `None` for what is no sitemap.
    #[pyo3(get)]
    kind: Option<&'static str>,
    /// Totals, format and diagnostics per rule.
    #[pyo3(get)]
    summary: Py<Summary>,
}

#[pymethods]
impl ReadSitemap {
    fn __len__(&self) -> usize {
        self.items.len()
    }

    /// The entries as dicts, made as they are asked for.
    fn __iter__(slf: Bound<'_, Self>) -> SitemapDicts {
        SitemapDicts {
            sitemap: slf.unbind(),
            next: Mutex::new(0),
        }
    }
}

/// The dicts of a [`ReadSitemap`], one at a time.
#[pyclass(module = "sitemapd._native")]
pub(crate) struct SitemapDicts {
    sitemap: Py<ReadSitemap>,
    next: Mutex<usize>,
}

#[pymethods]
impl SitemapDicts {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let mut next = self
            .next
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the iterator failed earlier"))?;
        let Some(item) = self.sitemap.get().items.get(*next) else {
            return Ok(None);
        };
        *next += 1;
        entry_dict(py, item).map(Some)
    }
}

/// Reads `body` whole, with the GIL released: its entries up to
/// `max_entries` (no scope rule, as Scrapy applies none), the kind of
/// document and its summary. The entries are held until iterated, so the
/// entry limit bounds the memory a small, dense document can take.
#[pyfunction]
#[pyo3(signature = (body, *, url = None, max_bytes = 52_428_800, max_entries = 50_000))]
pub(crate) fn read_sitemap(
    py: Python<'_>,
    body: PyBackedBytes,
    url: Option<&str>,
    max_bytes: u64,
    max_entries: u64,
) -> PyResult<ReadSitemap> {
    let mut options = ParseArgs {
        url,
        max_bytes,
        max_entries,
        ..ParseArgs::default()
    }
    .options()?;
    options.scope = ScopeMode::None;
    let (items, format, summary) = py.detach(move || {
        let mut parser = sitemapd_parser::Parser::new(std::io::Cursor::new(body), options);
        let items: Vec<Item> = parser
            .by_ref()
            .filter_map(|event| match event {
                Event::Url(u) => Some(Item::Url(u)),
                Event::Sitemap(s) => Some(Item::Sitemap(s)),
                _ => None,
            })
            .collect();
        let summary = parser.summary();
        (items, summary.format, Summary::from(summary))
    });
    Ok(ReadSitemap {
        items,
        kind: format.map(|f| match f {
            Format::SitemapIndex => "sitemapindex",
            _ => "urlset",
        }),
        summary: Py::new(py, summary)?,
    })
}
