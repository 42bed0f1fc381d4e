//! Whole processes, as a user times them: `sitemapd parse FILE > /dev/null`
//! (JSON Lines to /dev/null) beside a process running a bare quick-xml
//! event loop over the same file (this bench binary, started again with
//! `--bare-loop FILE`), on a generated 50,000-URL urlset, raw and gzipped.
//! Runs alternate; medians of 7. Prints figures; asserts nothing.
//!
//! `cargo bench --bench parse_speed`
//!
//! The bench binary also runs one side alone, for instruction counts that
//! repeat on a shared machine: `--write-input FILE` writes the input, then
//! `valgrind --tool=callgrind target/release/deps/parse_speed-* --bare-loop FILE`
//! and the same with `--parse FILE` (the library's parse of the file, all
//! events collected, no output).

mod support;

use std::fs::File;
use std::io::{BufReader, Write};

use sitemapd_parser::{Event, NormUrl, ParseOptions, Parser};
use support::{Run, run, run_program};

#[path = "../crates/parser/benches/support/urlset.rs"]
mod urlset;

use urlset::{bare_loop, generate};

const ROUNDS: usize = 7;

fn median(mut runs: Vec<f64>) -> f64 {
    runs.sort_by(f64::total_cmp);
    runs[runs.len() / 2]
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return; // cargo test --benches asks for a list; nothing to do
    }
    if let [_, flag, path] = &args[..] {
        if flag == "--write-input" {
            std::fs::write(path, generate(50_000)).unwrap();
            return;
        }
        let file = File::open(path).unwrap();
        let urls = match flag.as_str() {
            "--bare-loop" => bare_loop(BufReader::with_capacity(64 * 1024, file)),
            "--parse" => {
                let doc = NormUrl::parse("https://www.example.com/sitemap.xml").unwrap();
                let parser = Parser::new(file, ParseOptions::for_url(doc));
                parser.filter(|e| matches!(e, Event::Url(_))).count()
            }
            other => panic!("unknown flag {other}"),
        };
        assert_eq!(urls, 50_000);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("urlset-50k.xml");
    let bytes = generate(50_000);
    std::fs::write(&xml, &bytes).unwrap();
    let gz = dir.path().join("urlset-50k.xml.gz");
    let mut e =
        flate2::write::GzEncoder::new(File::create(&gz).unwrap(), flate2::Compression::default());
    e.write_all(&bytes).unwrap();
    e.finish().unwrap();
    println!(
        "input: 50,000 URLs, {} bytes ({} gzipped); load average {}",
        bytes.len(),
        std::fs::metadata(&gz).unwrap().len(),
        load_average()
    );
    let me = std::env::current_exe().unwrap();
    let url = "https://www.example.com/sitemap.xml";
    let (mut bare, mut parse, mut parse_gz) = (Vec::new(), Vec::new(), Vec::new());
    let mut peak_rss_kib = 0;
    let mut check = |r: Run| {
        assert!(
            r.stderr.is_empty() || r.stderr.contains("urls=50000"),
            "{}",
            r.stderr
        );
        peak_rss_kib = peak_rss_kib.max(r.max_rss_kib);
        r.seconds
    };
    for _ in 0..ROUNDS {
        bare.push(check(run_program(
            &me,
            &["--bare-loop", xml.to_str().unwrap()],
        )));
        parse.push(check(run(&["parse", xml.to_str().unwrap(), "--url", url])));
        parse_gz.push(check(run(&["parse", gz.to_str().unwrap(), "--url", url])));
    }
    let (bare, parse, parse_gz) = (median(bare), median(parse), median(parse_gz));
    println!("bare quick-xml loop process: {:.1} ms", bare * 1e3);
    println!(
        "sitemapd parse FILE > /dev/null: {:.1} ms: {:.2}x the bare loop's speed",
        parse * 1e3,
        bare / parse
    );
    println!(
        "sitemapd parse FILE.gz > /dev/null: {:.1} ms: {:.2}x the bare loop's speed on the raw file",
        parse_gz * 1e3,
        bare / parse_gz
    );
    println!(
        "peak RSS of any run: {:.1} MiB; load average after: {}",
        peak_rss_kib as f64 / 1024.0,
        load_average()
    );
}
