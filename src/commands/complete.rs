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

/// Runs `complete`: every line is applied or reported; exit 1 if any failed.
/// Lines are applied in batches of [`BATCH`], each one atomic write.
pub fn run(args: &CompleteArgs) -> Result<ExitCode> {
    let store = args.store.open_existing(StoreUse::Complete)?;
    let (mut done, mut failed) = (0u64, 0u64);
    let mut input = io::stdin().lock();
    let mut raw = Vec::new();
    // (line number, URL, completion) waiting for the next write.
    let mut batch = Vec::with_capacity(BATCH);
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
            Ok(())
        }
        .and_then(|()| Ok(serde_json::from_str::<Reported>(&line)?))
        .and_then(Reported::completion);
        match parsed {
            Ok((url, c)) => {
                batch.push((n, url, c));
                if batch.len() == BATCH {
                    let (d, f) = apply(&store, &mut batch)?;
                    (done, failed) = (done + d, failed + f);
                }
            }
            Err(e) => {
                failed += 1;
                eprintln!("error: line {n}: {e:#}");
            }
        }
    }
    let (d, f) = apply(&store, &mut batch)?;
    (done, failed) = (done + d, failed + f);
    store.flush()?;
    eprintln!("complete: {done} recorded, {failed} failed");
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Completes `batch` (emptied) in one write; reports each URL the store
/// does not hold with its line. Returns (recorded, failed).
fn apply(store: &Store, batch: &mut Vec<(usize, String, Completion)>) -> Result<(u64, u64)> {
    let unknown: HashSet<String> = store
        .complete_all(
            batch.iter().map(|(_, url, c)| (url.as_str(), c)),
            sitemapd_scheduler::Timestamp::now(),
        )?
        .into_iter()
        .collect();
    let (mut done, mut failed) = (0, 0);
    for (line, url, _) in batch.drain(..) {
        if unknown.contains(&url) {
            failed += 1;
            eprintln!("error: line {line}: {}", StoreError::UnknownUrl(url));
        } else {
            done += 1;
        }
    }
    Ok((done, failed))
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
