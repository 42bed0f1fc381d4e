//! The decoded text as the parsers read it: a buffered reader that knows the
//! line and column of what it has handed out, can look ahead, refuses to let
//! one token grow without bound, and guarantees valid UTF-8.
//!
//! UTF-8 input (the protocol's encoding, nearly every document) is validated
//! in place in the buffer, with no copy; at the first invalid byte the rest
//! of the input goes through the encoding_rs decoder, which replaces invalid
//! sequences with U+FFFD. Other encodings are decoded from the start.

use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use encoding_rs::UTF_8;

use super::encoding::DecodeReader;
use crate::diagnostic::Position;

/// Buffer size of the source.
const BUF: usize = 64 * 1024;

/// The error returned when a single token (a tag, a text node, a line) grows
/// past the token limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a single token is longer than {limit} bytes")]
pub(crate) struct TokenTooLong {
    /// The limit in bytes.
    pub limit: u64,
}

/// Whether `err` is a [`TokenTooLong`].
pub(crate) fn token_too_long(err: &io::Error) -> Option<TokenTooLong> {
    err.get_ref()?.downcast_ref::<TokenTooLong>().copied()
}

/// Where the bytes come from.
enum Input {
    /// UTF-8, validated in place; `replaced` is raised if it ever has to be decoded.
    Utf8 {
        inner: Box<dyn Read + Send>,
        replaced: Arc<AtomicBool>,
    },
    /// Already decoded to valid UTF-8.
    Decoded(Box<dyn Read + Send>),
}

/// Buffered, position-tracking reader over valid UTF-8.
pub(crate) struct Source {
    input: Input,
    buf: Box<[u8]>,
    pos: usize,
    /// End of the validated bytes: what may be handed out.
    valid: usize,
    /// End of the bytes in the buffer (an incomplete UTF-8 sequence may follow `valid`).
    filled: usize,
    eof: bool,
    /// Absolute offset of `buf[0]`.
    buf_offset: u64,
    /// Offset where the line holding `buf[0]` starts.
    buf_line_start: u64,
    /// A place in the buffer whose line is known: index, newlines before it,
    /// start of its line. Positions are worked out from here, forwards or
    /// backwards, only when one is asked for.
    cursor: usize,
    cursor_line: u64,
    cursor_line_start: u64,
    mark: u64,
    token_limit: u64,
    pending: Option<io::Error>,
    /// The earliest offset a diagnostic may still ask about: a refill keeps the
    /// bytes from here on (up to half a buffer), so that its line is known.
    anchor: Option<u64>,
    /// The anchor's position, kept when a refill had to drop its bytes.
    anchor_position: Option<(u64, Position)>,
    /// Where the first byte that is not valid UTF-8 was met.
    invalid_at: Option<u64>,
}

/// The index just after the last line break in `chunk` (given the byte after
/// it), searched backwards: the cost is the length of the last line.
fn last_break(chunk: &[u8], next: Option<u8>) -> Option<usize> {
    let mut end = chunk.len();
    while let Some(j) = memchr::memrchr2(b'\n', b'\r', &chunk[..end]) {
        let following = chunk.get(j + 1).copied().or(next);
        if chunk[j] == b'\n' || following != Some(b'\n') {
            return Some(j + 1);
        }
        end = j;
    }
    None
}

/// Line breaks in `chunk` (LF; CRLF once; a lone CR, as XML 1.0 and SPEC T1
/// read it), given the byte after it; and the index just after the last one.
fn line_breaks(chunk: &[u8], next: Option<u8>) -> (u64, Option<usize>) {
    if memchr::memchr(b'\r', chunk).is_none() {
        // Nearly every document: LF only, counted in one vectorised pass.
        let count = chunk
            .chunks(255)
            .map(|c| u64::from(c.iter().map(|&b| u8::from(b == b'\n')).sum::<u8>()))
            .sum();
        return (count, memchr::memrchr(b'\n', chunk).map(|i| i + 1));
    }
    let mut count = 0;
    let mut last = None;
    for i in memchr::memchr2_iter(b'\n', b'\r', chunk) {
        let following = chunk.get(i + 1).copied().or(next);
        if chunk[i] == b'\n' || following != Some(b'\n') {
            count += 1;
            last = Some(i + 1);
        }
    }
    (count, last)
}

