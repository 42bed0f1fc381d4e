//! `sitemapd queue` and `sitemapd complete`: the crawl queue from a shell.

use std::io::{self, BufRead, Read, Write};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use crate::cli::{CompleteArgs, QueueArgs};
use crate::completion::Reported;
use crate::settings::now;

/// Runs `queue`.
pub fn run_queue(args: &QueueArgs) -> Result<ExitCode> {
    let store = args.store.open_existing()?;
    let now = now();
    let due = match args.lease {
        Some(ttl) if ttl > 0 => store.lease(args.n, now, ttl, args.per_host)?,
        Some(_) => bail!("--lease takes a positive number of seconds"),
        None => store.peek(args.n, now)?,
    };
    // On disk before the crawler sees the leases.
    store.flush()?;
    let mut out = io::BufWriter::new(io::stdout().lock());
    for item in &due {
        serde_json::to_writer(&mut out, item)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The longest input line `complete` reads.
const MAX_LINE: usize = 64 * 1024;

/// Runs `complete`: every line is applied or reported; exit 1 if any failed.
pub fn run_complete(args: &CompleteArgs) -> Result<ExitCode> {
    let store = args.store.open_existing()?;
    let (mut done, mut failed) = (0u64, 0u64);
    let mut input = io::stdin().lock();
    let mut raw = Vec::new();
    for n in 0.. {
        raw.clear();
        // One line, at most MAX_LINE bytes kept (the rest of a longer line
        // is read and dropped).
        let read = (&mut input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut raw)
            .context("cannot read stdin")?;
        if read == 0 {
            break;
        }
        let too_long = raw.len() > MAX_LINE && !raw.ends_with(b"\n");
        if too_long {
            let mut rest = Vec::new();
            input
                .read_until(b'\n', &mut rest)
                .context("cannot read stdin")?;
        }
        let line = String::from_utf8_lossy(&raw);
        if line.trim().is_empty() {
            continue;
        }
        let result = if too_long {
            Err(anyhow::anyhow!("line longer than {MAX_LINE} bytes"))
        } else if std::str::from_utf8(&raw).is_err() {
            Err(anyhow::anyhow!("not UTF-8"))
        } else {
            Ok(())
        }
        .and_then(|()| Ok(serde_json::from_str::<Reported>(&line)?))
        .and_then(Reported::completion)
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
