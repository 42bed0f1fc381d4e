//! Key layout. Every keyspace lives in one sled tree under a one-byte
//! prefix, because a sled batch is atomic within one tree only: a URL
//! record and its due-index entry must change together or not at all.
//!
//! | prefix | key | value |
//! |---|---|---|
//! | `p` | the last URL a page held when it was cut (it keeps the key if that URL goes), or origin ‖ 0xff for the last page of an origin: a page holds the URLs after the page key before it, up to its own | a [page](crate::page) of the records of up to [`PAGE_CAP`](crate::page::PAGE_CAP) URLs of one origin: what an ingest writes |
//! | `u` | URL | [`UrlRecord`](crate::record::UrlRecord): a record written since its page was (a lease, a fetch, a notification), which stands for the page's copy; the next ingest of the URL folds it back into its page |
//! | `d` | urgency class (1 byte) ‖ due time (8 bytes, order-preserving) ‖ rank ([`RANK_BYTES`]: priority, lastmod, URL length) ‖ URL | empty |
//! | `d` | urgency class ‖ due time ‖ rank of zeros ‖ NUL ‖ host ‖ NUL ‖ list number (8 hex digits): a due list ([`list`]) | [`DueList`](crate::record::DueList): up to [`LIST_CAP`] URLs new to the store (or leased together), due in that second, each with its lease if leased |
//! | `s` | sitemap URL | [`SitemapRecord`](crate::record::SitemapRecord) |
//! | `i` | sitemap id (8 bytes) | sitemap URL |
//! | `m` | sitemap id (8 bytes) ‖ URL | empty: a URL it lists on another host |
//! | `c` | sitemap id (8 bytes) ‖ child URL | empty: a child of the index |
//! | `h` | host | [`HostRecord`](crate::record::HostRecord), with its URL records counted by state (`Tally`): what `stats` reads |
//! | `b` | host | [`RobotsRecord`](crate::record::RobotsRecord): the robots.txt rules its URLs are leased under |
//! | `r` | sitemap URL | [`RefreshState`](crate::refresh::RefreshState): when to read it again |
//! | `x` | host | empty: a corrupt record of the host was replaced, so its due lists may hold an entry no record names ([`SUSPECT`]) |
//! | `f` | seed, as given | [`SiteRecord`](crate::record::SiteRecord): a followed site |
//! | `~policy` | | the policy name the store schedules with |
//! | `~calibration` | | the rate policies' allocation multiplier |
//! | `~layout` | | the key layout version ([`LAYOUT_VERSION`]) |
//! | `~closed` | | the number of the last clean close ([`CLOSED`]) |
//!
//! ## Layout versions
//!
//! | version | change |
//! |---|---|
//! | 1 (no `~layout` key) | due entries `d` ‖ due ‖ URL |
//! | 2 | due entries `d` ‖ class ‖ due ‖ rank ‖ URL: a lease reads the urgency classes in order, and within one due second the higher sitemap priority first |
//! | 3 | the rank is 11 bytes: the priority, then the newest lastmod, then the shortest URL, so that a site's many URLs due in one second are read in that order (not alphabetically) |
//! | 4 | `t` ‖ host: each host's URL records counted by state, kept in the batch that changes them |
//! | 5 | due lists: the URLs an ingest finds new share one due key per host, second and [`LIST_CAP`] URLs, instead of one each |
//! | 6 | record pages (`p`): an ingest writes URL records in pages of up to [`PAGE_CAP`](crate::page::PAGE_CAP); `u` keys are records written since. A layout-5 store opens as it is: its `u` records are read as such, and each ingest folds the ones it sees into pages |
//! | 7 | leases of listed URLs kept in their due list entries ([`Listed::lease`](crate::record::Listed::lease)), not in their records: a lease of a listed URL writes its lists, not its records ([`crate::marks`]). A layout-6 store opens as it is: a lease its records hold stands until they are written again |
//! | 8 | no `t` keys: each host's counts are in its host record (`h`), so that a lease or a completion writes one key per host, not two. A layout-4 to -7 store's counts are moved in when it is opened |
//!
//! A store of an older layout is migrated when it is opened (the due
//! index rebuilt from the URL records for layouts 1 and 2, the counts
//! counted for layouts 1 to 3, and moved into the host records for layouts
//! 4 to 7).

