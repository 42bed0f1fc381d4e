//! The hostile-server suite against the real `sitemapd daemon` binary:
//! the daemon carries on while a followed site misbehaves in
//! every way at once; the address guard holds for sites added through the
//! API; and no URL of the store is readable without the token. The
//! walker-level behaviours, one test each, are in
//! `crates/discovery/tests/hostile.rs` (with the table of behaviour → test)
//! and `crates/discovery/tests/guard.rs`.

mod common;

use std::io::{Read, Write};
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::daemon::{Daemon, TOKEN};
use common::http;
use serde_json::{Value, json};
use sitemapd_testsite::{Body, Length, Reply, TestSite, gzip, gzip_zeros};

/// The site's record in `/v1/sites`.
fn site_record(d: &Daemon, seed: &str) -> Value {
    let sites = d.get("/v1/sites");
    sites["sites"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["site"] == seed)
        .cloned()
        .unwrap_or_else(|| panic!("{seed} not followed: {sites}"))
}

/// Whether the site has been walked at least once.
fn walked(d: &Daemon, seed: &str) -> bool {
    site_record(d, seed)["last_walk"].is_i64()
}

fn urlset(locs: &[String]) -> String {
    let mut xml = String::from(
        r#"<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#,
    );
    for loc in locs {
        xml.push_str(&format!("<url><loc>{loc}</loc></url>"));
    }
    xml.push_str("</urlset>");
    xml
}

/// Every sitemap of `tree` (the `/v1/sitemaps` answer), children included,
/// by URL.
fn sitemap_nodes(tree: &Value) -> Vec<Value> {
    fn collect(nodes: &Value, out: &mut Vec<Value>) {
        for node in nodes.as_array().into_iter().flatten() {
            out.push(node.clone());
            collect(&node["children"], out);
        }
    }
    let mut out = Vec::new();
    collect(&tree["sitemaps"], &mut out);
    out
}

/// A site that does everything wrong at once, and tells the daemon so in
/// its robots.txt: each path is one hostile behaviour, and what the daemon
/// must record for it: `Some(status)` a failure with that last status
/// (0: no response), `None` a read cut short (status 200, not complete).
fn hostile_site() -> (TestSite, Vec<(&'static str, Option<u64>)>) {
    let site = TestSite::start();
    let first = format!(
        r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>{}</loc></url>"#,
        site.url("/hostile/0")
    );
    let behaviours: Vec<(&str, Reply, Option<u64>)> = vec![
        // gzip bomb: 256 MiB of spaces after one entry.
        ("/bomb.xml.gz", Reply::ok(bomb(&first, 256 << 20)), None),
        // A gzip bomb that is not a document at all.
        ("/zeros.gz", Reply::ok(gzip_zeros(64 << 20)), Some(200)),
        // Endless chunked body (whitespace after one entry: nothing to
        // ingest, only the cap to hit).
        (
            "/endless.xml",
            Reply::ok("")
                .body(Body::Chain(vec![
                    Body::Bytes(Bytes::from(first.clone())),
                    Body::Repeat {
                        chunk: Bytes::from_static(&[b' '; 4096]),
                        count: None,
                    },
                ]))
                .length(Length::Chunked),
            None,
        ),
        // A byte a second.
        (
            "/drip.xml",
            Reply::ok("").body(Body::Drip {
                chunk: Bytes::from_static(b" "),
                every: Duration::from_secs(1),
                count: None,
            }),
            Some(200),
        ),
        // Headers that never end.
        (
            "/head.xml",
            Reply::ok("")
                .body(Body::Chain(vec![
                    Body::Bytes(Bytes::from_static(b"HTTP/1.1 200 OK\r\n")),
                    Body::Repeat {
                        chunk: Bytes::from_static(b"X-Junk: 0123456789abcdef\r\n"),
                        count: None,
                    },
                ]))
                .length(Length::Raw),
            Some(0),
        ),
        // Reset mid-body.
        (
            "/reset.xml",
            Reply::ok("").body(Body::ResetAfter(Bytes::from(first.clone()))),
            None,
        ),
        // A million nested elements, streamed.
        (
            "/deep.xml",
            Reply::ok("").body(Body::Chain(vec![
                Body::Bytes(Bytes::from(first.clone())),
                Body::Repeat {
                    chunk: Bytes::from_static(b"<a>"),
                    count: Some(1_000_000),
                },
            ])),
            None,
        ),
        // 429 with a Retry-After far beyond the cap: given up at once, and
        // recorded with its status (the error says why).
        (
            "/busy.xml",
            Reply::status(429).header("Retry-After", "3600"),
            Some(429),
        ),
        // A redirect loop.
        ("/loop.xml", Reply::redirect(302, "/loop.xml"), Some(0)),
        // Truncated gzip.
        (
            "/cut.xml.gz",
            Reply::ok({
                let pages: Vec<String> = (0..500)
                    .map(|i| site.url(&format!("/hostile/cut/{i}")))
                    .collect();
                let whole = gzip(urlset(&pages).as_bytes());
                whole[..whole.len() / 2].to_vec()
            }),
            None,
        ),
    ];
    let mut robots = String::from("User-agent: *\nDisallow:\n");
    let mut expected = Vec::new();
    for (path, reply, outcome) in behaviours {
        robots.push_str(&format!("Sitemap: {}\n", site.url(path)));
        site.route(path, reply);
        expected.push((path, outcome));
    }
    site.route("/robots.txt", Reply::ok(robots));
    (site, expected)
}

/// gzip of `prefix` and `spaces` spaces, compressed as it goes.
fn bomb(prefix: &str, spaces: usize) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(prefix.as_bytes()).unwrap();
    let block = vec![b' '; 1 << 20];
    for _ in 0..spaces / block.len() {
        gz.write_all(&block).unwrap();
    }
    gz.finish().unwrap()
}

