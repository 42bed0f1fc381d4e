//! The store's records and their on-disk form: a version byte, then the
//! record in postcard (compact varints, no field names). A record that does
//! not decode is reported as corrupt, never a panic.
//!
//! ## Versions
//!
//! | version | change |
//! |---|---|
//! | 1 | first |
//! | 2 | [`UrlRecord::notified`] appended |
//! | 3 | [`LastmodTrust`] (in [`HostRecord`]) split by error kind: `announced`, `missed`, `false_alarms` appended |
//! | 4 | [`UrlRecord`]: `blocked`, `lapsed`, `repeats`, `last_status`, `redirected_from` appended; [`HostRecord`]: `errors_in_a_row` appended |
//! | 5 | `UrlRecord::listed` appended: the due list that held a new URL's due entry (gone in version 9) |
//! | 6 | [`UrlRecord`]: `completed`, `metadata` appended (what a URL frontier client put, [`crate::frontier`]); the host counts (`Tally`): `completed` appended |
//! | 7 | [`Listed`] (a due list entry): `reason` and `meta` appended, and its lease kept in front of its list ([`crate::due_list`]), not in its record |
//! | 8 | [`HostRecord`]: `counts` appended (its URL records counted by state, kept under `t` ‖ host before key layout 8) |
//! | 9 | [`UrlRecord`]: `listed` gone (every queued URL's entry is in a run of its lane), `queue` appended (a URL frontier client's queue); [`Listed`] (a run's entry): `due` appended; [`StoredReason::LastmodTrusted`] appended |
//! | 10 | [`SitemapRecord`]: `present_from` and `last_read` appended (a URL listed again unchanged keeps its stamp, [`Listing`]) |
//!
//! Every record is written in the current version and read in any known
//! one ([`Record`]): a version-1 URL record decodes through its legacy
//! layout, without notifications. Enum variants are only ever appended
//! (postcard encodes the variant index), so [`StoredReason::Notified`],
//! added with version 2, needs no conversion.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The record format version written first in every value.
pub const FORMAT_VERSION: u8 = 10;

/// The read time of a [`UrlRecord::lastmod_history`] entry whose move is
/// not dated.
pub const NOT_DATED: i64 = i64::MIN;
/// Distinct lastmod values remembered per URL.
pub const LASTMOD_HISTORY: usize = 8;
/// Fetch observations remembered per URL for the estimators.
pub const VISIT_HISTORY: usize = 16;
/// Sitemaps remembered per URL (for retirement).
pub const MAX_SOURCES: usize = 8;
/// Complete reads remembered per sitemap: the most `retire_after` can be.
pub const RECENT_READS: usize = 8;

/// A record could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Empty value.
    #[error("empty record")]
    Empty,
    /// Written by a newer (or unknown) format.
    #[error("record format version {0} is not known (this build reads 1 to {FORMAT_VERSION})")]
    Version(u8),
    /// The bytes do not decode.
    #[error("corrupt record: {0}")]
    Corrupt(#[from] postcard::Error),
    /// The page of records it is in does not decode.
    #[error("corrupt page: {0}")]
    Page(#[from] crate::page::PageError),
    /// A compressed record ([`encode_squeezed`]) that does not decompress.
    #[error("compressed record does not decompress")]
    Squeezed,
    /// The leases in front of a due list's entries do not read, or name
    /// entries it does not hold ([`crate::due_list`]).
    #[error("corrupt leases in a due list")]
    ListLeases,
}

/// The first byte of a record compressed by [`encode_squeezed`]: a zstd
/// frame of the record's [`encode`]d bytes follows.
pub const SQUEEZED: u8 = 0xc5;

/// Bytes a compressed record may decompress to, at most.
const MAX_SQUEEZED: usize = 4 << 20;

/// [`encode`], compressed ([`crate::squeeze`]) when that makes it smaller:
/// for the records that hold many URLs (due lists).
pub fn encode_squeezed<T: Serialize>(record: &T) -> Vec<u8> {
    let plain = encode(record);
    let frame = crate::squeeze::compress(&plain);
    if frame.is_empty() || frame.len() + 1 >= plain.len() {
        return plain;
    }
    let mut out = Vec::with_capacity(1 + frame.len());
    out.push(SQUEEZED);
    out.extend_from_slice(&frame);
    out
}

/// Encodes a record: version byte + postcard.
pub fn encode<T: Serialize>(record: &T) -> Vec<u8> {
    // Room for a typical URL record, so that it is written without
    // growing the vector (or copied after).
    let mut out = Vec::with_capacity(192);
    out.push(FORMAT_VERSION);
    // Serialising these plain structs into a Vec cannot fail.
    postcard::to_extend(record, out).unwrap_or_else(|_| vec![FORMAT_VERSION])
}

/// A record the store writes, and how to read its older format versions.
pub trait Record: Serialize + DeserializeOwned {
    /// Reads the body of a value written in the older format `version`
    /// (1 up to [`FORMAT_VERSION`] − 1). The default: the layout has not
    /// changed.
    fn from_older(version: u8, body: &[u8]) -> Result<Self, postcard::Error> {
        let _ = version;
        postcard::from_bytes(body)
    }
}

/// Decodes a record written by [`encode`] (or [`encode_squeezed`]), in
/// this format version or an older one.
pub fn decode<T: Record>(bytes: &[u8]) -> Result<T, RecordError> {
    if let Some((&SQUEEZED, frame)) = bytes.split_first() {
        let plain = crate::squeeze::decompress(frame, MAX_SQUEEZED).ok_or(RecordError::Squeezed)?;
        if plain.first() == Some(&SQUEEZED) {
            return Err(RecordError::Squeezed);
        }
        return decode(&plain);
    }
    match bytes.split_first() {
        None => Err(RecordError::Empty),
        Some((&FORMAT_VERSION, body)) => Ok(postcard::from_bytes(body)?),
        Some((&v, body)) if (1..FORMAT_VERSION).contains(&v) => Ok(T::from_older(v, body)?),
        Some((&v, _)) => Err(RecordError::Version(v)),
    }
}

mod host;
mod lists;
mod sitemap;
mod stored;
mod url;

pub use host::*;
pub use lists::*;
pub use sitemap::*;
pub use stored::*;
pub use url::*;

#[cfg(test)]
mod tests;