/// URL records written one per key (since their page was).
pub const URL: u8 = b'u';
/// Pages of URL records.
pub const PAGE: u8 = b'p';
/// The due index.
pub const DUE: u8 = b'd';
/// Sitemap records.
pub const SITEMAP: u8 = b's';
/// Sitemap id -> URL.
pub const SITEMAP_ID: u8 = b'i';
/// Host records.
pub const HOST: u8 = b'h';
/// Robots rules per host.
pub const ROBOTS: u8 = b'b';
/// URLs a sitemap lists on another host than its own.
pub const MEMBER: u8 = b'm';
/// Children of an index.
pub const CHILD: u8 = b'c';
/// Sitemap refresh schedules.
pub const REFRESH: u8 = b'r';
/// Followed sites.
pub const SITE: u8 = b'f';
/// Each host's URL records counted by state (key layouts 4 to 7; since 8,
/// in its host record).
pub const TALLY: u8 = b't';
/// The URL frontier queue a host is filed under, when a client named one
/// that is not the host (`q` ‖ host -> key).
pub const QUEUE_OF: u8 = b'q';
/// The hosts filed under a queue (`k` ‖ key ‖ 0 ‖ host, no value).
pub const QUEUE_HOST: u8 = b'k';
/// Hosts whose due lists may hold an entry its record no longer names
/// (`x` ‖ host, no value): a corrupt record of theirs was replaced, whose
/// entry could not be found. A lease reads the records of their listed
/// URLs, and removes such entries; `repair` clears them.
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
/// The key layout this build writes.
pub const LAYOUT_VERSION: u8 = 8;

/// URLs a due list holds at most.
pub const LIST_CAP: usize = 32;

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

/// `q` ‖ host.
pub fn queue_of(host: &str) -> Vec<u8> {
    with_prefix(QUEUE_OF, host.as_bytes())
}

/// `k` ‖ key ‖ 0: the prefix of the hosts filed under queue `key`.
pub fn queue_hosts(key: &str) -> Vec<u8> {
    let mut k = with_prefix(QUEUE_HOST, key.as_bytes());
    k.push(0);
    k
}

/// `k` ‖ key ‖ 0 ‖ host.
pub fn queue_host(key: &str, host: &str) -> Vec<u8> {
    let mut k = queue_hosts(key);
    k.extend_from_slice(host.as_bytes());
    k
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
fn ordered(t: i64) -> [u8; 8] {
    ((t as u64) ^ (1 << 63)).to_be_bytes()
}

fn from_ordered(b: [u8; 8]) -> i64 {
    (u64::from_be_bytes(b) ^ (1 << 63)) as i64
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
    /// The URL.
    pub url: &'a str,
}

/// Bytes of a due entry's rank.
pub const RANK_BYTES: usize = 11;

/// The order of due entries within one second of one class (lowest
/// first): the sitemap priority (1 byte, higher first), the lastmod (8
/// bytes, newest first, none last), the URL's length (2 bytes, shortest
/// first).
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

/// `d` ‖ class ‖ due ‖ rank ‖ url.
pub fn due(class: u8, at: i64, rank: Rank, url: &str) -> Vec<u8> {
    due_with_room(class, at, rank, url, 0)
}

/// [`due`], with room for `more` bytes after it.
fn due_with_room(class: u8, at: i64, rank: Rank, url: &str, more: usize) -> Vec<u8> {
    let mut k = Vec::with_capacity(10 + RANK_BYTES + url.len() + more);
    k.push(DUE);
    k.push(class);
    k.extend_from_slice(&ordered(at));
    k.extend_from_slice(&rank);
    k.extend_from_slice(url.as_bytes());
    k
}

/// The first due key of `class`.
pub fn due_class(class: u8) -> Vec<u8> {
    vec![DUE, class]
}

/// The first key after every due entry of `class` at or before `at`.
pub fn due_after(class: u8, at: i64) -> Vec<u8> {
    let mut k = vec![DUE, class];
    k.extend_from_slice(&ordered(at.saturating_add(1)));
    k
}

/// `d` ‖ class ‖ due ‖ zeros ‖ NUL ‖ host ‖ NUL: the start of every due
/// list of `host` due at `at` in `class`.
pub fn lists_of(class: u8, at: i64, host: &str) -> Vec<u8> {
    // Room for the host, its NUL and a list number.
    let mut k = due_with_room(class, at, [0; RANK_BYTES], "\0", host.len() + 9);
    k.extend_from_slice(host.as_bytes());
    k.push(0);
    k
}

/// The key of due list number `n` of `host` due at `at` in `class`: a
/// due key whose "URL" is NUL ‖ host ‖ NUL ‖ `n` in 8 hex digits (no URL
/// starts with NUL), ranked ahead of the URLs of its second.
pub fn list(class: u8, at: i64, host: &str, n: u32) -> Vec<u8> {
    use std::io::Write;
    let mut k = lists_of(class, at, host);
    // Writing into a Vec cannot fail.
    let _ = write!(k, "{n:08x}");
    k
}

/// A due entry's target, when it is a due list: its host and number.
pub fn as_list(target: &str) -> Option<(&str, u32)> {
    let rest = target.strip_prefix('\0')?;
    let (host, n) = rest.split_once('\0')?;
    Some((host, u32::from_str_radix(n, 16).ok()?))
}

/// Splits a due key into its parts.
pub fn parse_due(key: &[u8]) -> Option<DueKey<'_>> {
    let rest = key.strip_prefix(&[DUE])?;
    let (&class, rest) = rest.split_first()?;
    let (time, rest) = rest.split_at_checked(8)?;
    let (rank, url) = rest.split_at_checked(RANK_BYTES)?;
    let time: [u8; 8] = time.try_into().ok()?;
    Some(DueKey {
        class,
        at: from_ordered(time),
        rank: rank.try_into().ok()?,
        url: std::str::from_utf8(url).ok()?,
    })
}

