//! A page of URL records: the encoded records ([`crate::record::encode`])
//! of up to [`PAGE_CAP`] URLs of one origin (`scheme://host[:port]/`), in
//! URL order, stored under one sled key ([`crate::keys::page`]). Grouping
//! is what lets sled hold ten million URLs in a few hundred thousand keys:
//! sled keeps metadata in memory for every node of its tree, and writes a
//! small key at several times its size.
//!
//! The URLs are front-coded: each entry keeps only what differs from the
//! URL before it, which is most of a URL's bytes on a site whose URLs share
//! long paths.
//!
//! ```text
//! page  := PAGE_PLAIN body  |  PAGE_ZSTD zstd-frame(body)
//! body  := varint(count)  entry*
//! entry := varint(shared)  varint(len)  suffix[len]  varint(rlen)  record[rlen]
//! ```
//!
//! The body is compressed ([`squeeze`](crate::squeeze), zstd) unless that
//! does not make it smaller: the records of one site repeat each other's
//! bytes (times, hashes of similar sitemaps, flags).
//!
//! `shared` is the number of leading bytes the URL shares with the one
//! before it (0 for the first). Decoding checks every length against the
//! bytes left, so a corrupt page is an error, never a panic or a huge
//! allocation.

/// URLs a page holds at most; a page that grows past it is cut in even
/// pieces.
pub const PAGE_CAP: usize = 64;

/// Bytes a page holds, about (records with large metadata cut a page
/// earlier than [`PAGE_CAP`]; a record larger than this is a page alone).
pub const PAGE_BYTES: usize = 16 << 10;

/// The format byte of a page stored as it is.
const PAGE_PLAIN: u8 = 1;
/// The format byte of a page whose body is one zstd frame.
const PAGE_ZSTD: u8 = 2;
/// Bytes a page's body may decompress to, at most (a page holds one
/// record at least, of up to 16 KiB of metadata and a URL). A body larger
/// than this is stored plain.
const MAX_BODY: usize = 1 << 20;
/// Bytes a URL in a page may have, at most.
const MAX_URL: usize = 64 << 10;

/// Why a page does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    /// Unknown format byte (or empty).
    #[error("page format {0:?} is not known (this build reads {PAGE_PLAIN} and {PAGE_ZSTD})")]
    Format(Option<u8>),
    /// The bytes end inside an entry, or say more than they hold.
    #[error("page cut short or corrupt at byte {0}")]
    Corrupt(usize),
    /// A URL that is not UTF-8, or not after the one before it.
    #[error("page entry {0} is not a URL in order")]
    Order(usize),
    /// A compressed body that does not decompress (within `MAX_BODY`).
    #[error("page body does not decompress")]
    Compressed,
}

/// One entry: a URL and its encoded record.
pub type Entry = (String, Vec<u8>);

/// The origin of `url` (`scheme://host[:port]/`): pages never hold URLs of
/// two origins. A string without `://` is its own origin.
pub fn origin(url: &str) -> &str {
    let Some(at) = crate::keys::scheme_end(url) else {
        return url;
    };
    match url.as_bytes()[at..].iter().position(|&b| b == b'/') {
        Some(slash) => &url[..at + slash + 1],
        None => url,
    }
}

/// Appends `n` as a LEB128 varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Reads varints and byte runs from a value, failing at its end.
pub(crate) struct Reader<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) at: usize,
}

