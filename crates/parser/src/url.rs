//! URL normalisation (SPEC L8, X3, X6): the one place where sitemapd decides
//! what a URL looks like before it is compared, scoped or stored.
//!
//! The rule is deliberately narrow: lowercase the scheme and host, convert an
//! IDN host to punycode, drop a default port and the fragment, and keep the
//! path and query byte-for-byte except for percent-encoding the bytes that
//! cannot appear in a URI (non-ASCII, spaces, controls, `"<>{}|\^` and
//! backtick). Unlike the WHATWG parser in the `url` crate it never rewrites
//! dot segments or backslashes inside the path, because two different paths
//! may name two different pages. The `url` crate is still used, for resolving
//! relative references (RFC 3986 section 5), where rewriting dot segments is
//! exactly what the RFC requires.

use std::fmt;
use std::net::Ipv6Addr;

use serde::Serialize;

/// Longest `<loc>` accepted, in characters (SPEC X4); also the longest URL
/// the store keeps ([`NormUrl::parse_limited`]).
pub const MAX_LOC_CHARS: usize = 2_048;

/// Why a string is not an acceptable http(s) URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// Nothing left after trimming.
    #[error("empty URL")]
    Empty,
    /// No scheme: a relative reference that needs a base.
    #[error("not an absolute URL")]
    Relative,
    /// A scheme other than http or https.
    #[error("unsupported scheme {0:?} (only http and https)")]
    Scheme(String),
    /// `http:` not followed by `//host`.
    #[error("missing host")]
    MissingHost,
    /// A host that is not a valid domain name or IP literal.
    #[error("invalid host {0:?}")]
    Host(String),
    /// A port that is not a number in 0..=65535.
    #[error("invalid port")]
    Port,
    /// `user:password@` in the URL.
    #[error("credentials in URL are not accepted")]
    Credentials,
    /// Longer than a sitemap `<loc>` may be (SPEC X4), in characters.
    #[error("URL of {0} characters is longer than the {max} a sitemap loc may have (X4)", max = MAX_LOC_CHARS)]
    TooLong(usize),
}

/// A normalised absolute http(s) URL (SPEC L8). Two URLs name the same resource
/// for sitemapd exactly when their normalised strings are equal.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NormUrl {
    s: String,
    host_end: usize,
    path_start: usize,
    port: Option<u16>,
}

impl NormUrl {
    /// Normalises an absolute http(s) URL; see the module docs for the rule.
    ///
    /// ```
    /// use sitemapd_parser::NormUrl;
    /// let u = NormUrl::parse(" HTTP://Example.COM:80/a b?q=ü#frag ").unwrap();
    /// assert_eq!(u.as_str(), "http://example.com/a%20b?q=%C3%BC");
    /// ```
    pub fn parse(input: &str) -> Result<Self, UrlError> {
        normalize(input)
    }

    /// [`NormUrl::parse`], and no longer than a sitemap `<loc>` may be
    /// ([`MAX_LOC_CHARS`], SPEC X4): the
    /// limit for a URL that is stored, whichever way it comes in (a push
    /// notification, a redirect target, a site).
    ///
    /// ```
    /// use sitemapd_parser::{NormUrl, UrlError};
    /// assert!(NormUrl::parse_limited("https://example.com/a").is_ok());
    /// let long = format!("https://example.com/{}", "a".repeat(3000));
    /// assert!(matches!(NormUrl::parse_limited(&long), Err(UrlError::TooLong(_))));
    /// ```
    pub fn parse_limited(input: &str) -> Result<Self, UrlError> {
        NormUrl::parse(input)?.limited()
    }

    /// This URL if it is no longer than a sitemap `<loc>` may be (see
    /// [`NormUrl::parse_limited`]).
    pub fn limited(self) -> Result<Self, UrlError> {
        let max = MAX_LOC_CHARS;
        if self.s.len() > max && self.s.chars().count() > max {
            return Err(UrlError::TooLong(self.s.chars().count()));
        }
        Ok(self)
    }

    /// Resolves `reference` against this URL (RFC 3986) and normalises the result.
    pub fn join(&self, reference: &str) -> Result<Self, UrlError> {
        Base::new(self).join(reference)
    }