#[test]
fn the_daemon_carries_on() {
    let (hostile, expected) = hostile_site();
    let good = TestSite::start();
    let good_pages: Vec<String> = (0..50).map(|i| good.url(&format!("/p/{i}"))).collect();
    good.route(
        "/robots.txt",
        Reply::ok(format!("Sitemap: {}\n", good.url("/sitemap.xml"))),
    );
    good.route("/sitemap.xml", Reply::ok(urlset(&good_pages)));
    let dir = tempfile::tempdir().unwrap();
    let (hostile_seed, good_seed) = (hostile.url("/"), good.url("/"));
    let d = Daemon::start(
        &dir.path().join("store"),
        &[
            "--timeout",
            "3",
            "--max-bytes",
            "4194304",
            &hostile_seed,
            &good_seed,
        ],
    );
    let started = Instant::now();
    d.wait_for("both sites walked", |d| {
        walked(d, &hostile_seed) && walked(d, &good_seed)
    });
    let took = started.elapsed();

    // Healthy, and answering.
    assert_eq!(http(d.addr, "GET", "/healthz", None, None).0, 200);
    // Every URL of the good site is in the store.
    for page in &good_pages {
        let rec = d.get(&format!("/v1/urls?url={page}"));
        assert_eq!(rec["url"], page.as_str(), "{rec}");
    }
    assert_eq!(site_record(&d, &good_seed)["last_failed"], 0);
    assert_eq!(site_record(&d, &good_seed)["last_entries"], 50);

    // Every hostile sitemap shows what went wrong.
    let tree = d.get(&format!("/v1/sitemaps?site={hostile_seed}"));
    let nodes = sitemap_nodes(&tree);
    for (path, outcome) in &expected {
        let url = hostile.url(path);
        let node = nodes
            .iter()
            .find(|n| n["url"] == url.as_str())
            .unwrap_or_else(|| panic!("{path} not in {tree:#}"));
        match outcome {
            Some(status) => {
                assert_eq!(node["last_status"], *status, "{path}: {node:#}");
                assert_eq!(node["errors"], 1, "{path}: {node:#}");
                assert!(node["last_success"].is_null(), "{path}: {node:#}");
            }
            None => {
                assert_eq!(node["last_status"], 200, "{path}: {node:#}");
                assert_eq!(node["errors"], 0, "{path}: {node:#}");
                assert!(node["last_success"].is_i64(), "{path}: {node:#}");
                assert_eq!(node["last_read_complete"], false, "{path}: {node:#}");
            }
        }
    }
    let hostile_site = site_record(&d, &hostile_seed);
    let failed = expected.iter().filter(|(_, o)| o.is_some()).count();
    assert_eq!(hostile_site["last_failed"], failed as u64, "{hostile_site}");
    // The good site's sitemap: complete.
    let good_tree = d.get(&format!("/v1/sitemaps?site={good_seed}"));
    assert_eq!(
        good_tree["sitemaps"][0]["last_read_complete"], true,
        "{good_tree}"
    );

    // Still serving the queue after all that.
    let leased = d.post("/v1/lease", json!({"n": 10, "per_host": 10}));
    assert!(!leased["urls"].as_array().unwrap().is_empty(), "{leased}");
    assert_eq!(http(d.addr, "GET", "/healthz", None, None).0, 200);
    assert!(took < Duration::from_secs(40), "{took:?}");
    assert!(!d.log().contains("panicked"), "{}", d.log());
}

