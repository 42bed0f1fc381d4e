//! `sitemapd robots INPUT`: the sitemaps a robots.txt declares.

use std::io::{self, Read, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde::Serialize;
use sitemapd_discovery::Fetcher;
use sitemapd_discovery::robots::{MAX_ROBOTS_BYTES, RobotsOutcome, RobotsTxt, fetch_robots};
use sitemapd_parser::NormUrl;

use super::is_url;
use crate::cli::{DiagnosticFormat, RobotsArgs};
use crate::output::{DiagnosticSink, robots_unreachable};
use crate::settings::runtime;

/// Runs the command.
pub(crate) fn run(args: &RobotsArgs) -> Result<ExitCode> {
    let format = if args.json {
        DiagnosticFormat::Json
    } else {
        DiagnosticFormat::Text
    };
    let mut diagnostics = DiagnosticSink::new(format, 0);
    let label = args.input.as_str();
    let robots = if is_url(&args.input) {
        match fetch(args)? {
            Fetched::Parsed(robots) => robots,
            Fetched::Unavailable(status) => {
                diagnostics.text(&format!(
                    "{label}: HTTP {status}: no robots.txt (RFC 9309: no rules, no sitemaps)"
                ))?;
                return Ok(ExitCode::SUCCESS);
            }
            Fetched::Unreachable(reason) => {
                diagnostics.text(&format!("{label}: {}", robots_unreachable(&reason)))?;
                return Ok(ExitCode::FAILURE);
            }
        }
    } else {
        let mut body = Vec::new();
        let cap = MAX_ROBOTS_BYTES as u64 + 1;
        if args.input == "-" {
            io::stdin().take(cap).read_to_end(&mut body)?;
        } else {
            std::fs::File::open(&args.input)
                .with_context(|| format!("cannot open {}", args.input))?
                .take(cap)
                .read_to_end(&mut body)
                .with_context(|| format!("cannot read {}", args.input))?;
        }
        RobotsTxt::parse(&body, args.url.as_ref(), &args.settings.fetch.user_agent)
    };

    let mut out = io::BufWriter::new(io::stdout().lock());
    for sitemap in &robots.sitemaps {
        if args.json {
            #[derive(Serialize)]
            struct Line<'a> {
                #[serde(rename = "type")]
                kind: &'static str,
                url: &'a str,
                line: u64,
            }
            serde_json::to_writer(
                &mut out,
                &Line {
                    kind: "sitemap",
                    url: sitemap.url.as_str(),
                    line: sitemap.line,
                },
            )?;
            out.write_all(b"\n")?;
        } else {
            writeln!(out, "{}", sitemap.url)?;
        }
    }
    out.flush()?;
    for d in &robots.diagnostics {
        diagnostics.write(label, d)?;
    }
    #[derive(Serialize)]
    struct Summary {
        sitemaps: usize,
        records: u64,
        crawl_delay: Option<f64>,
        diagnostics: usize,
        truncated: bool,
    }
    let summary = Summary {
        sitemaps: robots.sitemaps.len(),
        records: robots.sitemap_records,
        crawl_delay: robots.crawl_delay,
        diagnostics: robots.diagnostics.len(),
        truncated: robots.truncated,
    };
    if args.json {
        diagnostics.json_line("summary", label, &summary)?;
    } else {
        diagnostics.text(&format!(
            "summary: {label}: sitemaps={} records={} crawl_delay={} diagnostics={}{}",
            summary.sitemaps,
            summary.records,
            summary
                .crawl_delay
                .map_or("none".to_string(), |d| d.to_string()),
            summary.diagnostics,
            if summary.truncated {
                " truncated=true"
            } else {
                ""
            }
        ))?;
    }
    diagnostics.flush()?;
    Ok(ExitCode::SUCCESS)
}

enum Fetched {
    Parsed(RobotsTxt),
    Unavailable(String),
    Unreachable(String),
}

/// Fetches a robots.txt with RFC 9309 semantics (the fetch the walk uses
/// too, so both read it the same way).
fn fetch(args: &RobotsArgs) -> Result<Fetched> {
    let url = NormUrl::parse(&args.input).context("not an http(s) URL")?;
    let fetcher = Fetcher::new(args.settings.fetch.config())?;
    let report = runtime()?.block_on(fetch_robots(&fetcher, &url));
    Ok(match report.outcome {
        RobotsOutcome::Parsed { robots } => Fetched::Parsed(robots.as_ref().clone()),
        RobotsOutcome::Unavailable => {
            Fetched::Unavailable(report.status.map_or("-".into(), |s| s.to_string()))
        }
        RobotsOutcome::Unreachable { reason } => Fetched::Unreachable(reason),
    })
}
