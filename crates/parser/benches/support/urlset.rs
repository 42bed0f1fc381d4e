//! The parser benches' input and baseline, shared by the in-process bench
//! (`crates/parser/benches/throughput.rs`) and the whole-process one
//! (`benches/parse_speed.rs`): a generated urlset, and a bare quick-xml
//! event loop that only copies the four texts out of it.

use std::hint::black_box;
use std::io::{BufRead, Write};

use quick_xml::Reader;
use quick_xml::events::Event as XmlEvent;

/// A urlset of `n` entries with loc, lastmod, changefreq and priority.
pub(crate) fn generate(n: usize) -> Vec<u8> {
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

/// The baseline: quick-xml events, the four texts copied out, nothing
/// checked; it stops at the first error. Returns the number of `<url>`
/// elements.
pub(crate) fn bare_loop(input: impl BufRead) -> usize {
    let mut reader = Reader::from_reader(input);
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
            Err(_) => break,
            _ => {}
        }
    }
    count
}
