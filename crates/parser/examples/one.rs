//! Runs one layer once, for instruction counting: `one bare|full`.
use quick_xml::Reader;
use quick_xml::events::Event as XmlEvent;
use sitemapd_parser::{Event, NormUrl, ParseOptions, Parser};
fn main() {
    let which = std::env::args().nth(1).unwrap();
    let xml: std::sync::Arc<[u8]> = std::fs::read("/tmp/u50k.xml").unwrap().into();
    let n = if which == "bare" {
        let mut reader = Reader::from_reader(&xml[..]);
        let mut buf = Vec::new();
        let mut n = 0;
        loop {
            buf.clear();
            match reader.read_event_into(&mut buf).unwrap() {
                XmlEvent::Eof => break,
                XmlEvent::End(_) => n += 1,
                _ => {}
            }
        }
        n
    } else {
        let doc = NormUrl::parse("https://www.example.com/sitemap.xml").unwrap();
        Parser::new(
            std::io::Cursor::new(xml.clone()),
            ParseOptions::for_url(doc),
        )
        .filter(|e| matches!(e, Event::Url(_)))
        .count()
    };
    println!("{n}");
}
