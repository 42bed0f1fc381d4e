//! `sitemapd daemon` end to end: the real binary, a loopback fixture site,
//! the HTTP API with a token, refreshes, signals and restarts.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::clock::TestClock;
use common::daemon::{Daemon, TOKEN};
use common::{bin, http, run, stderr};
use serde_json::{Value, json};
use sitemapd_testsite::{Body, Reply, TestSite};

/// The URLs a `POST /v1/lease` answer hands out.
fn leased_urls(answer: &Value) -> Vec<String> {
    answer["urls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["url"].as_str().unwrap().to_string())
        .collect()
}

fn urlset(site: &TestSite, pages: impl IntoIterator<Item = String>) -> String {
    let mut xml = String::from(
        r#"<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#,
    );
    for p in pages {
        xml.push_str(&format!("<url><loc>{}</loc></url>", site.url(&p)));
    }
    xml.push_str("</urlset>");
    xml
}

/// A sitemap at /sitemap.xml that honours If-None-Match, whose content is
/// version `v` (pages a0..a2, plus a3 from version 1 on); counts 304s.
fn changing_site() -> (TestSite, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let site = TestSite::start();
    let robots = format!("Sitemap: {}\n", site.url("/sitemap.xml"));
    site.route("/robots.txt", Reply::ok(robots));
    let version = Arc::new(AtomicUsize::new(0));
    let not_modified = Arc::new(AtomicUsize::new(0));
    let (v, nm) = (version.clone(), not_modified.clone());
    let base = site.url("/");
    site.route_fn("/sitemap.xml", move |req, _| {
        let v = v.load(Ordering::SeqCst);
        let etag = format!("\"v{v}\"");
        if req.header("if-none-match") == Some(etag.as_str()) {
            nm.fetch_add(1, Ordering::SeqCst);
            return Reply::status(304).header("ETag", &etag);
        }
        let pages = (0..3 + v.min(1)).map(|i| format!("{base}a{i}"));
        let mut xml =
            String::from(r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#);
        for p in pages {
            xml.push_str(&format!("<url><loc>{p}</loc></url>"));
        }
        xml.push_str("</urlset>");
        Reply::ok(xml).header("ETag", &etag)
    });
    (site, version, not_modified)
}

#[test]
fn serves_the_queue_and_follows_changes() {
    let (site, version, not_modified) = changing_site();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let seed = site.url("/");
    let d = Daemon::start(
        &store,
        &[
            "--sitemap-secs",
            "2",
            "--min-refresh-secs",
            "1",
            "--max-refresh-secs",
            "2",
            &seed,
        ],
    );
    d.wait_for("the first ingest", |d| d.active() == 3);

    // Health needs no token; everything else does.
    assert_eq!(http(d.addr, "GET", "/healthz", None, None).0, 200);

    // Lease and complete.
    let leased = d.post("/v1/lease", json!({"n": 10, "ttl_secs": 60}));
    let urls = leased["urls"].as_array().unwrap();
    assert_eq!(urls.len(), 3, "{leased}");
    assert!(
        urls.iter()
            .all(|u| u["reason"] == "leased" && u["due_reason"] == "new" && u["lease"].is_string())
    );
    let again = d.post("/v1/lease", json!({"n": 10}));
    assert_eq!(
        again["urls"].as_array().unwrap().len(),
        0,
        "leased URLs are not handed out twice"
    );
    let outcomes: Vec<Value> = urls
        .iter()
        .map(|u| json!({"url": u["url"], "outcome": "not-modified", "etag": "\"p\""}))
        .collect();
    let done = d.post("/v1/complete", Value::Array(outcomes));
    assert_eq!(done["completed"], 3, "{done}");
    let a0 = site.url("/a0");
    let rec = d.get(&format!("/v1/urls?url={a0}"));
    assert_eq!(rec["record"]["fetches"], 1, "{rec}");
    assert_eq!(
        d.call("GET", "/v1/urls?url=http://nowhere.test/x", None).0,
        404
    );

    // A push notification makes the URL due now.
    let n = d.post("/v1/notify", json!({"urls": [a0]}));
    assert_eq!(n["known"], 1, "{n}");
    let leased = d.post("/v1/lease", json!({"n": 10}));
    let urls = leased["urls"].as_array().unwrap();
    assert_eq!(urls.len(), 1, "{leased}");
    assert_eq!(urls[0]["url"], a0.as_str());
    assert_eq!(urls[0]["due_reason"], "notified");

    // Unchanged: the refresh costs a 304. Changed: the new URL comes in.
    d.wait_for("a 304 refresh", |_| {
        not_modified.load(Ordering::SeqCst) >= 1
    });
    version.store(1, Ordering::SeqCst);
    d.wait_for("the change to be ingested", |d| d.active() == 4);

    let tree = d.get(&format!("/v1/sitemaps?site={seed}"));
    let top = &tree["sitemaps"][0];
    assert_eq!(top["url"], site.url("/sitemap.xml").as_str(), "{tree}");
    assert_eq!(top["last_status"], 200);
    assert!(top["refresh"]["next_at"].is_i64(), "{tree}");
    let sites = d.get("/v1/sites");
    assert_eq!(sites["sites"][0]["site"], seed.as_str(), "{sites}");

    let (status, metrics) = http(d.addr, "GET", "/metrics", Some(TOKEN), None);
    assert_eq!(status, 200);
    for needle in [
        "sitemapd_sitemap_fetches_total{status=\"304\"}",
        "sitemapd_sitemap_fetches_total{status=\"200\"}",
        "sitemapd_leased_urls_total 4",
        "sitemapd_completions_total{status=\"not-modified\"} 3",
        "sitemapd_queue_depth",
        "sitemapd_store_unreadable_records 0",
        "sitemapd_sitemap_fetch_seconds_bucket",
        "sitemapd_urls_ingested_total",
    ] {
        assert!(metrics.contains(needle), "{needle} missing from\n{metrics}");
    }
    // robots.txt is cached (24 h by default): fetched once across refreshes.
    assert_eq!(site.hits("/robots.txt"), 1);

    let (status, took, log) = d.terminate();
    assert!(status.success(), "{status:?}\n{log}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn the_api_refuses_strangers_and_bad_requests() {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(
        &dir.path().join("store"),
        &["--max-request-bytes", "2048", "--request-body-secs", "1"],
    );
    for (method, path) in [
        ("GET", "/v1/stats"),
        ("GET", "/metrics"),
        ("GET", "/v1/sites"),
        ("POST", "/v1/lease"),
        ("GET", "/v1/urls?url=https://example.com/"),
    ] {
        let (status, body) = http(d.addr, method, path, None, Some("{}"));
        assert_eq!(status, 401, "{method} {path}: {body}");
        let (status, _) = http(d.addr, method, path, Some("s3cret-tokeX"), Some("{}"));
        assert_eq!(status, 401, "{method} {path} with a wrong token");
    }
    assert_eq!(http(d.addr, "GET", "/healthz", None, None).0, 200);

    let bad = |body: &str| {
        let (status, text) = http(d.addr, "POST", "/v1/complete", Some(TOKEN), Some(body));
        let v: Value = serde_json::from_str(&text).unwrap();
        (status, v["error"].as_str().unwrap_or_default().to_string())
    };
    let (status, message) = bad("[{\"url\": ");
    assert_eq!(status, 400);
    assert!(message.contains("invalid JSON"), "{message}");
    let (status, message) = bad(r#"[{"url":"https://example.com/","outcome":"exploded"}]"#);
    assert_eq!(status, 400);
    assert!(message.contains("unknown outcome"), "{message}");
    let (status, _) = bad(&format!("[{}]", "1,".repeat(2000) + "1"));
    assert_eq!(status, 413);
    let (status, v) = d.call("POST", "/v1/lease", Some(json!({"n": 0})));
    assert_eq!(status, 400, "{v}");
    let (status, v) = d.call(
        "POST",
        "/v1/sites",
        Some(json!({"sites": ["not a site at all"]})),
    );
    assert_eq!(status, 400, "{v}");
    let (status, _) = d.call("GET", "/v1/nothing", None);
    assert_eq!(status, 404);

    // A body that stops arriving: 408 after --request-body-secs, not a
    // connection held forever.
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(d.addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let head = format!(
        "POST /v1/complete HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n[",
        d.addr
    );
    conn.write_all(head.as_bytes()).unwrap();
    let started = Instant::now();
    let mut answer = String::new();
    let _ = conn.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn bad_configuration_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("d.toml");
    std::fs::write(&file, "[fetch]\nuser_agnet = \"x\"\n").unwrap();
    let out = run(&["daemon", "--config", file.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("d.toml") && err.contains("user_agnet"),
        "{err}"
    );

    std::fs::write(&file, "[refresh]\nrobots_secs = 999999\n").unwrap();
    let out = run(&["daemon", "--config", file.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("refresh.robots_secs"),
        "{}",
        stderr(&out)
    );

    // Off loopback without a token.
    let out = bin()
        .args(["daemon", "--store", dir.path().join("s").to_str().unwrap()])
        .args(["--listen", "0.0.0.0:0"])
        .env_remove("SITEMAPD_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("needs an API token"),
        "{}",
        stderr(&out)
    );

    // The printed default is a valid configuration.
    let out = run(&["daemon", "--print-config"]);
    assert!(out.status.success());
    std::fs::write(&file, &out.stdout).unwrap();
    let d = Daemon::start(
        &dir.path().join("s2"),
        &["--config", file.to_str().unwrap(), "--log-format", "json"],
    );
    assert_eq!(http(d.addr, "GET", "/healthz", None, None).0, 200);
    let (status, _, log) = d.terminate();
    assert!(status.success());
    for line in log.lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert!(v["fields"]["message"].is_string(), "{line}");
    }
}

#[test]
fn the_token_can_come_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{TOKEN}\nthe first line is the token\n")).unwrap();
    let d = Daemon::start_with(
        &dir.path().join("s"),
        &["--token-file", file.to_str().unwrap()],
        |cmd| cmd.env_remove("SITEMAPD_TOKEN"),
    );
    assert_eq!(http(d.addr, "GET", "/v1/stats", None, None).0, 401);
    assert_eq!(d.call("GET", "/v1/stats", None).0, 200);
    assert!(d.terminate().0.success());

    std::fs::write(&file, "\n").unwrap();
    let out = bin()
        .args(["daemon", "--store", dir.path().join("s").to_str().unwrap()])
        .args([
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            file.to_str().unwrap(),
        ])
        .env_remove("SITEMAPD_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("is empty"), "{}", stderr(&out));
}

#[test]
fn sites_are_added_and_removed_through_the_api() {
    let (site, _, _) = changing_site();
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(&dir.path().join("store"), &[]);
    let seed = site.url("/");
    let added = d.post("/v1/sites", json!({"sites": [seed]}));
    assert_eq!(added["added"][0], seed.as_str(), "{added}");
    let again = d.post("/v1/sites", json!({"sites": [seed]}));
    assert_eq!(again["known"][0], seed.as_str(), "{again}");
    d.wait_for("the added site's walk", |d| {
        d.active() == 3 && d.get("/v1/sites")["sites"][0]["last_walk"].is_i64()
    });
    let (status, removed) = d.call("DELETE", "/v1/sites", Some(json!({"sites": [seed]})));
    assert_eq!(status, 200, "{removed}");
    assert_eq!(removed["retired_urls"], 3, "{removed}");
    assert_eq!(d.active(), 0);
    assert_eq!(d.get("/v1/sites")["sites"].as_array().unwrap().len(), 0);
}

/// Two followed sites on one host: the site, and one of its sitemaps
/// followed as a site of its own. Removing one leaves the host's URLs in
/// the queue, since the other still follows them (docs/daemon.md, `DELETE
/// /v1/sites`); removing the other takes them out.
#[test]
fn removing_a_site_that_shares_its_host_keeps_the_hosts_urls() {
    let (site, _, _) = changing_site();
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(&dir.path().join("store"), &[]);
    let (root, map) = (site.url("/"), site.url("/sitemap.xml"));
    let added = d.post("/v1/sites", json!({"sites": [root, map]}));
    assert_eq!(added["added"].as_array().unwrap().len(), 2, "{added}");
    d.wait_for("both sites' walks", |d| {
        let sites = d.get("/v1/sites");
        let sites = sites["sites"].as_array().unwrap();
        d.active() == 3 && sites.len() == 2 && sites.iter().all(|s| s["last_walk"].is_i64())
    });

    let (status, removed) = d.call("DELETE", "/v1/sites", Some(json!({"sites": [map]})));
    assert_eq!(status, 200, "{removed}");
    assert_eq!(removed["removed"][0], map.as_str(), "{removed}");
    assert_eq!(removed["retired_urls"], 0, "{removed}");
    assert_eq!(d.active(), 3);
    let sites = d.get("/v1/sites");
    assert_eq!(sites["sites"].as_array().unwrap().len(), 1, "{sites}");
    assert_eq!(sites["sites"][0]["site"], root.as_str(), "{sites}");
    // Still in the queue: handed out.
    let leased = d.post("/v1/lease", json!({"n": 10, "per_host": 10}));
    let mut urls: Vec<&str> = leased["urls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["url"].as_str().unwrap())
        .collect();
    urls.sort_unstable();
    let pages: Vec<String> = (0..3).map(|i| site.url(&format!("/a{i}"))).collect();
    assert_eq!(urls, pages, "{leased}");

    // The last site of the host: its URLs leave the queue.
    let (status, removed) = d.call("DELETE", "/v1/sites", Some(json!({"sites": [root]})));
    assert_eq!(status, 200, "{removed}");
    assert_eq!(removed["retired_urls"], 3, "{removed}");
    assert_eq!(d.active(), 0);
    assert!(d.terminate().0.success());
}

/// An index of `children` sitemaps of 2,000 URLs each (/s{c}.xml, pages
/// /p{c}-{i}).
fn big_site(children: usize) -> TestSite {
    let site = TestSite::start();
    site.route(
        "/robots.txt",
        Reply::ok(format!("Sitemap: {}\n", site.url("/index.xml"))),
    );
    let mut index =
        String::from(r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#);
    for c in 0..children {
        index.push_str(&format!(
            "<sitemap><loc>{}</loc></sitemap>",
            site.url(&format!("/s{c}.xml"))
        ));
        let body = urlset(&site, (0..2_000).map(|i| format!("/p{c}-{i}")));
        site.route(&format!("/s{c}.xml"), Reply::ok(body));
    }
    index.push_str("</sitemapindex>");
    site.route("/index.xml", Reply::ok(index));
    site
}

fn stats_json(store: &std::path::Path) -> Value {
    let out = run(&[
        "stats",
        "--json",
        "--check",
        "--store",
        store.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn sigterm_during_ingest_then_restart_loses_nothing() {
    let site = big_site(12);
    // The last sitemap sends half its entries, then a space a second for
    // ever: whatever the machine's load, the ingest is still going when
    // the signal lands (no timing to win).
    let last = "/s11.xml";
    let whole = urlset(&site, (0..2_000).map(|i| format!("/p11-{i}")));
    let half = whole.match_indices("<url>").nth(1_000).unwrap().0;
    site.route(
        last,
        Reply::ok("").body(Body::Chain(vec![
            Body::Bytes(bytes::Bytes::from(whole[..half].to_string())),
            Body::Drip {
                chunk: bytes::Bytes::from_static(b" "),
                every: Duration::from_secs(1),
                count: None,
            },
        ])),
    );
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let seed = site.url("/");
    let d = Daemon::start(&store, &["--per-host", "20", &seed]);
    d.wait_for("the other sitemaps", |d| {
        d.active() >= 22_000 && site.hits(last) == 1
    });
    let leased = d.post(
        "/v1/lease",
        json!({"n": 20, "ttl_secs": 30, "per_host": 20}),
    );
    let leased = leased_urls(&leased);
    assert_eq!(leased.len(), 20);
    let before = d.active();
    let (status, took, log) = d.terminate();
    assert!(status.success(), "{status:?}\n{log}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    let stopped = stats_json(&store);
    let kept = stopped["active"].as_u64().unwrap();
    assert!(kept >= before, "ingested URLs lost: {kept} < {before}");
    // The signal landed mid-ingest: the last sitemap never ended.
    assert!(kept < 24_000, "{kept}");
    // (stats --check exits 1 on any integrity problem.)
    assert_eq!(stopped["leased"], 20, "{stopped}");
    site.route(last, Reply::ok(whole));

    // Restart: the walk resumes, the leases hold until they expire.
    let d = Daemon::start(&store, &["--min-delay", "0"]);
    let rec = d.get(&format!("/v1/urls?url={}", leased[0]));
    assert!(rec["record"]["leased_until"].is_i64(), "{rec}");
    d.wait_for("the whole site", |d| d.active() == 24_000);
    // Each lease expires back into the queue: due at its expiry.
    for url in &leased {
        let rec = d.get(&format!("/v1/urls?url={url}"));
        let record = &rec["record"];
        assert_eq!(record["due"], record["leased_until"], "{rec}");
        // "leased" while the lease holds, "lease-expired" once it ran out.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let until = record["leased_until"].as_i64().unwrap();
        let expected = if until > now {
            "leased"
        } else {
            "lease-expired"
        };
        if (until - now).abs() > 1 {
            assert_eq!(record["reason"], expected, "{rec}");
        }
    }
    let (status, _, log) = d.terminate();
    assert!(status.success(), "{log}");
    assert_eq!(stats_json(&store)["active"], 24_000);
}

/// Crawl on change through the daemon: once a host's lastmods
/// have earned trust, a lastmod that moves in a re-read sitemap puts its
/// URL first in the next lease, ahead of the URLs that are new; the host's
/// unmoved URLs are not refetched on a rate schedule. (No rate-based
/// refresh can fall due within a test's seconds: the shortest interval is
/// an hour.)
#[test]
fn a_moved_lastmod_comes_first_in_the_next_lease() {
    let site = TestSite::start();
    site.route(
        "/robots.txt",
        Reply::ok(format!("Sitemap: {}\n", site.url("/sitemap.xml"))),
    );
    // Version 0: p0..p5 with lastmods; 1: every lastmod moved (to the
    // time of the switch); 2: p3's moved again, and q0..q2 are new.
    let version = Arc::new(AtomicUsize::new(0));
    let moved_at: Arc<std::sync::Mutex<[i64; 3]>> = Arc::default();
    let (v, at, base) = (version.clone(), moved_at.clone(), site.url("/"));
    site.route_fn("/sitemap.xml", move |_, _| {
        let v = v.load(Ordering::SeqCst);
        let at = *at.lock().unwrap();
        let mut xml =
            String::from(r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#);
        for i in 0..6 {
            let lastmod = match (v, i) {
                (2, 3) => at[2],
                (1.., _) => at[1],
                _ => at[0],
            };
            xml.push_str(&format!(
                "<url><loc>{base}p{i}</loc><lastmod>{}</lastmod></url>",
                sitemapd_testsite::w3c(lastmod)
            ));
        }
        if v >= 2 {
            for i in 0..3 {
                xml.push_str(&format!("<url><loc>{base}q{i}</loc></url>"));
            }
        }
        xml.push_str("</urlset>");
        Reply::ok(xml).header("ETag", &format!("\"v{v}\""))
    });
    // The daemon's time: moved by the test, so that a lastmod can move to
    // after a fetch without waiting.
    let clock = TestClock::at_system_time();
    let set_moved = |slot: usize| {
        moved_at.lock().unwrap()[slot] = clock.now();
    };
    // Distinct from anything fetched: a day ago.
    moved_at.lock().unwrap()[0] = clock.now() - 86_400;
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(
        &dir.path().join("store"),
        &[
            &clock.args()[..],
            &[
                "--policy",
                "lastmod",
                "--lease-delay",
                "0",
                "--sitemap-secs",
                "1",
                "--min-refresh-secs",
                "1",
                "--max-refresh-secs",
                "1",
                &site.url("/"),
            ],
        ]
        .concat(),
    );
    let lastmod_of = |d: &Daemon, page: &str| {
        d.get(&format!("/v1/urls?url={}", site.url(page)))["record"]["lastmod"].as_i64()
    };
    let lease_all = |d: &Daemon| -> Vec<(String, String)> {
        let leased = d.post("/v1/lease", json!({"n": 100, "ttl_secs": 600}));
        leased["urls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| {
                let url = u["url"].as_str().unwrap();
                let path = url.rsplit('/').next().unwrap().to_string();
                (path, u["due_reason"].as_str().unwrap().to_string())
            })
            .collect()
    };
    let complete_changed = |d: &Daemon, leased: &[(String, String)]| {
        let items: Vec<Value> = leased
            .iter()
            .map(|(p, _)| json!({"url": site.url(&format!("/{p}")), "outcome": "changed"}))
            .collect();
        let done = d.post("/v1/complete", Value::Array(items));
        assert_eq!(done["completed"], leased.len(), "{done}");
    };
    assert!(d.log().contains("TESTING CLOCK"), "{}", d.log());
    d.wait_for("the first read", |d| d.active() == 6);
    let first = lease_all(&d);
    assert_eq!(first.len(), 6, "{first:?}");
    assert!(first.iter().all(|(_, r)| r == "new"), "{first:?}");
    complete_changed(&d, &first);

    // Every lastmod moves after the fetch, and every page had changed: six
    // announced changes earn the host its trust. A second on, the site is
    // due again (--sitemap-secs 1).
    clock.advance(1);
    set_moved(1);
    version.store(1, Ordering::SeqCst);
    let moved = moved_at.lock().unwrap()[1];
    d.wait_for("the moved lastmods", |d| {
        lastmod_of(d, "/p5") == Some(moved)
    });
    let second = lease_all(&d);
    assert_eq!(second.len(), 6, "{second:?}");
    assert!(
        second.iter().all(|(_, r)| r == "lastmod-newer"),
        "{second:?}"
    );
    complete_changed(&d, &second);

    // p3 changes again, and three pages are new.
    clock.advance(1);
    set_moved(2);
    version.store(2, Ordering::SeqCst);
    let again = moved_at.lock().unwrap()[2];
    d.wait_for("p3's new lastmod and the new pages", |d| {
        lastmod_of(d, "/p3") == Some(again) && d.active() == 9
    });
    let third = lease_all(&d);
    assert_eq!(
        third.first(),
        Some(&("p3".to_string(), "lastmod-newer".to_string())),
        "{third:?}"
    );
    let rest: Vec<&str> = third[1..].iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(rest, ["q0", "q1", "q2"], "{third:?}");
    assert!(third[1..].iter().all(|(_, r)| r == "new"), "{third:?}");
    // The other five wait: not refetched on a rate schedule.
    assert_eq!(third.len(), 4, "{third:?}");
    let (status, _, log) = d.terminate();
    assert!(status.success(), "{log}");
}

#[test]
fn a_daemon_with_no_site_says_how_to_add_one_and_an_unknown_site_is_404() {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(&dir.path().join("store"), &[]);
    d.wait_for("the no-site line", |d| {
        d.log().contains("following no site yet")
    });
    let log = d.log();
    assert!(log.contains("POST /v1/sites"), "{log}");
    assert!(log.contains("sitemapd daemon example.com"), "{log}");
    // A new store is created, not migrated.
    assert!(!log.contains("key layout"), "{log}");

    let (status, body) = d.call("GET", "/v1/sitemaps?site=nowhere.example", None);
    assert_eq!(status, 404, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("https://nowhere.example/ is not a site this daemon follows"),
        "{error}"
    );
}

#[test]
fn a_robots_txt_the_guard_refuses_is_logged_as_refused_and_not_retried_as_an_outage() {
    let site = TestSite::start();
    let dir = tempfile::tempdir().unwrap();
    let seed = site.url("/");
    let d = Daemon::start_guarded(
        &dir.path().join("store"),
        &["--error-backoff-secs", "60", &seed],
    );
    let record = |d: &Daemon| {
        d.get("/v1/sites")["sites"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["site"] == seed.as_str())
            .cloned()
            .unwrap()
    };
    d.wait_for("the walk", |d| record(d)["last_walk"].is_i64());
    let log = d.log();
    assert!(
        log.contains("robots.txt not fetched: refused by the address guard"),
        "{log}"
    );
    assert!(log.contains("--allow-private"), "{log}");
    assert!(!log.contains("robots.txt unreachable"), "{log}");
    // Walked again when robots.txt is next due (a day), not after the
    // 60 s error backoff.
    let rec = record(&d);
    let wait = rec["next_walk"].as_i64().unwrap() - rec["last_walk"].as_i64().unwrap();
    assert!(wait > 3_600, "{rec}");
    assert_eq!(site.connections(), 0);
}

/// A daemon whose store has grown compacts it by itself while crawlers
/// work (`--compact-floor-mib 1`: a store past 1 MiB never compacted is
/// compacted at the next look): the files move into a fresh database, and
/// every completion the API acknowledged, before and after, is in the
/// store when it stops.
#[test]
fn the_daemon_compacts_a_grown_store_while_crawlers_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(
        dir.path(),
        &[
            "--compact-floor-mib",
            "1",
            "--lease-delay",
            "0",
            "--per-host",
            "1000",
        ],
    );
    for batch in 0..10 {
        let urls: Vec<String> = (0..2_000)
            .map(|i| format!("https://s{}.example/b{batch}/p{i}", i % 40))
            .collect();
        d.post("/v1/notify", json!({ "urls": urls }));
    }
    let mut acknowledged = std::collections::BTreeSet::new();
    let mut crawl = |d: &Daemon| {
        let leased = d.post("/v1/lease", json!({ "n": 500, "ttl_secs": 600 }));
        let urls = leased_urls(&leased);
        let results: Vec<Value> = urls
            .iter()
            .map(|u| json!({ "url": u, "outcome": "not-modified" }))
            .collect();
        d.post("/v1/complete", Value::Array(results));
        acknowledged.extend(urls);
    };
    d.wait_for("the store compacted", |d| {
        crawl(d);
        d.log().contains("store compacted")
    });
    for _ in 0..5 {
        crawl(&d);
    }
    assert!(dir.path().join("generation-1").join("db").is_file());
    assert!(!dir.path().join("db").exists(), "the old files are removed");
    let (status, _, log) = d.terminate();
    assert!(status.success(), "{log}");
    let o = run(&["stats", "--check", "--store", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(&["export", "--store", dir.path().to_str().unwrap()]);
    let fetched: std::collections::BTreeSet<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|row| row["fetches"].as_u64().unwrap() > 0)
        .map(|row| row["url"].as_str().unwrap().to_string())
        .collect();
    assert!(
        acknowledged.len() > 1_000,
        "{} completions",
        acknowledged.len()
    );
    let lost: Vec<_> = acknowledged.difference(&fetched).take(5).collect();
    assert!(lost.is_empty(), "acknowledged, not in the store: {lost:?}");
}
