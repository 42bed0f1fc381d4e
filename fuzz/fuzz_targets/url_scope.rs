//! URL normalisation (SPEC L8) and the sitemap location rule (L1-L7) on any
//! strings.
//!
//! Input: up to three lines, a sitemap URL, a candidate URL (or reference,
//! joined against the sitemap) and an authorised origin.
//!
//! Checked: normalisation is idempotent; the accessors cut at char
//! boundaries and put the URL back together; a sitemap is in its own scope;
//! directory scope implies host scope; [`Scope::check`] (the fast path the
//! parser uses) agrees with [`in_scope_with`] (the rule as written).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sitemapd_parser::{NormUrl, Scope, ScopeMode, in_scope, in_scope_with, scope_directory};

fn normalised(s: &str) -> Option<NormUrl> {
    let url = NormUrl::parse(s).ok()?;
    check(&url);
    Some(url)
}

fn check(url: &NormUrl) {
    let again = NormUrl::parse(url.as_str()).expect("a normalised URL parses");
    assert_eq!(&again, url, "normalising is not idempotent");
    let (origin, rest) = (url.origin(), url.path_and_query());
    assert_eq!(format!("{origin}{rest}"), url.as_str());
    assert!(rest.starts_with(url.path()));
    assert!(url.as_str().starts_with(url.scheme()));
    let _ = (url.host(), url.port(), url.port_or_default());
    assert_eq!(
        NormUrl::parse(url.root().as_str()).as_ref(),
        Ok(&url.root())
    );
    assert!(scope_directory(url).ends_with('/'));
    assert_eq!(in_scope(url, url, ScopeMode::Directory), Ok(()));
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.splitn(3, '\n');
    let first = lines.next().unwrap_or("");
    let Some(sitemap) = normalised(first) else {
        return;
    };
    let candidate_text = lines.next().unwrap_or("");
    let authorized: Vec<NormUrl> = lines.next().and_then(normalised).into_iter().collect();
    let mut candidates: Vec<NormUrl> = normalised(candidate_text).into_iter().collect();
    if let Ok(joined) = sitemap.join(candidate_text) {
        check(&joined);
        candidates.push(joined);
    }
    for candidate in &candidates {
        let dir = in_scope(&sitemap, candidate, ScopeMode::Directory);
        let host = in_scope(&sitemap, candidate, ScopeMode::Host);
        assert_eq!(in_scope(&sitemap, candidate, ScopeMode::None), Ok(()));
        if dir.is_ok() {
            assert_eq!(host, Ok(()));
        }
        for mode in [ScopeMode::Directory, ScopeMode::Host, ScopeMode::None] {
            let scope = Scope::new(sitemap.clone(), authorized.clone(), mode);
            assert_eq!(
                scope.check(candidate),
                in_scope_with(&sitemap, &authorized, candidate, mode),
                "{sitemap} {candidate} {mode:?}"
            );
        }
    }
});
