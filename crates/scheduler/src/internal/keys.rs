//! Key layout. Every keyspace lives in one sled tree under a one-byte
//! prefix, because a sled batch is atomic within one tree only: a URL
//! record and its due-index entry must change together or not at all.
//!
//! | prefix | key | value |
//! |---|---|---|
//! | `u` | URL | [`UrlRecord`](crate::record::UrlRecord) |
//! | `d` | due time (8 bytes, order-preserving) ‖ URL | empty |
//! | `s` | sitemap URL | [`SitemapRecord`](crate::record::SitemapRecord) |
//! | `i` | sitemap id (8 bytes) | sitemap URL |
//! | `m` | sitemap id (8 bytes) ‖ URL | empty: a URL it lists on another host |
//! | `c` | sitemap id (8 bytes) ‖ child URL | empty: a child of the index |
//! | `h` | host | [`HostRecord`](crate::record::HostRecord) |
//! | `r` | sitemap URL | [`RefreshState`](crate::refresh::RefreshState): when to read it again |
//! | `f` | seed, as given | [`SiteRecord`](crate::sites::SiteRecord): a followed site |
//! | `~policy` | | the policy name the store schedules with |
//! | `~calibration` | | the rate policies' allocation multiplier |

/// URL records.
pub const URL: u8 = b'u';
/// The due index.
pub const DUE: u8 = b'd';
/// Sitemap records.
pub const SITEMAP: u8 = b's';
/// Sitemap id -> URL.
pub const SITEMAP_ID: u8 = b'i';
/// Host records.
pub const HOST: u8 = b'h';
/// URLs a sitemap lists on another host than its own.
pub const MEMBER: u8 = b'm';
/// Children of an index.
pub const CHILD: u8 = b'c';
/// Sitemap refresh schedules.
pub const REFRESH: u8 = b'r';
/// Followed sites.
pub const SITE: u8 = b'f';
/// The store's policy name.
pub const POLICY: &[u8] = b"~policy";
/// The allocation multiplier of the rate policies (f64, big endian).
pub const CALIBRATION: &[u8] = b"~calibration";

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

/// `d` ‖ due ‖ url.
pub fn due(at: i64, url: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(9 + url.len());
    k.push(DUE);
    k.extend_from_slice(&ordered(at));
    k.extend_from_slice(url.as_bytes());
    k
}

/// The first key after every due entry at or before `at`.
pub fn due_after(at: i64) -> Vec<u8> {
    let mut k = vec![DUE];
    k.extend_from_slice(&ordered(at.saturating_add(1)));
    k
}

/// Splits a due key into (due, url).
pub fn parse_due(key: &[u8]) -> Option<(i64, &str)> {
    let rest = key.strip_prefix(&[DUE])?;
    let (time, url) = rest.split_at_checked(8)?;
    let time: [u8; 8] = time.try_into().ok()?;
    Some((from_ordered(time), std::str::from_utf8(url).ok()?))
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
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split(['/', '?']).next().unwrap_or(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_keys_sort_by_time_and_parse_back() {
        let a = due(-5, "http://a/");
        let b = due(0, "http://a/");
        let c = due(1_700_000_000, "http://a/");
        assert!(a < b && b < c);
        assert!(c < due_after(1_700_000_000));
        assert!(due(1_700_000_001, "") >= due_after(1_700_000_000));
        assert_eq!(parse_due(&c), Some((1_700_000_000, "http://a/")));
        assert_eq!(parse_due(b"d12"), None);
    }

    #[test]
    fn hosts() {
        assert_eq!(host_of("https://example.com:8080/a?b"), "example.com:8080");
        assert_eq!(host_of("http://example.com?x"), "example.com");
    }
}