#[test]
fn sites_added_through_the_api_pass_the_guard() {
    let site = TestSite::start();
    site.route(
        "/robots.txt",
        Reply::ok(format!("Sitemap: {}\n", site.url("/s.xml"))),
    );
    site.route("/s.xml", Reply::ok(urlset(&[site.url("/p")])));
    let port = site.port();
    let dir = tempfile::tempdir().unwrap();
    // No --allow-private. evil.test is answered with 127.0.0.1 (like DNS
    // rebinding onto the machine's own services); localhost goes through
    // the system resolver.
    let d = Daemon::start_guarded(
        &dir.path().join("store"),
        &[
            "--resolve",
            "evil.test=127.0.0.1",
            "--resolve",
            "zero.test=0.0.0.0",
        ],
    );
    let seeds = [
        format!("http://evil.test:{port}/"),
        format!("http://zero.test:{port}/"),
        format!("http://localhost:{port}/"),
        format!("http://127.0.0.1:{port}/"),
        format!("http://[::1]:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        format!("http://0.0.0.0:{port}/"),
        format!("http://evil.test:{port}/s.xml"),
        "http://10.0.0.1/".to_string(),
        "http://169.254.169.254/latest/meta-data/".to_string(),
    ];
    let added = d.post("/v1/sites", json!({ "sites": seeds }));
    let keys: Vec<String> = added["added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    assert_eq!(keys.len(), seeds.len(), "{added}");
    d.wait_for("every added site walked", |d| {
        keys.iter().all(|k| walked(d, k))
    });
    for key in &keys {
        let rec = site_record(&d, key);
        assert_eq!(rec["last_sitemaps"], 0, "{key}: {rec}");
        assert_eq!(rec["last_entries"], 0, "{key}: {rec}");
    }
    assert_eq!(site.connections(), 0, "the guard let a connection through");
    assert_eq!(d.get("/v1/stats")["stats"]["active"], 0);
    // The refusals are logged as such.
    let log = d.log();
    // The refusal of each seed is logged as such, naming the host refused:
    // a daemon with no guard, whose connections to these addresses simply
    // failed, would log "connection failed" (or nothing) instead.
    let hosts = [
        "evil.test",
        "zero.test",
        "localhost",
        "127.0.0.1",
        "::1",
        "::ffff:127.0.0.1",
        "0.0.0.0",
        "evil.test",
        "10.0.0.1",
        "169.254.169.254",
    ];
    for (key, host) in keys.iter().zip(hosts) {
        let refused = log.lines().any(|line| {
            let of_this_seed =
                line.contains(&format!("site={key} ")) || line.contains(&format!("url={key} "));
            of_this_seed && line.contains("address guard refused ") && line.contains(host)
        });
        assert!(
            refused,
            "{key}: no refusal by the address guard naming {host} logged:\n{log}"
        );
    }
    // The metrics count them as refused, not as outages.
    let (_, metrics) = http(d.addr, "GET", "/metrics", Some(TOKEN), None);
    let refused = metrics
        .lines()
        .find(|l| l.starts_with("sitemapd_robots_fetches_total{status=\"refused\"}"))
        .unwrap_or_else(|| panic!("no refused robots.txt counted:\n{metrics}"));
    let counted: u64 = refused.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(counted >= 1, "{refused}");
    assert!(
        !metrics.contains("sitemapd_robots_fetches_total{status=\"unreachable\"}"),
        "{metrics}"
    );
}

/// Every route of the API, with a body for those that take one.
const ROUTES: [(&str, &str, Option<&str>); 10] = [
    ("GET", "/v1/sites", None),
    ("GET", "/v1/urls?url=URL", None),
    ("GET", "/v1/sitemaps?site=SITE", None),
    ("GET", "/v1/stats", None),
    ("GET", "/metrics", None),
    ("POST", "/v1/lease", Some(r#"{"n":10}"#)),
    ("POST", "/v1/complete", Some("[]")),
    ("POST", "/v1/notify", Some(r#"{"urls":[]}"#)),
    ("POST", "/v1/sites", Some(r#"{"sites":["SITE"]}"#)),
    (
        "DELETE",
        "/v1/sites",
        Some(r#"{"sites":["http://unknown.test/"]}"#),
    ),
];

#[test]
fn no_url_of_the_store_is_readable_without_the_token() {
    let site = TestSite::start();
    let page = site.url("/secret-page");
    site.route(
        "/robots.txt",
        Reply::ok(format!("Sitemap: {}\n", site.url("/s.xml"))),
    );
    site.route("/s.xml", Reply::ok(urlset(std::slice::from_ref(&page))));
    let dir = tempfile::tempdir().unwrap();
    let seed = site.url("/");
    let d = Daemon::start(
        &dir.path().join("store"),
        &["--max-request-bytes", "1024", &seed],
    );
    d.wait_for("the site's walk", |d| walked(d, &seed));
    let fill = |path: &str| path.replace("URL", &page).replace("SITE", &seed);
    // With the token, the page is there to be read.
    let (status, text) = http(d.addr, "GET", &fill("/v1/urls?url=URL"), Some(TOKEN), None);
    assert_eq!(status, 200, "{text}");

    let last_changed = format!("{}X", &TOKEN[..TOKEN.len() - 1]);
    let longer = format!("{TOKEN}X");
    let upper = TOKEN.to_uppercase();
    let wrong = [
        None,
        Some("wrong"),
        Some(last_changed.as_str()),     // same length, last byte differs
        Some(longer.as_str()),           // a byte longer
        Some(&TOKEN[..TOKEN.len() - 1]), // a prefix
        Some(upper.as_str()),
    ];
    for (method, path, body) in ROUTES {
        let path = fill(path);
        let body = body.map(fill);
        for token in wrong {
            let (status, text) = http(d.addr, method, &path, token, body.as_deref());
            assert_eq!(status, 401, "{method} {path} with {token:?}: {text}");
            assert!(!text.contains("secret-page"), "{method} {path}: {text}");
            assert!(!text.contains(&seed), "{method} {path}: {text}");
        }
    }
    // Other spellings of the routes, other schemes of Authorization, HEAD:
    // never a store URL without the token.
    let raw = |request: String| -> String {
        let mut conn = std::net::TcpStream::connect(d.addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        conn.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        let _ = conn.read_to_string(&mut answer);
        answer
    };
    let url_path = fill("/v1/urls?url=URL");
    for (method, path, auth) in [
        ("HEAD", url_path.as_str(), String::new()),
        ("GET", "/v1/sites/", String::new()),
        ("GET", "//v1/sites", String::new()),
        ("GET", "/v1//sites", String::new()),
        ("GET", "/V1/SITES", String::new()),
        ("GET", "/v1/%73ites", String::new()),
        ("GET", "/v1/sites?", String::new()),
        (
            "GET",
            "/v1/sites",
            format!("Authorization: Basic {TOKEN}\r\n"),
        ),
        (
            "GET",
            "/v1/sites",
            format!("Authorization: bearer {TOKEN}x\r\n"),
        ),
        ("GET", "/v1/sites", "Authorization: Bearer\r\n".to_string()),
        (
            "GET",
            "/v1/sites",
            format!("X-Authorization: Bearer {TOKEN}\r\n"),
        ),
        (
            "GET",
            "/v1/sites",
            format!("Authorization: Bearer x\r\nAuthorization: Bearer {TOKEN}\r\n"),
        ),
    ] {
        let answer = raw(format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"
        ));
        let status: u16 = answer
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{method} {path}: {answer}"));
        assert!(
            status == 401 || status == 404 || status == 405,
            "{method} {path} {auth:?}: {answer}"
        );
        assert!(!answer.contains("secret-page"), "{method} {path}: {answer}");
        assert!(!answer.contains(&seed), "{method} {path}: {answer}");
    }
    assert_eq!(http(d.addr, "GET", "/healthz", None, None).0, 200);

    // Body limits hold on every route that takes a body (413), announced or
    // chunked, and a stranger's body is refused before it is read (401).
    let big = format!("[{}1]", "1,".repeat(1024));
    for (method, path, body) in ROUTES.iter().filter(|r| r.2.is_some()) {
        let path = fill(path);
        let (status, text) = http(d.addr, method, &path, Some(TOKEN), Some(&big));
        assert_eq!(status, 413, "{method} {path}: {text}");
        let (status, text) = http(d.addr, method, &path, None, Some(&big));
        assert_eq!(status, 401, "{method} {path} without a token: {text}");
        let _ = body;
        let chunk = "1,".repeat(600);
        let answer = raw(format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{chunk}\r\n{:x}\r\n{chunk}\r\n0\r\n\r\n",
            d.addr,
            chunk.len(),
            chunk.len()
        ));
        assert!(
            answer.starts_with("HTTP/1.1 413"),
            "{method} {path} chunked: {answer}"
        );
    }
}

#[test]
fn off_loopback_needs_a_token() {
    let dir = tempfile::tempdir().unwrap();
    for listen in ["0.0.0.0:0", "[::]:0", "[::ffff:127.0.0.1]:0"] {
        let out = Command::new(env!("CARGO_BIN_EXE_sitemapd"))
            .args(["daemon", "--store", dir.path().join("s").to_str().unwrap()])
            .args(["--listen", listen])
            .env_remove("SITEMAPD_TOKEN")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{listen}: started without a token");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("needs an API token"), "{listen}: {err}");
    }
}

#[test]
fn a_request_head_must_arrive_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(&dir.path().join("store"), &["--head-timeout-secs", "1"]);
    let closed_within = |sent: &[u8]| -> Duration {
        let mut conn = std::net::TcpStream::connect(d.addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        conn.write_all(sent).unwrap();
        let started = Instant::now();
        let mut answer = Vec::new();
        // Ends with the connection (EOF or reset), not the read timeout.
        let result = conn.read_to_end(&mut answer);
        let took = started.elapsed();
        if let Err(e) = result {
            assert_ne!(
                e.kind(),
                std::io::ErrorKind::WouldBlock,
                "still open after {took:?}"
            );
        }
        took
    };
    // Nothing at all; half a head; a head trickled a byte at a time would
    // be the same as half a head, since the limit is on the whole head.
    for sent in [&b""[..], b"GET /healthz HTTP/1.1\r\nHost: x\r\n"] {
        let took = closed_within(sent);
        assert!(
            took < Duration::from_secs(5),
            "{:?}: {took:?}",
            String::from_utf8_lossy(sent)
        );
    }
    // A kept-alive connection waiting for its next request: closed too.
    let took = closed_within(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(took < Duration::from_secs(5), "idle keep-alive: {took:?}");
    assert_eq!(http(d.addr, "GET", "/healthz", None, None).0, 200);
}
