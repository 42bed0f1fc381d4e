//! The IndexNow intake end to end: the real daemon, a loopback site that
//! publishes its key files, and pushes through both forms of the protocol.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::clock::TestClock;
use common::daemon::Daemon;
use common::http;
use serde_json::{Value, json};
use sitemapd_testsite::{Reply, TestSite};

const KEY: &str = "0123456789abcdef";
/// A key whose file is in a folder: it vouches for the URLs under it.
const FOLDER_KEY: &str = "folder-key-0001";
/// A key no file holds.
const MISSING_KEY: &str = "missing-key-0001";
/// A key whose file holds another key.
const WRONG_KEY: &str = "wrong-key-000001";
/// A key whose file is served gzipped.
const GZIP_KEY: &str = "gzip-key-0000001";
/// A key whose file redirects to the root key file.
const MOVED_KEY: &str = "moved-key-000001";
/// A key whose file answers 503.
const DOWN_KEY: &str = "down-key-0000001";

/// The intake's address, from the daemon's log.
fn intake(d: &Daemon) -> SocketAddr {
    let log = d.log();
    let at = log
        .find("IndexNow intake on http://")
        .unwrap_or_else(|| panic!("no IndexNow intake in the log:\n{log}"));
    let rest = &log[at + "IndexNow intake on http://".len()..];
    rest[..rest.find('/').unwrap()].parse().unwrap()
}

