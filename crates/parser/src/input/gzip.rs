//! gzip detected by its magic bytes, never by name or Content-Type (SPEC C2),
//! also gzip inside gzip; every layer's output is bounded (SPEC C3).

use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use flate2::bufread::GzDecoder;

use super::limit::Limit;

/// The gzip magic bytes.
pub(crate) const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// gzip layers removed at most; a deeper nesting is read as it is.
pub(crate) const MAX_LAYERS: u8 = 3;
/// Most bytes asked of a gzip decoder at once. When flate2 meets corrupt
/// data it returns the error and drops what it inflated in the same call, so
/// small calls bound what a corrupt stream costs (SPEC C8: keep what precedes
/// the break) to this many bytes.
pub(crate) const INFLATE_SLICE: usize = 2048;

/// A reader.
pub(crate) type BoxRead = Box<dyn Read + Send>;

/// A gzip stream that could not be inflated (corrupt, truncated, bad header).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct GzipError(String);

/// Whether `err` is a [`GzipError`].
pub(crate) fn gzip_error(err: &io::Error) -> bool {
    err.get_ref().is_some_and(|e| e.is::<GzipError>())
}

/// Reads up to `n` bytes (fewer only at end of input). An error after some
/// bytes were read is kept for later, so that those bytes are not lost
/// (SPEC C8: a truncated or corrupt stream yields what precedes the break):
/// the returned reader yields the prefix, then the rest of `r`, or the error.
pub(crate) fn read_prefix(mut r: BoxRead, n: usize) -> io::Result<(Vec<u8>, BoxRead)> {
    let mut prefix = Vec::with_capacity(n);
    match (&mut r).take(n as u64).read_to_end(&mut prefix) {
        Ok(_) => Ok((prefix.clone(), Box::new(Cursor::new(prefix).chain(r)))),
        Err(e) if prefix.is_empty() => Err(e),
        Err(e) => Ok((
            prefix.clone(),
            Box::new(Cursor::new(prefix).chain(FailWith(Some(e)))),
        )),
    }
}

/// A reader that fails once with the error it holds, then reports end of input.
struct FailWith(Option<io::Error>);

impl Read for FailWith {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        match self.0.take() {
            Some(e) => Err(e),
            None => Ok(0),
        }
    }
}

/// One gzip layer: its members one after the other (a multi-member file is
/// valid gzip), then the end. Bytes after the last member that do not start
/// another one (padding, junk) are not an error: they are counted in
/// `trailing` for the caller to flag.
struct Members {
    decoder: Option<GzDecoder<BufReader<BoxRead>>>,
    trailing: Arc<AtomicU64>,
    /// An error met after some slices were inflated: returned by the next read.
    pending: Option<io::Error>,
    /// The current member has produced output.
    member_output: bool,
    /// Members inflated to their end.
    members_done: u32,
}

impl Read for Members {
    /// Fills `buf` slice by slice; an error after some slices waits for the next call.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        let mut total = 0;
        while total < buf.len() {
            let end = buf.len().min(total + INFLATE_SLICE);
            match self.read_slice(&mut buf[total..end]) {
                Ok(0) => break,
                Ok(n) => total += n,
                Err(e) if total > 0 => {
                    self.pending = Some(e);
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(total)
    }
}

impl Members {
    /// Inflates at most one slice, moving on to the next member at the end of one.
    fn read_slice(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(decoder) = &mut self.decoder else {
                return Ok(0);
            };
            match decoder.read(buf) {
                Ok(0) if !buf.is_empty() => {
                    let Some(decoder) = self.decoder.take() else {
                        return Ok(0);
                    };
                    self.members_done += 1;
                    let mut rest = decoder.into_inner();
                    let next = rest.fill_buf()?;
                    if next.len() >= 2 && next[..2] == GZIP_MAGIC {
                        self.decoder = Some(GzDecoder::new(rest));
                        self.member_output = false;
                        continue;
                    }
                    let junk = drain(rest)?;
                    self.trailing.fetch_add(junk, Ordering::Relaxed);
                    return Ok(0);
                }
                Ok(read) => {
                    self.member_output = true;
                    return Ok(read);
                }
                // Inflating failed: a member after the first that yields nothing
                // (a stray magic number, a cut-off header) is trailing junk.
                Err(e) if is_inflate_error(&e) && !self.member_output && self.first_done() => {
                    let junk = match self.decoder.take() {
                        Some(decoder) => drain(decoder.into_inner())?,
                        None => 0,
                    };
                    // At least the bytes of the member that could not be read.
                    self.trailing.fetch_add(junk.max(2), Ordering::Relaxed);
                    return Ok(0);
                }
                Err(e) if is_inflate_error(&e) => {
                    return Err(io::Error::new(e.kind(), GzipError(e.to_string())));
                }
                // The reader under the gzip stream failed (reset, timeout): as it is.
                Err(e) => return Err(e),
            }
        }
    }

    /// Whether a member has already been inflated to its end.
    fn first_done(&self) -> bool {
        self.members_done > 0
    }
}

/// Reads `rest` to its end; returns how many bytes that was.
fn drain(mut rest: BufReader<BoxRead>) -> io::Result<u64> {
    let mut count = 0u64;
    loop {
        let len = rest.fill_buf()?.len();
        if len == 0 {
            return Ok(count);
        }
        count += len as u64;
        rest.consume(len);
    }
}

/// Whether flate2 itself failed (bad header, corrupt data, checksum, cut
/// short), as opposed to the reader under it.
fn is_inflate_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof
    ) && !e
        .get_ref()
        .is_some_and(|inner| inner.is::<super::limit::LimitExceeded>())
}

