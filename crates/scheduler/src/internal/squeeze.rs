//! zstd for the values the store writes many URLs into at once (record
//! pages, due lists), with one compression and one decompression context
//! per thread: making a context costs more than compressing a few
//! kilobytes, which is what sled's own `compression` feature pays on every
//! write (it made a lease 35% slower on the store bench; this does not
//! touch the values a lease writes one per URL).

use std::cell::RefCell;

/// zstd's level: -1, the first of its fast levels, which do not
/// entropy-code literals. On the pages and due lists of a store of 1M URLs
/// it compressed twice as fast as level 1 and decompressed twice as fast,
/// for 1 % more bytes in pages and 6 % more in due lists.
const LEVEL: i32 = -1;

thread_local! {
    static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// `raw` as one zstd frame (its size recorded in the frame).
pub fn compress(raw: &[u8]) -> Vec<u8> {
    COMPRESSOR.with(|c| {
        let mut c = c.borrow_mut();
        if c.is_none() {
            *c = zstd::bulk::Compressor::new(LEVEL).ok();
        }
        // Compressing into memory fails only if a context cannot be made
        // (out of memory); zstd's one-shot call is the fallback.
        c.as_mut()
            .and_then(|c| c.compress(raw).ok())
            .or_else(|| zstd::bulk::compress(raw, LEVEL).ok())
            .unwrap_or_default()
    })
}

/// The bytes of one zstd frame, if it says its size, that size is at most
/// `max`, and it decompresses to it.
pub fn decompress(frame: &[u8], max: usize) -> Option<Vec<u8>> {
    let size = zstd::zstd_safe::get_frame_content_size(frame).ok()??;
    let size = usize::try_from(size).ok().filter(|s| *s <= max)?;
    DECOMPRESSOR.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_none() {
            *d = zstd::bulk::Decompressor::new().ok();
        }
        let out = d.as_mut()?.decompress(frame, size).ok()?;
        (out.len() == size).then_some(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_what_is_not_a_frame_within_bounds() {
        let raw: Vec<u8> = (0..5000u32).flat_map(|i| (i % 97).to_le_bytes()).collect();
        let frame = compress(&raw);
        assert!(frame.len() < raw.len() / 4);
        assert_eq!(decompress(&frame, raw.len()), Some(raw.clone()));
        assert_eq!(decompress(&frame, raw.len() - 1), None, "over the bound");
        for cut in [0, 1, 5, frame.len() - 1] {
            assert_eq!(decompress(&frame[..cut], usize::MAX), None);
        }
        assert_eq!(decompress(&[0; 16], usize::MAX), None);
        assert_eq!(decompress(&compress(&[]), 0), Some(Vec::new()));
    }
}