/// A request to the intake (no token): the status, the body, and
/// Retry-After.
fn call(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let body = body.map(Value::to_string);
    let (status, text) = http(addr, method, path, None, body.as_deref());
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn push(addr: SocketAddr, site: &TestSite, key: &str, paths: &[&str]) -> (u16, Value) {
    let urls: Vec<String> = paths.iter().map(|p| site.url(p)).collect();
    let body = json!({ "host": host(site), "key": key, "urlList": urls });
    call(addr, "POST", "/indexnow", Some(&body))
}

fn host(site: &TestSite) -> String {
    format!("127.0.0.1:{}", site.port())
}

/// A followed site: robots.txt (disallowing /private/), a sitemap of 20
/// pages, and key files: `KEY` at the root, `FOLDER_KEY` in /news/, a file
/// for `WRONG_KEY` holding another key. The key file at the root answers
/// 404 once `revoked` is set.
fn site(revoked: Arc<AtomicBool>) -> TestSite {
    let site = TestSite::start();
    site.route(
        "/robots.txt",
        Reply::ok(format!(
            "User-agent: *\nDisallow: /private/\nSitemap: {}\n",
            site.url("/sitemap.xml")
        )),
    );
    let mut xml = String::from(r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#);
    for i in 0..20 {
        xml.push_str(&format!(
            "<url><loc>{}</loc></url>",
            site.url(&format!("/page/{i}"))
        ));
    }
    xml.push_str("</urlset>");
    site.route("/sitemap.xml", Reply::ok(xml));
    site.route_fn(&format!("/{KEY}.txt"), move |_, _| {
        if revoked.load(Ordering::SeqCst) {
            Reply::status(404)
        } else {
            Reply::ok(format!("{KEY}\n"))
        }
    });
    site.route(&format!("/news/{FOLDER_KEY}.txt"), Reply::ok(FOLDER_KEY));
    site.route(&format!("/{WRONG_KEY}.txt"), Reply::ok("some-other-key-1"));
    site.route(
        &format!("/{GZIP_KEY}.txt"),
        Reply::ok(sitemapd_testsite::gzip(GZIP_KEY.as_bytes())),
    );
    site.route(
        &format!("/{MOVED_KEY}.txt"),
        Reply::redirect(301, &format!("/{KEY}.txt")),
    );
    site.route(&format!("/{DOWN_KEY}.txt"), Reply::status(503));
    site
}

fn record(d: &Daemon, url: &str) -> Option<Value> {
    let (status, v) = d.call("GET", &format!("/v1/urls?url={url}"), None);
    (status == 200).then(|| v["record"].clone())
}

#[test]
fn pushes_are_verified_applied_and_refused_as_the_protocol_says() {
    let revoked = Arc::new(AtomicBool::new(false));
    let site = site(revoked.clone());
    let other = TestSite::start();
    let clock = TestClock::at_system_time();
    let dir = tempfile::tempdir().unwrap();
    let [c0, c1] = clock.args();
    let d = Daemon::start(
        dir.path(),
        &[
            &site.url("/"),
            c0,
            c1,
            "--indexnow-listen",
            "127.0.0.1:0",
            "--indexnow-recheck-secs",
            "3600",
            "--indexnow-host-requests-per-minute",
            "40",
        ],
    );
    let addr = intake(&d);
    d.wait_for("the site's 20 pages", |d| d.active() >= 20);

    // A new key: received, verified in the background (202), then applied.
    let fresh = site.url("/news/fresh");
    let (status, v) = call(
        addr,
        "GET",
        &format!("/indexnow?url={fresh}&key={KEY}"),
        None,
    );
    assert_eq!(status, 202, "{v}");
    d.wait_for("the first push applied", |d| record(d, &fresh).is_some());
    assert_eq!(site.hits(&format!("/{KEY}.txt")), 1);
    // A verified push is leased ahead of the 20 pages due since the walk.
    let lease = d.post("/v1/lease", json!({ "n": 1 }));
    assert_eq!(lease["urls"][0]["url"], fresh.as_str(), "{lease}");

    // Verified: the next pushes are applied before the answer (200), the
    // file not fetched again; a URL robots.txt disallows is kept blocked.
    let (status, v) = push(addr, &site, KEY, &["/page/3", "/news/b", "/private/x"]);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["applied"], 3);
    assert_eq!(
        record(&d, &site.url("/news/b")).unwrap()["urgency"],
        "pushed"
    );
    assert_eq!(
        record(&d, &site.url("/private/x")).unwrap()["status"],
        "blocked"
    );
    assert_eq!(site.hits(&format!("/{KEY}.txt")), 1);
    // The same URL again within the window counts once.
    let (status, v) = push(addr, &site, KEY, &["/news/b"]);
    assert_eq!(
        (status, v["applied"].as_u64(), v["duplicates"].as_u64()),
        (200, Some(0), Some(1))
    );
    // A URL listed twice in one push is stored once.
    let (status, v) = push(addr, &site, KEY, &["/news/twice", "/news/twice"]);
    assert_eq!(
        (status, v["applied"].as_u64(), v["duplicates"].as_u64()),
        (200, Some(1), Some(1))
    );

    // A key file in a folder vouches for the URLs under it only.
    let folder = site.url(&format!("/news/{FOLDER_KEY}.txt"));
    let body = |paths: &[&str]| {
        let urls: Vec<String> = paths.iter().map(|p| site.url(p)).collect();
        json!({ "host": host(&site), "key": FOLDER_KEY, "keyLocation": folder, "urlList": urls })
    };
    let (status, v) = call(addr, "POST", "/indexnow", Some(&body(&["/news/c"])));
    assert_eq!(status, 202, "{v}");
    let (status, v) = call(addr, "POST", "/indexnow", Some(&body(&["/page/1"])));
    assert_eq!(status, 422, "{v}");
    assert!(
        v["error"].as_str().unwrap().contains("outside /news/"),
        "{v}"
    );

    // A key whose file is missing, or holds another key: received (202),
    // dropped once the file is read, and refused (403) from then on.
    for key in [MISSING_KEY, WRONG_KEY] {
        let (status, _) = push(addr, &site, key, &["/page/5"]);
        assert_eq!(status, 202);
        d.wait_for("the key refused", |_| {
            push(addr, &site, key, &["/page/5"]).0 == 403
        });
    }
    // A key file served where it is named only: a redirect refuses it.
    let (status, _) = push(addr, &site, MOVED_KEY, &["/page/5"]);
    assert_eq!(status, 202);
    d.wait_for("the moved key refused", |_| {
        push(addr, &site, MOVED_KEY, &["/page/5"]).0 == 403
    });
    // A gzipped key file verifies.
    let (status, _) = push(addr, &site, GZIP_KEY, &["/page/6"]);
    assert_eq!(status, 202);
    d.wait_for("the gzipped key verified", |_| {
        push(addr, &site, GZIP_KEY, &["/page/9"]).0 == 200
    });
    // A key file that cannot be read now is not a refusal: 429, later.
    let (status, _) = push(addr, &site, DOWN_KEY, &["/page/5"]);
    assert_eq!(status, 202);
    d.wait_for("the key file found down", |_| {
        push(addr, &site, DOWN_KEY, &["/page/5"]).0 == 429
    });
    let (_, v) = push(addr, &site, WRONG_KEY, &["/page/5"]);
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("does not hold the key"),
        "{v}"
    );

    // What the protocol refuses before any key file is read.
    let (status, _) = push(addr, &site, "short", &["/page/1"]);
    assert_eq!(status, 422, "a key outside the schema");
    let (status, v) = push(addr, &site, KEY, &["/page/1"]).clone();
    assert_eq!(status, 200, "{v}");
    let off_host = json!({ "host": host(&site), "key": KEY, "urlList": [other.url("/x")] });
    assert_eq!(
        call(addr, "POST", "/indexnow", Some(&off_host)).0,
        422,
        "a URL on another host"
    );
    let many: Vec<String> = (0..10_001).map(|i| site.url(&format!("/m/{i}"))).collect();
    let too_many = json!({ "host": host(&site), "key": KEY, "urlList": many });
    assert_eq!(
        call(addr, "POST", "/indexnow", Some(&too_many)).0,
        400,
        "10,001 URLs"
    );
    assert_eq!(call(addr, "POST", "/indexnow", None).0, 400, "no body");
    assert_eq!(
        call(addr, "GET", &format!("/indexnow?key={KEY}"), None).0,
        400,
        "no url"
    );
    // A host the daemon does not follow.
    let (status, v) = push(addr, &other, KEY, &["/x"]);
    assert_eq!(status, 403, "{v}");
    assert!(v["error"].as_str().unwrap().contains("not accepted"), "{v}");
    assert_eq!(
        other.hits(&format!("/{KEY}.txt")),
        0,
        "nothing fetched for it"
    );

    // A day later the key is verified again: a file that no longer holds
    // it revokes it.
    revoked.store(true, Ordering::SeqCst);
    clock.advance(3_601);
    let (status, _) = push(addr, &site, KEY, &["/page/7"]);
    assert_eq!(status, 200, "applied while the re-check runs");
    d.wait_for("the key revoked", |_| {
        push(addr, &site, KEY, &["/page/8"]).0 == 403
    });
    assert_eq!(site.hits(&format!("/{KEY}.txt")), 2);

    // A flood: past the host's 40 requests a minute, 429 with Retry-After.
    clock.advance(120);
    let flood = (0..60)
        .map(|i| {
            let path = format!(
                "/indexnow?url={}&key={FOLDER_KEY}&keyLocation={folder}",
                site.url(&format!("/news/f{i}"))
            );
            sitemapd_testsite::client::request(addr, "GET", &path, None, None).unwrap()
        })
        .find(|r| r.status == 429)
        .expect("a 429 within 60 requests");
    assert!(
        flood
            .header("retry-after")
            .is_some_and(|s| s.parse::<u64>().unwrap() <= 60)
    );

    // What the operator sees: metrics and stats.
    let (_, metrics) = http(d.addr, "GET", "/metrics", Some(common::daemon::TOKEN), None);
    for line in [
        "sitemapd_indexnow_requests_total{status=\"202\"}",
        "sitemapd_indexnow_requests_total{status=\"403\"}",
        "sitemapd_indexnow_requests_total{status=\"429\"}",
        "sitemapd_indexnow_verifications_total{status=\"revoked\"}",
        "sitemapd_indexnow_urls_total{status=\"applied\"}",
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
    let stats = d.get("/v1/stats");
    assert_eq!(stats["pushes"]["hosts"], 1, "{stats}");
    assert!(stats["pushes"]["urls"].as_u64().unwrap() >= 5, "{stats}");
    // The folder's key still stands for the host.
    assert_eq!(stats["pushes"]["verified_keys"], 1, "{stats}");
    d.terminate();
    common::assert_store_checks(dir.path());
    let shown = common::run(&["stats", "--store", dir.path().to_str().unwrap()]);
    let shown = common::stdout(&shown);
    assert!(
        shown.contains("pushes: 1 host, 1 with an IndexNow key verified"),
        "{shown}"
    );
}

/// The address guard stands for key files as for every fetch: a key file
/// on a private address is never fetched, and its key never verified.
#[test]
fn the_address_guard_refuses_a_key_file_on_a_private_address() {
    let site = site(Arc::new(AtomicBool::new(false)));
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start_guarded(
        dir.path(),
        &[
            "--indexnow-listen",
            "127.0.0.1:0",
            "--indexnow-hosts",
            "any",
        ],
    );
    let addr = intake(&d);
    let (status, v) = push(addr, &site, KEY, &["/page/1"]);
    assert_eq!(status, 202, "{v}");
    d.wait_for("the key refused", |_| {
        push(addr, &site, KEY, &["/page/1"]).0 == 403
    });
    let (_, v) = push(addr, &site, KEY, &["/page/1"]);
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("could not be fetched"),
        "{v}"
    );
    assert!(site.requests().is_empty(), "{:?}", site.requests());
    assert!(record(&d, &site.url("/page/1")).is_none());
}

