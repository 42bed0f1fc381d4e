//! Key layout. Every keyspace lives in one sled tree under a one-byte
//! prefix, because a sled batch is atomic within one tree only: a URL
//! record and its due-index entry must change together or not at all.
//!
//! | prefix | key | value |
//! |---|---|---|
//! | `p` | the last URL a page held when it was cut (it keeps the key if that URL goes), or origin ‖ 0xff for the last page of an origin: a page holds the URLs after the page key before it, up to its own | a [page](crate::page) of the records of up to [`PAGE_CAP`](crate::page::PAGE_CAP) URLs of one origin: what an ingest writes |
//! | `u` | URL | [`UrlRecord`](crate::record::UrlRecord): a record written since its page was (a fetch, a notification), which stands for the page's copy; the next ingest of the URL folds it back into its page |
//! | `d` | [lane](lane) (queue ‖ NUL ‖ host ‖ NUL ‖ urgency class) ‖ [position](position) of its first entry (due time, score, rank, URL) | a run ([`DueList`](crate::record::DueList)): up to [`RUN_CAP`] due entries of the lane, in queue order, each with its lease if leased; a run holds the entries from its key up to the next run's key |
//! | `e` | urgency class ‖ due time ‖ queue ‖ NUL ‖ host | empty: the [head](head) of a lane, the due time of its first entry: what a lease merges the lanes by |
//! | `n` | queue ‖ NUL ‖ URL | empty: a URL in a URL frontier client's queue that is not its host's ([`queue_member`]) |
//! | `s` | sitemap URL | [`SitemapRecord`](crate::record::SitemapRecord) |
//! | `i` | sitemap id (8 bytes) | sitemap URL |
//! | `m` | sitemap id (8 bytes) ‖ host | empty: a host other than its own with URLs it lists |
//! | `c` | sitemap id (8 bytes) ‖ child URL | empty: a child of the index |
//! | `h` | host or queue name | [`HostRecord`](crate::record::HostRecord): the politeness and lastmod trust of the host of that name, and the URL records of the queue of that name counted by state (`Tally`): what `stats` reads |
//! | `b` | host | [`RobotsRecord`](crate::record::RobotsRecord): the robots.txt rules its URLs are leased under |
//! | `r` | sitemap URL | [`RefreshState`](crate::record::RefreshState): when to read it again |
//! | `x` | host | empty: a corrupt record of the host was replaced, so its lanes may hold an entry no record names ([`SUSPECT`]) |
//! | `f` | seed, as given | [`SiteRecord`](crate::record::SiteRecord): a followed site |
//! | `g` | host | [`PushRecord`](crate::record::PushRecord): the host's pushes (notifications, IndexNow) and what the fetches they caused found |
//! | `~policy` | | the policy name the store schedules with |
//! | `~calibration` | | the rate policies' allocation multiplier |
//! | `~layout` | | the key layout version ([`LAYOUT_VERSION`]) |
//! | `~closed` | | the number of the last clean close ([`CLOSED`]) |
//! | `~partitions` | | in partition 0: the store's number of partitions ([`PARTITIONS`]) |
//! | `~psl` | | in partition 0: the Public Suffix List version that routed hosts ([`PSL`]) |
//! | `~ids` | | the keyspace's id counter ([`IDS`]) |
//! | `~log-position` | | the position of the last write log entry applied ([`LOG_POSITION`]; [`crate::write_log`]) |
//! | `~repartition` | | in partition 0 while a store of one partition is brought into several: their count and the phase ([`REPARTITION`]) |
//!
//! ## The queue order
//!
//! A lease hands out due URLs in one order (docs/queue.md, "The
//! order"): by urgency class, then due time (the longest waiting first),
//! then queue, then host, then the policy's score (highest first), then the
//! rank the sitemap gives (highest priority, newest lastmod, shortest URL),
//! then the URL. The keys hold it: a lane's runs are in that order from
//! the due time on ([`position`]), and the heads (`e`) in the order of the
//! first three, so that a lease merges the lanes due now by their heads
//! and reads each lane from its first run.
//!
//! ## Layout versions
//!
//! | version | change |
//! |---|---|
//! | 1 (no `~layout` key) | due entries `d` ‖ due ‖ URL |
//! | 2 | due entries `d` ‖ class ‖ due ‖ rank ‖ URL: a lease reads the urgency classes in order, and within one due second the higher sitemap priority first |
//! | 3 | the rank is 11 bytes: the priority, then the newest lastmod, then the shortest URL, so that a site's many URLs due in one second are read in that order (not alphabetically) |
//! | 4 | `t` ‖ host: each host's URL records counted by state, kept in the batch that changes them |
//! | 5 | due lists: the URLs an ingest finds new share one due key per host, second and 32 URLs, instead of one each |
//! | 6 | record pages (`p`): an ingest writes URL records in pages of up to [`PAGE_CAP`](crate::page::PAGE_CAP); `u` keys are records written since. A layout-5 store opens as it is: its `u` records are read as such, and each ingest folds the ones it sees into pages |
//! | 7 | leases of listed URLs kept in their due list entries, not in their records |
//! | 8 | no `t` keys: each host's counts are in its host record (`h`), so that a lease or a completion writes one key per host, not two |
//! | 9 | the due index in lanes (queue, host, class) of runs in queue order, with a head per lane (`e`): one order for every lease, whatever its size; a URL frontier client's queue is the key it put a URL with (`n`), counted under that name (`h`); the hosts filed under a key (`q`, `k`) are gone |
//! | 10 | the id counter (`~ids`) in the keyspace, written in the batch that uses an id |
//! | 11 | a URL's stamp for a sitemap stands for later reads (the sitemap's record says from which read on) |
//! | 12 | a sitemap's member keys (`m`) name the other hosts it lists URLs of, one key per host, not one per URL |
//!
//! A store of an older layout is migrated when it is opened: its due
//! index is rebuilt from the URL records (their leases kept), and its
//! counts counted again by queue (`migrate.rs`).

