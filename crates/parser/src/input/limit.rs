//! The byte limit (SPEC C3), enforced while streaming.

use std::io::{self, Read};

/// The error a [`Limit`] reader returns once more than its limit would be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("document exceeds {limit} bytes")]
pub(crate) struct LimitExceeded {
    /// The limit in bytes.
    pub limit: u64,
}

/// Passes at most `limit` bytes through, then fails with [`LimitExceeded`]
/// if there would be more (a document of exactly `limit` bytes is fine).
pub(crate) struct Limit<R> {
    inner: R,
    remaining: u64,
    limit: u64,
}

impl<R: Read> Limit<R> {
    /// Wraps `inner`.
    pub(crate) fn new(inner: R, limit: u64) -> Self {
        Self {
            inner,
            remaining: limit,
            limit,
        }
    }
}

impl<R: Read> Read for Limit<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.remaining == 0 {
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(io::Error::other(LimitExceeded { limit: self.limit })),
            };
        }
        let max = buf
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..max])?;
        self.remaining -= n as u64;
        Ok(n)
    }
}

/// Whether `err` (possibly wrapped by quick-xml) is a [`LimitExceeded`].
pub(crate) fn limit_exceeded(err: &io::Error) -> Option<LimitExceeded> {
    err.get_ref()?.downcast_ref::<LimitExceeded>().copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c3_exact_size_passes_and_one_more_byte_fails() {
        let mut out = Vec::new();
        Limit::new(&b"12345"[..], 5).read_to_end(&mut out).unwrap();
        assert_eq!(out, b"12345");
        let err = Limit::new(&b"123456"[..], 5)
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert_eq!(limit_exceeded(&err), Some(LimitExceeded { limit: 5 }));
    }
}
