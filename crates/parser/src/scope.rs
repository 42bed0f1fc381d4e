//! The sitemap location rule (SPEC L1-L8): which URLs a sitemap at a given
//! location may list. Discovery and the scheduler call this; nothing else
//! re-implements it.

use std::fmt;

use crate::options::ScopeMode;
use crate::url::NormUrl;

/// Why a URL is outside a sitemap's scope (SPEC L6 names these reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OutOfScope {
    /// Another scheme (L2).
    Scheme,
    /// Another port (L3).
    Port,
    /// Another host; a subdomain is another host (L4).
    Host,
    /// Above or beside the sitemap's directory (L1).
    Directory,
}

impl OutOfScope {
    /// The reason as one word: `scheme`, `port`, `host` or `directory`.
    pub fn as_str(self) -> &'static str {
        match self {
            OutOfScope::Scheme => "scheme",
            OutOfScope::Port => "port",
            OutOfScope::Host => "host",
            OutOfScope::Directory => "directory",
        }
    }
}

impl fmt::Display for OutOfScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The directory of a sitemap URL: its path up to and including the last `/`
/// (L1); a `/` inside the query does not count (L5).
pub fn scope_directory(sitemap: &NormUrl) -> &str {
    let path = sitemap.path();
    match path.rfind('/') {
        Some(i) => &path[..=i],
        None => "/",
    }
}

/// Checks `candidate` against the scope of the sitemap at `sitemap` (L1-L6).
///
/// ```
/// use sitemapd_parser::{in_scope, NormUrl, OutOfScope, ScopeMode};
/// let sm = NormUrl::parse("http://example.com/catalog/sitemap.xml").unwrap();
/// let inside = NormUrl::parse("http://example.com/catalog/show?item=23").unwrap();
/// let outside = NormUrl::parse("http://example.com/image/show?item=23").unwrap();
/// assert_eq!(in_scope(&sm, &inside, ScopeMode::Directory), Ok(()));
/// assert_eq!(in_scope(&sm, &outside, ScopeMode::Directory), Err(OutOfScope::Directory));
/// assert_eq!(in_scope(&sm, &outside, ScopeMode::Host), Ok(()));
/// ```
pub fn in_scope(sitemap: &NormUrl, candidate: &NormUrl, mode: ScopeMode) -> Result<(), OutOfScope> {
    if mode == ScopeMode::None {
        return Ok(());
    }
    same_origin(sitemap, candidate)?;
    if mode == ScopeMode::Host {
        return Ok(());
    }
    if candidate
        .path_and_query()
        .starts_with(scope_directory(sitemap))
    {
        Ok(())
    } else {
        Err(OutOfScope::Directory)
    }
}

fn same_origin(a: &NormUrl, b: &NormUrl) -> Result<(), OutOfScope> {
    if a.scheme() != b.scheme() {
        Err(OutOfScope::Scheme)
    } else if a.port_or_default() != b.port_or_default() {
        Err(OutOfScope::Port)
    } else if a.host() != b.host() {
        Err(OutOfScope::Host)
    } else {
        Ok(())
    }
}

/// The scope rule with cross-submission (L7/R5): `candidate` is in scope if it
/// is in the sitemap's own scope, or on one of the `authorized` origins (hosts
/// whose robots.txt listed the sitemap). Returns the sitemap's own verdict
/// when neither holds.
pub fn in_scope_with(
    sitemap: &NormUrl,
    authorized: &[NormUrl],
    candidate: &NormUrl,
    mode: ScopeMode,
) -> Result<(), OutOfScope> {
    let own = in_scope(sitemap, candidate, mode);
    if own.is_ok()
        || authorized
            .iter()
            .any(|origin| same_origin(origin, candidate).is_ok())
    {
        return Ok(());
    }
    own
}

/// The scope of one sitemap, prepared once for checking many URLs: the
/// common answers are two string comparisons.
///
/// ```
/// use sitemapd_parser::{NormUrl, OutOfScope, Scope, ScopeMode};
/// let sm = NormUrl::parse("https://example.com/blog/sitemap.xml").unwrap();
/// let scope = Scope::new(sm, Vec::new(), ScopeMode::Directory);
/// assert_eq!(scope.check(&NormUrl::parse("https://example.com/blog/a").unwrap()), Ok(()));
/// assert_eq!(scope.check(&NormUrl::parse("https://example.com/shop").unwrap()), Err(OutOfScope::Directory));
/// ```
#[derive(Debug, Clone)]
pub struct Scope {
    sitemap: NormUrl,
    authorized: Vec<NormUrl>,
    mode: ScopeMode,
    /// `scope_directory(sitemap)`, owned.
    directory: String,
}

impl Scope {
    /// The scope of the sitemap at `sitemap`, with cross-submission from the
    /// `authorized` origins (R5/L7).
    pub fn new(sitemap: NormUrl, authorized: Vec<NormUrl>, mode: ScopeMode) -> Self {
        let directory = scope_directory(&sitemap).to_string();
        Self {
            sitemap,
            authorized,
            mode,
            directory,
        }
    }

    /// The sitemap whose scope this is.
    pub fn sitemap(&self) -> &NormUrl {
        &self.sitemap
    }

