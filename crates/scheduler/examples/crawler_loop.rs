//! A crawler loop embedding the scheduler: ingest what sitemaps say, lease
//! due URLs, "fetch" them, report outcomes, repeat, on a simulated clock.
//!
//! `cargo run -p sitemapd-scheduler --example crawler_loop`

use sitemapd_parser::date::Precision;
use sitemapd_parser::{Lastmod, NormUrl, UrlEntry};
use std::time::Duration;

use sitemapd_scheduler::{
    Completion, LeaseRequest, Outcome, SitemapFetch, Store, StoreOptions, Timestamp,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path(), StoreOptions::default())?;
    let sitemap = "https://shop.example/sitemap.xml";
    let mut now = Timestamp::from_unix(1_700_000_000);

    // 1. What the sitemap says (in a real crawler: sitemapd-discovery's walk).
    let mut ingest = store.ingest(now);
    for i in 0..20 {
        let mut entry = UrlEntry::new(NormUrl::parse(&format!("https://shop.example/item/{i}"))?);
        entry.lastmod = Some(Lastmod {
            unix_seconds: now.unix() - 86_400,
            nanos: 0,
            precision: Precision::Day,
        });
        ingest.entry(sitemap, &entry)?;
    }
    ingest.sitemap_fetched(
        sitemap,
        &SitemapFetch {
            status: 200,
            complete: true,
            ..SitemapFetch::default()
        },
    )?;
    println!("ingested: {:?}", ingest.finish()?);

    // 2. The crawl loop: lease, fetch, complete; an hour per round.
    for round in 0..5 {
        let batch = store.lease(
            &LeaseRequest::new(8)
                .per_host(4)
                .ttl(Duration::from_secs(600)),
            now,
        )?;
        for leased in &batch {
            // Fetch `leased.url` no earlier than `leased.not_before`; here, pretend.
            let changed = (leased.url.len() + round) % 3 == 0;
            let outcome = if changed {
                Outcome::Changed
            } else {
                Outcome::NotModified
            };
            store.complete(
                &leased.url,
                &Completion::from(outcome),
                now + Duration::from_secs(5),
            )?;
        }
        println!(
            "round {round}: fetched {} URLs ({} due now)",
            batch.len(),
            store.peek(1000, now)?.len()
        );
        now = now + Duration::from_secs(3_600);
    }
    let stats = store.stats(now)?;
    println!(
        "{} active URLs, {} never fetched",
        stats.active, stats.never_fetched
    );
    assert!(store.check()?.is_ok());
    Ok(())
}