/// URL records written one per key (since their page was).
pub const URL: u8 = b'u';
/// Pages of URL records.
pub const PAGE: u8 = b'p';
/// The due index: runs of due entries, lane by lane.
pub const DUE: u8 = b'd';
/// The heads of the lanes.
pub const HEAD: u8 = b'e';
/// The URLs of a client's queue that is not their host's.
pub const QUEUE_MEMBER: u8 = b'n';
/// Sitemap records.
pub const SITEMAP: u8 = b's';
/// Sitemap id -> URL.
pub const SITEMAP_ID: u8 = b'i';
/// Host records.
pub const HOST: u8 = b'h';
/// Robots rules per host.
pub const ROBOTS: u8 = b'b';
/// Hosts other than its own that a sitemap lists URLs of.
pub const MEMBER: u8 = b'm';
/// Children of an index.
pub const CHILD: u8 = b'c';
/// Sitemap refresh schedules.
pub const REFRESH: u8 = b'r';
/// Followed sites.
pub const SITE: u8 = b'f';
/// Push records.
pub const PUSHES: u8 = b'g';
/// Each host's URL records counted by state (key layouts 4 to 7; since 8,
/// in its host record). Read by the layout migration only.
pub const TALLY: u8 = b't';
/// The queue a host was filed under (key layouts 6 to 8: `q` ‖ host ->
/// key). Read by the layout migration only.
pub const QUEUE_OF: u8 = b'q';
/// The hosts filed under a queue (key layouts 6 to 8: `k` ‖ key ‖ 0 ‖
/// host). Removed by the layout migration.
pub const QUEUE_HOST: u8 = b'k';
/// Hosts whose lanes may hold an entry its record no longer names (`x` ‖
/// host, no value): a corrupt record of theirs was replaced, whose entry
/// could not be found. A lease reads the records of their URLs, and
/// removes such entries; `repair` clears them.
pub const SUSPECT: u8 = b'x';
/// The store's policy name.
pub const POLICY: &[u8] = b"~policy";
/// The allocation multiplier of the rate policies (f64, big endian).
pub const CALIBRATION: &[u8] = b"~calibration";
/// The key layout version (one byte).
pub const LAYOUT: &[u8] = b"~layout";
/// Lastmod moves dated from this time on (i64, big endian): what the
/// lastmod history recorded before (the time a value was first seen, not
/// the last read of the older one) is not a date of the move.
pub const DATED_FROM: &[u8] = b"~dated-from";
/// The number the store's last clean close wrote (u64, big endian; see
/// the `closed` file beside the database).
pub const CLOSED: &[u8] = b"~closed";
/// A key written by readiness probes (`Store::probe_write`).
pub const PROBE: &[u8] = b"~probe";
/// The number of partitions of the store whose own keyspace this is (u16,
/// big endian; absent from a store made before partitions, which has one).
pub const PARTITIONS: &[u8] = b"~partitions";
/// The version of the Public Suffix List crate the store's hosts were
/// routed to partitions with (absent with one partition).
pub const PSL: &[u8] = b"~psl";
/// In partition 0 of a store of one partition being brought into several
/// (`store/repartition.rs`): the partition count (u16, big endian) and the
/// phase (one byte: 1 copying, 2 removing).
pub const REPARTITION: &[u8] = b"~repartition";
/// The next id the keyspace hands out (u64, big endian): sitemap and lease
/// ids, written in the batch that uses them.
pub const IDS: &[u8] = b"~ids";
/// The position of the last write log entry applied to the keyspace
/// ([`crate::write_log`]): 8 bytes, big-endian. Written with every logged
/// batch, and with every entry replayed.
pub const LOG_POSITION: &[u8] = b"~log-position";
/// The key layout this build writes: 12, the keys of layout 11 with one
/// member key per host a sitemap lists URLs of instead of one per URL (an
/// older build would find no member URL there, and must not open it).
/// Layout 11 is layout 10 whose sitemap records say how their URLs' stamps
/// read (record format 10: an older build would take a URL listed again
/// unchanged for an absent one). Layout 10 is layout 9 with the id counter
/// ([`IDS`]) in the keyspace (an older build, which takes ids from sled's
/// generator, must not open that either).
pub const LAYOUT_VERSION: u8 = 12;
/// The layouts whose keys are those of [`LAYOUT_VERSION`] but for the id
/// counter, which opening the store adds, the records' format, which each
/// record's version byte tells, and the member keys, which opening the
/// store turns into one per host: they need no rebuild.
pub const LAYOUTS_WITHOUT_REBUILD: std::ops::RangeInclusive<u8> = 9..=11;

