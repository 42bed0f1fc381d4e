//! The discovery walk end to end, through the real binary, on a loopback
//! site generated here: robots.txt -> an index of 50 sitemaps x 50,000 URLs
//! (about 555 MB of XML). `sitemapd discover --entries --min-delay 0` with
//! its output to /dev/null: wall time, URLs/s, MB/s and peak RSS, the
//! rates computed from what the run read (its `total:` line). Prints
//! figures; asserts nothing.
//!
//! `cargo bench --bench discover_walk` (`-- --sitemaps N` for a smaller site)
//!
//! With `-- --ingest`, the same site into the store instead (the end-to-end
//! figure): `sitemapd ingest` into a fresh store on disk, then again
//! (every URL unchanged), then `stats` and `queue -n 1000` on it: wall time,
//! URLs/s, peak RSS of each, and the store's bytes on disk per URL.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use sitemapd_testsite::{Reply, TestSite};
use support::run;

const URLS_PER_SITEMAP: usize = 50_000;

fn sitemap(site: &TestSite, part: usize) -> String {
    let mut s = String::with_capacity(URLS_PER_SITEMAP * 230);
    s.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n");
    let host = site.url("");
    for i in 0..URLS_PER_SITEMAP {
        s.push_str(&format!(
            "  <url>\n    <loc>{host}/catalog/part-{part}/section-{}/product-{i}.html</loc>\n    <lastmod>2024-{:02}-{:02}T10:20:30+00:00</lastmod>\n    <changefreq>weekly</changefreq>\n    <priority>0.{}</priority>\n  </url>\n",
            i % 97,
            i % 12 + 1,
            i % 28 + 1,
            i % 10
        ));
    }
    s.push_str("</urlset>\n");
    s
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return; // cargo test --benches asks for a list; nothing to do
    }
    let sitemaps: usize = args
        .iter()
        .position(|a| a == "--sitemaps")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(50);
    if args.iter().any(|a| a == "--serve") {
        return serve(sitemaps);
    }
    let ingest = args.iter().any(|a| a == "--ingest");
    // The site lives in its own process: a child spawned from a process
    // holding 555 MB would inherit that in its peak RSS figure (vfork
    // shares the address space until exec, and Linux keeps its high-water
    // mark), so the measuring process must stay small.
    let mut server = Command::new(std::env::current_exe().unwrap())
        .args(["--serve", "--sitemaps", &sitemaps.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let (root, rest) = first.trim().split_once(' ').unwrap();
    let (urls, bytes): (usize, usize) = {
        let (u, b) = rest.split_once(' ').unwrap();
        (u.parse().unwrap(), b.parse().unwrap())
    };
    println!(
        "site: robots.txt -> index -> {sitemaps} sitemaps x {URLS_PER_SITEMAP} URLs = {urls} URLs, {:.0} MB of XML",
        bytes as f64 / 1e6
    );
    if ingest {
        ingest_rounds(root, urls);
        drop(server.stdin.take());
        let _ = server.wait();
        return;
    }
    for round in 1..=3 {
        let r = run(&[
            "discover",
            "--entries",
            "--min-delay",
            "0",
            "--allow-private",
            root,
        ]);
        let total = r
            .stderr
            .lines()
            .rev()
            .find(|l| l.starts_with("total:"))
            .unwrap_or("(no total line)")
            .to_string();
        // The rates are of what the run read (its total line), not of the
        // site's size: a run that stopped early must not look fast.
        let (read_urls, read_bytes) = read_counts(&total)
            .unwrap_or_else(|| panic!("no counts in the total line: {total}\n{}", r.stderr));
        let short = if read_urls == urls as u64 {
            String::new()
        } else {
            format!("  (read {read_urls} of the site's {urls} URLs)")
        };
        println!(
            "run {round}: {:.2} s, {:.0} URLs/s, {:.0} MB/s, peak RSS {:.1} MiB  [{total}]{short}",
            r.seconds,
            read_urls as f64 / r.seconds,
            read_bytes / r.seconds / 1e6,
            r.max_rss_kib as f64 / 1024.0
        );
    }
    drop(server.stdin.take());
    let _ = server.wait();
}

/// `ingest` twice into a fresh store, then `stats` and `queue -n 1000`.
fn ingest_rounds(root: &str, urls: usize) {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let store = store.to_str().unwrap();
    let show = |what: &str, r: &support::Run, per_url: bool| {
        let rate = if per_url {
            format!(", {:.0} URLs/s", urls as f64 / r.seconds)
        } else {
            String::new()
        };
        println!(
            "{what}: {:.2} s{rate}, peak RSS {:.1} MiB",
            r.seconds,
            r.max_rss_kib as f64 / 1024.0
        );
    };
    for what in ["first ingest", "unchanged re-ingest"] {
        let r = run(&[
            "ingest",
            "--store",
            store,
            "--min-delay",
            "0",
            "--allow-private",
            root,
        ]);
        assert!(
            r.stderr.contains("ingest:"),
            "no ingest summary: {}",
            r.stderr
        );
        show(what, &r, true);
        let summary = r.stderr.lines().rfind(|l| l.starts_with("ingest:"));
        println!("  [{}]", summary.unwrap_or_default());
    }
    let r = run(&["stats", "--store", store]);
    show("stats", &r, false);
    let r = run(&["queue", "--store", store, "-n", "1000"]);
    show("queue -n 1000", &r, false);
    let disk = sitemapd_storebench::dir_bytes(std::path::Path::new(store)).0;
    println!(
        "disk: {:.0} MB, {:.0} bytes per URL",
        disk as f64 / 1e6,
        disk as f64 / urls as f64
    );
}

/// The URL entries and bytes a run read, from its `total:` line
/// (`total: 1 site, 51 sitemaps read, 2500000 urls, 530.3 MiB, 4.4 s`; the
/// bytes as printed, to 0.1 of their unit).
fn read_counts(total: &str) -> Option<(u64, f64)> {
    let parts: Vec<&str> = total.split(", ").collect();
    let urls = parts.iter().find_map(|p| {
        let (n, word) = p.split_once(' ')?;
        matches!(word, "url" | "urls").then(|| n.parse().ok())?
    })?;
    let bytes = parts.iter().find_map(|p| {
        let (n, unit) = p.split_once(' ')?;
        let scale = match unit {
            "B" => 1.0,
            "KiB" => 1024.0,
            "MiB" => 1024.0 * 1024.0,
            "GiB" => 1024.0 * 1024.0 * 1024.0,
            _ => return None,
        };
        Some(n.parse::<f64>().ok()? * scale)
    })?;
    Some((urls, bytes))
}

/// Server mode: builds the site, prints `ROOT URLS BYTES`, serves until
/// stdin closes.
fn serve(sitemaps: usize) {
    let site = TestSite::start();
    let mut index =
        String::from("<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n");
    let mut bytes = 0;
    for part in 0..sitemaps {
        let body = sitemap(&site, part);
        bytes += body.len();
        let path = format!("/sitemaps/part-{part}.xml");
        index.push_str(&format!(
            "<sitemap><loc>{}</loc></sitemap>\n",
            site.url(&path)
        ));
        site.route(&path, Reply::ok(body));
    }
    index.push_str("</sitemapindex>\n");
    site.route("/sitemap_index.xml", Reply::ok(index));
    site.route(
        "/robots.txt",
        Reply::ok(format!(
            "User-agent: *\nSitemap: {}\n",
            site.url("/sitemap_index.xml")
        )),
    );
    println!("{} {} {bytes}", site.url("/"), sitemaps * URLS_PER_SITEMAP);
    std::io::stdout().flush().unwrap();
    let mut sink = String::new();
    let _ = std::io::stdin().read_line(&mut sink);
}