/// An open intake adds the hosts whose keys verify, so many a day.
#[test]
fn an_open_intake_adds_new_hosts_up_to_its_daily_cap() {
    let site = site(Arc::new(AtomicBool::new(false)));
    let second = TestSite::start();
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(
        dir.path(),
        &[
            "--indexnow-listen",
            "127.0.0.1:0",
            "--indexnow-hosts",
            "any",
            "--indexnow-new-hosts-per-day",
            "1",
        ],
    );
    let addr = intake(&d);
    let (status, v) = push(addr, &site, KEY, &["/page/1"]);
    assert_eq!(status, 202, "{v}");
    d.wait_for("the push applied", |d| {
        record(d, &site.url("/page/1")).is_some()
    });
    let (status, v) = push(addr, &second, KEY, &["/x"]);
    assert_eq!(status, 429, "{v}");
    assert!(v["error"].as_str().unwrap().contains("new hosts"), "{v}");
    assert_eq!(second.hits(&format!("/{KEY}.txt")), 0);
}

/// With a list of hosts, only those hosts' pushes are taken.
#[test]
fn a_listed_intake_takes_its_hosts_only() {
    let site = site(Arc::new(AtomicBool::new(false)));
    let other = TestSite::start();
    let dir = tempfile::tempdir().unwrap();
    let listed = host(&site);
    let d = Daemon::start(
        dir.path(),
        &[
            "--indexnow-listen",
            "127.0.0.1:0",
            "--indexnow-hosts",
            &listed,
        ],
    );
    let addr = intake(&d);
    let (status, v) = push(addr, &other, KEY, &["/x"]);
    assert_eq!(status, 403, "{v}");
    let (status, v) = push(addr, &site, KEY, &["/page/1"]);
    assert_eq!(status, 202, "{v}");
    d.wait_for("the push applied", |d| {
        record(d, &site.url("/page/1")).is_some()
    });
    assert_eq!(other.hits(&format!("/{KEY}.txt")), 0);
}