impl Source {
    /// Reads UTF-8 from `inner`, validating it; invalid sequences are decoded
    /// to U+FFFD and raise `replaced`.
    pub(crate) fn utf8(
        inner: Box<dyn Read + Send>,
        replaced: Arc<AtomicBool>,
        token_limit: u64,
    ) -> Self {
        Self::with_input(Input::Utf8 { inner, replaced }, token_limit)
    }

    /// Reads text that is already valid UTF-8 (the output of a decoder).
    pub(crate) fn decoded(inner: Box<dyn Read + Send>, token_limit: u64) -> Self {
        Self::with_input(Input::Decoded(inner), token_limit)
    }

    fn with_input(input: Input, token_limit: u64) -> Self {
        Self {
            input,
            buf: vec![0; BUF].into_boxed_slice(),
            pos: 0,
            valid: 0,
            filled: 0,
            eof: false,
            buf_offset: 0,
            buf_line_start: 0,
            cursor: 0,
            cursor_line: 0,
            cursor_line_start: 0,
            mark: 0,
            token_limit,
            pending: None,
            anchor: None,
            anchor_position: None,
            invalid_at: None,
        }
    }

    /// Bytes handed out so far.
    pub(crate) fn offset(&self) -> u64 {
        self.buf_offset + self.pos as u64
    }

    /// Line and column of the next byte to be read.
    #[cfg(test)]
    pub(crate) fn position(&mut self) -> Position {
        self.position_at(self.offset())
    }

    /// Line and column of byte `offset`, worked out from the last position
    /// asked for (cost: the distance between the two). Exact while `offset`
    /// is in the buffer; an offset before the buffer (an event that straddled
    /// a refill) is placed at the buffer's start.
    pub(crate) fn position_at(&mut self, offset: u64) -> Position {
        if offset < self.buf_offset
            && let Some((at, position)) = self.anchor_position
            && at == offset
        {
            return position;
        }
        let idx = offset
            .saturating_sub(self.buf_offset)
            .min(self.filled as u64) as usize;
        let byte_at = |i: usize| (i < self.filled).then(|| self.buf[i]);
        // A CR as the last byte read, its next byte not read yet: a lone CR
        // or half a CRLF. The cursor stops before it, so that it is counted
        // once its next byte is known; the answer takes it as a line end.
        let cr_pending =
            idx == self.filled && idx > self.cursor && !self.eof && self.buf[idx - 1] == b'\r';
        if idx >= self.cursor {
            let settled = idx - usize::from(cr_pending);
            let (count, last) = line_breaks(&self.buf[self.cursor..settled], byte_at(settled));
            self.cursor_line += count;
            if let Some(last) = last {
                self.cursor_line_start = self.buf_offset + (self.cursor + last) as u64;
            }
            if cr_pending {
                self.cursor = settled;
                return Position {
                    line: self.cursor_line + 2,
                    column: 1,
                };
            }
        } else {
            let (count, _) = line_breaks(&self.buf[idx..self.cursor], byte_at(self.cursor));
            self.cursor_line = self.cursor_line.saturating_sub(count);
            self.cursor_line_start = match last_break(&self.buf[..idx], byte_at(idx)) {
                Some(j) => self.buf_offset + j as u64,
                None => self.buf_line_start,
            };
        }
        self.cursor = idx;
        let at = self.buf_offset + idx as u64;
        Position {
            line: self.cursor_line + 1,
            column: at.saturating_sub(self.cursor_line_start) + 1,
        }
    }

    /// Diagnostics may still ask about offsets from `at` on: keep them in the buffer.
    pub(crate) fn set_anchor(&mut self, at: u64) {
        self.anchor = Some(at);
    }

    /// Skips a byte order mark of `n` bytes at the start: columns count after it.
    pub(crate) fn skip_bom(&mut self, n: usize) {
        self.consume(n);
        self.buf_line_start = self.offset();
        self.cursor_line_start = self.offset();
    }

    /// Where the first byte that is not valid UTF-8 was met (UTF-8 input only).
    pub(crate) fn invalid_at(&self) -> Option<u64> {
        self.invalid_at
    }

    /// A read error held back by [`Source::peek`], if any.
    pub(crate) fn take_error(&mut self) -> Option<io::Error> {
        self.pending.take()
    }

    /// The bytes read ahead and not handed out yet, without reading more.
    pub(crate) fn buffered(&self) -> &[u8] {
        &self.buf[self.pos..self.valid]
    }

    /// Whether every byte so far was valid UTF-8 read as is (no decoder, no
    /// replacement).
    pub(crate) fn is_plain_utf8(&self) -> bool {
        matches!(self.input, Input::Utf8 { .. })
    }

