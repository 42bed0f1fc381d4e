//! `sitemapd parse INPUT`: one document (file, stdin or URL) to JSON Lines
//! or CSV.

use std::fs::File;
use std::io::{self, Read};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use futures_util::StreamExt;
use sitemapd_discovery::{Fetcher, Validators};
use sitemapd_parser::{Event, NormUrl, Parser, Summary, parse_async};

use super::{directory_given, is_url};
use crate::cli::ParseArgs;
use crate::output::{DiagnosticSink, EntrySink};
use crate::settings::runtime;

/// Runs the command.
pub(crate) fn run(args: &ParseArgs) -> Result<ExitCode> {
    let mut entries = EntrySink::new(io::stdout().lock(), args.format)?;
    let mut diagnostics = DiagnosticSink::new(args.diagnostics, args.max_diagnostics_per_rule);
    let label = if args.input == "-" {
        "<stdin>"
    } else {
        args.input.as_str()
    };
    let mut write = |event: Event| match event {
        Event::Diagnostic(d) => diagnostics.write(label, &d),
        other => entries.write(&other),
    };
    let summary = if is_url(&args.input) {
        fetch_and_parse(args, &mut write)?
    } else {
        let input: Box<dyn Read + Send> = if args.input == "-" {
            Box::new(io::stdin())
        } else {
            Box::new(open(&args.input)?)
        };
        let mut parser = Parser::new(input, args.settings.parse.options(args.url.clone()));
        for event in parser.by_ref() {
            write(event)?;
        }
        parser.summary().clone()
    };
    entries.finish()?;
    diagnostics.summary(label, &summary)?;
    Ok(if summary.format.is_some() && !summary.rejected {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Opens the file `input`; a missing one that reads as a URL without its
/// scheme (`example.com/sitemap.xml`) suggests the URL.
fn open(input: &str) -> Result<File> {
    if std::path::Path::new(input).is_dir() {
        return Err(directory_given(input));
    }
    match File::open(input) {
        Ok(file) => Ok(file),
        Err(e) if e.kind() == io::ErrorKind::NotFound => match url_meant(input) {
            Some(url) => {
                bail!("cannot open {input}: no such file; to fetch it, give the URL: {url}")
            }
            None => Err(e).with_context(|| format!("cannot open {input}")),
        },
        Err(e) => Err(e).with_context(|| format!("cannot open {input}")),
    }
}

/// The URL `input` names, when it reads as one without its scheme: a host
/// with a dot or a port, then a path (`example.com/sitemap.xml`).
fn url_meant(input: &str) -> Option<NormUrl> {
    let (host, _) = input.split_once('/')?;
    if host.is_empty() || !host.contains(['.', ':']) || host.starts_with('.') {
        return None;
    }
    NormUrl::parse(&format!("https://{input}")).ok()
}

/// Fetches the document and parses it as it streams in.
fn fetch_and_parse(
    args: &ParseArgs,
    write: &mut impl FnMut(Event) -> Result<()>,
) -> Result<Summary> {
    let url = NormUrl::parse(&args.input).context("not an http(s) URL")?;
    let fetcher = Fetcher::new(args.settings.fetch.config())?;
    runtime()?.block_on(async {
        let fetched = fetcher
            .get(&url, &Validators::default())
            .await
            .with_context(|| format!("cannot fetch {url}"))?;
        if !fetched.is_success() {
            bail!("cannot fetch {url}: HTTP {}", fetched.status);
        }
        let document = args.url.clone().unwrap_or_else(|| fetched.url.clone());
        let progress = fetched.progress();
        let mut events = parse_async(
            fetched.into_body(),
            args.settings.parse.options(Some(document)),
        );
        while let Some(event) = events.next().await {
            write(event)?;
        }
        if let Some(cut) = progress.error() {
            tracing::warn!(%url, error = %cut, "the transfer was cut; entries before it were kept");
        }
        Ok(events.summary().cloned().unwrap_or_default())
    })
}
