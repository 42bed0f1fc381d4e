//! The allow/disallow rules one robots.txt gives one crawler, as data, and
//! Google's matching rules over them (RFC 9309 §2.2.2): the longest
//! matching pattern wins, `Allow` wins a tie, no matching rule allows.
//!
//! Discovery reads a robots.txt and hands its crawler's rules over
//! (`sitemapd_discovery::RobotsTxt::rules`); the store keeps them per host
//! and checks every URL against them before it hands one out. The pattern
//! matcher here is the one discovery's own checks use, so both agree.
//!
//! ```
//! use sitemapd_parser::{NormUrl, RobotsRules};
//!
//! let rules = RobotsRules::new(vec![(false, "/private/".into()), (true, "/private/ok$".into())], Some(2.0));
//! let url = |s: &str| NormUrl::parse(s).unwrap();
//! assert!(!rules.allows(&url("https://example.com/private/x")));
//! assert!(rules.allows(&url("https://example.com/private/ok")));
//! assert!(rules.allows(&url("https://example.com/")));
//! ```

use serde::{Deserialize, Serialize};

use crate::url::NormUrl;

/// One crawler's rules from one robots.txt: `(allow, pattern)` pairs as the
/// file gives them (patterns percent-encoded as the robots.txt parser left
/// them), and its `Crawl-delay`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RobotsRules {
    /// `(true, pattern)` for `Allow`, `(false, pattern)` for `Disallow`, in
    /// file order. An empty pattern matches nothing.
    pub rules: Vec<(bool, String)>,
    /// `Crawl-delay`, seconds, for this crawler (its own group, else `*`).
    pub crawl_delay: Option<f64>,
}

impl RobotsRules {
    /// Rules from `(allow, pattern)` pairs and a crawl delay.
    pub fn new(rules: Vec<(bool, String)>, crawl_delay: Option<f64>) -> Self {
        RobotsRules { rules, crawl_delay }
    }

    /// Rules that allow everything (no robots.txt, or a 4xx one: RFC 9309
    /// §2.3.1.3).
    pub fn allow_all() -> Self {
        RobotsRules::default()
    }

    /// Whether a crawler with these rules may fetch `url`: the longest
    /// pattern matching its path and query decides, `Allow` on a tie; no
    /// match allows.
    pub fn allows(&self, url: &NormUrl) -> bool {
        self.allows_path(url.path_and_query())
    }

    /// [`RobotsRules::allows`] for a path (with its query), starting with `/`.
    pub fn allows_path(&self, path: &str) -> bool {
        let (mut allow, mut disallow) = (0usize, 0usize);
        for (allowed, pattern) in &self.rules {
            let length = match_length(path, pattern, *allowed);
            if *allowed {
                allow = allow.max(length);
            } else {
                disallow = disallow.max(length);
            }
        }
        disallow == 0 || allow >= disallow
    }
}

/// How long a match `pattern` makes on `path`: its length when it matches,
/// 0 when not (an empty pattern never counts). An `Allow` pattern whose
/// last segment begins `index.htm` also allows its directory itself, as
/// Google's matcher does (`Allow: /a/index.html` allows `/a/`).
fn match_length(path: &str, pattern: &str, allow: bool) -> usize {
    if pattern_matches(path, pattern) {
        return pattern.len();
    }
    if allow
        && let Some(slash) = pattern.rfind('/')
        && pattern[slash..].starts_with("/index.htm")
    {
        let directory = format!("{}$", &pattern[..=slash]);
        if pattern_matches(path, &directory) {
            return directory.len();
        }
    }
    0
}

/// Whether `path` matches `pattern` from its start: `*` matches any run of
/// bytes, a final `$` anchors the end. Patterns and paths are
/// percent-encoded ASCII by then, so bytes are compared. Linear in
/// pattern × path: no pattern costs more than that (the `robotstxt`
/// crate's own matcher is about quartic; see discovery's robots docs).
pub fn pattern_matches(path: &str, pattern: &str) -> bool {
    let path = path.as_bytes();
    let pattern = pattern.as_bytes();
    // The path prefixes (by length) that the pattern so far can match,
    // ascending.
    let mut positions: Vec<usize> = vec![0];
    let mut next: Vec<usize> = Vec::with_capacity(path.len() + 1);
    for (i, &c) in pattern.iter().enumerate() {
        if c == b'$' && i + 1 == pattern.len() {
            return positions.last() == Some(&path.len());
        }
        if c == b'*' {
            let first = positions[0];
            positions.clear();
            positions.extend(first..=path.len());
            continue;
        }
        next.clear();
        next.extend(
            positions
                .iter()
                .filter(|&&p| path.get(p) == Some(&c))
                .map(|p| p + 1),
        );
        std::mem::swap(&mut positions, &mut next);
        if positions.is_empty() {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(lines: &[(bool, &str)]) -> RobotsRules {
        RobotsRules::new(
            lines.iter().map(|(a, p)| (*a, p.to_string())).collect(),
            None,
        )
    }

    #[test]
    fn longest_match_wins_and_allow_wins_ties() {
        let r = rules(&[(false, "/a"), (true, "/a/b"), (false, "/a/b/c")]);
        assert!(!r.allows_path("/a/x"));
        assert!(r.allows_path("/a/b/x"));
        assert!(!r.allows_path("/a/b/c"));
        let tie = rules(&[(false, "/p"), (true, "/p")]);
        assert!(tie.allows_path("/p"));
    }

    #[test]
    fn empty_rules_and_empty_patterns_allow() {
        assert!(RobotsRules::allow_all().allows_path("/anything"));
        assert!(rules(&[(false, "")]).allows_path("/x"));
    }

    #[test]
    fn wildcards_and_anchor() {
        assert!(pattern_matches("/a/b.pdf", "/*.pdf$"));
        assert!(!pattern_matches("/a/b.pdf?x", "/*.pdf$"));
        assert!(pattern_matches("////b/", "/*/b*"));
        assert!(pattern_matches("/fish", "/fish*"));
        assert!(!pattern_matches("/Fish", "/fish"));
        assert!(rules(&[(false, "/"), (true, "/$")]).allows_path("/"));
        assert!(!rules(&[(false, "/"), (true, "/$")]).allows_path("/x"));
    }

    #[test]
    fn index_html_allows_its_directory() {
        let r = rules(&[(false, "/"), (true, "/a/index.html")]);
        assert!(r.allows_path("/a/"));
        assert!(r.allows_path("/a/index.html"));
        assert!(!r.allows_path("/a/other"));
    }
}