/// Due entries a run holds at most.
pub const RUN_CAP: usize = 32;

fn with_prefix(prefix: u8, rest: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + rest.len());
    k.push(prefix);
    k.extend_from_slice(rest);
    k
}

/// `u` ‖ url.
pub fn url(url: &str) -> Vec<u8> {
    with_prefix(URL, url.as_bytes())
}

/// `p` ‖ url: the key of a page whose last URL is `url` (the last page of
/// an origin is keyed `p` ‖ origin ‖ 0xff).
pub fn page(url: &str) -> Vec<u8> {
    with_prefix(PAGE, url.as_bytes())
}

/// `s` ‖ sitemap url.
pub fn sitemap(url: &str) -> Vec<u8> {
    with_prefix(SITEMAP, url.as_bytes())
}

/// `r` ‖ sitemap url.
pub fn refresh(url: &str) -> Vec<u8> {
    with_prefix(REFRESH, url.as_bytes())
}

/// `f` ‖ seed.
pub fn site(seed: &str) -> Vec<u8> {
    with_prefix(SITE, seed.as_bytes())
}

/// `h` ‖ host.
pub fn host(host: &str) -> Vec<u8> {
    with_prefix(HOST, host.as_bytes())
}

/// `t` ‖ host (key layouts 4 to 7).
pub fn tally(host: &str) -> Vec<u8> {
    with_prefix(TALLY, host.as_bytes())
}