    /// The normalised URL.
    pub fn as_str(&self) -> &str {
        &self.s
    }

    /// Consumes the URL, returning its string.
    pub fn into_string(self) -> String {
        self.s
    }

    /// `"http"` or `"https"`.
    pub fn scheme(&self) -> &str {
        if self.s.as_bytes()[4] == b's' {
            "https"
        } else {
            "http"
        }
    }

    fn host_start(&self) -> usize {
        self.scheme().len() + 3
    }

    /// The host: lowercase ASCII (punycode for IDNs), IPv6 literals in brackets.
    pub fn host(&self) -> &str {
        &self.s[self.host_start()..self.host_end]
    }

    /// The port if it is not the scheme's default.
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// The host key: `host[:port]`, the port only when it is not the
    /// scheme's default; see [`HostKey`].
    ///
    /// ```
    /// use sitemapd_parser::NormUrl;
    /// let key = |u| NormUrl::parse(u).unwrap().host_key();
    /// assert_eq!(key("https://Example.com:443/a").as_str(), "example.com");
    /// assert_eq!(key("http://example.com:8080/").as_str(), "example.com:8080");
    /// assert_eq!(key("http://[::1]:81/").as_str(), "[::1]:81");
    /// assert_eq!(key("http://example.com/"), key("https://example.com/"));
    /// ```
    pub fn host_key(&self) -> HostKey {
        HostKey(self.s[self.host_start()..self.path_start].to_string())
    }

    /// The port, default included.
    pub fn port_or_default(&self) -> u16 {
        self.port
            .unwrap_or(if self.scheme() == "https" { 443 } else { 80 })
    }

    /// `scheme://host[:port]`, without a trailing slash.
    pub fn origin(&self) -> &str {
        &self.s[..self.path_start]
    }

    /// Path and query, starting with `/`.
    pub fn path_and_query(&self) -> &str {
        &self.s[self.path_start..]
    }

    /// The path alone (query excluded).
    pub fn path(&self) -> &str {
        let pq = self.path_and_query();
        pq.split_once('?').map_or(pq, |(p, _)| p)
    }

    /// `scheme://host[:port]/`: the root of this URL's origin.
    pub fn root(&self) -> NormUrl {
        let mut s = String::with_capacity(self.path_start + 1);
        s.push_str(self.origin());
        s.push('/');
        NormUrl {
            s,
            host_end: self.host_end,
            path_start: self.path_start,
            port: self.port,
        }
    }
}

/// The key of a host, for politeness and per-host bookkeeping:
/// `host[:port]` as in a normalised URL ([`NormUrl::host_key`]): the host
/// lowercase (punycode for an IDN, an IPv6 literal in brackets), then
/// `:port` only when the port is not the scheme's default. So
/// `http://example.com/` and `https://example.com/` share the key
/// `example.com`, and `https://example.com:8443/` has `example.com:8443`.
///
/// It is the host format the scheduler's store keeps (its `h` keyspace and
/// `Stats::hosts`) and the discovery fetcher's politeness gate uses.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostKey(String);

impl HostKey {
    /// The key.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Consumes the key, returning its string.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for HostKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for HostKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for HostKey {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl Serialize for HostKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl From<&NormUrl> for HostKey {
    fn from(url: &NormUrl) -> Self {
        url.host_key()
    }
}

impl fmt::Display for NormUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.s)
    }
}

impl fmt::Debug for NormUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NormUrl({:?})", self.s)
    }
}

impl AsRef<str> for NormUrl {
    fn as_ref(&self) -> &str {
        &self.s
    }
}

impl std::str::FromStr for NormUrl {
    type Err = UrlError;
    fn from_str(s: &str) -> Result<Self, UrlError> {
        normalize(s)
    }
}

impl Serialize for NormUrl {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.s)
    }
}

/// A parsed base URL, kept so that many relative references can be resolved
/// against it without parsing it again each time.
#[derive(Debug, Clone)]
pub(crate) struct Base {
    url: Option<url::Url>,
}

