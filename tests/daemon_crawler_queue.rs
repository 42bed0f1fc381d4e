//! The queue a crawler follows as it is, through the daemon on
//! loopback: robots.txt rules at lease time and when they change between
//! walks, Crawl-delay spacing of leases, a redirect chain, a gone page,
//! a page that answers 404 then 200.

mod common;

use common::daemon::Daemon;
use serde_json::{Value, json};
use sitemapd_testsite::{Reply, TestSite};

fn robots(site: &TestSite, disallow: &str) -> Reply {
    Reply::ok(format!(
        "User-agent: *\nDisallow: {disallow}\nCrawl-delay: 2\nSitemap: {}\n",
        site.url("/sitemap.xml")
    ))
}

fn record(d: &Daemon, url: &str) -> Value {
    d.get(&format!("/v1/urls?url={url}"))["record"].clone()
}

#[test]
fn leases_follow_robots_crawl_delay_redirects_and_gone_pages() {
    let site = TestSite::start();
    site.route("/robots.txt", robots(&site, "/private/"));
    let urls = ["/", "/bbb", "/private/secret", "/moved", "/dead"];
    let mut xml = String::from(r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#);
    for u in urls {
        xml.push_str(&format!("<url><loc>{}</loc></url>", site.url(u)));
    }
    xml.push_str("</urlset>");
    site.route("/sitemap.xml", Reply::ok(xml));
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(
        &dir.path().join("store"),
        &[
            "--robots-secs",
            "2",
            "--sitemap-secs",
            "2",
            "--min-refresh-secs",
            "1",
            "--max-refresh-secs",
            "2",
            &site.url("/"),
        ],
    );
    d.wait_for("the first walk", |d| {
        d.get("/v1/stats")["stats"]["blocked"].as_u64() == Some(1)
    });
    assert_eq!(d.active(), 4);
    assert_eq!(
        record(&d, &site.url("/private/secret"))["status"],
        "blocked"
    );

    let leased = d.post(
        "/v1/lease",
        json!({"n": 10, "per_host": 10, "ttl_secs": 60}),
    );
    let leased = leased["urls"].as_array().unwrap().clone();
    let got: Vec<&str> = leased.iter().map(|l| l["url"].as_str().unwrap()).collect();
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(!got.contains(&site.url("/private/secret").as_str()));
    let starts: Vec<i64> = leased
        .iter()
        .map(|l| l["not_before"].as_i64().unwrap())
        .collect();
    for pair in starts.windows(2) {
        assert_eq!(
            pair[1] - pair[0],
            2,
            "spaced by the Crawl-delay: {starts:?}"
        );
    }

    let done = d.post(
        "/v1/complete",
        json!([
            {"url": site.url("/moved"), "outcome": "redirected", "status": 301, "to": "/new-home"},
            {"url": site.url("/dead"), "outcome": "gone", "status": 410},
        ]),
    );
    assert_eq!(done["completed"], 2);
    d.post(
        "/v1/complete",
        json!([{"url": site.url("/new-home"), "outcome": "redirected", "status": 307, "to": "/final"}]),
    );
    let moved = record(&d, &site.url("/moved"));
    assert_eq!(
        (moved["status"].as_str(), moved["reason"].as_str()),
        (Some("queued"), Some("retry"))
    );
    assert_eq!(
        record(&d, &site.url("/new-home"))["redirected_from"],
        site.url("/moved")
    );
    assert_eq!(
        record(&d, &site.url("/final"))["redirected_from"],
        site.url("/new-home")
    );
    let dead = record(&d, &site.url("/dead"));
    assert_eq!(
        (dead["status"].as_str(), dead["reason"].as_str()),
        (Some("gone"), Some("probe"))
    );

    // 404 twice, then 200: backed off, never retired, back on its schedule.
    let not_found = json!([
        {"url": site.url("/"), "outcome": "error", "status": 404},
        {"url": site.url("/"), "outcome": "gone", "status": 404},
    ]);
    d.post("/v1/complete", not_found);
    let home = record(&d, &site.url("/"));
    assert_eq!(
        (home["status"].as_str(), home["reason"].as_str()),
        (Some("queued"), Some("retry"))
    );
    d.post(
        "/v1/complete",
        json!([{"url": site.url("/"), "outcome": "changed"}]),
    );
    let home = record(&d, &site.url("/"));
    assert_eq!(home["status"], "queued");
    assert_ne!(home["reason"], "retry");

    // robots.txt changes: the next walk lifts the block on /private/ and
    // puts /bbb under it; /dead, still listed, stays gone.
    site.route("/robots.txt", robots(&site, "/bbb"));
    d.wait_for("the changed robots.txt", |d| {
        record(d, &site.url("/bbb"))["status"] == "blocked"
    });
    assert_eq!(record(&d, &site.url("/private/secret"))["status"], "queued");
    assert_eq!(record(&d, &site.url("/dead"))["status"], "gone");
    let stats = d.get("/v1/stats")["stats"].clone();
    assert_eq!(
        (stats["blocked"].as_u64(), stats["gone"].as_u64()),
        (Some(1), Some(1))
    );
}
