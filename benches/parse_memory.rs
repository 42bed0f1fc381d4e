//! Peak memory and speed of the real `sitemapd parse` binary on a generated
//! 50 MiB sitemap and on a gzip bomb (1 GiB after inflating), measured per
//! child process with wait4(2). Prints figures; asserts nothing.
//!
//! `cargo bench --bench parse_memory`

mod support;

use std::fs::File;
use std::io::{BufWriter, Write};

use support::run;

use flate2::Compression;
use flate2::write::GzEncoder;

const MIB: u64 = 1 << 20;

/// Writes a urlset of at least `bytes` bytes.
fn write_sitemap(path: &std::path::Path, bytes: u64) -> (u64, u64) {
    let mut w = BufWriter::new(File::create(path).unwrap());
    let mut written = 0u64;
    let mut urls = 0u64;
    let head = b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n";
    w.write_all(head).unwrap();
    written += head.len() as u64;
    while written < bytes {
        let entry = format!(
            "  <url>\n    <loc>https://www.example.com/catalog/section-{}/product-{urls}.html</loc>\n    <lastmod>2024-{:02}-{:02}T10:20:30+00:00</lastmod>\n    <changefreq>weekly</changefreq>\n    <priority>0.{}</priority>\n  </url>\n",
            urls % 97,
            urls % 12 + 1,
            urls % 28 + 1,
            urls % 10
        );
        w.write_all(entry.as_bytes()).unwrap();
        written += entry.len() as u64;
        urls += 1;
    }
    w.write_all(b"</urlset>\n").unwrap();
    (written + 10, urls)
}

/// A gzip file that inflates to `bytes` of a well-formed-looking urlset
/// (many small elements, so the byte limit, not the token limit, stops it).
fn write_bomb(path: &std::path::Path, bytes: u64) -> u64 {
    let mut gz = GzEncoder::new(
        BufWriter::new(File::create(path).unwrap()),
        Compression::best(),
    );
    gz.write_all(b"<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">")
        .unwrap();
    let block = "<x/>".repeat(16 * 1024);
    let mut written = 0;
    while written < bytes {
        gz.write_all(block.as_bytes()).unwrap();
        written += block.len() as u64;
    }
    gz.write_all(b"</urlset>").unwrap();
    gz.finish().unwrap();
    std::fs::metadata(path).unwrap().len()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // cargo test --benches asks for a list; nothing to do
    }
    let dir = tempfile::tempdir().unwrap();
    let sitemap = dir.path().join("sitemap-50mib.xml");
    let (bytes, urls) = write_sitemap(&sitemap, 50 * MIB - 4096);
    let r = run(&["parse", sitemap.to_str().unwrap()]);
    println!(
        "50 MiB sitemap: {bytes} bytes, {urls} URLs (--max-entries default 50,000 stops it early), {:.2} s, peak RSS {:.1} MiB",
        r.seconds,
        r.max_rss_kib as f64 / 1024.0
    );
    let all = run(&[
        "parse",
        sitemap.to_str().unwrap(),
        "--max-entries",
        "100000000",
    ]);
    println!(
        "50 MiB sitemap, all {urls} URLs to JSON Lines: {:.2} s ({:.0} MB/s, {:.0} URLs/s), peak RSS {:.1} MiB",
        all.seconds,
        bytes as f64 / all.seconds / 1e6,
        urls as f64 / all.seconds,
        all.max_rss_kib as f64 / 1024.0
    );
    assert!(
        all.stderr.contains(&format!("urls={urls}")),
        "{}",
        all.stderr
    );

    let bomb = dir.path().join("bomb.xml.gz");
    let compressed = write_bomb(&bomb, 1024 * MIB);
    let b = run(&["parse", bomb.to_str().unwrap()]);
    let c3 = b
        .stderr
        .lines()
        .find(|l| l.contains("[C3]"))
        .unwrap_or("no C3 diagnostic!");
    println!(
        "gzip bomb: {compressed} bytes inflating to 1 GiB: {:.2} s, peak RSS {:.1} MiB; {c3}",
        b.seconds,
        b.max_rss_kib as f64 / 1024.0
    );
}
