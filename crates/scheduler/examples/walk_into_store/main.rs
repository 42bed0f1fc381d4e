//! Discovery and the scheduler together, as `sitemapd ingest` runs them: a
//! walk of a site (robots.txt, its sitemap index, the sitemaps) streamed
//! into a store on disk, then the crawl queue it makes.
//!
//! `cargo run -p sitemapd-scheduler --example walk_into_store [-- SITE]`
//!
//! Without SITE it serves a small site of its own on 127.0.0.1 (and allows
//! that private address), so it runs offline; with SITE (`example.com`) it
//! walks that site on the network.

// The daemon also uses `StoreMemory::scheduled`; `sitemapd ingest` and the
// Python package `read_whole`.
#[allow(dead_code)]
mod glue;

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use sitemapd_discovery::{FetchConfig, Fetcher, Seed, WalkConfig, WalkEvent, Walker};
use sitemapd_scheduler::{LeaseRequest, Store, StoreOptions, Timestamp};
use sitemapd_testsite::{Reply, TestSite};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The site: the one given, or a loopback one of three pages.
    let (site, _server) = match std::env::args().nth(1) {
        Some(site) => (site, None),
        None => {
            let server = TestSite::start();
            let index = format!(
                "<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\
                 <sitemap><loc>{}</loc></sitemap></sitemapindex>",
                server.url("/pages.xml")
            );
            let pages: String = ["/", "/about", "/blog/1"]
                .iter()
                .map(|p| {
                    format!(
                        "<url><loc>{}</loc><priority>0.8</priority></url>",
                        server.url(p)
                    )
                })
                .collect();
            server.route(
                "/robots.txt",
                Reply::ok(format!(
                    "User-agent: *\nSitemap: {}\n",
                    server.url("/index.xml")
                )),
            );
            server.route("/index.xml", Reply::ok(index));
            server.route(
                "/pages.xml",
                Reply::ok(format!(
                    "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">{pages}</urlset>"
                )),
            );
            (server.url("/"), Some(server))
        }
    };

    let dir = tempfile::tempdir()?;
    let store = Arc::new(Store::open(dir.path(), StoreOptions::default())?);
    let fetcher = Fetcher::new(FetchConfig {
        allow_private: _server.is_some(),
        min_delay: Duration::ZERO,
        ..FetchConfig::default()
    })?;
    let walker = Walker::new(
        fetcher,
        WalkConfig {
            // The store remembers validators for conditional GETs.
            memory: Some(Arc::new(glue::StoreMemory::new(store.clone()))),
            ..WalkConfig::default()
        },
    );

    // The walk, event by event, into one ingest session.
    let mut ingest = store.ingest(Timestamp::now());
    let mut events = walker.walk(vec![Seed::parse(&site)?]);
    while let Some(event) = events.next().await {
        glue::record(&mut ingest, &event)?;
        if let WalkEvent::SitemapFetched(r) = &event {
            println!("read {} ({})", r.url, r.status);
        }
    }
    let stats = ingest.finish()?;
    println!("{} URLs, {} new", stats.entries, stats.new);

    // The queue it makes.
    for due in store.lease(&LeaseRequest::new(10), Timestamp::now())? {
        println!("{} due {} ({})", due.url, due.due, due.reason);
    }
    assert!(store.check()?.is_ok());
    Ok(())
}
