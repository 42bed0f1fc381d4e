//! How entries and diagnostics are written: the JSON Lines / CSV contract on
//! stdout, diagnostics and the summary line on stderr.

use std::collections::HashMap;
use std::io::{self, Write};

use anyhow::Result;
use serde::Serialize;
use sitemapd_parser::{Diagnostic, Event, Rule, Summary};

use crate::cli::{DiagnosticFormat, EntryFormat};

/// Whether `e` is a closed stdout (`sitemapd parse … | head`).
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    let pipe = io::ErrorKind::BrokenPipe;
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == pipe)
            || c.downcast_ref::<serde_json::Error>()
                .is_some_and(|j| j.io_error_kind() == Some(pipe))
            || c.downcast_ref::<csv::Error>()
                .is_some_and(|c| matches!(c.kind(), csv::ErrorKind::Io(io) if io.kind() == pipe))
    })
}

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
pub enum EntrySink<W: Write> {
    /// JSON Lines.
    Jsonl(io::BufWriter<W>),
    /// CSV.
    Csv(Box<csv::Writer<W>>),
}

impl<W: Write> EntrySink<W> {
    /// A sink writing `format` to `w` (the CSV header at once).
    pub fn new(w: W, format: EntryFormat) -> Result<Self> {
        Ok(match format {
            EntryFormat::Jsonl => Self::Jsonl(io::BufWriter::with_capacity(64 * 1024, w)),
            EntryFormat::Csv => {
                let mut c = csv::Writer::from_writer(w);
                c.write_record(CSV_HEADER)?;
                Self::Csv(Box::new(c))
            }
        })
    }

    /// Writes one entry (diagnostics are not entries and are ignored here).
    pub fn write(&mut self, event: &Event) -> Result<()> {
        match self {
            Self::Jsonl(w) => {
                serde_json::to_writer(&mut *w, event)?;
                w.write_all(b"\n")?;
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
                };
                c.write_record(&record)?;
            }
        }
        Ok(())
    }

    /// Flushes.
    pub fn finish(self) -> Result<()> {
        match self {
            Self::Jsonl(mut w) => w.flush()?,
            Self::Csv(mut c) => c.flush()?,
        }
        Ok(())
    }
}

/// Writes diagnostics and the summary to stderr.
pub struct DiagnosticSink {
    input: String,
    format: DiagnosticFormat,
    per_rule_cap: u64,
    printed: HashMap<Rule, u64>,
    err: io::BufWriter<io::Stderr>,
}

impl DiagnosticSink {
    /// A sink labelling diagnostics with `input`.
    pub fn new(input: String, format: DiagnosticFormat, per_rule_cap: u64) -> Self {
        Self {
            input,
            format,
            per_rule_cap,
            printed: HashMap::new(),
            err: io::BufWriter::new(io::stderr()),
        }
    }

    /// Writes one diagnostic, unless its rule has reached the cap.
    pub fn write(&mut self, d: &Diagnostic) -> Result<()> {
        let n = self.printed.entry(d.rule).or_default();
        *n += 1;
        if self.per_rule_cap > 0 && *n > self.per_rule_cap {
            return Ok(());
        }
        match self.format {
            DiagnosticFormat::Text => writeln!(
                self.err,
                "{}[{}] {}:{}:{}: {}",
                d.severity, d.rule, self.input, d.position.line, d.position.column, d.message
            )?,
            DiagnosticFormat::Json => self.json_line("diagnostic", d)?,
        }
        Ok(())
    }

    /// Writes `{"type":kind,"input":…,…fields of value}` and a newline.
    fn json_line<T: Serialize>(&mut self, kind: &'static str, value: &T) -> Result<()> {
        #[derive(Serialize)]
        struct Tagged<'a, T> {
            #[serde(rename = "type")]
            kind: &'static str,
            input: &'a str,
            #[serde(flatten)]
            value: &'a T,
        }
        let line = Tagged {
            kind,
            input: &self.input,
            value,
        };
        serde_json::to_writer(&mut self.err, &line)?;
        self.err.write_all(b"\n")?;
        Ok(())
    }

    /// Writes the summary line and flushes.
    pub fn summary(&mut self, s: &Summary) -> Result<()> {
        match self.format {
            DiagnosticFormat::Text => {
                let format = s.format.map_or("none", |f| f.as_str());
                write!(
                    self.err,
                    "summary: {}: format={format} entries={} (urls={} sitemaps={}) bytes={} gzip_layers={} encoding={} complete={}",
                    self.input,
                    s.entries(),
                    s.urls,
                    s.sitemaps,
                    s.bytes,
                    s.gzip_layers,
                    s.encoding,
                    s.complete
                )?;
                if s.rejected {
                    write!(self.err, " rejected=true")?;
                }
                let rules: Vec<String> = s
                    .diagnostics
                    .iter()
                    .map(|(r, n)| format!("{r}={n}"))
                    .collect();
                write!(
                    self.err,
                    " diagnostics={}",
                    s.diagnostics.values().sum::<u64>()
                )?;
                if !rules.is_empty() {
                    write!(self.err, " [{}]", rules.join(" "))?;
                }
                if !s.out_of_scope.is_empty() {
                    let reasons: Vec<String> = s
                        .out_of_scope
                        .iter()
                        .map(|(r, n)| format!("{r}={n}"))
                        .collect();
                    write!(self.err, " out_of_scope=[{}]", reasons.join(" "))?;
                }
                writeln!(self.err)?;
                let hidden: u64 = self
                    .printed
                    .values()
                    .map(|n| n.saturating_sub(self.per_rule_cap))
                    .sum();
                if self.per_rule_cap > 0 && hidden > 0 {
                    writeln!(
                        self.err,
                        "note: {hidden} diagnostics not shown (more than {} per rule; --max-diagnostics-per-rule 0 shows all)",
                        self.per_rule_cap
                    )?;
                }
            }
            DiagnosticFormat::Json => self.json_line("summary", s)?,
        }
        self.err.flush()?;
        Ok(())
    }
}
