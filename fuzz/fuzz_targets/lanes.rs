//! The fast lane against the full path on any bytes: the parser with
//! `ParseOptions::fast_lane` yields exactly the events (entries,
//! diagnostics with rule, line and column, in order) and the summary of the
//! parser that reads every byte through quick-xml.
//!
//! Input: the `parse` target's (`shared/parse_input.rs`; its seeds serve
//! both), gzip-wrapped when its flags ask for it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sitemapd_parser::{Event, ParseOptions, Parser, Summary};

#[path = "shared/parse_input.rs"]
mod parse_input;

use parse_input::{Chunked, ParseInput, gzip};

fn run(
    bytes: &[u8],
    options: &ParseOptions,
    fast_lane: bool,
    chunk: Option<usize>,
) -> (Vec<Event>, Summary) {
    let mut options = options.clone();
    options.fast_lane = fast_lane;
    let input = std::io::Cursor::new(bytes.to_vec());
    let mut parser = match chunk {
        Some(n) => Parser::new(Chunked(input, n), options),
        None => Parser::new(input, options),
    };
    let events: Vec<Event> = parser.by_ref().collect();
    let mut summary = parser.summary().clone();
    summary.fast_lane_entries = 0;
    (events, summary)
}

fuzz_target!(|data: &[u8]| {
    let input = ParseInput::new(data);
    let bytes = if input.gzip() {
        gzip(input.body)
    } else {
        input.body.to_vec()
    };
    let fast = run(&bytes, &input.options, true, input.chunk);
    let full = run(&bytes, &input.options, false, input.chunk);
    assert_eq!(fast, full, "the fast lane and the full path differ");
});
