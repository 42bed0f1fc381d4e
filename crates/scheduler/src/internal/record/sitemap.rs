//! The records of sitemaps ([`SitemapRecord`], [`RefreshState`]), followed
//! sites ([`SiteRecord`]) and robots rules ([`RobotsRecord`]).

use serde::{Deserialize, Serialize};

use super::*;

/// What the store knows of one sitemap (keyed by its URL as listed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SitemapRecord {
    /// Stable id, from 1 (member and child keys use it).
    pub id: u64,
    /// Reads so far that were successful (2xx) or stored URLs: the
    /// sequence stamped on the URLs each read lists (a read stores its own
    /// with its first batch of URLs).
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
    /// From which sequence on a URL's stamp for this sitemap says "listed
    /// by every read since, the last one included" rather than "last
    /// listed by this read" (see [`Listing`]); `None` in a record written
    /// before format version 10, whose stamps all say the latter. Set at
    /// its first read by a build that keeps it, and never moved.
    pub present_from: Option<u64>,
    /// When its last complete 2xx read was, if known: the last time the
    /// URLs it lists were seen, but those a later read wrote.
    pub last_read: Option<i64>,
}

/// [`SitemapRecord`] as format versions 1 to 9 wrote it.
#[derive(Deserialize)]
struct SitemapRecordV9 {
    id: u64,
    seq: u64,
    recent_complete: Vec<u64>,
    etag: Option<String>,
    last_modified: Option<String>,
    last_fetch: Option<i64>,
    last_success: Option<i64>,
    last_status: u16,
    entries: u64,
    errors: u32,
    parent: Option<String>,
    authorised_by: Option<String>,
    members: u64,
}

impl SitemapRecord {
    /// Records a complete 2xx read, stamped `seq`, at `at`: absences count
    /// against it, and it is the last sighting of the URLs its stamps list.
    pub fn read_completely(&mut self, seq: u64, at: i64) {
        self.seq = seq;
        self.last_read = Some(at);
        self.recent_complete.push(seq);
        if self.recent_complete.len() > RECENT_READS {
            self.recent_complete.remove(0);
        }
    }
}

impl Record for SitemapRecord {
    fn from_older(version: u8, body: &[u8]) -> Result<Self, postcard::Error> {
        let _ = version;
        let v: SitemapRecordV9 = postcard::from_bytes(body)?;
        Ok(SitemapRecord {
            id: v.id,
            seq: v.seq,
            recent_complete: v.recent_complete,
            etag: v.etag,
            last_modified: v.last_modified,
            last_fetch: v.last_fetch,
            last_success: v.last_success,
            last_status: v.last_status,
            entries: v.entries,
            errors: v.errors,
            parent: v.parent,
            authorised_by: v.authorised_by,
            members: v.members,
            present_from: None,
            last_read: None,
        })
    }
}

/// The high bit of a URL's stamp for a sitemap ([`UrlRecord::sources`]):
/// the URL was absent from a complete read after the one stamped in the
/// other bits, its last listing.
pub const ABSENT: u64 = 1 << 63;

/// How a sitemap's reads stand for the URLs it stamped: what a URL's
/// stamp ([`UrlRecord::sources`]) says of it.
///
/// A read writes the stamp of a URL whose entry changed (or that is new,
/// or back); a URL whose entry is what its record holds, and that the
/// previous read listed, keeps its stamp: a stamp from
/// [`SitemapRecord::present_from`] on, without [`ABSENT`], means "listed
/// by every read since". A complete read that leaves such a URL out marks
/// it [`ABSENT`] with the previous read's sequence, its last listing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listing {
    /// The sequence of the last 2xx read.
    pub seq: u64,
    /// [`SitemapRecord::present_from`].
    pub present_from: Option<u64>,
    /// [`SitemapRecord::recent_complete`].
    pub recent_complete: Vec<u64>,
    /// [`SitemapRecord::last_read`].
    pub last_read: Option<i64>,
}

impl Listing {
    /// The listing of `record`'s reads.
    pub fn of(record: &SitemapRecord) -> Listing {
        Listing {
            seq: record.seq,
            present_from: record.present_from,
            recent_complete: record.recent_complete.clone(),
            last_read: record.last_read,
        }
    }

    /// Whether the URL stamped `stamp` was listed by the last 2xx read.
    pub fn lists(&self, stamp: u64) -> bool {
        match self.present_from {
            _ if stamp & ABSENT != 0 => false,
            Some(from) => stamp >= from,
            None => stamp == self.seq,
        }
    }

    /// When the URL stamped `stamp` was last seen by these reads, if its
    /// stamp stands for the last complete one (its record may be older).
    pub fn sighting(&self, stamp: u64) -> Option<i64> {
        self.last_read.filter(|_| self.lists(stamp))
    }

    /// `stamp` marked [`ABSENT`] since the last read, if that read listed
    /// the URL: what a URL's stamp becomes when it is found absent.
    pub fn mark_absent(&self, stamp: u64) -> u64 {
        match self.lists(stamp) {
            true => ABSENT | self.seq,
            false => stamp,
        }
    }

    /// The complete reads the URL stamped `stamp` has been absent from
    /// (of the recent ones).
    pub fn absences(&self, stamp: u64) -> usize {
        if self.lists(stamp) {
            return 0;
        }
        let last = stamp & !ABSENT;
        self.recent_complete.iter().filter(|s| **s > last).count()
    }
}

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
