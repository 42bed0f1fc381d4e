//! gzip detected by its magic bytes, never by name or Content-Type (SPEC C2),
//! also gzip inside gzip; every layer's output is bounded (SPEC C3).

use std::io::{self, Cursor, Read};

use flate2::read::MultiGzDecoder;

use super::limit::Limit;

/// The gzip magic bytes.
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// gzip layers removed at most; a deeper nesting is read as it is.
pub const MAX_LAYERS: u8 = 3;

/// A reader.
pub type BoxRead = Box<dyn Read + Send>;

/// Most bytes asked of a gzip decoder at once. When flate2 meets corrupt
/// data it returns the error and drops what it inflated in the same call, so
/// small calls bound what a corrupt stream costs (SPEC C8: keep what precedes
/// the break) to this many bytes.
pub const INFLATE_SLICE: usize = 2048;

/// Passes reads through, at most [`INFLATE_SLICE`] bytes each.
struct SmallReads<R>(R);

impl<R: Read> Read for SmallReads<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(INFLATE_SLICE);
        self.0.read(&mut buf[..n])
    }
}

/// Reads up to `n` bytes (fewer only at end of input). An error after some
/// bytes were read is kept for later, so that those bytes are not lost
/// (SPEC C8: a truncated or corrupt stream yields what precedes the break):
/// the returned reader yields the prefix, then the rest of `r`, or the error.
pub fn read_prefix(mut r: BoxRead, n: usize) -> io::Result<(Vec<u8>, BoxRead)> {
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

/// Removes gzip layers (up to [`MAX_LAYERS`]), each one's output limited to
/// `max_bytes`. Returns the inner stream and the number of layers removed.
pub fn unwrap_layers(mut r: BoxRead, max_bytes: u64) -> io::Result<(BoxRead, u8)> {
    let mut layers = 0;
    loop {
        let (prefix, chained) = read_prefix(r, 2)?;
        let is_gzip = prefix == GZIP_MAGIC;
        if !is_gzip || layers == MAX_LAYERS {
            return Ok((chained, layers));
        }
        r = Box::new(Limit::new(
            SmallReads(MultiGzDecoder::new(chained)),
            max_bytes,
        ));
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

    fn unwrap_all(data: Vec<u8>) -> (Vec<u8>, u8) {
        let (mut r, layers) = unwrap_layers(Box::new(Cursor::new(data)), 1 << 20).unwrap();
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        (out, layers)
    }

    #[test]
    fn c2_plain_gzip_and_gzip_in_gzip() {
        assert_eq!(
            unwrap_all(b"<urlset/>".to_vec()),
            (b"<urlset/>".to_vec(), 0)
        );
        assert_eq!(unwrap_all(gz(b"<urlset/>")), (b"<urlset/>".to_vec(), 1));
        assert_eq!(
            unwrap_all(gz(&gz(b"<urlset/>"))),
            (b"<urlset/>".to_vec(), 2)
        );
        assert_eq!(unwrap_all(Vec::new()), (Vec::new(), 0));
        assert_eq!(unwrap_all(vec![0x1f]), (vec![0x1f], 0));
    }
}