impl Base {
    /// Prepares `base` for resolution.
    pub(crate) fn new(base: &NormUrl) -> Self {
        Self {
            url: url::Url::parse(base.as_str()).ok(),
        }
    }

    /// Resolves `reference` against the base (RFC 3986) and normalises it.
    pub(crate) fn join(&self, reference: &str) -> Result<NormUrl, UrlError> {
        let cleaned = strip_tabs_newlines(trim_url(reference));
        let Some(base) = &self.url else {
            return Err(UrlError::Relative);
        };
        let joined = base.join(&cleaned).map_err(|e| match e {
            url::ParseError::EmptyHost => UrlError::MissingHost,
            url::ParseError::InvalidPort => UrlError::Port,
            _ => UrlError::Host(cleaned.to_string()),
        })?;
        normalize(joined.as_str())
    }
}

/// Whether a byte can be part of a reference as sites write them: no
/// controls, quotes, angle brackets, braces, pipes, backslashes, carets or
/// backticks (which unrendered templates such as `{{ site.url }}/` are full
/// of). Spaces and non-ASCII bytes pass; normalisation percent-encodes them.
pub(crate) fn is_reference_byte(b: u8) -> bool {
    b >= 0x80
        || (b >= b' '
            && !matches!(
                b,
                b'"' | b'<' | b'>' | b'{' | b'}' | b'|' | b'\\' | b'^' | b'`' | 0x7f
            ))
}

/// Whether `s` (trimmed) starts with a URI scheme (`[A-Za-z][A-Za-z0-9+.-]*:`).
pub fn has_scheme(s: &str) -> bool {
    scheme_len(trim_url(s).as_bytes()).is_some()
}

fn scheme_len(b: &[u8]) -> Option<usize> {
    if !b.first()?.is_ascii_alphabetic() {
        return None;
    }
    let end = b
        .iter()
        .position(|&c| !(c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.')))?;
    (b[end] == b':').then_some(end)
}

fn trim_url(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// Removes tabs, and line breaks together with the indentation around them
/// (a loc wrapped over several lines is one URL, SPEC X3).
fn strip_tabs_newlines(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.bytes().any(|b| matches!(b, b'\t' | b'\n' | b'\r')) {
        return s.into();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\t' => {}
            '\n' | '\r' => {
                out.truncate(out.trim_end_matches([' ', '\t']).len());
                while chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
                    chars.next();
                }
            }
            c => out.push(c),
        }
    }
    out.into()
}

/// Bytes kept as they are in path and query: RFC 3986 unreserved, reserved and `%`.
const fn uri_byte_table() -> [bool; 256] {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b':'
                    | b'/'
                    | b'?'
                    | b'['
                    | b']'
                    | b'@'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
            );
        c += 1;
    }
    t
}
static URI_BYTE: [bool; 256] = uri_byte_table();

/// [`URI_BYTE`] without `%`: the bytes kept as they are on their own.
static PLAIN_URI_BYTE: [bool; 256] = {
    let mut t = uri_byte_table();
    t[b'%' as usize] = false;
    t
};

/// Bytes of a host that is already normal: lowercase ASCII letters, digits, `-._`.
const fn normal_host_table() -> [bool; 256] {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'.' | b'_');
        c += 1;
    }
    t
}
static NORMAL_HOST_BYTE: [bool; 256] = normal_host_table();

