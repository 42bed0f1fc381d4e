//! The operator's view (issue 15), end to end through the real binary and
//! the daemon on loopback: `ingest` reports failures as `discover` does,
//! the read commands say what to do while a daemon holds the store, times
//! in RFC 3339, the HTTP API's errors, ranges, ids and reasons, errors that
//! say what to do, and `--store`'s help per command.

mod common;

use std::path::Path;
use std::process::Output;

use common::daemon::{Daemon, TOKEN};
use common::{http, indexed_site, json_lines, run, stderr, stdout};
use serde_json::{Value, json};
use sitemapd_testsite::{Body, Reply, TestSite};

fn with_store<'a>(dir: &'a Path, args: &[&'a str]) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.extend(["--store", dir.to_str().unwrap()]);
    v
}

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
