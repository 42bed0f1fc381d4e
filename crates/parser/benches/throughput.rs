//! Parser throughput on a generated 50,000-URL urlset (~11 MB), beside a bare
//! quick-xml event loop that only copies the four texts out of the same bytes.
//!
//! `cargo bench -p sitemapd-parser --bench throughput`

use std::hint::black_box;
use std::io::Write;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use quick_xml::Reader;
use quick_xml::events::Event as XmlEvent;
use sitemapd_parser::{Event, NormUrl, ParseOptions, Parser};

/// A urlset of `n` entries with loc, lastmod, changefreq and priority.
fn generate(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * 230);
    out.extend_from_slice(b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n");
    let freqs = ["daily", "weekly", "monthly"];
    for i in 0..n {
        write!(
            out,
            "  <url>\n    <loc>https://www.example.com/catalog/section-{}/product-{i}.html?ref=sitemap&amp;v={}</loc>\n    <lastmod>2024-{:02}-{:02}T{:02}:{:02}:{:02}+00:00</lastmod>\n    <changefreq>{}</changefreq>\n    <priority>0.{}</priority>\n  </url>\n",
            i % 97,
            i % 7,
            i % 12 + 1,
            i % 28 + 1,
            i % 24,
            i % 60,
            (i * 7) % 60,
            freqs[i % 3],
            i % 10
        )
        .unwrap();
    }
    out.extend_from_slice(b"</urlset>\n");
    out
}

/// The baseline: quick-xml events, the four texts copied out, nothing checked.
fn bare_loop(bytes: &[u8]) -> usize {
    let mut reader = Reader::from_reader(bytes);
    let mut buf = Vec::with_capacity(4096);
    let mut fields: [String; 4] = Default::default();
    let mut current: Option<usize> = None;
    let mut count = 0;
    loop {
        buf.clear();
        match reader.read_event_into(&mut buf) {
            Ok(XmlEvent::Start(e)) => {
                current = match e.local_name().as_ref() {
                    "loc" => Some(0),
                    "lastmod" => Some(1),
                    "changefreq" => Some(2),
                    "priority" => Some(3),
                    "url" => {
                        fields.iter_mut().for_each(String::clear);
                        None
                    }
                    _ => None,
                }
            }
            Ok(XmlEvent::Text(t)) => {
                if let Some(i) = current {
                    fields[i].push_str(&t);
                }
            }
            Ok(XmlEvent::GeneralRef(r)) => {
                if let Some(i) = current {
                    fields[i].push_str(if &*r == "amp" { "&" } else { "?" });
                }
            }
            Ok(XmlEvent::End(e)) => {
                current = None;
                if e.local_name().as_ref() == "url" {
                    count += 1;
                    black_box(&fields);
                }
            }
            Ok(XmlEvent::Eof) => break,
            Err(e) => panic!("{e}"),
            _ => {}
        }
    }
    count
}

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
    assert_eq!(bare_loop(&xml), 50_000);
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
        b.iter(|| bare_loop(black_box(&xml)))
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
