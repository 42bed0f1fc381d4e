//! The parser's items as Python objects: `UrlEntry`, `SitemapRef`,
//! `Diagnostic` and the parse `Summary`. Values are converted when read, so
//! iterating costs one small object per entry.

use std::collections::BTreeMap;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use sitemapd_parser::event::{Listed, Video};
use sitemapd_parser::{self as parser, Lastmod};

use crate::time::datetime;

/// A priority (or rating) as the decimal the sitemap wrote: `0.8`, not the
/// `f32`'s 0.800000011920929. The value with the fewest decimals that is
/// this `f32` again (the sitemap's digits, which an `f32` keeps up to 7).
pub(crate) fn decimal(value: f32) -> f64 {
    let wide = f64::from(value);
    let mut scale = 1.0;
    for _ in 0..=9 {
        let candidate = (wide * scale).round() / scale;
        if candidate as f32 == value {
            return candidate;
        }
        scale *= 10.0;
    }
    wide
}

fn optional_datetime<'py>(
    py: Python<'py>,
    lastmod: Option<&Lastmod>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    lastmod.map(|l| datetime(py, l)).transpose()
}

/// A page URL with the metadata its sitemap gave.
#[pyclass(frozen, eq, module = "sitemapd._native")]
#[derive(PartialEq)]
pub(crate) struct UrlEntry {
    entry: parser::UrlEntry,
    /// The sitemap that listed it, in a discovery.
    sitemap: Option<String>,
}

impl UrlEntry {
    /// An entry of a document parsed on its own.
    pub(crate) fn new(entry: parser::UrlEntry) -> Self {
        Self {
            entry,
            sitemap: None,
        }
    }

    /// An entry of a discovery, listed by `sitemap`.
    pub(crate) fn from_sitemap(entry: parser::UrlEntry, sitemap: &str) -> Self {
        Self {
            entry,
            sitemap: Some(sitemap.to_owned()),
        }
    }
}

#[pymethods]
impl UrlEntry {
    /// The sitemap that listed it (entries of a discovery; `None` otherwise).
    #[getter]
    fn sitemap(&self) -> Option<&str> {
        self.sitemap.as_deref()
    }

    /// The normalised page URL.
    #[getter]
    fn loc(&self) -> &str {
        self.entry.loc.as_str()
    }

    /// `<lastmod>` (or the feed item's date) as an aware UTC `datetime`.
    #[getter]
    fn lastmod<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        optional_datetime(py, self.entry.lastmod.as_ref())
    }

    /// How precisely the sitemap wrote `lastmod`: year, month, day, minute,
    /// second or fraction.
    #[getter]
    fn lastmod_precision(&self) -> Option<&'static str> {
        self.entry.lastmod.map(|l| l.precision.as_str())
    }

    /// `<changefreq>`, a protocol keyword.
    #[getter]
    fn changefreq(&self) -> Option<&'static str> {
        self.entry.changefreq.map(|c| c.as_str())
    }

    /// `<priority>` in [0, 1]; `None` when absent (not 0.5).
    #[getter]
    fn priority(&self) -> Option<f64> {
        self.entry.priority.map(decimal)
    }

    /// Image URLs of the image extension.
    #[getter]
    fn images(&self) -> Vec<&str> {
        self.entry.images.iter().map(|i| i.loc.as_str()).collect()
    }

    /// hreflang alternates as `(hreflang, href)` pairs.
    #[getter]
    fn alternates(&self) -> Vec<(&str, &str)> {
        self.entry
            .alternates
            .iter()
            .map(|a| (a.hreflang.as_str(), a.href.as_str()))
            .collect()
    }

    /// Videos of the video extension, one dict each (fields present only).
    #[getter]
    fn videos<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let videos = PyList::empty(py);
        for video in &self.entry.videos {
            videos.append(video_dict(py, video)?)?;
        }
        Ok(videos)
    }

    /// The news extension's fields, or `None`.
    #[getter]
    fn news<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(news) = self.entry.news.as_deref() else {
            return Ok(None);
        };
        let dict = PyDict::new(py);
        set(&dict, "publication_name", news.publication_name.as_deref())?;
        set(
            &dict,
            "publication_language",
            news.publication_language.as_deref(),
        )?;
        set(
            &dict,
            "publication_date",
            optional_datetime(py, news.publication_date.as_ref())?,
        )?;
        set(&dict, "title", news.title.as_deref())?;
        Ok(Some(dict))
    }

    /// Every field as a dict (absent ones as `None`).
    fn to_dict<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(slf.py());
        for name in [
            "loc",
            "lastmod",
            "lastmod_precision",
            "changefreq",
            "priority",
            "images",
            "alternates",
            "videos",
            "news",
            "sitemap",
        ] {
            dict.set_item(name, slf.getattr(name)?)?;
        }
        Ok(dict)
    }

    fn __repr__(&self) -> String {
        let mut repr = format!("UrlEntry(loc={:?}", self.entry.loc.as_str());
        if let Some(l) = self.entry.lastmod {
            repr.push_str(&format!(", lastmod='{l}'"));
        }
        if let Some(c) = self.entry.changefreq {
            repr.push_str(&format!(", changefreq={:?}", c.as_str()));
        }
        if let Some(p) = self.entry.priority {
            repr.push_str(&format!(", priority={}", decimal(p)));
        }
        repr.push(')');
        repr
    }
}