/// The common case, checked in one pass: `http(s)://` + a lowercase ASCII
/// host + a path of URI bytes. Such a URL is already normal: it is copied as is.
pub(crate) fn already_normal(s: &str) -> Option<NormUrl> {
    let b = s.as_bytes();
    let host_start = if b.starts_with(b"https://") {
        8
    } else if b.starts_with(b"http://") {
        7
    } else {
        return None;
    };
    if !b.get(host_start)?.is_ascii_alphanumeric() {
        return None;
    }
    let mut i = host_start;
    i += b[i..]
        .iter()
        .position(|&c| !NORMAL_HOST_BYTE[c as usize])
        .unwrap_or(b.len() - i);
    let host_end = i;
    // Numeric hosts may be IPv4 in another spelling; empty labels are errors: the full path decides.
    let last_label = s[host_start..host_end]
        .trim_end_matches('.')
        .rsplit('.')
        .next()
        .unwrap_or("");
    // A host longer than a label may be: the full path checks its lengths.
    if b.get(host_end) != Some(&b'/')
        || last_label.starts_with(|c: char| c.is_ascii_digit())
        || s[host_start..host_end].contains("..")
        || host_end - host_start > 63
    {
        return None;
    }
    while i < b.len() {
        // Eight plain URI bytes at a time (nearly every path), then one at a time.
        if let Some(eight) = b[i..].first_chunk::<8>()
            && eight
                .iter()
                .fold(true, |ok, &c| ok & PLAIN_URI_BYTE[c as usize])
        {
            i += 8;
            continue;
        }
        i += match b[i] {
            b'%' => kept_as_is(b, i)?,
            c if URI_BYTE[c as usize] => 1,
            _ => return None,
        };
    }
    Some(NormUrl {
        s: s.to_string(),
        host_end,
        path_start: host_end,
        port: None,
    })
}

fn normalize(input: &str) -> Result<NormUrl, UrlError> {
    let trimmed = trim_url(input);
    if trimmed.is_empty() {
        return Err(UrlError::Empty);
    }
    if let Some(url) = already_normal(trimmed) {
        return Ok(url);
    }
    let cleaned = strip_tabs_newlines(trimmed);
    let s: &str = &cleaned;
    let b = s.as_bytes();
    let Some(slen) = scheme_len(b) else {
        return Err(UrlError::Relative);
    };
    let scheme = if s[..slen].eq_ignore_ascii_case("http") {
        "http"
    } else if s[..slen].eq_ignore_ascii_case("https") {
        "https"
    } else {
        return Err(UrlError::Scheme(s[..slen].to_ascii_lowercase()));
    };
    let rest = &s[slen + 1..];
    let Some(rest) = rest.strip_prefix("//") else {
        return Err(UrlError::MissingHost);
    };
    let auth_end = rest
        .bytes()
        .position(|c| matches!(c, b'/' | b'?' | b'#' | b'\\'))
        .unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(auth_end);
    if authority.contains('@') {
        return Err(UrlError::Credentials);
    }
    if tail.starts_with('\\') {
        // WHATWG parsers end the host here and read `\` as `/`; others do not.
        // A URL that clients disagree on is refused rather than guessed.
        return Err(UrlError::Host(format!("{authority}\\")));
    }
    let (host_raw, port_raw) = split_host_port(authority)?;
    let mut out = String::with_capacity(s.len() + 8);
    out.push_str(scheme);
    out.push_str("://");
    push_host(&mut out, host_raw)?;
    let host_end = out.len();
    let port = match port_raw {
        None | Some("") => None,
        Some(p) => {
            if !p.bytes().all(|c| c.is_ascii_digit()) {
                return Err(UrlError::Port);
            }
            let n: u32 = p.trim_start_matches('0').parse().or_else(|_| {
                if p.bytes().all(|c| c == b'0') {
                    Ok(0)
                } else {
                    Err(UrlError::Port)
                }
            })?;
            let n = u16::try_from(n).map_err(|_| UrlError::Port)?;
            let default = if scheme == "https" { 443 } else { 80 };
            (n != default).then_some(n)
        }
    };
    if let Some(p) = port {
        out.push(':');
        out.push_str(&p.to_string());
    }
    let path_start = out.len();
    if tail.is_empty() || tail.starts_with('#') || tail.starts_with('?') {
        out.push('/');
    }
    push_path_query(&mut out, tail);
    Ok(NormUrl {
        s: out,
        host_end,
        path_start,
        port,
    })
}

fn split_host_port(authority: &str) -> Result<(&str, Option<&str>), UrlError> {
    if authority.starts_with('[') {
        let close = authority
            .find(']')
            .ok_or_else(|| UrlError::Host(authority.into()))?;
        let (host, after) = authority.split_at(close + 1);
        return match after {
            "" => Ok((host, None)),
            _ => match after.strip_prefix(':') {
                Some(p) => Ok((host, Some(p))),
                None => Err(UrlError::Host(authority.into())),
            },
        };
    }
    Ok(match authority.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (authority, None),
    })
}

