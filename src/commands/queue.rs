//! `sitemapd queue` and `sitemapd complete`: the crawl queue from a shell.

use std::io::{self, BufRead, Write};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use sitemapd_scheduler::{Completion, Outcome};

use crate::cli::{CompleteArgs, QueueArgs};
use crate::settings::now;

/// Runs `queue`.
pub fn run_queue(args: &QueueArgs) -> Result<ExitCode> {
    let store = args.store.open(None)?;
    let now = now();
    let due = match args.lease {
        Some(ttl) if ttl > 0 => store.lease(args.n, now, ttl, args.per_host)?,
        Some(_) => bail!("--lease takes a positive number of seconds"),
        None => store.peek(args.n, now)?,
    };
    let mut out = io::BufWriter::new(io::stdout().lock());
    for item in &due {
        serde_json::to_writer(&mut out, item)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    store.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// One line of `complete`'s input.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    url: String,
    outcome: String,
    #[serde(default)]
    status: Option<u16>,
    #[serde(default)]
    to: Option<String>,
    #[serde(default)]
    etag: Option<String>,
    #[serde(default)]
    last_modified: Option<String>,
    /// The lease id from `queue --lease`: accepted, not required.
    #[serde(default, rename = "lease")]
    _lease: Option<u64>,
}

impl Line {
    fn completion(self) -> Result<(String, Completion)> {
        let outcome = match self.outcome.as_str() {
            "changed" => Outcome::Changed,
            "not-modified" => Outcome::NotModified,
            "gone" => Outcome::Gone,
            "error" => Outcome::Error(self.status.unwrap_or(0)),
            "redirected" => Outcome::Redirected(self.to.context("\"redirected\" needs \"to\"")?),
            other => {
                bail!("unknown outcome {other:?} (changed, not-modified, gone, error, redirected)")
            }
        };
        let url = sitemapd_parser::NormUrl::parse(&self.url)
            .with_context(|| format!("{:?} is not an http(s) URL", self.url))?
            .into_string();
        Ok((
            url,
            Completion {
                outcome,
                etag: self.etag,
                last_modified: self.last_modified,
            },
        ))
    }
}

/// Runs `complete`: every line is applied or reported; exit 1 if any failed.
pub fn run_complete(args: &CompleteArgs) -> Result<ExitCode> {
    let store = args.store.open(None)?;
    let (mut done, mut failed) = (0u64, 0u64);
    for (n, line) in io::stdin().lock().lines().enumerate() {
        let line = line.context("cannot read stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        let result = serde_json::from_str::<Line>(&line)
            .map_err(anyhow::Error::from)
            .and_then(Line::completion)
            .and_then(|(url, c)| Ok(store.complete(&url, &c, now())?));
        match result {
            Ok(()) => done += 1,
            Err(e) => {
                failed += 1;
                eprintln!("error: line {}: {e:#}", n + 1);
            }
        }
    }
    store.flush()?;
    eprintln!("complete: {done} recorded, {failed} failed");
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
