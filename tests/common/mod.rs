//! What the binary's end-to-end tests share: running `sitemapd` and
//! reading what it printed.
#![allow(dead_code)] // each test binary uses its own subset

use std::process::{Command, Output};

use sitemapd_testsite::{Reply, TestSite};

pub(crate) mod clock;
pub(crate) mod cluster;
pub(crate) mod daemon;
pub(crate) mod frontier;
pub(crate) mod sockets;

/// The binary under test.
pub(crate) fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sitemapd"))
}

/// Runs it with `args` and waits.
pub(crate) fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

/// `args` followed by `--store DIR`.
pub(crate) fn with_store<'a>(dir: &'a std::path::Path, args: &[&'a str]) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.extend(["--store", dir.to_str().unwrap()]);
    v
}

/// Runs it with `args`, `input` on its stdin, and waits.
pub(crate) fn run_with_input(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = bin()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// SIGKILL to `child`: a child that has already exited is fine (there is
/// nothing left to end); any other failure fails the test.
pub(crate) fn kill(child: &mut std::process::Child) {
    match child.kill() {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {}
        Err(e) => panic!("cannot kill process {}: {e}", child.id()),
    }
}

/// Its stdout, as text.
pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// Its stderr, as text.
pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// `sitemapd stats --check` on the store at `store` passes: every record,
/// due entry and kept count agrees.
pub(crate) fn assert_store_checks(store: &std::path::Path) {
    let check = run(&["stats", "--check", "--store", store.to_str().unwrap()]);
    assert!(
        check.status.success(),
        "{}{}",
        stdout(&check),
        stderr(&check)
    );
}

/// Every line of `s` as JSON.
pub(crate) fn json_lines(s: &str) -> Vec<serde_json::Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// One request to a loopback server (`Connection: close`): status and body
/// as text.
pub(crate) fn http(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> (u16, String) {
    let r = sitemapd_testsite::client::request(addr, method, path, token, body.map(str::as_bytes))
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    (r.status, r.text())
}

/// A loopback site: robots.txt -> index -> `sitemaps` sitemaps of `per`
/// URLs each (lastmod and changefreq on every URL; each sitemap answers
/// 304 to its ETag).
pub(crate) fn indexed_site(sitemaps: usize, per: usize) -> TestSite {
    let site = TestSite::start();
    let mut index =
        String::from(r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#);
    for s in 0..sitemaps {
        let path = format!("/sitemaps/{s}.xml");
        index.push_str(&format!(
            "<sitemap><loc>{}</loc></sitemap>",
            site.url(&path)
        ));
        let mut body =
            String::from(r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#);
        for i in 0..per {
            body.push_str(&format!(
                "<url><loc>{}</loc><lastmod>2024-05-{:02}</lastmod><changefreq>daily</changefreq></url>",
                site.url(&format!("/s{s}/page-{i}")),
                i % 28 + 1
            ));
        }
        body.push_str("</urlset>");
        let etag = format!("\"{s}\"");
        site.route_fn(&path, move |req, _| {
            if req.header("if-none-match") == Some(etag.as_str()) {
                Reply::status(304)
            } else {
                Reply::ok(body.clone()).header("ETag", &etag)
            }
        });
    }
    index.push_str("</sitemapindex>");
    site.route("/sitemap_index.xml", Reply::ok(index));
    site.route(
        "/robots.txt",
        Reply::ok(format!("Sitemap: {}\n", site.url("/sitemap_index.xml"))),
    );
    site
}
