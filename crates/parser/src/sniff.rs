//! The format is decided from the content (SPEC C7), tolerating junk before
//! the root element (SPEC C5).

use crate::url::is_reference_byte;

/// How much of the document is looked at to decide.
pub(crate) const SNIFF_WINDOW: usize = 64 * 1024;

/// What the first bytes of a decoded document look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sniffed {
    /// Nothing but whitespace.
    Empty,
    /// NUL bytes or other binary data.
    Binary,
    /// XML markup starts at byte `start`; `junk` when non-blank text precedes it.
    Xml {
        /// Byte offset where the markup starts.
        start: usize,
        /// Whether non-whitespace text precedes it.
        junk: bool,
    },
    /// A plain list of URLs.
    Text,
    /// Text, but nothing in it looks like a URL.
    NotUrls,
}

const XML_MARKERS: [&[u8]; 8] = [
    b"<?xml",
    b"<urlset",
    b"<sitemapindex",
    b"<rss",
    b"<feed",
    b"<rdf:RDF",
    b"<RDF",
    b"<!--",
];

/// Decides from `window` (the first bytes of decoded text).
pub(crate) fn sniff(window: &[u8]) -> Sniffed {
    let start = window
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(window.len());
    let body = &window[start..];
    if body.is_empty() {
        return Sniffed::Empty;
    }
    if memchr::memchr(0, body).is_some() {
        return Sniffed::Binary;
    }
    if body[0] == b'<' {
        return Sniffed::Xml { start, junk: false };
    }
    let is_eol = |b: &u8| *b == b'\n' || *b == b'\r';
    let first_line = body.split(is_eol).next().unwrap_or(body);
    if !starts_with_http(first_line)
        && let Some(at) = XML_MARKERS
            .iter()
            .filter_map(|m| memchr::memmem::find(body, m))
            .min()
    {
        return Sniffed::Xml {
            start: start + at,
            junk: true,
        };
    }
    let has_url = body
        .split(is_eol)
        .any(|line| looks_like_url_reference(line.trim_ascii()));
    if has_url {
        Sniffed::Text
    } else {
        Sniffed::NotUrls
    }
}

/// Whether `line` (trimmed) starts with `http://` or `https://`, in any case.
fn starts_with_http(line: &[u8]) -> bool {
    let l = line.trim_ascii();
    l.len() >= 7
        && (l[..7].eq_ignore_ascii_case(b"http://")
            || (l.len() >= 8 && l[..8].eq_ignore_ascii_case(b"https://")))
}

/// Whether a text line could be a URL or a relative reference: no spaces,
/// controls, quotes, angle brackets, braces, pipes, carets or backticks, and
/// either a scheme, a `/`, or a file name with an extension (`index.html`),
/// so that a bare word such as an error page's "Forbidden" is not a URL.
pub(crate) fn looks_like_url_reference(line: &[u8]) -> bool {
    // A URL, a path, or a file name (`index.html`); not `Error:`, `v1.0` or `OK`.
    let shaped = starts_with_http(line)
        || line.contains(&b'/')
        || line.rsplit(|&b| b == b'.').next().is_some_and(|ext| {
            ext.len() < line.len()
                && (2..=5).contains(&ext.len())
                && ext.iter().all(u8::is_ascii_alphabetic)
        });
    shaped && line.iter().all(|&b| b != b' ' && is_reference_byte(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c7_content_decides() {
        assert_eq!(sniff(b""), Sniffed::Empty);
        assert_eq!(sniff(b" \n\t "), Sniffed::Empty);
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0"), Sniffed::Binary);
        assert_eq!(
            sniff(b"  <?xml version='1.0'?><urlset/>"),
            Sniffed::Xml {
                start: 2,
                junk: false
            }
        );
        assert_eq!(sniff(b"https://a.com/\nhttps://a.com/b\n"), Sniffed::Text);
        assert_eq!(sniff(b"index.html\nmodels/a.html\n"), Sniffed::Text);
        assert_eq!(
            sniff(b"SimpleMvcSitemap.XmlResult`1[SimpleMvcSitemap.SitemapModel]"),
            Sniffed::NotUrls
        );
        assert_eq!(sniff(b"https://a.com/rss-feed\n"), Sniffed::Text);
        assert_eq!(sniff(b"https://a.com/\rhttps://a.com/b\r"), Sniffed::Text);
    }

    #[test]
    fn c5_junk_before_the_root_is_skipped() {
        let chrome =
            b"This XML file does not appear to have any style information.\n<urlset xmlns=\"x\"/>";
        assert_eq!(
            sniff(chrome),
            Sniffed::Xml {
                start: 61,
                junk: true
            }
        );
        let front_matter = b"---\nlayout: null\n---\n<?xml version=\"1.0\"?><rss/>";
        assert_eq!(
            sniff(front_matter),
            Sniffed::Xml {
                start: 21,
                junk: true
            }
        );
    }
}
