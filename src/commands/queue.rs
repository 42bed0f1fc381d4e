//! `sitemapd queue`: the URLs due, peeked or leased, as JSON lines.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Result;

use sitemapd_scheduler::{LeaseRequest, Timestamp};
use std::time::Duration;

use crate::cli::QueueArgs;
use crate::output::leased_json;
use crate::settings::StoreUse;

/// Runs `queue`.
pub(crate) fn run(args: &QueueArgs) -> Result<ExitCode> {
    let settings = &args.settings;
    let what = if args.lease.is_some() {
        StoreUse::Lease
    } else {
        StoreUse::Peek
    };
    let store = settings
        .store
        .open_existing_with(what, settings.scheduler.store_options())?;
    let now = Timestamp::now();
    // The arguments' bounds are clap's: `-n` at least 1, `--lease` 1 to 7
    // days (a usage error, exit 2, as any other).
    let n = usize::try_from(args.n).unwrap_or(usize::MAX);
    let due = match args.lease {
        Some(ttl) => {
            let request = LeaseRequest::new(n)
                .per_host(settings.scheduler.per_host)
                .ttl(Duration::from_secs(ttl));
            store.lease(&request, now)?
        }
        None => store.peek(n, now)?,
    };
    // On disk before the crawler sees the leases.
    store.flush()?;
    let mut out = io::BufWriter::new(io::stdout().lock());
    for item in &due {
        let mut line = leased_json(item);
        args.time.rewrite(&mut line);
        serde_json::to_writer(&mut out, &line)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    let damage = super::fail_if_records_passed_over(&store, &settings.store.store);
    match damage {
        // The leases printed are taken: a script that dropped them on a
        // failure would leave their URLs leased until they run out.
        Err(e) if args.lease.is_some() => {
            eprintln!("warning: {e:#}; the leases above are taken (exit 0)");
        }
        other => other?,
    }
    Ok(ExitCode::SUCCESS)
}
