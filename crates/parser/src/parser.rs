//! The pull parser: bytes in, [`Event`]s out, one at a time.

use std::io::{self, BufReader, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use encoding_rs::UTF_8;

use crate::ctx::{At, Ctx, NOWHERE};
use crate::diagnostic::{Position, Rule};
use crate::event::Event;
use crate::input::describe_io_error;
use crate::input::encoding::{DecodeReader, EncodingSource, detect};
use crate::input::gzip::{gzip_error, read_prefix, unwrap_layers};
use crate::input::limit::Limit;
use crate::input::source::Source;
use crate::options::ParseOptions;
use crate::sniff::{SNIFF_WINDOW, Sniffed, sniff};
use crate::summary::{Format, Summary};
use crate::text::TextReader;
use crate::xml::{Step, XmlReader};

/// Longest single token (tag, text node, comment) read, in bytes.
pub const MAX_TOKEN_BYTES: u64 = 4 * 1024 * 1024;
/// The UTF-8 byte order mark.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";
/// Bytes looked at to find the encoding declaration.
const DECL_WINDOW: usize = 1024;

enum State {
    Start(Box<dyn Read + Send>),
    Xml(Box<XmlReader>),
    Text(Box<TextReader>),
    /// Finished; the source is kept to place the diagnostics still queued.
    Done(Option<Box<Source>>),
}

/// A streaming sitemap parser: an [`Iterator`] of [`Event`]s over any owned
/// [`Read`] + `Send` (a file, a socket, a `Cursor<Vec<u8>>`; a `BufRead` works
/// as is). Memory stays flat whatever the size of the document.
///
/// ```
/// use sitemapd_parser::{Event, ParseOptions, Parser};
/// let xml = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
///   <url><loc>https://example.com/a</loc><priority>0.8</priority></url>
/// </urlset>"#;
/// let mut parser = Parser::new(xml.as_bytes(), ParseOptions::default());
/// let urls: Vec<_> = parser
///     .by_ref()
///     .filter_map(|e| match e { Event::Url(u) => Some(u), _ => None })
///     .collect();
/// assert_eq!(urls[0].loc.as_str(), "https://example.com/a");
/// assert_eq!(urls[0].priority, Some(0.8));
/// assert_eq!(parser.summary().urls, 1);
/// ```
pub struct Parser {
    ctx: Ctx,
    state: State,
    replaced: Arc<AtomicBool>,
    replaced_reported: bool,
    /// Bytes found after the last gzip member (padding, junk): flagged at the end.
    gzip_trailing: Arc<AtomicU64>,
}

impl Parser {
    /// A parser over `input` (raw bytes: gzip, any encoding, any format).
    pub fn new<R: Read + Send + 'static>(input: R, options: ParseOptions) -> Self {
        Self {
            ctx: Ctx::new(options),
            state: State::Start(Box::new(input)),
            replaced: Arc::new(AtomicBool::new(false)),
            replaced_reported: false,
            gzip_trailing: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Totals so far (final once the iterator has returned `None`).
    pub fn summary(&self) -> &Summary {
        &self.ctx.summary
    }

    fn source_mut(&mut self) -> Option<&mut Source> {
        match &mut self.state {
            State::Xml(x) => Some(x.source_mut()),
            State::Text(t) => Some(t.source_mut()),
            State::Done(Some(src)) => Some(src),
            State::Done(None) | State::Start(_) => None,
        }
    }

    /// Line and column of `at` (0:0 for [`NOWHERE`] or before the document is open).
    fn locate(&mut self, at: At) -> Position {
        match self.source_mut() {
            Some(src) if at != NOWHERE => src.position_at(at),
            _ => Position::default(),
        }
    }

    fn open(&mut self, input: Box<dyn Read + Send>) -> io::Result<State> {
        let max = self.ctx.opts.max_bytes;
        // The raw input is bounded too: an endless stream of empty gzip members
        // (or of anything else) never inflates to the limit, but stops here.
        let raw_limit = max.saturating_add(max / 8).saturating_add(1 << 20);
        let input = Box::new(Limit::new(input, raw_limit));
        let (inner, layers) = unwrap_layers(input, max, &self.gzip_trailing)?;
        self.ctx.summary.gzip_layers = layers;
        let (prefix, limited) = read_prefix(Box::new(Limit::new(inner, max)), DECL_WINDOW)?;
        let detected = detect(&prefix);
        let name = detected.encoding.name();
        self.ctx.summary.encoding = name;
        let start: At = 0;
        match &detected.source {
            EncodingSource::Default => {}
            EncodingSource::Bom if name == "UTF-8" => {}
            EncodingSource::Bom | EncodingSource::Sniffed | EncodingSource::Declared => {
                self.ctx.warn(
                    Rule::C1,
                    start,
                    format!("document is in {name}, not UTF-8: decoded"),
                );
            }
            EncodingSource::MislabelledUtf8(label) => {
                let message =
                    format!("declared encoding {label:?}, but the bytes are UTF-8: read as UTF-8");
                self.ctx.warn(Rule::C1, start, message);
            }
            EncodingSource::UnknownLabel(label) => {
                self.ctx.warn(
                    Rule::C1,
                    start,
                    format!(
                        "declared encoding {label:?} is unknown or impossible here: read as UTF-8"
                    ),
                );
            }
        }
        let mut src = if detected.encoding == UTF_8 {
            let mut src = Source::utf8(limited, self.replaced.clone(), MAX_TOKEN_BYTES);
            if src.peek(3)? == UTF8_BOM {
                src.skip_bom(3);
            }
            src
        } else {
            let raw = BufReader::with_capacity(64 * 1024, limited);
            let decoded = DecodeReader::new(raw, detected.encoding, self.replaced.clone());
            Source::decoded(Box::new(decoded), MAX_TOKEN_BYTES)
        };
        let mut sniffed = sniff(src.peek(SNIFF_WINDOW)?);
        // A window of nothing but whitespace may be followed by the document:
        // skip windows until one holds something, or the input ends.
        while sniffed == Sniffed::Empty {
            let blank = src.peek(SNIFF_WINDOW)?.len();
            if blank == 0 {
                break;
            }
            io::BufRead::consume(&mut src, blank);
            sniffed = sniff(src.peek(SNIFF_WINDOW)?);
        }
        let not_a_sitemap = match sniffed {
            Sniffed::Text => {
                self.ctx.summary.format = Some(Format::Text);
                return Ok(State::Text(Box::new(TextReader::new(src))));
            }
            Sniffed::Xml { start: skip, junk } => {
                if junk {
                    let message = format!("{skip} bytes of text before the XML markup skipped");
                    self.ctx.warn(Rule::C5, start, message);
                }
                io::BufRead::consume(&mut src, skip);
                let opts = &self.ctx.opts;
                let reader = XmlReader::new(src, opts.is_strict(), opts.fast_lane);
                return Ok(State::Xml(Box::new(reader)));
            }
            Sniffed::Empty => "empty document",
            Sniffed::Binary => "binary data: not a sitemap, sitemap index, feed or text list",
            Sniffed::NotUrls => "neither XML nor a list of URLs: not a sitemap",
        };
        // A read error in the first window explains better than its bytes.
        if let Some(e) = src.take_error() {
            return Err(e);
        }
        self.ctx.error(Rule::C7, start, not_a_sitemap);
        Ok(State::Done(Some(Box::new(src))))
    }

    /// Advances the state machine by one step.
    fn advance(&mut self) {
        let state = std::mem::replace(&mut self.state, State::Done(None));
        self.state = match state {
            State::Start(input) => match self.open(input) {
                Ok(next) => next,
                Err(e) => {
                    let (rule, message) = describe_io_error(&e);
                    let rule = if gzip_error(&e) { Rule::C2 } else { rule };
                    self.ctx.error(
                        rule,
                        NOWHERE,
                        format!("cannot read the document: {message}"),
                    );
                    State::Done(None)
                }
            },
            State::Xml(mut x) => loop {
                match x.step(&mut self.ctx) {
                    Step::More if self.ctx.queue.is_empty() => continue,
                    Step::More => break State::Xml(x),
                    Step::Done => {
                        let complete = x.is_complete();
                        break self.finish(x.into_source(), complete);
                    }
                }
            },
            State::Text(mut t) => match t.step(&mut self.ctx) {
                Ok(true) if !self.ctx.stopped => State::Text(t),
                Ok(more) => self.finish(t.into_source(), !more),
                Err(e) => {
                    let (rule, message) = describe_io_error(&e);
                    self.ctx.error(rule, t.source().offset(), message);
                    self.finish(t.into_source(), false)
                }
            },
            done @ State::Done(_) => done,
        };
        self.report_replacements();
    }

    /// Flags replaced bytes (C1) once, at the first invalid byte when it is
    /// known, in stream order: after the entries that precede it.
    fn report_replacements(&mut self) {
        if !self.replaced_reported && self.replaced.load(Ordering::Relaxed) {
            let finished = matches!(self.state, State::Done(_));
            let pos = match self.source_mut() {
                Some(src) => match src.invalid_at() {
                    Some(at) if src.offset() < at && !finished => return,
                    Some(at) => at,
                    None => src.offset(),
                },
                None => NOWHERE,
            };
            self.replaced_reported = true;
            let enc = self.ctx.summary.encoding;
            self.ctx.warn(
                Rule::C1,
                pos,
                format!("bytes that are not valid {enc} replaced with U+FFFD"),
            );
        }
    }

    fn finish(&mut self, src: Source, complete: bool) -> State {
        let trailing = self.gzip_trailing.load(Ordering::Relaxed);
        if trailing > 0 {
            let message = format!("{trailing} bytes after the end of the gzip stream ignored");
            self.ctx.warn(Rule::C2, src.offset(), message);
        }
        self.ctx.summary.bytes = src.offset();
        self.ctx.summary.complete = complete && !self.ctx.stopped;
        let s = &self.ctx.summary;
        tracing::debug!(
            format = s.format.map(|f| f.as_str()),
            urls = s.urls,
            sitemaps = s.sitemaps,
            bytes = s.bytes,
            complete = s.complete,
            "document parsed"
        );
        State::Done(Some(Box::new(src)))
    }
}

impl Iterator for Parser {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        loop {
            if let Some((mut event, at)) = self.ctx.queue.pop_front() {
                if let Event::Diagnostic(d) = &mut event {
                    d.position = self.locate(at);
                }
                return Some(event);
            }
            if matches!(self.state, State::Done(_)) {
                return None;
            }
            self.advance();
        }
    }
}
