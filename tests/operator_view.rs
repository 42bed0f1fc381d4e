//! The operator's view, end to end through the real binary and
//! the daemon on loopback: `ingest` reports failures as `discover` does,
//! the read commands say what to do while a daemon holds the store, times
//! in RFC 3339, the HTTP API's errors, ranges, ids and reasons, errors that
//! say what to do, and `--store`'s help per command.

mod common;

use std::path::Path;
use std::process::Output;

use common::daemon::{Daemon, TOKEN};
use common::{http, indexed_site, json_lines, run, stderr, stdout, with_store};
use serde_json::{Value, json};
use sitemapd_testsite::{Body, Reply, TestSite};

fn urlset(locs: &[String]) -> String {
    let mut s = String::from(r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#);
    for loc in locs {
        s.push_str(&format!("<url><loc>{loc}</loc></url>"));
    }
    s + "</urlset>"
}

/// robots.txt -> index -> a good sitemap, a 410, a 503, a document that
/// stops mid-element and one whose connection is reset mid-body.
fn failing_site() -> TestSite {
    let site = TestSite::start();
    let children = [
        "/good.xml",
        "/gone.xml",
        "/down.xml",
        "/short.xml",
        "/reset.xml",
    ];
    let mut index =
        String::from(r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#);
    for c in children {
        index.push_str(&format!("<sitemap><loc>{}</loc></sitemap>", site.url(c)));
    }
    index.push_str("</sitemapindex>");
    site.route("/index.xml", Reply::ok(index));
    site.route(
        "/robots.txt",
        Reply::ok(format!("Sitemap: {}\n", site.url("/index.xml"))),
    );
    site.route("/good.xml", Reply::ok(urlset(&[site.url("/a")])));
    site.route("/gone.xml", Reply::status(410));
    site.route("/down.xml", Reply::status(503).header("Retry-After", "0"));
    let full = urlset(&[site.url("/b"), site.url("/c")]);
    let short = full[..full.len() - 30].to_string();
    site.route("/short.xml", Reply::ok(short.clone()));
    site.route(
        "/reset.xml",
        Reply::ok("").body(Body::ResetAfter(short.into_bytes().into())),
    );
    site
}

const LOOPBACK: [&str; 4] = ["--allow-private", "--min-delay", "0", "--no-probe"];

fn walk(command: &str, store: Option<&Path>, seed: &str) -> Output {
    let mut args = vec![command];
    args.extend(LOOPBACK);
    if let Some(store) = store {
        args.extend(["--store", store.to_str().unwrap()]);
    }
    args.push(seed);
    run(&args)
}

/// `YYYY-MM-DDThh:mm:ssZ`.
fn is_rfc3339(v: &Value) -> bool {
    let s = v.as_str().unwrap_or_default();
    s.len() == 20
        && s.ends_with('Z')
        && s.as_bytes()[10] == b'T'
        && s[..4].bytes().all(|b| b.is_ascii_digit())
}

#[test]
fn ingest_reports_failures_as_discover_does() {
    let site = failing_site();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let seed = site.url("/");
    let discover = walk("discover", None, &seed);
    let ingest = walk("ingest", Some(&store), &seed);
    let (tree, ingest_err) = (stdout(&discover), stderr(&ingest));
    for what in [
        format!("{}  FAILED: HTTP 410", site.url("/gone.xml")),
        format!("{}  FAILED: HTTP 503", site.url("/down.xml")),
        format!("{}  200 urlset", site.url("/short.xml")),
        "INCOMPLETE".to_string(),
        "cut: ".to_string(),
        "2 failed".to_string(),
    ] {
        assert!(tree.contains(&what), "discover: {what}:\n{tree}");
        assert!(ingest_err.contains(&what), "ingest: {what}:\n{ingest_err}");
    }
    // The truncated document's diagnostic, with its rule id, in both.
    let rule = |err: &str| {
        err.lines()
            .find(|l| l.contains(&site.url("/short.xml")) && l.contains("[C8]"))
            .map(str::to_string)
    };
    assert!(rule(&stderr(&discover)).is_some(), "{}", stderr(&discover));
    assert!(rule(&ingest_err).is_some(), "{ingest_err}");
    assert!(!ingest_err.contains(" 0 failed"), "{ingest_err}");
    assert!(ingest_err.contains("ingest: "), "{ingest_err}");

    // The guard's refusal: named, with the flag that lifts it, in both.
    let connections = site.connections();
    let guarded = |command: &str, store: Option<&Path>| {
        let mut args = vec![command, "--min-delay", "0", "--no-probe"];
        if let Some(store) = store {
            args.extend(["--store", store.to_str().unwrap()]);
        }
        args.push(&seed);
        run(&args)
    };
    let discover = guarded("discover", None);
    let ingest = guarded("ingest", Some(&dir.path().join("guarded")));
    assert_eq!(discover.status.code(), Some(1));
    assert_eq!(ingest.status.code(), Some(1));
    for text in [stdout(&discover), stderr(&ingest)] {
        assert!(
            text.contains("robots.txt not fetched: address guard refused"),
            "{text}"
        );
        assert!(text.contains("--allow-private"), "{text}");
        assert!(!text.contains("try later"), "{text}");
        assert!(!text.contains("0 failed"), "{text}");
    }
    assert_eq!(site.connections(), connections);
}

#[test]
fn read_commands_say_what_to_do_while_the_daemon_runs() {
    let site = indexed_site(1, 3);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let d = Daemon::start(&store, &[&site.url("/")]);
    d.wait_for("the first ingest", |d| d.active() == 3);
    for (args, route) in [
        (&["stats"][..], "GET /v1/stats"),
        (&["export"][..], "GET /v1/urls?url="),
        (&["queue"][..], "POST /v1/lease"),
        (&["queue", "--lease", "60"][..], "POST /v1/lease"),
    ] {
        let o = run(&with_store(&store, args));
        assert_ne!(o.status.code(), Some(0), "{args:?}");
        let err = stderr(&o);
        assert!(err.contains("in use"), "{args:?}: {err}");
        assert!(err.contains(route), "{args:?}: {err}");
        assert!(err.contains("stop the daemon"), "{args:?}: {err}");
    }
}

#[test]
fn times_print_as_rfc3339_on_request() {
    let site = indexed_site(1, 3);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let o = walk("ingest", Some(&store), &site.url("/"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    let o = run(&with_store(&store, &["queue", "-n", "2"]));
    let unix = json_lines(&stdout(&o));
    assert!(unix[0]["due"].is_i64(), "{}", unix[0]);
    let o = run(&with_store(
        &store,
        &["queue", "-n", "2", "--time", "rfc3339"],
    ));
    let lines = json_lines(&stdout(&o));
    assert_eq!(lines.len(), 2);
    assert!(is_rfc3339(&lines[0]["due"]), "{}", lines[0]);
    assert!(is_rfc3339(&lines[0]["not_before"]), "{}", lines[0]);

    let o = run(&with_store(&store, &["export", "--time", "rfc3339"]));
    let rows = json_lines(&stdout(&o));
    assert_eq!(rows.len(), 3);
    for field in ["first_seen", "last_seen", "lastmod", "due"] {
        assert!(is_rfc3339(&rows[0][field]), "{field}: {}", rows[0]);
    }
    assert!(rows[0]["last_fetch"].is_null());
    let o = run(&with_store(
        &store,
        &["export", "--format", "csv", "--time", "rfc3339"],
    ));
    let csv = stdout(&o);
    let row = csv.lines().nth(1).unwrap();
    assert!(row.contains("2024-05-"), "{csv}");
    assert!(row.contains('T') && row.contains("Z,"), "{csv}");
    // Leased: the lease id is a string, the reason `leased`.
    let o = run(&with_store(
        &store,
        &["queue", "-n", "1", "--lease", "60", "--time", "rfc3339"],
    ));
    let leased = json_lines(&stdout(&o));
    assert!(leased[0]["lease"].is_string(), "{}", leased[0]);
    assert_eq!(leased[0]["reason"], "leased");
    assert_eq!(leased[0]["due_reason"], "new");
    assert!(is_rfc3339(&leased[0]["expires"]), "{}", leased[0]);
}

#[test]
fn the_api_answers_errors_ranges_ids_and_times_plainly() {
    let site = indexed_site(1, 3);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let d = Daemon::start(
        &store,
        &["--per-host", "5", "--max-lease", "50", &site.url("/")],
    );
    d.wait_for("the first ingest", |d| d.active() == 3);
    let error = |status: u16, v: &Value| {
        assert!(v["error"].is_string(), "{status}: {v}");
        v["error"].as_str().unwrap().to_string()
    };

    // Every error is JSON.
    let (status, v) = d.call("GET", "/v1/lease", None);
    assert_eq!(status, 405, "{v}");
    assert!(error(status, &v).contains("GET"), "{v}");
    let (status, v) = d.call("DELETE", "/v1/stats", None);
    assert_eq!(status, 405, "{v}");
    error(status, &v);
    let (status, v) = d.call("GET", "/v1/urls", None);
    assert_eq!(status, 400, "{v}");
    assert!(error(status, &v).contains("url"), "{v}");
    let (status, v) = d.call("GET", "/v1/sitemaps?sight=x", None);
    assert_eq!(status, 400, "{v}");
    assert!(error(status, &v).contains("site"), "{v}");
    let (status, text) = http(d.addr, "POST", "/v1/lease", Some(TOKEN), Some("{\"n\":"));
    assert_eq!(status, 400, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert!(error(status, &v).contains("invalid JSON"), "{v}");

    // Out of range: 400 with the range, never a clamp.
    for (body, says) in [
        (json!({"per_host": 6}), "per_host must be between 1 and 5"),
        (json!({"per_host": 0}), "per_host must be between 1 and 5"),
        (json!({"n": 51}), "n must be between 1 and 50"),
        (json!({"max_hosts": 0}), "max_hosts must be at least 1"),
        (
            json!({"ttl_secs": 0}),
            "ttl_secs must be between 1 and 604800",
        ),
    ] {
        let (status, v) = d.call("POST", "/v1/lease", Some(body.clone()));
        assert_eq!(status, 400, "{body}: {v}");
        assert!(error(status, &v).contains(says), "{body}: {v}");
    }

    // No body is all defaults, as `{}` is.
    let (status, text) = http(d.addr, "POST", "/v1/lease", Some(TOKEN), None);
    assert_eq!(status, 200, "{text}");
    let leased: Value = serde_json::from_str(&text).unwrap();
    let urls = leased["urls"].as_array().unwrap();
    assert_eq!(urls.len(), 3, "{leased}");
    let first = &urls[0];
    assert!(first["lease"].is_string(), "{first}");
    assert!(
        first["lease"].as_str().unwrap().parse::<u64>().is_ok(),
        "{first}"
    );
    assert_eq!(first["reason"], "leased", "{first}");
    assert_eq!(first["due_reason"], "new", "{first}");
    assert!(first["due"].is_i64(), "{first}");
    assert!(is_rfc3339(&first["due_rfc3339"]), "{first}");
    assert!(is_rfc3339(&first["expires_rfc3339"]), "{first}");
    assert!(is_rfc3339(&first["not_before_rfc3339"]), "{first}");
    let (status, v) = d.call("POST", "/v1/lease", Some(json!({})));
    assert_eq!(status, 200, "{v}");
    // `n` at `--max-lease` itself is in range (51 above was not).
    let (status, v) = d.call("POST", "/v1/lease", Some(json!({"n": 50})));
    assert_eq!(status, 200, "{v}");

    // A URL under a live lease says so, and names its sitemaps by URL.
    let url = first["url"].as_str().unwrap();
    let rec = d.get(&format!("/v1/urls?url={url}"));
    let record = &rec["record"];
    assert_eq!(record["reason"], "leased", "{rec}");
    assert!(is_rfc3339(&record["leased_until_rfc3339"]), "{rec}");
    assert!(is_rfc3339(&record["first_seen_rfc3339"]), "{rec}");
    assert!(record["last_fetch_rfc3339"].is_null(), "{rec}");
    assert_eq!(
        record["sitemaps"],
        json!([site.url("/sitemaps/0.xml")]),
        "{rec}"
    );

    // Sites and sitemaps carry the twins too.
    let sites = d.get("/v1/sites");
    assert!(
        is_rfc3339(&sites["sites"][0]["added_at_rfc3339"]),
        "{sites}"
    );
    let seed = site.url("/");
    let tree = d.get(&format!("/v1/sitemaps?site={seed}"));
    let index = &tree["sitemaps"][0];
    assert!(is_rfc3339(&index["last_fetch_rfc3339"]), "{tree}");
    assert!(is_rfc3339(&index["refresh"]["next_at_rfc3339"]), "{tree}");
}

#[test]
fn errors_say_what_to_do() {
    // A bare host is tried as https://; a plain-HTTP server answers the
    // TLS hello with an HTTP 400, and the handshake fails.
    let plain = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let bare = format!("127.0.0.1:{}", plain.local_addr().unwrap().port());
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut conn in plain.incoming().map_while(Result::ok) {
            let _ = conn.read(&mut [0; 1024]);
            let _ = conn.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
        }
    });
    let o = run(&[
        "discover",
        "--allow-private",
        "--min-delay",
        "0",
        "--no-probe",
        &bare,
    ]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(out.contains("TLS handshake failed"), "{out}");
    assert!(out.contains(&format!("give http://{bare}/")), "{out}");

    // No scheme, no such file: the URL meant.
    let o = run(&["parse", "example.com/sitemap.xml"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("give the URL: https://example.com/sitemap.xml"),
        "{}",
        stderr(&o)
    );
    let o = run(&["parse", "missing.xml"]);
    assert!(!stderr(&o).contains("https://"), "{}", stderr(&o));

    // The guard names --allow-private (parse and robots too).
    let site = TestSite::start();
    let o = run(&["parse", &site.url("/sitemap.xml")]);
    assert!(stderr(&o).contains("--allow-private"), "{}", stderr(&o));
    let o = run(&["robots", &site.url("/robots.txt")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--allow-private"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("try later"), "{}", stderr(&o));
}

#[test]
fn store_help_says_which_commands_create_it() {
    for command in ["stats", "export", "queue", "complete"] {
        let help = stdout(&run(&[command, "--help"]));
        assert!(!help.contains("created if missing"), "{command}:\n{help}");
        assert!(help.contains("it must exist"), "{command}:\n{help}");
    }
    for command in ["ingest", "daemon"] {
        let help = stdout(&run(&[command, "--help"]));
        assert!(help.contains("created if missing"), "{command}:\n{help}");
    }
}
