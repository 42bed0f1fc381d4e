//! Text sitemaps (SPEC T1): one URL per line, CR, LF or CRLF, blank lines
//! skipped. Lines are read with a bounded buffer: a 200 MB line costs 16 KiB.

use std::io::{self, BufRead};

use crate::ctx::{At, Ctx, Relative, quote};
use crate::diagnostic::Rule;
use crate::event::UrlEntry;
use crate::input::source::Source;
use crate::options::MAX_LOC_CHARS;
use crate::sniff::looks_like_url_reference;
use crate::url::has_scheme;

/// Bytes of a line kept; a longer line is dropped (X4).
const MAX_LINE_BYTES: usize = 4 * MAX_LOC_CHARS + 16;

/// Reads a text sitemap line by line.
pub(crate) struct TextReader {
    src: Source,
    line: Vec<u8>,
    /// The last line ended with CR: a LF right after it belongs to it.
    after_cr: bool,
}

/// One line as read.
struct Line {
    pos: At,
    too_long: bool,
    eof: bool,
}

impl TextReader {
    /// Reads from `src`.
    pub(crate) fn new(src: Source) -> Self {
        Self {
            src,
            line: Vec::with_capacity(256),
            after_cr: false,
        }
    }

    /// The source (for positions and byte counts).
    pub(crate) fn source(&self) -> &Source {
        &self.src
    }

    /// The source, to ask for positions.
    pub(crate) fn source_mut(&mut self) -> &mut Source {
        &mut self.src
    }

    /// The source, once reading is over.
    pub(crate) fn into_source(self) -> Source {
        self.src
    }

    /// Reads one line; CR, LF and CRLF all end a line.
    fn read_line(&mut self) -> io::Result<Line> {
        self.line.clear();
        if std::mem::take(&mut self.after_cr) && self.src.fill_buf()?.first() == Some(&b'\n') {
            self.src.consume(1);
        }
        let pos = self.src.offset();
        self.src.set_anchor(pos);
        let mut too_long = false;
        loop {
            self.src.mark();
            let buf = self.src.fill_buf()?;
            if buf.is_empty() {
                return Ok(Line {
                    pos,
                    too_long,
                    eof: true,
                });
            }
            let (chunk, used, done) = match memchr::memchr2(b'\n', b'\r', buf) {
                Some(i) => {
                    self.after_cr = buf[i] == b'\r';
                    (&buf[..i], i + 1, true)
                }
                None => (buf, buf.len(), false),
            };
            if self.line.len() + chunk.len() <= MAX_LINE_BYTES {
                self.line.extend_from_slice(chunk);
            } else {
                too_long = true;
            }
            self.src.consume(used);
            if done {
                return Ok(Line {
                    pos,
                    too_long,
                    eof: false,
                });
            }
        }
    }

    /// Reads and handles one line; `Ok(false)` at the end of the document.
    pub(crate) fn step(&mut self, ctx: &mut Ctx) -> io::Result<bool> {
        let line = self.read_line()?;
        if line.too_long {
            ctx.warn(
                Rule::X4,
                line.pos,
                format!("line longer than {MAX_LINE_BYTES} bytes dropped"),
            );
            return Ok(!line.eof);
        }
        // The source hands out valid UTF-8 only; the lossy path is never taken.
        let text = match std::str::from_utf8(&self.line) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(&self.line),
        };
        let text = text.trim();
        if text.is_empty() {
            return Ok(!line.eof);
        }
        if !has_scheme(text) && !looks_like_url_reference(text.as_bytes()) {
            ctx.warn(
                Rule::T1,
                line.pos,
                format!("line is not a URL: {}", quote(text)),
            );
        } else if let Some(url) =
            ctx.resolve(text, Rule::T1, line.pos, "line", None, Relative::Flagged)
        {
            ctx.emit_url(UrlEntry::new(url), line.pos);
        }
        Ok(!line.eof)
    }
}