/// `x` ‖ host.
pub fn suspect(host: &str) -> Vec<u8> {
    with_prefix(SUSPECT, host.as_bytes())
}

/// `q` ‖ host (key layouts 6 to 8).
pub fn queue_of(host: &str) -> Vec<u8> {
    with_prefix(QUEUE_OF, host.as_bytes())
}

/// `n` ‖ queue ‖ 0: the prefix of the URLs of queue `queue` that are not
/// its host's.
pub fn queue_members(queue: &str) -> Vec<u8> {
    let mut k = with_prefix(QUEUE_MEMBER, queue.as_bytes());
    k.push(0);
    k
}

/// `n` ‖ queue ‖ 0 ‖ url: `url` is in queue `queue`, which is not the
/// name of its host.
pub fn queue_member(queue: &str, url: &str) -> Vec<u8> {
    let mut k = queue_members(queue);
    k.extend_from_slice(url.as_bytes());
    k
}

/// `g` ‖ host.
pub fn pushes(host: &str) -> Vec<u8> {
    with_prefix(PUSHES, host.as_bytes())
}

/// `b` ‖ host.
pub fn robots(host: &str) -> Vec<u8> {
    with_prefix(ROBOTS, host.as_bytes())
}

/// `i` ‖ id.
pub fn sitemap_id(id: u64) -> Vec<u8> {
    with_prefix(SITEMAP_ID, &id.to_be_bytes())
}

/// An i64 as 8 bytes that sort like the numbers.
pub fn ordered(t: i64) -> [u8; 8] {
    ((t as u64) ^ (1 << 63)).to_be_bytes()
}

/// The number [`ordered`] wrote.
pub fn from_ordered(b: [u8; 8]) -> i64 {
    (u64::from_be_bytes(b) ^ (1 << 63)) as i64
}

/// Bytes of a due entry's rank.
pub const RANK_BYTES: usize = 11;

/// The order the sitemap gives URLs due at the same time in one lane, with
/// the same score (lowest first): the sitemap priority (1 byte, higher
/// first), the lastmod (8 bytes, newest first, none last), the URL's length
/// (2 bytes, shortest first).
pub type Rank = [u8; RANK_BYTES];

/// The [`Rank`] of a URL of `url_len` bytes with this priority rank (0:
/// first) and lastmod.
pub fn rank(priority: u8, lastmod: Option<i64>, url_len: usize) -> Rank {
    let mut r = [0u8; RANK_BYTES];
    r[0] = priority;
    r[1..9].copy_from_slice(&lastmod.map_or([0xff; 8], |at| ordered(at.saturating_neg())));
    r[9..].copy_from_slice(&u16::try_from(url_len).unwrap_or(u16::MAX).to_be_bytes());
    r
}

/// A score as 4 bytes that sort the highest score first, in the order of
/// [`f32::total_cmp`] reversed (so every bit pattern has its place).
pub fn score_bytes(score: f32) -> [u8; 4] {
    let bits = score.to_bits();
    // Ascending total order: flip every bit of a negative number, the
    // sign bit of a positive one; then all of it, for descending.
    let ascending = if bits & (1 << 31) != 0 {
        !bits
    } else {
        bits | (1 << 31)
    };
    (!ascending).to_be_bytes()
}

/// The score [`score_bytes`] wrote.
pub fn score_from_bytes(b: [u8; 4]) -> f32 {
    let ascending = !u32::from_be_bytes(b);
    let bits = if ascending & (1 << 31) != 0 {
        ascending & !(1 << 31)
    } else {
        !ascending
    };
    f32::from_bits(bits)
}

/// Bytes of a [`position`] before its URL: due time, score, rank.
pub const POSITION_FIXED: usize = 8 + 4 + RANK_BYTES;

/// A due entry's place in its lane: due time (8 bytes, earliest first) ‖
/// score ([`score_bytes`], highest first) ‖ [`Rank`] ‖ URL.
pub fn position(due: i64, score: f32, rank: Rank, url: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(POSITION_FIXED + url.len());
    push_position(&mut k, due, score, rank, url);
    k
}

