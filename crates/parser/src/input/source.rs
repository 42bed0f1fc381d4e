//! The decoded text as the parsers read it: a buffered reader that knows the
//! line and column of what it has handed out, can look ahead, and refuses to
//! let one token grow without bound.

use std::io::{self, BufRead, Read};

use crate::diagnostic::Position;

/// Buffer size of the source.
const BUF: usize = 64 * 1024;

/// The error returned when a single token (a tag, a text node, a line) grows
/// past the token limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a single token is longer than {limit} bytes")]
pub struct TokenTooLong {
    /// The limit in bytes.
    pub limit: u64,
}

/// Whether `err` is a [`TokenTooLong`].
pub fn token_too_long(err: &io::Error) -> Option<TokenTooLong> {
    err.get_ref()?.downcast_ref::<TokenTooLong>().copied()
}

/// Buffered, position-tracking reader over decoded UTF-8.
pub struct Source {
    inner: Box<dyn Read + Send>,
    buf: Box<[u8]>,
    pos: usize,
    filled: usize,
    offset: u64,
    line: u64,
    line_start: u64,
    mark: u64,
    token_limit: u64,
    pending: Option<io::Error>,
}

impl Source {
    /// Wraps `inner`; no token may be longer than `token_limit` bytes.
    pub fn new(inner: Box<dyn Read + Send>, token_limit: u64) -> Self {
        Self {
            inner,
            buf: vec![0; BUF].into_boxed_slice(),
            pos: 0,
            filled: 0,
            offset: 0,
            line: 0,
            line_start: 0,
            mark: 0,
            token_limit,
            pending: None,
        }
    }

    /// Line and column of the next byte to be read.
    pub fn position(&self) -> Position {
        Position {
            line: self.line + 1,
            column: self.offset - self.line_start + 1,
        }
    }

    /// Bytes handed out so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Starts a new token: the token limit counts from here.
    pub fn mark(&mut self) {
        self.mark = self.offset;
    }

    /// Looks at up to `n` bytes ahead without consuming them (fewer at end of
    /// input; `n` is capped at the buffer size). A read error after some bytes
    /// is held back until those bytes have been consumed.
    pub fn peek(&mut self, n: usize) -> io::Result<&[u8]> {
        let n = n.min(self.buf.len());
        if self.filled - self.pos < n {
            self.buf.copy_within(self.pos..self.filled, 0);
            self.filled -= self.pos;
            self.pos = 0;
            while self.filled < n && self.pending.is_none() {
                match self.inner.read(&mut self.buf[self.filled..]) {
                    Ok(0) => break,
                    Ok(read) => self.filled += read,
                    Err(e) if self.filled == 0 => return Err(e),
                    Err(e) => self.pending = Some(e),
                }
            }
        }
        Ok(&self.buf[self.pos..self.filled.min(self.pos + n)])
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

impl BufRead for Source {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.offset - self.mark > self.token_limit {
            return Err(io::Error::other(TokenTooLong {
                limit: self.token_limit,
            }));
        }
        if self.pos == self.filled {
            if let Some(e) = self.pending.take() {
                return Err(e);
            }
            self.pos = 0;
            self.filled = self.inner.read(&mut self.buf)?;
        }
        Ok(&self.buf[self.pos..self.filled])
    }

    fn consume(&mut self, n: usize) {
        let n = n.min(self.filled - self.pos);
        let chunk = &self.buf[self.pos..self.pos + n];
        if let Some(last) = memchr::memrchr(b'\n', chunk) {
            self.line += memchr::memchr_iter(b'\n', chunk).count() as u64;
            self.line_start = self.offset + last as u64 + 1;
        }
        self.offset += n as u64;
        self.pos += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(text: &'static str, limit: u64) -> Source {
        Source::new(Box::new(text.as_bytes()), limit)
    }

    #[test]
    fn tracks_lines_and_columns() {
        let mut s = source("ab\ncd\r\nef", 100);
        assert_eq!(s.position(), Position { line: 1, column: 1 });
        s.fill_buf().unwrap();
        s.consume(4);
        assert_eq!(s.position(), Position { line: 2, column: 2 });
        s.consume(3);
        assert_eq!(s.position(), Position { line: 3, column: 1 });
    }

    #[test]
    fn peek_does_not_consume() {
        let mut s = source("hello world", 100);
        assert_eq!(s.peek(5).unwrap(), b"hello");
        assert_eq!(s.peek(50).unwrap(), b"hello world");
        let mut all = String::new();
        s.read_to_string(&mut all).unwrap();
        assert_eq!(all, "hello world");
    }

    #[test]
    fn token_limit_is_enforced_from_the_mark() {
        let mut s = Source::new(Box::new(io::repeat(b'x')), 1000);
        let mut sink = Vec::new();
        let err = (&mut s).take(5000).read_to_end(&mut sink).unwrap_err();
        assert!(token_too_long(&err).is_some());
        s.mark();
        assert!(s.fill_buf().is_ok());
    }
}