fn set<'py, V: IntoPyObject<'py>>(
    dict: &Bound<'py, PyDict>,
    key: &str,
    value: Option<V>,
) -> PyResult<()> {
    match value {
        Some(v) => dict.set_item(key, v),
        None => Ok(()),
    }
}

fn listed_dict<'py>(py: Python<'py>, listed: &Listed) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item(
        "relationship",
        match listed.relationship {
            parser::Relationship::Allow => "allow",
            parser::Relationship::Deny => "deny",
        },
    )?;
    dict.set_item("values", &listed.values)?;
    Ok(dict)
}

fn video_dict<'py>(py: Python<'py>, video: &Video) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    let url = |u: &Option<parser::NormUrl>| u.as_ref().map(|u| u.as_str().to_owned());
    set(&dict, "thumbnail_loc", url(&video.thumbnail_loc))?;
    set(&dict, "title", video.title.as_deref())?;
    set(&dict, "description", video.description.as_deref())?;
    set(&dict, "content_loc", url(&video.content_loc))?;
    set(&dict, "player_loc", url(&video.player_loc))?;
    set(&dict, "duration", video.duration)?;
    set(
        &dict,
        "expiration_date",
        optional_datetime(py, video.expiration_date.as_ref())?,
    )?;
    set(&dict, "rating", video.rating.map(decimal))?;
    set(&dict, "view_count", video.view_count)?;
    set(
        &dict,
        "publication_date",
        optional_datetime(py, video.publication_date.as_ref())?,
    )?;
    set(&dict, "family_friendly", video.family_friendly)?;
    set(
        &dict,
        "restriction",
        video
            .restriction
            .as_ref()
            .map(|l| listed_dict(py, l))
            .transpose()?,
    )?;
    set(
        &dict,
        "platform",
        video
            .platform
            .as_ref()
            .map(|l| listed_dict(py, l))
            .transpose()?,
    )?;
    set(&dict, "requires_subscription", video.requires_subscription)?;
    set(&dict, "uploader", video.uploader.as_deref())?;
    set(&dict, "uploader_info", url(&video.uploader_info))?;
    set(&dict, "live", video.live)?;
    if !video.tags.is_empty() {
        dict.set_item("tags", &video.tags)?;
    }
    Ok(dict)
}

/// A child sitemap listed by a sitemap index.
#[pyclass(frozen, eq, module = "sitemapd._native")]
#[derive(PartialEq)]
pub(crate) struct SitemapRef(pub(crate) parser::SitemapRef);

