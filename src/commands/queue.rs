//! `sitemapd queue`: the URLs due, peeked or leased, as JSON lines.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::{Result, bail};

use crate::cli::QueueArgs;
use crate::settings::now;

/// Runs `queue`.
pub fn run(args: &QueueArgs) -> Result<ExitCode> {
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
