//! Helpers the discovery tests share: run a walk, build a urlset, read the
//! walk's events.
#![allow(dead_code)] // each test file uses its own subset

use futures_util::StreamExt;
use sitemapd_discovery::walk::SiteTotals;
use sitemapd_discovery::{Seed, WalkEvent, Walker};

/// The head of a urlset, up to its first `<url>`.
pub(crate) const URLSET: &str = r#"<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#;

/// Every event of a walk from `seed`.
pub(crate) async fn walk(walker: &Walker, seed: &str) -> Vec<WalkEvent> {
    walker
        .walk(vec![Seed::parse(seed).unwrap()])
        .collect()
        .await
}

/// A urlset listing `locs`.
pub(crate) fn urlset(locs: &[String]) -> String {
    let mut s = String::from(URLSET);
    for loc in locs {
        s.push_str(&format!("<url><loc>{loc}</loc></url>"));
    }
    s.push_str("</urlset>");
    s
}

/// The failures: (url, error).
pub(crate) fn failures(events: &[WalkEvent]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            WalkEvent::SitemapFailed(f) => Some((f.url.to_string(), f.error.clone())),
            _ => None,
        })
        .collect()
}

/// The walk's closing totals (it must end with them).
pub(crate) fn site_done(events: &[WalkEvent]) -> &SiteTotals {
    match events.last() {
        Some(WalkEvent::SiteDone(t)) => t,
        other => panic!("the walk must end with SiteDone, got {other:?}"),
    }
}
