//! Diagnostics and summaries on stderr, text or JSON Lines, capped per rule.

use std::collections::HashMap;
use std::io::{self, Write};

use anyhow::Result;
use serde::Serialize;
use sitemapd_discovery::WalkEvent;
use sitemapd_parser::{Diagnostic, Rule, Summary};

use crate::cli::DiagnosticFormat;

/// Writes diagnostics and the summary to stderr.
pub(crate) struct DiagnosticSink {
    format: DiagnosticFormat,
    per_rule_cap: u64,
    printed: HashMap<Rule, u64>,
    err: io::BufWriter<io::Stderr>,
}

impl DiagnosticSink {
    /// A sink writing `format`, at most `per_rule_cap` diagnostics per rule (0: all).
    pub(crate) fn new(format: DiagnosticFormat, per_rule_cap: u64) -> Self {
        Self {
            format,
            per_rule_cap,
            printed: HashMap::new(),
            err: io::BufWriter::new(io::stderr()),
        }
    }

    /// Writes one diagnostic about `input`, unless its rule has reached the cap.
    pub(crate) fn write(&mut self, input: &str, d: &Diagnostic) -> Result<()> {
        let n = self.printed.entry(d.rule).or_default();
        *n += 1;
        if self.per_rule_cap > 0 && *n > self.per_rule_cap {
            return Ok(());
        }
        match self.format {
            DiagnosticFormat::Text => writeln!(
                self.err,
                "{}[{}] {}:{}:{}: {}",
                d.severity, d.rule, input, d.position.line, d.position.column, d.message
            )?,
            DiagnosticFormat::Json => self.json_line("diagnostic", input, d)?,
        }
        Ok(())
    }

    /// Writes the diagnostics a walk event carries (a sitemap's, a
    /// robots.txt's), as `discover` and `ingest` show them.
    pub(crate) fn walk_event(&mut self, event: &WalkEvent) -> Result<()> {
        match event {
            WalkEvent::Diagnostic {
                sitemap,
                diagnostic,
            } => self.write(sitemap.as_str(), diagnostic),
            WalkEvent::Robots(report) => {
                for d in &report.diagnostics {
                    self.write(report.url.as_str(), d)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Whether diagnostics are written as JSON.
    pub(crate) fn is_json(&self) -> bool {
        self.format == DiagnosticFormat::Json
    }

    /// Writes a line of text.
    pub(crate) fn text(&mut self, line: &str) -> Result<()> {
        writeln!(self.err, "{line}")?;
        Ok(())
    }

    /// Writes `{"type":kind,"input":…,…fields of value}` and a newline.
    pub(crate) fn json_line<T: Serialize>(
        &mut self,
        kind: &'static str,
        input: &str,
        value: &T,
    ) -> Result<()> {
        #[derive(Serialize)]
        struct Tagged<'a, T> {
            #[serde(rename = "type")]
            kind: &'static str,
            input: &'a str,
            #[serde(flatten)]
            value: &'a T,
        }
        let line = Tagged { kind, input, value };
        serde_json::to_writer(&mut self.err, &line)?;
        self.err.write_all(b"\n")?;
        Ok(())
    }

    /// Writes the summary line of `input` and flushes.
    pub(crate) fn summary(&mut self, input: &str, s: &Summary) -> Result<()> {
        match self.format {
            DiagnosticFormat::Text => {
                let format = s.format.map_or("none", |f| f.as_str());
                write!(
                    self.err,
                    "summary: {}: format={format} entries={} (urls={} sitemaps={}) bytes={} gzip_layers={} encoding={} complete={}",
                    input,
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
                self.hidden_note()?;
            }
            DiagnosticFormat::Json => self.json_line("summary", input, s)?,
        }
        self.flush()
    }

    /// Writes the note on diagnostics hidden by the cap, if any.
    pub(crate) fn hidden_note(&mut self) -> Result<()> {
        let hidden: u64 = self
            .printed
            .values()
            .map(|n| n.saturating_sub(self.per_rule_cap))
            .sum();
        if self.per_rule_cap > 0 && hidden > 0 && !self.is_json() {
            writeln!(
                self.err,
                "note: {hidden} diagnostics not shown (more than {} per rule; --max-diagnostics-per-rule 0 shows all)",
                self.per_rule_cap
            )?;
        }
        Ok(())
    }

    /// Flushes stderr.
    pub(crate) fn flush(&mut self) -> Result<()> {
        self.err.flush()?;
        Ok(())
    }
}
