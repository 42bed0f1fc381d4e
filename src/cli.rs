//! Command-line interface definitions.

use clap::{Args, Parser, Subcommand, ValueEnum};
use sitemapd_parser::options::{DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES};
use sitemapd_parser::{NormUrl, ScopeMode};

/// Discover, parse, store and schedule sitemaps.
#[derive(Debug, Parser)]
#[command(name = "sitemapd", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Parse one sitemap, index, feed or text list; entries as JSON Lines or CSV on stdout,
    /// diagnostics on stderr. Exit 0 when it was read (even partly), 1 when it is not a sitemap.
    Parse(ParseArgs),
}

/// Entry output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EntryFormat {
    /// One JSON object per line.
    Jsonl,
    /// CSV with a header row.
    Csv,
}

/// Diagnostic output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiagnosticFormat {
    /// `warning[X7] INPUT:LINE:COL: message`
    Text,
    /// One JSON object per line.
    Json,
}

/// `sitemapd parse`.
#[derive(Debug, Args)]
pub struct ParseArgs {
    /// The document: a file path, or `-` for stdin.
    pub input: String,
    /// The document's own URL (base for relative locs, and the scope rule).
    #[arg(long, value_parser = parse_url)]
    pub url: Option<NormUrl>,
    /// Which URLs the document may list: directory (the protocol), host, or none.
    #[arg(long, default_value = "directory", value_parser = parse_scope)]
    pub scope: ScopeMode,
    /// Drop or reject what the protocol does not allow, instead of repairing it.
    #[arg(long)]
    pub strict: bool,
    /// Entry output format.
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: EntryFormat,
    /// Byte limit after decompression.
    #[arg(long, default_value_t = DEFAULT_MAX_BYTES)]
    pub max_bytes: u64,
    /// Entry limit.
    #[arg(long, default_value_t = DEFAULT_MAX_ENTRIES)]
    pub max_entries: u64,
    /// Diagnostic output format (stderr).
    #[arg(long, value_enum, default_value = "text")]
    pub diagnostics: DiagnosticFormat,
    /// Print at most this many diagnostics per rule (0: all); the summary counts them all.
    #[arg(long, default_value_t = 100)]
    pub max_diagnostics_per_rule: u64,
}

fn parse_scope(s: &str) -> Result<ScopeMode, String> {
    s.parse()
}

fn parse_url(s: &str) -> Result<NormUrl, String> {
    NormUrl::parse(s).map_err(|e| format!("not an http(s) URL: {e}"))
}