fn push_host(out: &mut String, host: &str) -> Result<(), UrlError> {
    if host.is_empty() {
        return Err(UrlError::MissingHost);
    }
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        let ip: Ipv6Addr = inner.parse().map_err(|_| UrlError::Host(host.into()))?;
        out.push('[');
        out.push_str(&ip.to_string());
        out.push(']');
        return Ok(());
    }
    let simple = host
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'));
    if simple {
        return push_ascii_host(out, &host.to_ascii_lowercase());
    }
    // Non-ASCII or percent-encoded: the IDNA (UTS #46) processing of the WHATWG host parser.
    let decoded = percent_decode(host);
    let ascii = idna::domain_to_ascii(&decoded).map_err(|_| UrlError::Host(host.into()))?;
    let valid = ascii
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'));
    if !valid {
        return Err(UrlError::Host(host.into()));
    }
    push_ascii_host(out, &ascii)
}

/// A lowercase ASCII host: no empty label (a single trailing dot is allowed),
/// no label longer than 63 bytes nor name longer than 253 (RFC 1035 §2.3.4:
/// no such name resolves), and IPv4 addresses in any spelling the WHATWG
/// host parser accepts (`2130706433`, `0x7f.1`, `0177.0.0.1`) written as
/// dotted decimal.
fn push_ascii_host(out: &mut String, host: &str) -> Result<(), UrlError> {
    let labels = host.strip_suffix('.').unwrap_or(host);
    if labels.is_empty()
        || labels.len() > 253
        || labels.split('.').any(|l| l.is_empty() || l.len() > 63)
    {
        return Err(UrlError::Host(host.into()));
    }
    let last = labels.rsplit('.').next().unwrap_or(labels);
    // WHATWG: a host whose last label is a number is an IPv4 address.
    let numeric = last.bytes().all(|b| b.is_ascii_digit())
        || last
            .strip_prefix("0x")
            .or_else(|| last.strip_prefix("0X"))
            .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
    if numeric {
        let ip = ipv4(labels).ok_or_else(|| UrlError::Host(host.into()))?;
        out.push_str(&ip.to_string());
        return Ok(());
    }
    out.push_str(host);
    Ok(())
}

/// The WHATWG IPv4 parser: up to four parts, each decimal, `0x` hex or
/// `0`-prefixed octal; the last part fills the remaining bytes.
fn ipv4(host: &str) -> Option<std::net::Ipv4Addr> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.len() > 4 {
        return None;
    }
    let numbers: Vec<u64> = parts
        .iter()
        .map(|p| {
            let (digits, radix) =
                if let Some(h) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
                    (h, 16)
                } else if p.len() > 1 && p.starts_with('0') {
                    (&p[1..], 8)
                } else {
                    (*p, 10)
                };
            if digits.is_empty() {
                return Some(0);
            }
            if digits.len() > 12 {
                return None;
            }
            u64::from_str_radix(digits, radix).ok()
        })
        .collect::<Option<_>>()?;
    let (last, init) = numbers.split_last()?;
    if init.iter().any(|&n| n > 255) || *last >= 256u64.pow(5 - numbers.len() as u32) {
        return None;
    }
    let mut value = *last;
    for (i, &n) in init.iter().enumerate() {
        value += n << (8 * (3 - i));
    }
    Some(std::net::Ipv4Addr::from(u32::try_from(value).ok()?))
}

fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// How many bytes of path or query at `b[i]` are kept as they are: one URI
/// byte, or a `%XX` escape; `None` when the byte must be percent-encoded.
fn kept_as_is(b: &[u8], i: usize) -> Option<usize> {
    match b[i] {
        b'%' if b
            .get(i + 1..i + 3)
            .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) =>
        {
            Some(3)
        }
        b'%' => None,
        c if URI_BYTE[c as usize] => Some(1),
        _ => None,
    }
}