/// Whether a due key is of the first layout (`d` ‖ due ‖ url): its second
/// byte is the high byte of an order-preserving time, never a class.
pub fn is_layout1_due(key: &[u8]) -> bool {
    key.get(1).is_some_and(|&b| b >= 0x40)
}

fn id_and_url(prefix: u8, id: u64, url: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(9 + url.len());
    k.push(prefix);
    k.extend_from_slice(&id.to_be_bytes());
    k.extend_from_slice(url.as_bytes());
    k
}

/// `m` ‖ sitemap id ‖ url.
pub fn member(sitemap: u64, url: &str) -> Vec<u8> {
    id_and_url(MEMBER, sitemap, url)
}

/// The prefix of a sitemap's member keys.
pub fn members_of(sitemap: u64) -> Vec<u8> {
    with_prefix(MEMBER, &sitemap.to_be_bytes())
}

/// `c` ‖ index id ‖ child url.
pub fn child(index: u64, url: &str) -> Vec<u8> {
    id_and_url(CHILD, index, url)
}

/// The prefix of an index's child keys.
pub fn children_of(index: u64) -> Vec<u8> {
    with_prefix(CHILD, &index.to_be_bytes())
}

/// The URL after the 9-byte prefix of a member or child key.
pub fn suffix_url(key: &[u8]) -> Option<&str> {
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

    #[test]
    fn a_list_key_names_its_host_and_number_in_eight_hex_digits() {
        for n in [0, 9, 0x1a2b, u32::MAX] {
            let key = list(1, 1_700_000_000, "a.example", n);
            assert!(key.starts_with(&lists_of(1, 1_700_000_000, "a.example")));
            assert!(key.ends_with(format!("{n:08x}").as_bytes()));
            let due = parse_due(&key).unwrap();
            assert_eq!(as_list(due.url), Some(("a.example", n)));
        }
        assert!(list(1, 0, "a", 0xf) < list(1, 0, "a", 0x10));
    }

    #[test]
    fn due_keys_sort_by_class_time_rank_and_parse_back() {
        let r9 = rank(9, None, 9);
        let a = due(0, -5, r9, "http://a/");
        let b = due(0, 0, r9, "http://a/");
        let c = due(0, 1_700_000_000, r9, "http://a/");
        assert!(a < b && b < c);
        assert!(c < due_after(0, 1_700_000_000));
        assert!(due(0, 1_700_000_001, rank(0, None, 0), "") >= due_after(0, 1_700_000_000));
        // Rank orders within a second, before the URL; class before all.
        assert!(
            due(0, 5, rank(1, None, 9), "http://z/") < due(0, 5, rank(2, None, 9), "http://a/")
        );
        assert!(due(0, i64::MAX, [0xff; RANK_BYTES], "http://z/") < due_class(1));
        assert!(due(1, i64::MIN, [0; RANK_BYTES], "") > due_after(0, i64::MAX));
        assert_eq!(
            parse_due(&c),
            Some(DueKey {
                class: 0,
                at: 1_700_000_000,
                rank: r9,
                url: "http://a/"
            })
        );
        assert_eq!(parse_due(b"d12"), None);
        assert!(!is_layout1_due(&c));
        let mut old = vec![DUE];
        old.extend_from_slice(&ordered(1_700_000_000));
        old.extend_from_slice(b"http://a/");
        assert!(is_layout1_due(&old));
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
