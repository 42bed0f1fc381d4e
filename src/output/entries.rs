//! URL entries and child-sitemap references on stdout: JSON Lines or CSV.

use std::io::{self, Write};

use anyhow::Result;
use serde::Serialize;
use sitemapd_parser::{Event, UrlEntry};

use super::json_lines;
use crate::cli::EntryFormat;

const CSV_HEADER: [&str; 10] = [
    "type",
    "loc",
    "lastmod",
    "lastmod_precision",
    "changefreq",
    "priority",
    "images",
    "videos",
    "news",
    "alternates",
];

/// Writes URL entries and child-sitemap references.
pub(crate) enum EntrySink<W: Write> {
    /// JSON Lines, and the line being written (reused).
    Jsonl(io::BufWriter<W>, Vec<u8>),
    /// CSV.
    Csv(Box<csv::Writer<W>>),
}

impl<W: Write> EntrySink<W> {
    /// A sink writing `format` to `w` (the CSV header at once).
    pub(crate) fn new(w: W, format: EntryFormat) -> Result<Self> {
        Ok(match format {
            EntryFormat::Jsonl => Self::Jsonl(
                io::BufWriter::with_capacity(64 * 1024, w),
                Vec::with_capacity(512),
            ),
            EntryFormat::Csv => {
                let mut c = csv::Writer::from_writer(w);
                c.write_record(CSV_HEADER)?;
                Self::Csv(Box::new(c))
            }
        })
    }

    /// Writes one entry (diagnostics are not entries and are ignored here).
    pub(crate) fn write(&mut self, event: &Event) -> Result<()> {
        match self {
            Self::Jsonl(w, line) => {
                line.clear();
                if json_lines::write_entry(line, event) {
                    w.write_all(line)?;
                } else {
                    serde_json::to_writer(&mut *w, event)?;
                    w.write_all(b"\n")?;
                }
            }
            Self::Csv(c) => {
                let opt = |o: Option<String>| o.unwrap_or_default();
                let record: [String; 10] = match event {
                    Event::Url(u) => [
                        "url".into(),
                        u.loc.to_string(),
                        opt(u.lastmod.map(|l| l.to_string())),
                        opt(u.lastmod.map(|l| l.precision.as_str().into())),
                        opt(u.changefreq.map(|c| c.as_str().into())),
                        opt(u.priority.map(|p| p.to_string())),
                        u.images.len().to_string(),
                        u.videos.len().to_string(),
                        u8::from(u.news.is_some()).to_string(),
                        u.alternates.len().to_string(),
                    ],
                    Event::Sitemap(s) => [
                        "sitemap".into(),
                        s.loc.to_string(),
                        opt(s.lastmod.map(|l| l.to_string())),
                        opt(s.lastmod.map(|l| l.precision.as_str().into())),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                        String::new(),
                    ],
                    Event::Diagnostic(_) => return Ok(()),
                    _ => return Ok(()),
                };
                c.write_record(&record)?;
            }
        }
        Ok(())
    }

    /// Writes one URL entry with the sitemap it came from (`discover --entries`):
    /// `{"type":"url","source":…,…}` in JSON Lines, the plain row in CSV.
    pub(crate) fn write_sourced(&mut self, source: &str, entry: &UrlEntry) -> Result<()> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename = "url")]
        struct Sourced<'a> {
            source: &'a str,
            #[serde(flatten)]
            entry: &'a UrlEntry,
        }
        match self {
            Self::Jsonl(w, _) => {
                serde_json::to_writer(&mut *w, &Sourced { source, entry })?;
                w.write_all(b"\n")?;
                Ok(())
            }
            Self::Csv(_) => self.write(&Event::Url(entry.clone())),
        }
    }

    /// Writes any serialisable value as one JSON line (JSON Lines only).
    pub(crate) fn write_json<T: Serialize>(&mut self, value: &T) -> Result<()> {
        if let Self::Jsonl(w, _) = self {
            serde_json::to_writer(&mut *w, value)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Flushes.
    pub(crate) fn finish(self) -> Result<()> {
        match self {
            Self::Jsonl(mut w, _) => w.flush()?,
            Self::Csv(mut c) => c.flush()?,
        }
        Ok(())
    }
}
