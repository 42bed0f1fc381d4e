//! `sitemapd complete`: fetch outcomes a crawler reports, one JSON line
//! each on stdin, recorded in the store.

use std::collections::HashSet;
use std::io::{self, BufRead, Read};
use std::process::ExitCode;

use anyhow::{Context, Result};
use sitemapd_scheduler::{Completion, Store, StoreError};

use crate::cli::CompleteArgs;
use crate::outcome_report::Reported;
use crate::settings::StoreUse;

/// The longest input line `complete` reads.
const MAX_LINE: usize = 64 * 1024;

/// Lines applied per store write.
const BATCH: usize = 1000;

/// Runs `complete`: every line is applied or reported, errors in input
/// order; exit 1 if any failed. Lines are applied in batches of [`BATCH`],
/// each one atomic write.
pub(crate) fn run(args: &CompleteArgs) -> Result<ExitCode> {
    let store = args.store.open_existing(StoreUse::Complete)?;
    let mut counts = Counts::default();
    let mut input = io::stdin().lock();
    let mut raw = Vec::new();
    // Each line since the last write: its number and its completion, or why
    // it has none.
    let mut batch: Vec<(usize, Result<(String, Completion)>)> = Vec::with_capacity(BATCH);
    for n in 1.. {
        raw.clear();
        // One line, at most MAX_LINE bytes kept (the rest of a longer line
        // is skipped, not kept).
        let read = (&mut input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut raw)
            .context("cannot read stdin")?;
        if read == 0 {
            break;
        }
        let too_long = raw.len() > MAX_LINE && !raw.ends_with(b"\n");
        if too_long {
            skip_line(&mut input).context("cannot read stdin")?;
        }
        let line = String::from_utf8_lossy(&raw);
        if line.trim().is_empty() {
            continue;
        }
        let parsed = if too_long {
            Err(anyhow::anyhow!("line longer than {MAX_LINE} bytes"))
        } else if std::str::from_utf8(&raw).is_err() {
            Err(anyhow::anyhow!("not UTF-8"))
        } else {
            serde_json::from_str::<Reported>(&line).map_err(not_a_report)
        }
        .and_then(Reported::completion);
        batch.push((n, parsed));
        if batch.len() == BATCH {
            apply(&store, &mut batch, &mut counts)?;
        }
    }
    apply(&store, &mut batch, &mut counts)?;
    store.flush()?;
    eprintln!(
        "complete: {} recorded, {} failed",
        counts.done, counts.failed
    );
    Ok(if counts.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Lines recorded and lines that failed.
#[derive(Default)]
struct Counts {
    done: u64,
    failed: u64,
}

/// Why a line is not a fetch outcome, in the input's terms: serde's text
/// (`expected ident at line 1 column 2`) names what the JSON grammar
/// expected, and a line is always line 1 to it.
fn not_a_report(e: serde_json::Error) -> anyhow::Error {
    use serde_json::error::Category;
    const SHAPE: &str =
        r#"each line is one JSON object such as {"url": "https://…", "outcome": "changed"}"#;
    let column = e.column();
    match e.classify() {
        Category::Syntax | Category::Eof => {
            anyhow::anyhow!("not JSON (at column {column}): {SHAPE}")
        }
        Category::Data => {
            // serde's own words, without its position (given once, here).
            let text = e.to_string();
            let what = text
                .rsplit_once(" at line ")
                .map_or(text.as_str(), |(what, _)| what);
            anyhow::anyhow!("{what} (at column {column}): {SHAPE}")
        }
        Category::Io => anyhow::anyhow!("{e}"),
    }
}

/// Completes the lines of `batch` (emptied) that parsed, in one write, then
/// reports every line that failed (unparsed, or a URL the store does not
/// hold) in input order.
fn apply(
    store: &Store,
    batch: &mut Vec<(usize, Result<(String, Completion)>)>,
    counts: &mut Counts,
) -> Result<()> {
    let unknown: HashSet<String> = store
        .complete_all(
            batch
                .iter()
                .filter_map(|(_, r)| r.as_ref().ok())
                .map(|(url, c)| (url.as_str(), c)),
            sitemapd_scheduler::Timestamp::now(),
        )?
        .into_iter()
        .collect();
    for (line, parsed) in batch.drain(..) {
        let error = match parsed {
            Ok((url, _)) if unknown.contains(&url) => {
                anyhow::Error::new(StoreError::UnknownUrl(url))
            }
            Ok(_) => {
                counts.done += 1;
                continue;
            }
            Err(e) => e,
        };
        counts.failed += 1;
        eprintln!("error: input line {line}: {error:#}");
    }
    Ok(())
}

/// Reads and drops the rest of the current line, keeping nothing.
fn skip_line(input: &mut impl BufRead) -> io::Result<()> {
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                input.consume(i + 1);
                return Ok(());
            }
            None => {
                let n = buf.len();
                input.consume(n);
            }
        }
    }
}
