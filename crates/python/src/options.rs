//! The keyword arguments every parsing call shares, as `ParseOptions`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use sitemapd_parser::options::{DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES};
use sitemapd_parser::{NormUrl, ParseOptions, Parser, ScopeMode, Strictness};

// The Python signatures spell the defaults out (a text signature shows
// literals only): they must stay the parser's and the store's.
const _: () = assert!(DEFAULT_MAX_BYTES == 52_428_800 && DEFAULT_MAX_ENTRIES == 50_000);
const _: () = assert!(sitemapd_scheduler::LeaseRequest::DEFAULT_PER_HOST == 10);

/// The parse keywords as Python passed them.
pub(crate) struct ParseArgs<'a> {
    pub(crate) url: Option<&'a str>,
    pub(crate) scope: &'a str,
    pub(crate) strict: bool,
    pub(crate) max_bytes: u64,
    pub(crate) max_entries: u64,
    pub(crate) fast_lane: bool,
}

impl Default for ParseArgs<'_> {
    fn default() -> Self {
        Self::new(
            None,
            "directory",
            false,
            DEFAULT_MAX_BYTES,
            DEFAULT_MAX_ENTRIES,
        )
    }
}

impl<'a> ParseArgs<'a> {
    /// The keywords every parsing call takes (the fast lane on).
    pub(crate) fn new(
        url: Option<&'a str>,
        scope: &'a str,
        strict: bool,
        max_bytes: u64,
        max_entries: u64,
    ) -> Self {
        Self {
            url,
            scope,
            strict,
            max_bytes,
            max_entries,
            fast_lane: true,
        }
    }

    /// A parser of `src` (see [`crate::source::open`]) with these options.
    pub(crate) fn parser(&self, src: &Bound<'_, PyAny>) -> PyResult<Parser> {
        Ok(Parser::new(crate::source::open(src)?, self.options()?))
    }

    /// The parser's options, or a `ValueError` naming the bad argument.
    pub(crate) fn options(&self) -> PyResult<ParseOptions> {
        let document_url = self
            .url
            .map(|u| {
                NormUrl::parse(u)
                    .map_err(|e| PyValueError::new_err(format!("url {u:?} is not usable: {e}")))
            })
            .transpose()?;
        let scope: ScopeMode = self.scope.parse().map_err(PyValueError::new_err)?;
        if self.max_bytes == 0 || self.max_entries == 0 {
            return Err(PyValueError::new_err(
                "max_bytes and max_entries must be at least 1",
            ));
        }
        Ok(ParseOptions {
            document_url,
            scope,
            strictness: if self.strict {
                Strictness::Strict
            } else {
                Strictness::Lenient
            },
            max_bytes: self.max_bytes,
            max_entries: self.max_entries,
            fast_lane: self.fast_lane,
            ..ParseOptions::default()
        })
    }
}
