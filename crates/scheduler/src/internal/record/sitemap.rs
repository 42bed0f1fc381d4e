//! The records of sitemaps ([`SitemapRecord`], [`RefreshState`]), followed
//! sites ([`SiteRecord`]) and robots rules ([`RobotsRecord`]).

use serde::{Deserialize, Serialize};

use super::*;

/// What the store knows of one sitemap (keyed by its URL as listed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SitemapRecord {
    /// Stable id, from 1 (member and child keys use it).
    pub id: u64,
    /// Successful (2xx) reads so far: the sequence stamped on the URLs each
    /// read lists.
    pub seq: u64,
    /// The sequence numbers of its last complete reads, oldest first, at
    /// most [`RECENT_READS`]: absences count against these only.
    pub recent_complete: Vec<u64>,
    /// `ETag` of the last response.
    pub etag: Option<String>,
    /// `Last-Modified` of the last response.
    pub last_modified: Option<String>,
    /// Last fetch (unix seconds).
    pub last_fetch: Option<i64>,
    /// Last successful fetch.
    pub last_success: Option<i64>,
    /// Last HTTP status, or 0 when no response came.
    pub last_status: u16,
    /// URL entries in the last read.
    pub entries: u64,
    /// Failed fetches in a row.
    pub errors: u32,
    /// The index that listed it.
    pub parent: Option<String>,
    /// The site whose robots.txt authorised it (R5).
    pub authorised_by: Option<String>,
    /// URLs it lists (not retired), as of its last retirement pass; a
    /// read with fewer distinct URLs triggers the next pass.
    pub members: u64,
}

impl Record for SitemapRecord {}

/// A followed site, keyed by its seed as given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteRecord {
    /// When it was added (unix seconds).
    pub added_at: i64,
    /// When it is next to be walked.
    pub next_walk: i64,
    /// When its last walk ended, if it was walked.
    pub last_walk: Option<i64>,
    /// Sitemaps its last walk read.
    pub last_sitemaps: u64,
    /// Sitemaps its last walk failed to read.
    pub last_failed: u64,
    /// URL entries its last walk read.
    pub last_entries: u64,
}

/// One sitemap's refresh schedule, as stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefreshState {
    /// When to read it next (unix seconds).
    pub next_at: i64,
    /// The current interval between successful reads, seconds.
    pub interval: u32,
    /// The fingerprint of the last 2xx read (0 before the first).
    pub fingerprint: u64,
    /// Successful reads that changed (the first one included), in total.
    pub changed: u32,
    /// Successful reads that did not change (304 or same fingerprint), in
    /// total.
    pub unchanged: u32,
    /// Failed reads since the last successful one.
    pub errors_in_a_row: u32,
    /// It is an RSS/Atom feed, as its last read with a body said (a 304 or
    /// a failure has none: the flag is kept).
    pub feed: bool,
}

impl Record for RefreshState {}

impl Record for SiteRecord {}

/// The robots.txt rules a host's URLs are leased under, as its last walk
/// read them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RobotsRecord {
    /// The rules for the store's crawler.
    pub rules: sitemapd_parser::RobotsRules,
    /// When they were read (unix seconds).
    pub read_at: i64,
}

impl Record for RobotsRecord {}
