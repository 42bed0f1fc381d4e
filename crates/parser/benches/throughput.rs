//! Parser throughput on a generated 50,000-URL urlset (~11 MB) and on the
//! corpus's urlsets and indexes (fixtures/corpus), beside a bare quick-xml
//! event loop that only copies the four texts out of the same bytes; the
//! full parse with the fast lane, and without it (every byte through
//! quick-xml's events).
//!
//! `cargo bench -p sitemapd-parser --bench throughput`

use std::hint::black_box;
use std::io::Write;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sitemapd_parser::{Event, NormUrl, ParseOptions, Parser, ScopeMode};

#[path = "support/urlset.rs"]
mod urlset;

use urlset::{bare_loop, generate};

fn full_parse(bytes: &Arc<[u8]>, doc: &NormUrl) -> usize {
    parse_with(bytes, ParseOptions::for_url(doc.clone()))
}

fn parse_with(bytes: &Arc<[u8]>, options: ParseOptions) -> usize {
    let parser = Parser::new(std::io::Cursor::new(bytes.clone()), options);
    parser.filter(|e| matches!(e, Event::Url(_))).count()
}

fn without_lane(doc: &NormUrl) -> ParseOptions {
    let mut options = ParseOptions::for_url(doc.clone());
    options.fast_lane = false;
    options
}

/// The corpus's urlsets and indexes, raw XML.
fn corpus() -> Vec<Arc<[u8]>> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/corpus");
    let mut files = Vec::new();
    for kind in ["urlset", "sitemapindex"] {
        for entry in std::fs::read_dir(format!("{root}/{kind}")).unwrap() {
            files.push(std::fs::read(entry.unwrap().path()).unwrap().into());
        }
    }
    files
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn bench(c: &mut Criterion) {
    let xml: Arc<[u8]> = generate(50_000).into();
    let gz: Arc<[u8]> = gzip(&xml).into();
    let doc = NormUrl::parse("https://www.example.com/sitemap.xml").unwrap();
    assert_eq!(bare_loop(&xml[..]), 50_000);
    assert_eq!(full_parse(&xml, &doc), 50_000);
    assert_eq!(full_parse(&gz, &doc), 50_000);
    eprintln!(
        "input: {} bytes of XML, {} bytes gzipped",
        xml.len(),
        gz.len()
    );

    let mut g = c.benchmark_group("urlset-50k");
    g.throughput(Throughput::Bytes(xml.len() as u64));
    g.sample_size(20);
    g.bench_function("bare-quick-xml-loop", |b| {
        b.iter(|| bare_loop(black_box(&xml[..])))
    });
    g.bench_function("sitemapd-parser", |b| {
        b.iter(|| full_parse(black_box(&xml), &doc))
    });
    g.bench_function("sitemapd-parser-gzip", |b| {
        b.iter(|| full_parse(black_box(&gz), &doc))
    });
    g.bench_function("sitemapd-parser-without-fast-lane", |b| {
        b.iter(|| parse_with(black_box(&xml), without_lane(&doc)))
    });
    g.finish();

    let files = corpus();
    let bytes: usize = files.iter().map(|f| f.len()).sum();
    eprintln!("corpus: {} urlsets and indexes, {bytes} bytes", files.len());
    let mut g = c.benchmark_group("corpus");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.sample_size(20);
    g.bench_function("bare-quick-xml-loop", |b| {
        b.iter(|| {
            files
                .iter()
                .map(|f| bare_loop(black_box(&f[..])))
                .sum::<usize>()
        })
    });
    // The corpus's files come from many sites: no scope rule.
    let mut options = ParseOptions::for_url(doc.clone());
    options.scope = ScopeMode::None;
    let full = options.clone();
    options.fast_lane = false;
    for (name, options) in [
        ("sitemapd-parser", full),
        ("sitemapd-parser-without-fast-lane", options),
    ] {
        g.bench_function(name, |b| {
            let parse = |f| parse_with(black_box(f), options.clone());
            b.iter(|| files.iter().map(parse).sum::<usize>())
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