    /// Starts a new token: the token limit counts from here.
    pub(crate) fn mark(&mut self) {
        self.mark = self.offset();
    }

    /// Moves the unread bytes to the front of the buffer.
    fn compact(&mut self) {
        // Keep the bytes from the anchor on, if that costs at most half a buffer.
        let anchor = self
            .anchor
            .map(|a| a.saturating_sub(self.buf_offset).min(self.pos as u64) as usize);
        let consumed = match anchor {
            Some(a) if self.pos - a <= self.buf.len() / 2 => a,
            Some(a) => {
                // Too far back to keep: remember where it was instead (once:
                // an anchor dropped by an earlier refill is remembered already).
                if self.anchor.is_some_and(|at| at >= self.buf_offset) {
                    let at = self.buf_offset + a as u64;
                    self.anchor_position = Some((at, self.position_at(at)));
                }
                self.pos
            }
            None => self.pos,
        };
        // Keep the line count of what leaves the buffer (one pass of memchr per
        // buffer); a CR whose next byte is not read yet stays, to be counted.
        self.position_at(self.buf_offset + consumed as u64);
        let consumed = consumed.min(self.cursor);
        self.buf_line_start = self.cursor_line_start;
        self.cursor = 0;
        self.buf.copy_within(consumed..self.filled, 0);
        self.buf_offset += consumed as u64;
        self.valid -= consumed;
        self.filled -= consumed;
        self.pos -= consumed;
    }

    /// Reads more bytes into the buffer and validates them. Returns false at end of input.
    fn read_more(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.filled == self.buf.len() {
            self.compact();
            if self.filled == self.buf.len() {
                // No room: the caller has a full buffer to consume first.
                return Ok(true);
            }
        }
        let n = match &mut self.input {
            Input::Utf8 { inner, .. } | Input::Decoded(inner) => {
                inner.read(&mut self.buf[self.filled..])?
            }
        };
        self.filled += n;
        if n == 0 {
            self.eof = true;
        }
        self.validate();
        Ok(!self.eof)
    }

    /// Extends `valid` over the bytes read; at an invalid sequence, switches to the decoder.
    fn validate(&mut self) {
        if let Input::Decoded(_) = self.input {
            self.valid = self.filled;
            return;
        }
        match std::str::from_utf8(&self.buf[self.valid..self.filled]) {
            Ok(_) => self.valid = self.filled,
            Err(e) if e.error_len().is_none() && !self.eof => self.valid += e.valid_up_to(),
            Err(e) => {
                self.valid += e.valid_up_to();
                self.invalid_at = Some(self.buf_offset + self.valid as u64);
                let Input::Utf8 { inner, replaced } =
                    std::mem::replace(&mut self.input, Input::Decoded(Box::new(io::empty())))
                else {
                    return;
                };
                let rest = self.buf[self.valid..self.filled].to_vec();
                self.filled = self.valid;
                self.eof = false;
                let undecoded = BufReader::new(Cursor::new(rest).chain(inner));
                self.input = Input::Decoded(Box::new(DecodeReader::mid_stream(
                    undecoded, UTF_8, replaced,
                )));
            }
        }
    }

    /// Looks at up to `n` bytes ahead without consuming them (fewer at end of
    /// input; `n` is capped at the buffer size). A read error after some bytes
    /// is held back until those bytes have been consumed.
    pub(crate) fn peek(&mut self, n: usize) -> io::Result<&[u8]> {
        // Room for an incomplete UTF-8 sequence after the window, so that the
        // window can always be validated.
        let n = n.min(self.buf.len() - 4);
        self.anchor = None;
        if self.valid - self.pos < n {
            self.compact();
            while self.valid < n && self.pending.is_none() {
                match self.read_more() {
                    Ok(false) => break,
                    Ok(true) => {}
                    Err(e) if self.valid == 0 => return Err(e),
                    Err(e) => self.pending = Some(e),
                }
            }
        }
        Ok(&self.buf[self.pos..self.valid.min(self.pos + n)])
    }
}

