//! [`StoreError`]: what a store operation can fail with.

use crate::policy;
use crate::record::RecordError;

/// A store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store could not be opened or read (an I/O error).
    #[error("cannot use the store at {path}: {detail}")]
    Io {
        /// The store's directory.
        path: String,
        /// Why.
        detail: String,
    },
    /// The store's files are damaged: the backend panicked or found corrupt
    /// data while opening or reading it.
    #[error(
        "the store at {path} is damaged ({detail}). Keep a copy of it before anything else \
         opens it (sled writes to a store it opens), and restore it from a backup or rebuild \
         it with `sitemapd ingest` into a new --store"
    )]
    Damaged {
        /// The store's directory.
        path: String,
        /// What the backend said.
        detail: String,
    },
    /// A write failed (the disk full, a file size limit, an I/O error):
    /// nothing of the operation that failed was applied.
    #[error("cannot write to the store at {path}: {detail}")]
    WriteFailed {
        /// The store's directory.
        path: String,
        /// Why.
        detail: String,
    },
    /// The write log refused a batch (see [`crate::write_log`]): nothing of
    /// it was applied.
    #[error("the write log of partition {partition} refused a write: {detail}")]
    LogRefused {
        /// The partition.
        partition: u16,
        /// Why.
        detail: String,
    },
    /// A record does not decode.
    #[error("record {key:?} does not decode")]
    Record {
        /// The key, printable.
        key: String,
        /// Why.
        source: DecodeError,
    },
    /// `complete` for a URL the store does not hold.
    #[error("unknown URL {0:?}: not in the store")]
    UnknownUrl(String),
    /// The store was written by a newer build (its key layout).
    #[error("the store's key layout {0} is newer than this build reads: use a newer sitemapd")]
    NewerLayout(u8),
    /// The store's partitions are not as this build can use them: their
    /// number is unreadable, or the hosts were routed to them with another
    /// version of the Public Suffix List (see [`crate::store`]).
    #[error("the store's partitions cannot be used by this build: {0}")]
    Partitions(String),
    /// Another process has the store open.
    #[error("the store at {0} is in use by another process (one at a time)")]
    InUse(String),
    /// A policy name that does not exist.
    #[error(transparent)]
    Policy(#[from] policy::UnknownPolicy),
    /// A URL that is not an absolute http(s) URL (from [`Store::notify`](crate::Store::notify)).
    #[error("invalid URL {url:?}: {source}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// Why.
        source: sitemapd_parser::UrlError,
    },
    /// A pushed URL that is not on the host of the push
    /// ([`Store::push`](crate::Store::push)).
    #[error("{url:?} is not on {host}, the host of the push")]
    OffHost {
        /// The URL, normalised.
        url: String,
        /// The host of the push.
        host: String,
    },
}

impl StoreError {
    /// The store's files are damaged ([`StoreError::Damaged`]).
    pub fn is_damage(&self) -> bool {
        matches!(self, StoreError::Damaged { .. })
    }

    /// The write log refused a write ([`StoreError::LogRefused`]): in a
    /// cluster, the partition is not this node's (now).
    pub fn is_log_refusal(&self) -> bool {
        matches!(self, StoreError::LogRefused { .. })
    }

    /// A write failed ([`StoreError::WriteFailed`]).
    pub fn is_write_failure(&self) -> bool {
        matches!(self, StoreError::WriteFailed { .. })
    }
}

/// Why a stored record does not decode, in words (the bytes' encoding is
/// the store's own and not part of its interface).
#[derive(Debug)]
pub struct DecodeError(RecordError);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for DecodeError {}

impl From<RecordError> for DecodeError {
    fn from(e: RecordError) -> Self {
        DecodeError(e)
    }
}
