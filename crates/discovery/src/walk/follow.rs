//! The follow rule made of regular expressions: what `sitemapd discover
//! --follow` and Python's `discover(follow=…)` give a walk.

use std::sync::Arc;

use sitemapd_parser::NormUrl;

use super::FollowRule;

/// A rule that takes the children of an index whose URL (normalised, as
/// the walk holds it) one of `patterns` is found in, anywhere, as `grep`
/// and Python's `re.search` find it. The syntax is the `regex` crate's
/// (no look-around, no backreferences). No pattern: a rule that takes
/// nothing.
///
/// ```
/// use sitemapd_discovery::walk::follow_patterns;
/// use sitemapd_parser::NormUrl;
///
/// let follow = follow_patterns(["/news/", "(?i)PRODUCTS-\\d+"]).unwrap();
/// assert!(follow(&NormUrl::parse("https://example.com/news/sitemap.xml").unwrap()));
/// assert!(follow(&NormUrl::parse("https://example.com/products-2.xml").unwrap()));
/// assert!(!follow(&NormUrl::parse("https://example.com/blog.xml").unwrap()));
/// assert!(follow_patterns(["(unclosed"]).is_err());
/// ```
pub fn follow_patterns<I, S>(patterns: I) -> Result<FollowRule, regex::Error>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let set = regex::RegexSet::new(patterns)?;
    Ok(Arc::new(move |url: &NormUrl| set.is_match(url.as_str())))
}
