//! The robots.txt path matcher sitemapd gives the `robotstxt` crate
//! ([`LinearMatch`]): `*` matches any run of bytes, a final `$` anchors the
//! end, the pattern matches from the path's start.
//!
//! Input: a pattern, a newline, a path. Checked against a plain dynamic
//! programme over (pattern, path) positions, written from the rule
//! above, and for speed (it is O(pattern x path), which libFuzzer's
//! `-timeout` catches if it is not).
#![no_main]

use libfuzzer_sys::fuzz_target;
use robotstxt::matcher::RobotsMatchStrategy;
use sitemapd_discovery::robots::LinearMatch;

/// `reachable[j]`: the pattern so far can match `path[..j]`.
fn reference(path: &[u8], pattern: &[u8]) -> bool {
    let (pattern, anchored) = match pattern.split_last() {
        Some((b'$', rest)) => (rest, true),
        _ => (pattern, false),
    };
    let mut reachable = vec![false; path.len() + 1];
    reachable[0] = true;
    for &c in pattern {
        let mut next = vec![false; path.len() + 1];
        let mut any_before = false;
        for j in 0..=path.len() {
            if c == b'*' {
                // `*` reaches every position at or after a reachable one.
                any_before |= reachable[j];
                next[j] = any_before;
            } else if j > 0 && path[j - 1] == c {
                next[j] = reachable[j - 1];
            }
        }
        reachable = next;
    }
    if anchored {
        reachable[path.len()]
    } else {
        reachable.iter().any(|&r| r)
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Some((pattern, path)) = text.split_once('\n') else {
        return;
    };
    if pattern.len() > 512 || path.len() > 512 {
        return;
    }
    assert_eq!(
        LinearMatch::matches(path, pattern),
        reference(path.as_bytes(), pattern.as_bytes()),
        "pattern {pattern:?} path {path:?}"
    );
});