fn push_position(k: &mut Vec<u8>, due: i64, score: f32, rank: Rank, url: &str) {
    k.extend_from_slice(&ordered(due));
    k.extend_from_slice(&score_bytes(score));
    k.extend_from_slice(&rank);
    k.extend_from_slice(url.as_bytes());
}

/// A [`position`]'s parts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Position<'a> {
    /// When it is due (unix seconds).
    pub due: i64,
    /// The policy's score.
    pub score: f32,
    /// The sitemap's order.
    pub rank: Rank,
    /// The URL.
    pub url: &'a str,
}

/// Splits a [`position`] into its parts.
pub fn parse_position(bytes: &[u8]) -> Option<Position<'_>> {
    let (due, rest) = bytes.split_at_checked(8)?;
    let (score, rest) = rest.split_at_checked(4)?;
    let (rank, url) = rest.split_at_checked(RANK_BYTES)?;
    Some(Position {
        due: from_ordered(due.try_into().ok()?),
        score: score_from_bytes(score.try_into().ok()?),
        rank: rank.try_into().ok()?,
        url: std::str::from_utf8(url).ok()?,
    })
}

/// `d` ‖ queue ‖ NUL ‖ host ‖ NUL ‖ class: the prefix of the runs of one
/// lane, the due entries of one queue, host and urgency class. A queue
/// name and a host hold no NUL (a client's key with a control character
/// is refused, and a host is normalised).
pub fn lane(queue: &str, host: &str, class: u8) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 + queue.len() + host.len() + POSITION_FIXED + 64);
    k.push(DUE);
    k.extend_from_slice(queue.as_bytes());
    k.push(0);
    k.extend_from_slice(host.as_bytes());
    k.push(0);
    k.push(class);
    k
}

/// The first key after every run of `lane` ([`lane`]).
pub fn lane_end(lane: &[u8]) -> Vec<u8> {
    let mut end = lane.to_vec();
    if let Some(class) = end.last_mut() {
        *class = class.saturating_add(1);
    }
    end
}

/// The first key after the runs of `lane` whose first entry is due at or
/// before `at`.
pub fn lane_due(lane: &[u8], at: i64) -> Vec<u8> {
    let mut k = lane.to_vec();
    k.extend_from_slice(&ordered(at.saturating_add(1)));
    k
}

/// The key of a run of `lane` whose first entry is at `position`.
pub fn run(lane: &[u8], position: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(lane.len() + position.len());
    k.extend_from_slice(lane);
    k.extend_from_slice(position);
    k
}

/// A run key's parts: its lane and its first entry's place.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunKey<'a> {
    /// The queue.
    pub queue: &'a str,
    /// The host of its URLs.
    pub host: &'a str,
    /// The urgency class.
    pub class: u8,
    /// How long the lane prefix is ([`lane`]): the key's first bytes.
    pub lane_len: usize,
    /// The first entry's place.
    pub first: Position<'a>,
}

/// Splits a run key into its parts.
pub fn parse_run(key: &[u8]) -> Option<RunKey<'_>> {
    let rest = key.strip_prefix(&[DUE])?;
    let q = rest.iter().position(|&b| b == 0)?;
    let queue = std::str::from_utf8(&rest[..q]).ok()?;
    let rest = &rest[q + 1..];
    let h = rest.iter().position(|&b| b == 0)?;
    let host = std::str::from_utf8(&rest[..h]).ok()?;
    let (&class, position) = rest[h + 1..].split_first()?;
    Some(RunKey {
        queue,
        host,
        class,
        lane_len: 1 + q + 1 + h + 1 + 1,
        first: parse_position(position)?,
    })
}

/// `e` ‖ class ‖ due ‖ queue ‖ NUL ‖ host: the head of a lane, whose first
/// entry is due at `due`.
pub fn head(class: u8, due: i64, queue: &str, host: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(12 + queue.len() + host.len());
    k.push(HEAD);
    k.push(class);
    k.extend_from_slice(&ordered(due));
    k.extend_from_slice(queue.as_bytes());
    k.push(0);
    k.extend_from_slice(host.as_bytes());
    k
}

