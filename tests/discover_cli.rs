//! `sitemapd robots`, `sitemapd discover` and `sitemapd parse URL` end to
//! end: the real binary against a loopback fixture site.

mod common;

use std::path::PathBuf;
use std::process::Output;

use common::{json_lines, run, stderr, stdout};
use sitemapd_testsite::{Reply, TestSite, gzip};

fn urlset(locs: &[String]) -> String {
    let mut s = String::from(r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#);
    for loc in locs {
        s.push_str(&format!(
            "<url><loc>{loc}</loc><lastmod>2024-05-01</lastmod></url>"
        ));
    }
    s + "</urlset>"
}

/// robots.txt -> index -> two sitemaps (one gzipped) and a child that fails.
fn fixture_site() -> TestSite {
    let site = TestSite::start();
    site.route(
        "/robots.txt",
        Reply::ok(format!(
            "User-agent: *\nDisallow: /admin\nSitemap: {}\nSitemap: /relative.xml\n",
            site.url("/sitemap_index.xml")
        )),
    );
    site.route(
        "/sitemap_index.xml",
        Reply::ok(format!(
            r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>{}</loc></sitemap><sitemap><loc>{}</loc></sitemap><sitemap><loc>{}</loc></sitemap></sitemapindex>"#,
            site.url("/posts.xml"),
            site.url("/pages.xml.gz"),
            site.url("/gone.xml")
        )),
    );
    site.route(
        "/posts.xml",
        Reply::ok(urlset(&[site.url("/post/1"), site.url("/post/2")])),
    );
    site.route(
        "/pages.xml.gz",
        Reply::ok(gzip(urlset(&[site.url("/about")]).as_bytes())),
    );
    site.route("/gone.xml", Reply::status(410));
    site.route("/relative.xml", Reply::ok(urlset(&[site.url("/r")])));
    site
}

const LOOPBACK: [&str; 4] = ["--allow-private", "--min-delay", "0", "--no-probe"];

/// `sitemapd discover` on loopback (no probing) with `extra` flags.
fn discover(root: &str, extra: &[&str]) -> Output {
    let mut args = vec!["discover"];
    args.extend(extra);
    args.extend(LOOPBACK);
    args.push(root);
    run(&args)
}

#[test]
fn robots_from_a_file_and_from_a_url() {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/corpus/robots/bharath06__robotstxt__ddrk.me");
    let file = file.to_str().unwrap();
    let o = run(&["robots", file, "--url", "https://ddrk.me/robots.txt"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "https://ddrk.me/sitemap_index.xml\n");
    assert!(
        stderr(&o).contains(&format!("warning[R3] {file}:")),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("summary: "), "{}", stderr(&o));

    // Without --url a relative value cannot be resolved: dropped, flagged.
    let o = run(&["robots", file, "--json"]);
    assert_eq!(stdout(&o), "");
    let diags = json_lines(&stderr(&o));
    assert_eq!(diags[0]["rule"], "R3");
    assert_eq!(diags.last().unwrap()["type"], "summary");

    let site = fixture_site();
    let o = run(&[
        "robots",
        &site.url("/robots.txt"),
        "--json",
        "--allow-private",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines = json_lines(&stdout(&o));
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["url"], site.url("/sitemap_index.xml"));
    assert_eq!(lines[1]["url"], site.url("/relative.xml"));
    assert_eq!(lines[1]["line"], 4);

    // RFC 9309: 4xx is "no robots.txt" (exit 0), 5xx "try later" (exit 1).
    let o = run(&[
        "robots",
        &site.url("/missing/robots.txt"),
        "--allow-private",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("HTTP 404"), "{}", stderr(&o));
    site.route("/down/robots.txt", Reply::status(503));
    let o = run(&["robots", &site.url("/down/robots.txt"), "--allow-private"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("try later"), "{}", stderr(&o));
}

#[test]
fn discover_prints_the_tree() {
    let site = fixture_site();
    let root = site.url("/");
    let o = discover(&root, &["--max-diagnostics-per-rule", "0"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with(&format!("{root}\n  robots.txt 200: 2 sitemaps")),
        "{out}"
    );
    let line = |needle: &str| {
        out.lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle}:\n{out}"))
            .to_string()
    };
    assert!(line("/sitemap_index.xml").starts_with("  http"), "{out}");
    assert!(
        line("/sitemap_index.xml").contains("200 sitemapindex 3 sitemaps"),
        "{out}"
    );
    assert!(line("/posts.xml").starts_with("    http"), "{out}");
    assert!(line("/posts.xml").contains("urlset 2 urls"), "{out}");
    assert!(line("/pages.xml.gz").contains("1 url gzip"), "{out}");
    assert!(line("/gone.xml").contains("FAILED: HTTP 410"), "{out}");
    assert!(
        line("  total:").contains("4 sitemaps read, 1 failed, 4 urls"),
        "{out}"
    );
    assert!(
        out.lines()
            .last()
            .unwrap()
            .starts_with("total: 1 site, 4 sitemaps read, 1 failed, 4 urls"),
        "{out}"
    );
    // robots.txt's relative Sitemap: was resolved and flagged on stderr.
    assert!(stderr(&o).contains("warning[R3]"), "{}", stderr(&o));
}

#[test]
fn discover_entries_streams_the_parse_contract_with_a_source() {
    let site = fixture_site();
    let root = site.url("/");
    let o = discover(&root, &["--entries"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines = json_lines(&stdout(&o));
    assert_eq!(lines.len(), 4);
    let post = lines
        .iter()
        .find(|l| l["loc"] == site.url("/post/1"))
        .unwrap();
    assert_eq!(post["type"], "url");
    assert_eq!(post["source"], site.url("/posts.xml"));
    assert_eq!(post["lastmod"], "2024-05-01T00:00:00Z");
    assert_eq!(post["lastmod_precision"], "day");
    // The tree went to stderr.
    assert!(stderr(&o).contains("total: 1 site"), "{}", stderr(&o));
}

#[test]
fn follow_takes_only_the_index_children_it_matches() {
    let site = fixture_site();
    let root = site.url("/");
    let o = discover(
        &root,
        &["--entries", "--follow", "/posts", "--follow", "(?i)PAGES"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut locs: Vec<String> = json_lines(&stdout(&o))
        .iter()
        .map(|l| l["loc"].as_str().unwrap().to_owned())
        .collect();
    locs.sort();
    // /gone.xml is not taken; /relative.xml is robots.txt's own.
    let mut expected = ["/about", "/post/1", "/post/2", "/r"].map(|p| site.url(p));
    expected.sort();
    assert_eq!(locs, expected);
    assert_eq!(site.hits("/gone.xml"), 0);
    assert!(
        stderr(&o).contains("skipped 1 child of") && stderr(&o).contains("not taken by --follow"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn discover_json_events() {
    let site = fixture_site();
    let root = site.url("/");
    let o = discover(&root, &["--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let events = json_lines(&stdout(&o));
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types[0], "robots");
    assert_eq!(events[0]["outcome"], "parsed");
    assert_eq!(*types.last().unwrap(), "site_done");
    assert_eq!(types.iter().filter(|t| **t == "sitemap_fetched").count(), 4);
    let failed = events
        .iter()
        .find(|e| e["type"] == "sitemap_failed")
        .unwrap();
    assert_eq!(failed["status"], 410);
    assert_eq!(failed["parent"], site.url("/sitemap_index.xml"));
    let posts = events
        .iter()
        .find(|e| e["type"] == "sitemap_fetched" && e["url"] == site.url("/posts.xml"))
        .unwrap();
    assert_eq!(posts["summary"]["urls"], 2);
    assert_eq!(posts["depth"], 1);
    assert_eq!(posts["via"], "index");
    assert!(posts["duration"].is_u64());
    assert!(!types.contains(&"url"), "entries only with --entries");
}

#[test]
fn discover_refuses_loopback_without_allow_private() {
    let site = fixture_site();
    let o = run(&["discover", "--min-delay", "0", &site.url("/")]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("robots.txt not fetched: address guard refused"),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("--allow-private"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("try later"), "{}", stdout(&o));
    assert_eq!(site.connections(), 0);
}

#[test]
fn discover_resolve_names_and_probe() {
    let site = TestSite::start();
    site.route(
        "/sitemap.xml",
        Reply::ok(urlset(&[format!("http://shop.test:{}/item", site.port())])),
    );
    let root = format!("http://shop.test:{}/", site.port());
    let o = run(&[
        "discover",
        "--allow-private",
        "--min-delay",
        "0",
        "--resolve",
        "shop.test=127.0.0.1",
        &root,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("robots.txt 404: unavailable"), "{out}");
    assert!(
        out.contains(&format!("{root}sitemap.xml  200 urlset 1 url")),
        "{out}"
    );
    assert!(out.contains("probe ") && out.contains("HTTP 404"), "{out}");
    // --no-probe: nothing found, exit 1.
    let o = run(&[
        "discover",
        "--allow-private",
        "--min-delay",
        "0",
        "--no-probe",
        "--resolve",
        "shop.test=127.0.0.1",
        &root,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
}

#[test]
fn parse_fetches_urls() {
    let site = fixture_site();
    let o = run(&["parse", &site.url("/pages.xml.gz"), "--allow-private"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines = json_lines(&stdout(&o));
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["loc"], site.url("/about"));
    assert!(stderr(&o).contains("gzip_layers=1"), "{}", stderr(&o));

    let o = run(&["parse", &site.url("/gone.xml"), "--allow-private"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("HTTP 410"), "{}", stderr(&o));

    let o = run(&["parse", &site.url("/posts.xml")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("address guard"), "{}", stderr(&o));
}

#[test]
fn flag_values_are_checked() {
    for bad in [
        ["--resolve", "example.com:443=1.2.3.4"],
        ["--resolve", "=1.2.3.4"],
        ["--resolve", "example.com=localhost"],
        ["--timeout", "0"],
        ["--min-delay", "-1"],
    ] {
        let o = run(&["discover", bad[0], bad[1], "example.com"]);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", stderr(&o));
    }
}

#[test]
fn host_and_port_seeds_and_json_exit_codes() {
    let site = TestSite::start();
    site.route("/sitemap.xml", Reply::status(500));
    // `127.0.0.1:PORT/sitemap.xml` without a scheme is https: nothing answers TLS there.
    let seed = format!("127.0.0.1:{}/sitemap.xml", site.port());
    let o = run(&[
        "discover",
        "--json",
        "--allow-private",
        "--min-delay",
        "0",
        "--timeout",
        "5",
        &seed,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let events = json_lines(&stdout(&o));
    assert_eq!(events[0]["type"], "sitemap_failed");
    assert!(
        events[0]["url"]
            .as_str()
            .unwrap()
            .starts_with("https://127.0.0.1:")
    );
    let o = run(&[
        "discover",
        "--json",
        "--allow-private",
        "--min-delay",
        "0",
        &site.url("/sitemap.xml"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(json_lines(&stdout(&o))[0]["error"], "HTTP 500");
}

/// Absurd walk limits are refused with their range, and a file given to
/// `discover` is named as one (it is not looked up as a host).
#[test]
fn absurd_limits_and_files_are_refused_with_what_to_do() {
    for (flag, value, says) in [
        ("--max-depth", "4294967295", "at most 8"),
        ("--max-sitemaps", "0", "between 1 and 250000"),
        (
            "--follow",
            "(unclosed",
            "walk.follow: expected regular expressions",
        ),
        (
            "--max-sitemaps",
            "18446744073709551615",
            "between 1 and 250000",
        ),
    ] {
        let o = run(&["discover", flag, value, "example.com"]);
        assert_ne!(o.status.code(), Some(0), "{flag} {value}");
        assert!(stderr(&o).contains(says), "{flag} {value}: {}", stderr(&o));
    }
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/parse/contract.xml");
    let o = run(&["discover", file]);
    assert_ne!(o.status.code(), Some(0));
    let e = stderr(&o);
    assert!(
        e.contains("is a file") && e.contains("sitemapd parse"),
        "{e}"
    );
}

/// Behind a proxy names resolve at the proxy, so a
/// proxy on a loopback or private address would reach what the address
/// guard refuses (`localhost`, internal names, redirects to them). Such a
/// proxy needs `--allow-private`; with it, the walk goes through the proxy.
#[test]
fn a_loopback_proxy_needs_allow_private() {
    // A forward proxy is asked for absolute URLs: the fixture answers them.
    let proxy = TestSite::start();
    proxy.route(
        "http://site.example/robots.txt",
        Reply::ok("Sitemap: http://site.example/s.xml\n"),
    );
    proxy.route(
        "http://site.example/s.xml",
        Reply::ok(urlset(&["http://site.example/page".to_string()])),
    );
    let base = [
        "discover",
        "--min-delay",
        "0",
        "--no-probe",
        "--timeout",
        "5",
    ];
    for via in [
        proxy.url("/").trim_end_matches('/').to_string(),
        format!("http://localhost:{}", proxy.port()),
        format!("socks5h://127.0.0.1:{}", proxy.port()),
        "http://10.0.0.1:3128".to_string(),
        "http://[::1]:3128".to_string(),
    ] {
        let out = run(&[&base[..], &["--proxy", &via, "http://site.example/"]].concat());
        assert!(
            !out.status.success(),
            "--proxy {via} without --allow-private: {}{}",
            stdout(&out),
            stderr(&out)
        );
        let err = stderr(&out);
        assert!(
            err.contains("needs --allow-private") && err.contains(&via),
            "--proxy {via}: {err}"
        );
    }
    assert_eq!(proxy.connections(), 0, "the proxy was contacted");
    let via = proxy.url("/");
    let out = run(&[
        &base[..],
        &[
            "--proxy",
            via.trim_end_matches('/'),
            "--allow-private",
            "--json",
            "http://site.example/",
        ],
    ]
    .concat());
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("http://site.example/s.xml"),
        "{}",
        stdout(&out)
    );
    assert!(proxy.connections() > 0);
}

#[test]
fn the_crawl_delay_wait_is_reported_apart_from_the_fetch() {
    let site = TestSite::start();
    site.route(
        "/robots.txt",
        Reply::ok(format!(
            "User-agent: *\nCrawl-delay: 1\nSitemap: {}\nSitemap: {}\n",
            site.url("/a.xml"),
            site.url("/b.xml")
        )),
    );
    site.route("/a.xml", Reply::ok(urlset(&[site.url("/a")])));
    site.route("/b.xml", Reply::ok(urlset(&[site.url("/b")])));
    let root = site.url("/");

    // One of the two sitemaps waited for the host's 1 s Crawl-delay; its
    // own fetch took far less.
    let o = discover(&root, &["--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let events = json_lines(&stdout(&o));
    let fetched: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "sitemap_fetched")
        .collect();
    assert_eq!(fetched.len(), 2, "{}", stdout(&o));
    let waited = fetched
        .iter()
        .find(|e| e["waited"].as_u64().is_some_and(|w| w >= 900))
        .unwrap_or_else(|| panic!("no sitemap waited the Crawl-delay: {}", stdout(&o)));
    assert!(
        waited["duration"].as_u64().is_some_and(|d| d < 900),
        "the wait counted in the fetch time: {waited}"
    );

    // The tree shows both: `…, 3 ms, waited 1.0 s`.
    let o = discover(&root, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let line = out
        .lines()
        .find(|l| l.contains(".xml  200") && l.contains(", waited "))
        .unwrap_or_else(|| panic!("no sitemap line shows its wait:\n{out}"));
    let (fetch, _) = line.rsplit_once(", waited ").unwrap();
    assert!(fetch.ends_with(" ms"), "fetch time in ms: {line}");
}