fn push_path_query(out: &mut String, tail: &str) {
    let tail = tail.split_once('#').map_or(tail, |(pq, _)| pq);
    let b = tail.as_bytes();
    let mut run_start = 0;
    let mut i = 0;
    while i < b.len() {
        if let Some(n) = kept_as_is(b, i) {
            i += n;
            continue;
        }
        out.push_str(&tail[run_start..i]);
        let mut end = i + 1;
        // Encode a whole UTF-8 sequence (or one ASCII byte) at once.
        while end < b.len() && !tail.is_char_boundary(end) {
            end += 1;
        }
        for &byte in &b[i..end] {
            out.push('%');
            out.push(char::from(b"0123456789ABCDEF"[(byte >> 4) as usize]));
            out.push(char::from(b"0123456789ABCDEF"[(byte & 15) as usize]));
        }
        i = end;
        run_start = end;
    }
    out.push_str(&tail[run_start..]);
}

#[cfg(test)]
mod tests {
    /// RFC 1035 §2.3.4: labels of 63 bytes at most, names of 253.
    #[test]
    fn overlong_host_labels_and_names_are_refused() {
        let label = |n: usize| "a".repeat(n);
        assert!(NormUrl::parse(&format!("https://{}.com/", label(63))).is_ok());
        assert!(matches!(
            NormUrl::parse(&format!("https://{}.com/", label(64))),
            Err(UrlError::Host(_))
        ));
        let name = vec![label(60); 5].join(".");
        assert!(name.len() > 253);
        assert!(matches!(
            NormUrl::parse(&format!("https://{name}/")),
            Err(UrlError::Host(_))
        ));
        assert!(NormUrl::parse(&format!("https://{}/", vec![label(60); 4].join("."))).is_ok());
    }

    use super::*;

    fn n(s: &str) -> String {
        NormUrl::parse(s)
            .map(NormUrl::into_string)
            .unwrap_or_else(|e| format!("ERR {e}"))
    }

    #[test]
    fn l8_lowercases_scheme_and_host_and_drops_default_port_and_fragment() {
        assert_eq!(
            n("HTTP://Example.COM:80/catalog/x#top"),
            "http://example.com/catalog/x"
        );
        assert_eq!(n("https://example.com:443"), "https://example.com/");
        assert_eq!(
            n("https://example.com:8443/a"),
            "https://example.com:8443/a"
        );
        assert_eq!(n("http://example.com:/a"), "http://example.com/a");
        assert_eq!(n("http://example.com:0080/a"), "http://example.com/a");
        assert_eq!(n("http://example.com?q=1"), "http://example.com/?q=1");
    }

    #[test]
    fn l8_keeps_path_and_query_byte_for_byte() {
        assert_eq!(
            n("http://a.com/A/./b/../C?X=%7e&y=/z"),
            "http://a.com/A/./b/../C?X=%7e&y=/z"
        );
        assert_eq!(n("http://a.com/a%2Fb"), "http://a.com/a%2Fb");
    }

    #[test]
    fn l8_idn_hosts_become_punycode() {
        assert_eq!(
            n("http://пример.рф/путь"),
            "http://xn--e1afmkfd.xn--p1ai/%D0%BF%D1%83%D1%82%D1%8C"
        );
        assert_eq!(
            n("http://xn--e1aibyw.xn--p1ai/"),
            "http://xn--e1aibyw.xn--p1ai/"
        );
        assert_eq!(
            n("http://[2001:DB8::1]:8080/"),
            "http://[2001:db8::1]:8080/"
        );
    }

    #[test]
    fn x6_non_ascii_and_unsafe_bytes_are_percent_encoded() {
        assert_eq!(
            n("https://shop.ir/p?name=کتاب"),
            "https://shop.ir/p?name=%DA%A9%D8%AA%D8%A7%D8%A8"
        );
        assert_eq!(
            n("http://a.com/a b\"c<d>{e}|`"),
            "http://a.com/a%20b%22c%3Cd%3E%7Be%7D%7C%60"
        );
        assert_eq!(n("http://a.com/100%"), "http://a.com/100%25");
    }

    #[test]
    fn x3_trims_whitespace_and_line_breaks() {
        assert_eq!(n("\n   http://a.com/x\n   "), "http://a.com/x");
        assert_eq!(n("http://a.com/very/\n   long"), "http://a.com/very/long");
    }