/// The first head of `class`.
pub fn heads_of(class: u8) -> Vec<u8> {
    vec![HEAD, class]
}

/// The first key after every head of `class` due at or before `at`.
pub fn heads_due(class: u8, at: i64) -> Vec<u8> {
    let mut k = vec![HEAD, class];
    k.extend_from_slice(&ordered(at.saturating_add(1)));
    k
}

/// A head's parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head<'a> {
    /// The urgency class.
    pub class: u8,
    /// When the lane's first entry is due.
    pub due: i64,
    /// The lane's queue.
    pub queue: &'a str,
    /// The lane's host.
    pub host: &'a str,
}

impl Head<'_> {
    /// What orders the lanes due at one time: queue ‖ NUL ‖ host.
    pub fn lane_order(key: &[u8]) -> &[u8] {
        key.get(10..).unwrap_or_default()
    }
}

/// Splits a head key into its parts.
pub fn parse_head(key: &[u8]) -> Option<Head<'_>> {
    let rest = key.strip_prefix(&[HEAD])?;
    let (&class, rest) = rest.split_first()?;
    let (due, rest) = rest.split_at_checked(8)?;
    let q = rest.iter().position(|&b| b == 0)?;
    Some(Head {
        class,
        due: from_ordered(due.try_into().ok()?),
        queue: std::str::from_utf8(&rest[..q]).ok()?,
        host: std::str::from_utf8(&rest[q + 1..]).ok()?,
    })
}

/// The due keys of key layouts 2 to 8, which the layout migration reads
/// (their leases) and removes.
pub mod legacy {
    use super::{DUE, RANK_BYTES, Rank, from_ordered, ordered};

    /// A due key of layouts 2 to 8: `d` ‖ class ‖ due ‖ rank ‖ URL (what
    /// tests of the migration write).
    pub fn due(class: u8, at: i64, rank: Rank, url: &str) -> Vec<u8> {
        let mut k = vec![DUE, class];
        k.extend_from_slice(&ordered(at));
        k.extend_from_slice(&rank);
        k.extend_from_slice(url.as_bytes());
        k
    }

    /// A due entry's parts.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct DueKey<'a> {
        /// The urgency class (0 first).
        pub class: u8,
        /// When it is due (unix seconds).
        pub at: i64,
        /// Order within one due second (lowest first).
        pub rank: Rank,
        /// The URL, or NUL ‖ host ‖ NUL ‖ number for a due list.
        pub url: &'a str,
    }

    /// Splits a due key (`d` ‖ class ‖ due ‖ rank ‖ URL) into its parts.
    pub fn parse_due(key: &[u8]) -> Option<DueKey<'_>> {
        let rest = key.strip_prefix(&[DUE])?;
        let (&class, rest) = rest.split_first()?;
        let (time, rest) = rest.split_at_checked(8)?;
        let (rank, url) = rest.split_at_checked(RANK_BYTES)?;
        Some(DueKey {
            class,
            at: from_ordered(time.try_into().ok()?),
            rank: rank.try_into().ok()?,
            url: std::str::from_utf8(url).ok()?,
        })
    }

    /// A due entry's target, when it is a due list: its host and number.
    pub fn as_list(target: &str) -> Option<(&str, u32)> {
        let rest = target.strip_prefix('\0')?;
        let (host, n) = rest.split_once('\0')?;
        Some((host, u32::from_str_radix(n, 16).ok()?))
    }
}

fn id_and_suffix(prefix: u8, id: u64, suffix: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(9 + suffix.len());
    k.push(prefix);
    k.extend_from_slice(&id.to_be_bytes());
    k.extend_from_slice(suffix.as_bytes());
    k
}

/// `m` ‖ sitemap id ‖ host: a host other than the sitemap's own with URLs
/// it lists (`host[:port]`, as [`host_of`] gives it). A complete read's
/// absence pass reads the URL records of these hosts and of its own.
pub fn member(sitemap: u64, host: &str) -> Vec<u8> {
    id_and_suffix(MEMBER, sitemap, host)
}