impl<'a> Reader<'a> {
    /// A LEB128 varint.
    pub(crate) fn varint(&mut self) -> Result<usize, PageError> {
        let mut n: usize = 0;
        for shift in (0..64).step_by(7) {
            let b = *self.bytes.get(self.at).ok_or(PageError::Corrupt(self.at))?;
            self.at += 1;
            n |= usize::from(b & 0x7f)
                .checked_shl(shift)
                .ok_or(PageError::Corrupt(self.at))?;
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(PageError::Corrupt(self.at))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], PageError> {
        let end = self.at.checked_add(n).ok_or(PageError::Corrupt(self.at))?;
        let s = self
            .bytes
            .get(self.at..end)
            .ok_or(PageError::Corrupt(self.at))?;
        self.at = end;
        Ok(s)
    }
}

/// Encodes `entries` (in URL order, one origin) as one page.
pub fn encode(entries: &[Entry]) -> Vec<u8> {
    let size: usize = entries.iter().map(|(u, r)| u.len() / 4 + r.len() + 4).sum();
    let mut body = Vec::with_capacity(size + 8);
    put_varint(&mut body, entries.len());
    let mut prev: &[u8] = &[];
    for (url, rec) in entries {
        let url = url.as_bytes();
        let shared = prev.iter().zip(url).take_while(|(a, b)| a == b).count();
        put_varint(&mut body, shared);
        put_varint(&mut body, url.len() - shared);
        body.extend_from_slice(&url[shared..]);
        put_varint(&mut body, rec.len());
        body.extend_from_slice(rec);
        prev = url;
    }
    let squeezed = if body.len() <= MAX_BODY {
        crate::squeeze::compress(&body)
    } else {
        Vec::new()
    };
    let (format, bytes) = if !squeezed.is_empty() && squeezed.len() < body.len() {
        (PAGE_ZSTD, squeezed)
    } else {
        (PAGE_PLAIN, body)
    };
    let mut out = Vec::with_capacity(1 + bytes.len());
    out.push(format);
    out.extend_from_slice(&bytes);
    out
}

/// A page's body: as stored, or decompressed.
fn body(bytes: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>, PageError> {
    match bytes.split_first() {
        Some((&PAGE_PLAIN, body)) => Ok(std::borrow::Cow::Borrowed(body)),
        Some((&PAGE_ZSTD, frame)) => crate::squeeze::decompress(frame, MAX_BODY)
            .map(std::borrow::Cow::Owned)
            .ok_or(PageError::Compressed),
        Some((&other, _)) => Err(PageError::Format(Some(other))),
        None => Err(PageError::Format(None)),
    }
}

/// Walks the entries of a page's body, calling `each` with every URL (as
/// bytes) and its record, until `each` answers `false`.
fn walk<'a>(
    bytes: &'a [u8],
    mut each: impl FnMut(&[u8], &'a [u8]) -> bool,
) -> Result<(), PageError> {
    let mut r = Reader { bytes, at: 0 };
    let count = r.varint()?;
    let mut url: Vec<u8> = Vec::with_capacity(128);
    // What the entries' URLs add up to, bounded: front coding lets a few
    // bytes stand for a long URL, and a hostile page for a huge total.
    let mut total = 0usize;
    let most = bytes.len().saturating_mul(4).saturating_add(MAX_URL);
    for i in 0..count {
        let shared = r.varint()?;
        let len = r.varint()?;
        if shared > url.len() || shared.saturating_add(len) > MAX_URL {
            return Err(PageError::Order(i));
        }
        total = total.saturating_add(shared + len);
        if total > most {
            return Err(PageError::Corrupt(r.at));
        }
        let suffix = r.take(len)?;
        if i > 0 && suffix.first() <= url.get(shared) {
            return Err(PageError::Order(i));
        }
        url.truncate(shared);
        url.extend_from_slice(suffix);
        let rlen = r.varint()?;
        let rec = r.take(rlen)?;
        if !each(&url, rec) {
            return Ok(());
        }
    }
    if r.at != bytes.len() {
        return Err(PageError::Corrupt(r.at));
    }
    Ok(())
}

/// Every entry of a page, in URL order.
pub fn decode(bytes: &[u8]) -> Result<Vec<Entry>, PageError> {
    let body = body(bytes)?;
    let mut entries = Vec::new();
    let mut bad = None;
    walk(&body, |url, rec| match std::str::from_utf8(url) {
        Ok(url) => {
            entries.push((url.to_string(), rec.to_vec()));
            true
        }
        Err(_) => {
            bad = Some(entries.len());
            false
        }
    })?;
    match bad {
        Some(i) => Err(PageError::Order(i)),
        None => Ok(entries),
    }
}

/// The record of `url` in a page, without building the other entries.
pub fn find(bytes: &[u8], url: &str) -> Result<Option<Vec<u8>>, PageError> {
    let body = body(bytes)?;
    let want = url.as_bytes();
    let mut found = None;
    walk(&body, |u, rec| match u.cmp(want) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Equal => {
            found = Some(rec.to_vec());
            false
        }
        std::cmp::Ordering::Greater => false,
    })?;
    Ok(found)
}

/// The bytes an entry takes in a page, about (before compression).
fn weight((url, rec): &Entry) -> usize {
    url.len() + rec.len() + 4
}

/// `entries` (in URL order) cut into pages: of even counts, as few as keep
/// each within [`PAGE_CAP`] URLs, and each cut early where the next entry
/// would take it past [`PAGE_BYTES`] (a record larger than that is a page
/// of its own).
pub fn split(entries: &[Entry]) -> Vec<&[Entry]> {
    let bytes: usize = entries.iter().map(weight).sum();
    let pieces = entries
        .len()
        .div_ceil(PAGE_CAP)
        .max(bytes.div_ceil(PAGE_BYTES))
        .clamp(1, entries.len().max(1));
    let count = entries.len().div_ceil(pieces);
    let mut out = Vec::with_capacity(pieces);
    let (mut start, mut held) = (0, 0);
    for (i, e) in entries.iter().enumerate() {
        if i > start && (i - start >= count || held + weight(e) > PAGE_BYTES) {
            out.push(&entries[start..i]);
            (start, held) = (i, 0);
        }
        held += weight(e);
    }
    if start < entries.len() {
        out.push(&entries[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(n: usize) -> Vec<Entry> {
        let mut e: Vec<Entry> = (0..n)
            .map(|i| {
                (
                    format!("https://a.example/catalog/section-{}/item-{i}.html", i % 7),
                    vec![5, i as u8, 3],
                )
            })
            .collect();
        e.sort();
        e
    }

    #[test]
    fn pages_round_trip_and_find_each_url() {
        for n in [0, 1, 2, 130] {
            let e = entries(n);
            let bytes = encode(&e);
            assert_eq!(decode(&bytes).unwrap(), e);
            for (url, rec) in &e {
                assert_eq!(find(&bytes, url).unwrap().as_ref(), Some(rec));
            }
            assert_eq!(find(&bytes, "https://a.example/catalog/x").unwrap(), None);
        }
        // Front coding: 130 URLs of ~50 bytes in far less.
        assert!(encode(&entries(130)).len() < 130 * 30);
    }

    #[test]
    fn every_cut_or_flipped_byte_is_an_error_or_a_page_not_a_panic() {
        let bytes = encode(&entries(20));
        assert_eq!(bytes[0], PAGE_ZSTD);
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..bytes.len() {
            for flip in [0x01, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[i] ^= flip;
                let _ = decode(&b);
                let _ = find(&b, "https://a.example/catalog/section-1/item-1.html");
            }
        }
        assert_eq!(decode(&[]), Err(PageError::Format(None)));
        assert_eq!(decode(&[9]), Err(PageError::Format(Some(9))));
        // A count far beyond the bytes allocates nothing up front.
        assert!(decode(&[PAGE_PLAIN, 0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
        assert_eq!(decode(&[PAGE_ZSTD, 1, 2, 3]), Err(PageError::Compressed));
        // Entries that each reuse a long URL and add a byte: refused
        // before their URLs add up to much more than the page.
        let mut hostile = vec![PAGE_PLAIN];
        put_varint(&mut hostile, 100_000);
        put_varint(&mut hostile, 0);
        put_varint(&mut hostile, 60_000);
        hostile.extend(std::iter::repeat_n(b'a', 60_000));
        put_varint(&mut hostile, 0);
        for i in 1..100_000u32 {
            put_varint(&mut hostile, 59_999);
            put_varint(&mut hostile, 1);
            hostile.push(b'b' + (i % 2) as u8);
            put_varint(&mut hostile, 0);
        }
        assert!(matches!(
            decode(&hostile),
            Err(PageError::Corrupt(_) | PageError::Order(_))
        ));
        // The plain form of the same page reads the same.
        let e = entries(20);
        let mut plain = vec![PAGE_PLAIN];
        plain.extend_from_slice(&crate::squeeze::decompress(&bytes[1..], MAX_BODY).unwrap());
        assert_eq!(decode(&plain).unwrap(), e);
    }

    #[test]
    fn splits_are_even_and_bounded() {
        let e = entries(3 * PAGE_CAP + 4);
        let parts = split(&e);
        assert_eq!(parts.len(), 4);
        assert!(parts.iter().all(|p| p.len() == (3 * PAGE_CAP + 4) / 4));
        assert_eq!(split(&e[..5]).len(), 1);
        assert_eq!(split(&[]).len(), 0);
        let big: Vec<Entry> = (0..10)
            .map(|i| (format!("u{i}"), vec![0; PAGE_BYTES / 3]))
            .collect();
        assert!(split(&big).iter().all(|p| p.len() <= 3));
        // Uneven records: no piece past the bound but for a lone record.
        let mut mixed = entries(PAGE_CAP);
        for e in mixed.iter_mut().take(8) {
            e.1 = vec![7; PAGE_BYTES];
        }
        let parts = split(&mixed);
        assert_eq!(parts.iter().map(|p| p.len()).sum::<usize>(), PAGE_CAP);
        assert!(
            parts
                .iter()
                .all(|p| p.len() == 1 || p.iter().map(weight).sum::<usize>() <= PAGE_BYTES)
        );
        // A body over the decoder's bound is stored plain, and reads back.
        let huge: Vec<Entry> = (0..3)
            .map(|i| (format!("u{i}"), vec![1; MAX_BODY / 2]))
            .collect();
        let bytes = encode(&huge);
        assert_eq!(bytes[0], PAGE_PLAIN);
        assert_eq!(decode(&bytes).unwrap(), huge);
    }

    #[test]
    fn origins() {
        assert_eq!(origin("https://a.example/x/y"), "https://a.example/");
        assert_eq!(origin("http://a.example:8080/"), "http://a.example:8080/");
        assert_eq!(origin("https://a.example"), "https://a.example");
        assert_eq!(origin("junk"), "junk");
    }
}