/// Removes gzip layers (up to [`MAX_LAYERS`]), each one's output limited to
/// `max_bytes`. Returns the inner stream and the number of layers removed;
/// bytes found after a layer's last member are added to `trailing`.
pub(crate) fn unwrap_layers(
    mut r: BoxRead,
    max_bytes: u64,
    trailing: &Arc<AtomicU64>,
) -> io::Result<(BoxRead, u8)> {
    let mut layers = 0;
    loop {
        let (prefix, chained) = read_prefix(r, 2)?;
        if prefix != GZIP_MAGIC || layers == MAX_LAYERS {
            return Ok((chained, layers));
        }
        let members = Members {
            decoder: Some(GzDecoder::new(BufReader::new(chained))),
            trailing: trailing.clone(),
            pending: None,
            member_output: false,
            members_done: 0,
        };
        r = Box::new(Limit::new(members, max_bytes));
        layers += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{Compression, write::GzEncoder};
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn unwrap_all(data: Vec<u8>) -> (Vec<u8>, u8, u64) {
        let trailing = Arc::new(AtomicU64::new(0));
        let (mut r, layers) =
            unwrap_layers(Box::new(Cursor::new(data)), 1 << 20, &trailing).unwrap();
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        (out, layers, trailing.load(Ordering::Relaxed))
    }

    #[test]
    fn c2_plain_gzip_and_gzip_in_gzip() {
        assert_eq!(
            unwrap_all(b"<urlset/>".to_vec()),
            (b"<urlset/>".to_vec(), 0, 0)
        );
        assert_eq!(unwrap_all(gz(b"<urlset/>")), (b"<urlset/>".to_vec(), 1, 0));
        assert_eq!(
            unwrap_all(gz(&gz(b"<urlset/>"))),
            (b"<urlset/>".to_vec(), 2, 0)
        );
        assert_eq!(unwrap_all(Vec::new()), (Vec::new(), 0, 0));
        assert_eq!(unwrap_all(vec![0x1f]), (vec![0x1f], 0, 0));
    }

    #[test]
    fn c2_members_are_concatenated_and_trailing_bytes_counted() {
        let two = [gz(b"<urlset>"), gz(b"</urlset>")].concat();
        assert_eq!(unwrap_all(two), (b"<urlset></urlset>".to_vec(), 1, 0));
        let padded = [gz(b"<urlset/>"), vec![0u8; 512]].concat();
        assert_eq!(unwrap_all(padded), (b"<urlset/>".to_vec(), 1, 512));
        for tail in [&[0x1f][..], &[0x1f, 0x8b], &[0x1f, 0x8b, 8, 0]] {
            let (out, layers, trailing) = unwrap_all([gz(b"<urlset/>"), tail.to_vec()].concat());
            assert_eq!((out, layers), (b"<urlset/>".to_vec(), 1), "{tail:?}");
            assert!(trailing > 0, "{tail:?}");
        }
    }

    #[test]
    fn errors_of_the_reader_under_gzip_are_not_gzip_errors() {
        struct Reset(Cursor<Vec<u8>>);
        impl Read for Reset {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                match self.0.read(buf)? {
                    0 => Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset")),
                    n => Ok(n),
                }
            }
        }
        let mut data = gz(&vec![b'x'; 100_000]);
        data.truncate(data.len() / 2);
        let trailing = Arc::new(AtomicU64::new(0));
        let (mut r, _) =
            unwrap_layers(Box::new(Reset(Cursor::new(data))), 1 << 20, &trailing).unwrap();
        let err = r.read_to_end(&mut Vec::new()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionReset);
        assert!(!gzip_error(&err));
    }

    #[test]
    fn c2_corrupt_gzip_is_a_gzip_error() {
        let mut data = gz(&vec![b'x'; 100_000]);
        let at = data.len() / 2;
        data[at] ^= 0xff;
        let trailing = Arc::new(AtomicU64::new(0));
        let (mut r, _) = unwrap_layers(Box::new(Cursor::new(data)), 1 << 20, &trailing).unwrap();
        let err = r.read_to_end(&mut Vec::new()).unwrap_err();
        assert!(gzip_error(&err), "{err}");
    }
}
