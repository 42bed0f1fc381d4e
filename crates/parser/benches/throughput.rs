//! Parser throughput on a generated 50,000-URL urlset (~11 MB), beside a bare
//! quick-xml event loop that only copies the four texts out of the same bytes.
//!
//! `cargo bench -p sitemapd-parser --bench throughput`

use std::hint::black_box;
use std::io::Write;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sitemapd_parser::{Event, NormUrl, ParseOptions, Parser};

#[path = "support/urlset.rs"]
mod urlset;

use urlset::{bare_loop, generate};

fn full_parse(bytes: &Arc<[u8]>, doc: &NormUrl) -> usize {
    let parser = Parser::new(
        std::io::Cursor::new(bytes.clone()),
        ParseOptions::for_url(doc.clone()),
    );
    parser.filter(|e| matches!(e, Event::Url(_))).count()
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
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