impl Read for Source {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl Source {
    /// `fill_buf` when the buffer is drained or the token is too long.
    #[cold]
    fn fill_buf_slow(&mut self) -> io::Result<&[u8]> {
        if self.offset() - self.mark > self.token_limit {
            return Err(io::Error::other(TokenTooLong {
                limit: self.token_limit,
            }));
        }
        while self.pos == self.valid {
            if let Some(e) = self.pending.take() {
                return Err(e);
            }
            if self.pos == self.filled || self.filled == self.buf.len() {
                self.compact();
            }
            if !self.read_more()? {
                break;
            }
        }
        Ok(&self.buf[self.pos..self.valid])
    }
}

impl BufRead for Source {
    #[inline]
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos < self.valid
            && self.buf_offset + (self.pos as u64) - self.mark <= self.token_limit
        {
            return Ok(&self.buf[self.pos..self.valid]);
        }
        self.fill_buf_slow()
    }

    #[inline]
    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.valid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    fn source(text: &'static [u8], limit: u64) -> (Source, Arc<AtomicBool>) {
        let flag = Arc::new(AtomicBool::new(false));
        (Source::utf8(Box::new(text), flag.clone(), limit), flag)
    }

    #[test]
    fn tracks_lines_and_columns() {
        let (mut s, _) = source(b"ab\ncd\r\nef", 100);
        assert_eq!(s.position(), Position { line: 1, column: 1 });
        s.fill_buf().unwrap();
        s.consume(4);
        assert_eq!(s.position(), Position { line: 2, column: 2 });
        s.consume(3);
        assert_eq!(s.position(), Position { line: 3, column: 1 });
    }

    #[test]
    fn positions_can_be_asked_for_backwards_and_across_refills() {
        let text: &'static [u8] = Box::leak(b"line\n".repeat(40_000).into_boxed_slice());
        let (mut s, _) = source(text, u64::MAX);
        let mut sink = vec![0u8; 150_000];
        s.read_exact(&mut sink).unwrap();
        assert_eq!(
            s.position(),
            Position {
                line: 30_001,
                column: 1
            }
        );
        assert_eq!(
            s.position_at(149_997),
            Position {
                line: 30_000,
                column: 3
            }
        );
        assert_eq!(
            s.position_at(149_998),
            Position {
                line: 30_000,
                column: 4
            }
        );
        s.consume(7);
        assert_eq!(
            s.position(),
            Position {
                line: 30_002,
                column: 3
            }
        );
    }

    #[test]
    fn a_character_across_the_sniff_window_stays_in_the_fast_path() {
        let mut text = "a".repeat(BUF - 5);
        text.push('\u{FEFF}');
        text.push_str(&"b".repeat(100));
        let text: &'static str = Box::leak(text.into_boxed_str());
        let (mut s, flag) = source(text.as_bytes(), u64::MAX);
        assert_eq!(s.peek(BUF).unwrap().len(), BUF - 4);
        assert!(matches!(s.input, Input::Utf8 { .. }));
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        assert_eq!(out, text, "a U+FEFF inside the document is kept");
        assert!(!flag.load(Ordering::Relaxed));
    }

    #[test]
    fn peek_does_not_consume() {
        let (mut s, _) = source(b"hello world", 100);
        assert_eq!(s.peek(5).unwrap(), b"hello");
        assert_eq!(s.peek(50).unwrap(), b"hello world");
        let mut all = String::new();
        s.read_to_string(&mut all).unwrap();
        assert_eq!(all, "hello world");
    }

    #[test]
    fn token_limit_is_enforced_from_the_mark() {
        let mut s = Source::utf8(Box::new(io::repeat(b'x')), Arc::default(), 1000);
        let mut sink = Vec::new();
        let err = (&mut s).take(5000).read_to_end(&mut sink).unwrap_err();
        assert!(token_too_long(&err).is_some());
        s.mark();
        assert!(s.fill_buf().is_ok());
    }

    #[test]
    fn c1_invalid_utf8_is_replaced_and_flagged_without_losing_the_rest() {
        let (mut s, flag) = source(b"ok \xff\xfe then \xc3\xa9 fine", 100);
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        assert_eq!(out, "ok \u{FFFD}\u{FFFD} then é fine");
        assert!(flag.load(Ordering::Relaxed));
    }

    #[test]
    fn multibyte_characters_across_reads_stay_whole() {
        let text: &'static str = Box::leak("żółw ".repeat(40_000).into_boxed_str());
        let (mut s, flag) = source(text.as_bytes(), u64::MAX);
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        assert_eq!(out, text);
        assert!(!flag.load(Ordering::Relaxed));
    }

    #[test]
    fn truncated_sequence_at_the_end_is_replaced() {
        let (mut s, flag) = source(b"abc\xc3", 100);
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        assert_eq!(out, "abc\u{FFFD}");
        assert!(flag.load(Ordering::Relaxed));
    }
}