    /// [`in_scope_with`] for this scope.
    pub fn check(&self, candidate: &NormUrl) -> Result<(), OutOfScope> {
        if self.mode == ScopeMode::None {
            return Ok(());
        }
        // Normalised origins are equal exactly when scheme, host and port are.
        let origin = candidate.origin();
        if origin == self.sitemap.origin() {
            if self.mode == ScopeMode::Host
                || candidate.path_and_query().starts_with(&self.directory)
            {
                return Ok(());
            }
        } else if self.authorized.iter().any(|a| a.origin() == origin) {
            return Ok(());
        }
        in_scope_with(&self.sitemap, &self.authorized, candidate, self.mode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(sitemap: &str, candidate: &str) -> Result<(), OutOfScope> {
        in_scope(
            &NormUrl::parse(sitemap).unwrap(),
            &NormUrl::parse(candidate).unwrap(),
            ScopeMode::Directory,
        )
    }

    #[test]
    fn l1_spec_test_vectors() {
        let sm = "http://example.com/catalog/sitemap.xml";
        assert_eq!(
            verdict(sm, "http://example.com/catalog/show?item=23"),
            Ok(())
        );
        assert_eq!(
            verdict(sm, "http://example.com/image/show?item=23"),
            Err(OutOfScope::Directory)
        );
        assert_eq!(
            verdict(sm, "https://example.com/catalog/page1.php"),
            Err(OutOfScope::Scheme)
        );
        assert_eq!(
            verdict(
                "http://www.example.com/sitemap.xml",
                "http://sub.example.com/a"
            ),
            Err(OutOfScope::Host)
        );
        assert_eq!(
            verdict(
                "http://www.example.com/myfolder/sitemap.xml",
                "http://www.example.com/"
            ),
            Err(OutOfScope::Directory)
        );
        assert_eq!(
            verdict(
                "http://www.example.com:100/sitemap.xml",
                "http://www.example.com/a"
            ),
            Err(OutOfScope::Port)
        );
        assert_eq!(
            verdict(
                "https://example.com/index.php?route=path/sitemap",
                "https://example.com/catalog/page1.php"
            ),
            Ok(())
        );
        assert_eq!(
            verdict(
                "HTTP://Example.COM:80/catalog/sitemap.xml",
                "http://example.com/catalog/x"
            ),
            Ok(())
        );
    }

    #[test]
    fn l2_l3_l4_reasons() {
        assert_eq!(
            verdict("http://a.com/s.xml", "https://a.com/x"),
            Err(OutOfScope::Scheme)
        );
        assert_eq!(
            verdict("http://a.com/s.xml", "http://a.com:8080/x"),
            Err(OutOfScope::Port)
        );
        assert_eq!(
            verdict("http://a.com/s.xml", "http://www.a.com/x"),
            Err(OutOfScope::Host)
        );
        assert_eq!(verdict("http://a.com:80/s.xml", "http://a.com/x"), Ok(()));
    }

    #[test]
    fn l5_slash_in_query_does_not_count() {
        let sm = NormUrl::parse("https://example.com/index.php?route=a/b/sitemap").unwrap();
        assert_eq!(scope_directory(&sm), "/");
    }

    #[test]
    fn l6_modes() {
        let sm = NormUrl::parse("http://a.com/dir/s.xml").unwrap();
        let other_dir = NormUrl::parse("http://a.com/x").unwrap();
        let other_host = NormUrl::parse("http://b.com/dir/x").unwrap();
        assert_eq!(in_scope(&sm, &other_dir, ScopeMode::Host), Ok(()));
        assert_eq!(
            in_scope(&sm, &other_host, ScopeMode::Host),
            Err(OutOfScope::Host)
        );
        assert_eq!(in_scope(&sm, &other_host, ScopeMode::None), Ok(()));
    }

    #[test]
    fn scope_agrees_with_in_scope_with() {
        let sitemaps = [
            "http://a.com/dir/s.xml",
            "https://a.com:8443/s.xml?x=/y/",
            "http://a.com/",
        ];
        let candidates = [
            "http://a.com/dir/x",
            "http://a.com/x",
            "https://a.com/dir/x",
            "http://a.com:81/dir/x",
            "http://b.com/dir/x",
            "https://a.com:8443/z",
            "http://a.com/dir",
            "https://b.com/q",
        ];
        let authorized = vec![NormUrl::parse("https://b.com/").unwrap()];
        for sm in sitemaps {
            let sm = NormUrl::parse(sm).unwrap();
            for mode in [ScopeMode::Directory, ScopeMode::Host, ScopeMode::None] {
                let scope = Scope::new(sm.clone(), authorized.clone(), mode);
                for c in candidates {
                    let c = NormUrl::parse(c).unwrap();
                    assert_eq!(
                        scope.check(&c),
                        in_scope_with(&sm, &authorized, &c, mode),
                        "{sm} {c} {mode:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn l7_cross_submission_extends_scope_to_authorising_root() {
        let sm = NormUrl::parse("https://cdn.example.net/maps/s.xml").unwrap();
        let b = NormUrl::parse("https://www.b.com/").unwrap();
        let on_b = NormUrl::parse("https://www.b.com/deep/page").unwrap();
        let on_c = NormUrl::parse("https://c.com/page").unwrap();
        assert_eq!(
            in_scope_with(&sm, std::slice::from_ref(&b), &on_b, ScopeMode::Directory),
            Ok(())
        );
        assert_eq!(
            in_scope_with(&sm, &[b], &on_c, ScopeMode::Directory),
            Err(OutOfScope::Host)
        );
    }
}