    #[test]
    fn rejects_what_is_not_an_http_url() {
        assert_eq!(NormUrl::parse("/relative"), Err(UrlError::Relative));
        assert_eq!(NormUrl::parse("index.html"), Err(UrlError::Relative));
        assert!(matches!(
            NormUrl::parse("mailto:a@b.c"),
            Err(UrlError::Scheme(_))
        ));
        assert!(matches!(
            NormUrl::parse("ftp://a.com/"),
            Err(UrlError::Scheme(_))
        ));
        assert_eq!(NormUrl::parse("http:/a.com"), Err(UrlError::MissingHost));
        assert_eq!(NormUrl::parse("http:///a"), Err(UrlError::MissingHost));
        assert!(matches!(
            NormUrl::parse("http://{{ site.url }}/"),
            Err(UrlError::Host(_))
        ));
        assert_eq!(
            NormUrl::parse("http://u:p@a.com/"),
            Err(UrlError::Credentials)
        );
        assert_eq!(NormUrl::parse("http://a.com:99999/"), Err(UrlError::Port));
        assert_eq!(NormUrl::parse("   "), Err(UrlError::Empty));
    }

    #[test]
    fn l8_backslashes_and_empty_labels_are_refused() {
        for bad in [
            "https://example.com\\@evil.com/x",
            "http://example.com\\a",
            "http://%E3%80%82/",
            "http://.example.com/",
            "http://example..com/",
            "http://./",
            "http://1.2.3.4.5/",
            "http://256.1.1.1/",
            "http://1.2.3.09/",
        ] {
            assert!(NormUrl::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(n("http://example.com./a"), "http://example.com./a");
    }

    #[test]
    fn l8_ipv4_spellings_are_dotted_decimal() {
        assert_eq!(n("http://2130706433/"), "http://127.0.0.1/");
        assert_eq!(n("http://0x7f.0.0.1/"), "http://127.0.0.1/");
        assert_eq!(n("http://0177.0.0.1/x"), "http://127.0.0.1/x");
        assert_eq!(n("http://127.1/"), "http://127.0.0.1/");
        assert_eq!(
            n("http://169.254.169.254/latest"),
            "http://169.254.169.254/latest"
        );
        assert_eq!(n("http://10.0.0.1:8080/"), "http://10.0.0.1:8080/");
        assert_eq!(n("http://example.3com/"), "http://example.3com/");
        assert_eq!(n("http://3com.com/"), "http://3com.com/");
    }

    #[test]
    fn normalisation_is_idempotent() {
        for s in [
            "http://Ex.com/a b",
            "https://пример.рф/ü?x=ü",
            "http://0x7f.1/",
            "http://[::1]:80/",
            "http://a.com/%zz%41",
        ] {
            let once = NormUrl::parse(s).unwrap();
            assert_eq!(NormUrl::parse(once.as_str()).unwrap(), once, "{s}");
        }
    }

    #[test]
    fn accessors_split_the_url() {
        let u = NormUrl::parse("https://Ex.com:8443/dir/file.xml?x=/y").unwrap();
        assert_eq!(u.scheme(), "https");
        assert_eq!(u.host(), "ex.com");
        assert_eq!(u.port(), Some(8443));
        assert_eq!(u.port_or_default(), 8443);
        assert_eq!(u.origin(), "https://ex.com:8443");
        assert_eq!(u.path(), "/dir/file.xml");
        assert_eq!(u.path_and_query(), "/dir/file.xml?x=/y");
        assert_eq!(u.root().as_str(), "https://ex.com:8443/");
    }

    #[test]
    fn join_resolves_relative_references() {
        let base = NormUrl::parse("http://a.com/dir/sitemap.xml").unwrap();
        assert_eq!(
            base.join("page.html").unwrap().as_str(),
            "http://a.com/dir/page.html"
        );
        assert_eq!(base.join("/x").unwrap().as_str(), "http://a.com/x");
        assert_eq!(base.join("//b.com/y").unwrap().as_str(), "http://b.com/y");
        assert_eq!(base.join("../up").unwrap().as_str(), "http://a.com/up");
    }
}