#[pymethods]
impl SitemapRef {
    /// The child sitemap's normalised URL.
    #[getter]
    fn loc(&self) -> &str {
        self.0.loc.as_str()
    }

    /// The index's `<lastmod>` for it, as an aware UTC `datetime`.
    #[getter]
    fn lastmod<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        optional_datetime(py, self.0.lastmod.as_ref())
    }

    /// How precisely the index wrote `lastmod`.
    #[getter]
    fn lastmod_precision(&self) -> Option<&'static str> {
        self.0.lastmod.map(|l| l.precision.as_str())
    }

    fn __repr__(&self) -> String {
        format!("SitemapRef(loc={:?})", self.0.loc.as_str())
    }
}

/// Something dropped, repaired or wrong in a document, with the protocol
/// rule it concerns (the ids of sitemapd's SPEC, e.g. `X7`) and where.
#[pyclass(frozen, eq, module = "sitemapd._native")]
#[derive(PartialEq)]
pub(crate) struct Diagnostic(pub(crate) parser::Diagnostic);

#[pymethods]
impl Diagnostic {
    /// The rule id, e.g. `X7`.
    #[getter]
    fn rule(&self) -> &'static str {
        self.0.rule.id()
    }

    /// `warning` (repaired or dropped) or `error` (reading stopped).
    #[getter]
    fn severity(&self) -> String {
        self.0.severity.to_string()
    }

    /// 1-based line; 0 when unknown.
    #[getter]
    fn line(&self) -> u64 {
        self.0.position.line
    }

    /// 1-based column, in bytes of the UTF-8 text.
    #[getter]
    fn column(&self) -> u64 {
        self.0.position.column
    }

    /// What happened, for humans.
    #[getter]
    fn message(&self) -> &str {
        &self.0.message
    }

    fn __str__(&self) -> String {
        self.0.to_string()
    }

    fn __repr__(&self) -> String {
        format!(
            "Diagnostic(rule={:?}, severity={:?}, line={}, column={}, message={:?})",
            self.0.rule.id(),
            self.0.severity.to_string(),
            self.0.position.line,
            self.0.position.column,
            self.0.message
        )
    }
}

/// Totals of one parse.
#[pyclass(frozen, get_all, module = "sitemapd._native")]
pub(crate) struct Summary {
    /// `urlset`, `sitemapindex`, `text`, `rss`, `atom`…; `None` when the
    /// input is not a sitemap at all.
    format: Option<&'static str>,
    /// URL entries yielded.
    urls: u64,
    /// Child sitemaps yielded.
    sitemaps: u64,
    /// Bytes of decoded text read.
    bytes: u64,
    /// gzip layers removed.
    gzip_layers: u8,
    /// The encoding the document was decoded from.
    encoding: &'static str,
    /// Read to its end without an error or limit.
    complete: bool,
    /// Strict mode rejected the document: discard what it yielded.
    rejected: bool,
    /// Diagnostics per rule id.
    diagnostics: BTreeMap<&'static str, u64>,
    /// Entries dropped by the scope rule, per reason.
    out_of_scope: BTreeMap<&'static str, u64>,
}

impl From<&parser::Summary> for Summary {
    fn from(s: &parser::Summary) -> Self {
        Self {
            format: s.format.map(|f| f.as_str()),
            urls: s.urls,
            sitemaps: s.sitemaps,
            bytes: s.bytes,
            gzip_layers: s.gzip_layers,
            encoding: s.encoding,
            complete: s.complete,
            rejected: s.rejected,
            diagnostics: s.diagnostics.iter().map(|(r, n)| (r.id(), *n)).collect(),
            out_of_scope: s
                .out_of_scope
                .iter()
                .map(|(r, n)| (r.as_str(), *n))
                .collect(),
        }
    }
}

#[pymethods]
impl Summary {
    fn __repr__(&self) -> String {
        format!(
            "Summary(format={:?}, urls={}, sitemaps={}, complete={}, diagnostics={:?})",
            self.format, self.urls, self.sitemaps, self.complete, self.diagnostics
        )
    }
}