/// The prefix of a sitemap's member keys.
pub fn members_of(sitemap: u64) -> Vec<u8> {
    with_prefix(MEMBER, &sitemap.to_be_bytes())
}

/// `c` ‖ index id ‖ child url.
pub fn child(index: u64, url: &str) -> Vec<u8> {
    id_and_suffix(CHILD, index, url)
}

/// The prefix of an index's child keys.
pub fn children_of(index: u64) -> Vec<u8> {
    with_prefix(CHILD, &index.to_be_bytes())
}

/// What follows the 9-byte prefix of a member key (a host) or a child key
/// (a URL).
pub fn suffix(key: &[u8]) -> Option<&str> {
    std::str::from_utf8(key.get(9..)?).ok()
}

/// The host of a normalised URL (`scheme://host:port`'s `host:port`).
pub fn host_of(url: &str) -> &str {
    let rest = scheme_end(url).map_or(url, |at| &url[at..]);
    let end = rest.bytes().position(|b| b == b'/' || b == b'?');
    end.map_or(rest, |end| &rest[..end])
}

/// Where what follows the first `://` of `url` starts (a byte search: the
/// scheme ends within a few bytes, and this runs for every URL handled).
pub fn scheme_end(url: &str) -> Option<usize> {
    url.as_bytes()
        .windows(3)
        .position(|w| w == b"://")
        .map(|at| at + 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scores sort highest first in the order `total_cmp` gives, and read
    /// back bit for bit.
    #[test]
    fn score_bytes_sort_the_highest_score_first() {
        let scores = [
            f32::NAN,
            f32::INFINITY,
            1.0,
            0.5,
            f32::MIN_POSITIVE,
            0.0,
            -0.0,
            -1.0,
            f32::NEG_INFINITY,
            -f32::NAN,
        ];
        for pair in scores.windows(2) {
            assert_eq!(pair[0].total_cmp(&pair[1]), std::cmp::Ordering::Greater);
            assert!(score_bytes(pair[0]) < score_bytes(pair[1]), "{pair:?}");
        }
        for s in scores {
            assert_eq!(score_from_bytes(score_bytes(s)).to_bits(), s.to_bits());
        }
    }

    /// A run's key: its lane, then its first entry's place: due time, then
    /// score (highest first), rank, URL; and it parses back.
    #[test]
    fn run_keys_sort_by_lane_then_due_score_rank_url_and_parse_back() {
        let r = rank(130, None, 9);
        let lane_a = lane("a.example", "a.example", 1);
        let key = |due, score, rank, url| run(&lane_a, &position(due, score, rank, url));
        let sorted = [
            key(-5, 1.0, r, "http://a.example/z"),
            key(0, 1.0, r, "http://a.example/z"),
            key(1_700_000_000, 1.0, r, "http://a.example/z"),
            key(1_700_000_000, 0.5, rank(5, None, 30), "http://a.example/a"),
            key(1_700_000_000, 0.5, rank(130, None, 9), "http://a.example/a"),
            key(1_700_000_000, 0.5, rank(130, None, 9), "http://a.example/b"),
        ];
        for pair in sorted.windows(2) {
            assert!(pair[0] < pair[1]);
        }
        assert!(sorted.iter().all(|k| *k < lane_end(&lane_a)));
        assert!(sorted[2] < lane_due(&lane_a, 1_700_000_000));
        assert!(lane_due(&lane_a, 1_700_000_000) < lane_end(&lane_a));
        // Another class, host or queue is another lane, after this one.
        assert!(lane_end(&lane_a) <= lane("a.example", "a.example", 2));
        assert!(sorted[5] < lane("a.example", "a.example:8080", 0));
        assert!(sorted[5] < lane("a.example.org", "a.example", 0));
        assert!(
            lane("a", "z", 3) < lane("a.b", "a", 0),
            "queue names in string order"
        );
        let parsed = parse_run(&sorted[3]).unwrap();
        assert_eq!(
            (parsed.queue, parsed.host, parsed.class),
            ("a.example", "a.example", 1)
        );
        assert_eq!(parsed.lane_len, lane_a.len());
        assert_eq!(
            parsed.first,
            Position {
                due: 1_700_000_000,
                score: 0.5,
                rank: rank(5, None, 30),
                url: "http://a.example/a"
            }
        );
        assert_eq!(parse_run(b"dq"), None);
        assert_eq!(parse_run(b"dq\0h\0\x01short"), None);
    }

    /// Heads sort by class, due time, queue, host; and parse back.
    #[test]
    fn heads_sort_by_class_due_queue_host_and_parse_back() {
        let sorted = [
            head(0, 10, "b", "z"),
            head(1, -3, "a", "a"),
            head(1, 5, "a", "a"),
            head(1, 5, "a", "b"),
            head(1, 5, "a.example", "a"),
            head(1, 6, "a", "a"),
        ];
        for pair in sorted.windows(2) {
            assert!(pair[0] < pair[1]);
        }
        assert!(sorted[0] < heads_of(1) && heads_of(1) <= sorted[1]);
        assert!(sorted[4] < heads_due(1, 5) && heads_due(1, 5) <= sorted[5]);
        assert_eq!(
            parse_head(&sorted[4]),
            Some(Head {
                class: 1,
                due: 5,
                queue: "a.example",
                host: "a"
            })
        );
        assert_eq!(Head::lane_order(&sorted[4]), b"a.example\0a");
        assert_eq!(parse_head(b"e\x01short"), None);
    }

    #[test]
    fn legacy_due_keys_and_lists_parse() {
        let mut key = vec![DUE, 1];
        key.extend_from_slice(&ordered(1_700_000_000));
        key.extend_from_slice(&[0; RANK_BYTES]);
        key.extend_from_slice(b"\0a.example\x0000000001a");
        let due = legacy::parse_due(&key).unwrap();
        assert_eq!((due.class, due.at), (1, 1_700_000_000));
        assert_eq!(legacy::as_list(due.url), Some(("a.example", 0x1a)));
        assert_eq!(legacy::as_list("https://a.example/"), None);
    }

    /// Within one priority: the newest lastmod first (none last), then the
    /// shortest URL, then the URL.
    #[test]
    fn rank_orders_by_priority_then_newest_lastmod_then_length() {
        let ordered = [
            rank(5, Some(100), 30),
            rank(130, Some(i64::MAX), 40),
            rank(130, Some(200), 40),
            rank(130, Some(-50), 10),
            rank(130, None, 10),
            rank(130, None, 11),
            rank(230, Some(300), 5),
        ];
        for pair in ordered.windows(2) {
            assert!(pair[0] < pair[1], "{pair:?}");
        }
    }

    /// The store files a URL under its parser `HostKey`, read off the
    /// normalised URL without parsing it again.
    #[test]
    fn host_of_is_the_host_key() {
        for url in [
            "https://Example.COM/a",
            "http://example.com:80/",
            "https://example.com:443/x?y",
            "https://example.com:8443/x",
            "http://[::1]:8080/p",
            "https://bücher.example/",
            "http://example.com?q",
        ] {
            let norm = sitemapd_parser::NormUrl::parse(url).unwrap();
            assert_eq!(host_of(norm.as_str()), norm.host_key().as_str(), "{url}");
        }
    }

    #[test]
    fn hosts() {
        assert_eq!(host_of("https://example.com:8080/a?b"), "example.com:8080");
        assert_eq!(host_of("http://example.com?x"), "example.com");
        assert_eq!(host_of("http://example.com"), "example.com");
        assert_eq!(host_of("example.com/a"), "example.com");
        assert_eq!(host_of("a:b://c/d"), "c");
        assert_eq!(scheme_end("https://x/"), Some(8));
        assert_eq!(scheme_end("x:/"), None);
        assert_eq!(scheme_end("://"), Some(3));
    }
}
