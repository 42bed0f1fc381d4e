//! Reading a robots.txt: `Sitemap:` extraction (SPEC R1-R4) and
//! allow/disallow checks through the `robotstxt` crate, with the defect
//! workarounds the [module docs](super) describe.

use std::collections::HashMap;

use robotstxt::RobotsParseHandler;
use robotstxt::matcher::{RobotsMatchStrategy, RobotsMatcher};
use sitemapd_parser::{Diagnostic, NormUrl, Position, RobotsRules, Rule, UrlError};

/// How much of a robots.txt is read (R4: at least 500 KiB; RFC 9309 §2.5).
pub const MAX_ROBOTS_BYTES: usize = 500 * 1024;

/// Lines are cut to this many bytes before the `robotstxt` crate sees them
/// (it would ignore the rest of a longer line anyway).
pub const MAX_LINE_BYTES: usize = 16 * 1024;

/// A sitemap a robots.txt declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredSitemap {
    /// The normalised sitemap URL.
    pub url: NormUrl,
    /// 1-based line of the `Sitemap:` record.
    pub line: u64,
}

/// A parsed robots.txt: its sitemaps, its crawl delay for one agent, the
/// diagnostics found, and what the allow/disallow matcher needs.
#[derive(Debug, Clone)]
pub struct RobotsTxt {
    agent: String,
    matcher_body: String,
    rules: Vec<(bool, String)>,
    /// The sitemaps declared, de-duplicated (R2), in file order.
    pub sitemaps: Vec<DeclaredSitemap>,
    /// `Sitemap:` records seen, before de-duplication and dropping.
    pub sitemap_records: u64,
    /// `Crawl-delay` in seconds for this agent (its own group, else `*`).
    pub crawl_delay: Option<f64>,
    /// Repairs and drops, with rule ids and lines.
    pub diagnostics: Vec<Diagnostic>,
    /// The body was longer than [`MAX_ROBOTS_BYTES`] and the rest was
    /// ignored (R4).
    pub truncated: bool,
}

impl RobotsTxt {
    /// Parses `body`, the robots.txt found at `url` (the base for relative
    /// `Sitemap:` values; without it they are dropped), for the crawler whose
    /// user agent is `user_agent` (its product token, `sitemapd` in
    /// `sitemapd/0.1`, selects the group).
    ///
    /// ```
    /// use sitemapd_discovery::RobotsTxt;
    /// use sitemapd_parser::NormUrl;
    /// let url = NormUrl::parse("https://example.com/robots.txt").unwrap();
    /// let robots = RobotsTxt::parse(
    ///     b"User-agent: *\nSitemap: /sitemap.xml\nDisallow: /private/\n",
    ///     Some(&url),
    ///     "sitemapd/0.1",
    /// );
    /// assert_eq!(robots.sitemaps[0].url.as_str(), "https://example.com/sitemap.xml");
    /// assert!(!robots.is_allowed(&NormUrl::parse("https://example.com/private/x").unwrap()));
    /// assert!(robots.is_allowed(&NormUrl::parse("https://example.com/public").unwrap()));
    /// ```
    pub fn parse(body: &[u8], url: Option<&NormUrl>, user_agent: &str) -> RobotsTxt {
        let truncated = body.len() > MAX_ROBOTS_BYTES;
        let text = String::from_utf8_lossy(&body[..body.len().min(MAX_ROBOTS_BYTES)]);
        let lines = split_lines(&text, truncated);
        let clean = lines.join("\n");

        let agent = product_token(user_agent).to_ascii_lowercase();
        let mut collector = Collector::new(agent.clone());
        robotstxt::parse_robotstxt(&clean, &mut collector);

        let mut diagnostics = Vec::new();
        if let Some(line) =
            first_invalid_utf8_line(&body[..body.len().min(MAX_ROBOTS_BYTES)], truncated)
        {
            // RFC 9309 §2.3: UTF-8. A repair is never silent (SPEC C1).
            diagnostics.push(Diagnostic::warning(
                Rule::C1,
                at(line),
                "bytes that are not valid UTF-8 replaced with U+FFFD (the first on this line)",
            ));
        }
        if truncated {
            diagnostics.push(Diagnostic::warning(
                Rule::R4,
                at(lines.len() as u64 + 1),
                format!(
                    "robots.txt is longer than {MAX_ROBOTS_BYTES} bytes; the rest, from the line cut there, is ignored"
                ),
            ));
        }
        let sitemaps = resolve_sitemaps(&collector.sitemaps, url, &mut diagnostics);
        let matcher_body = lines
            .iter()
            .enumerate()
            .map(|(i, line)| {
                if collector.non_group_lines.contains(&(i as u64 + 1)) {
                    ""
                } else {
                    line
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        RobotsTxt {
            crawl_delay: collector.crawl_delay(),
            rules: collector.agent_rules(),
            sitemap_records: collector.sitemaps.len() as u64,
            agent,
            matcher_body,
            sitemaps,
            diagnostics,
            truncated,
        }
    }

    /// The allow/disallow rules and crawl delay this file gives the agent
    /// given to [`RobotsTxt::parse`], as data the store keeps per host:
    /// the rules of every group naming the agent, else of every `*` group
    /// (none: everything allowed). [`RobotsRules::allows`] agrees with
    /// [`RobotsTxt::is_allowed`] (a test checks it over the corpus).
    pub fn rules(&self) -> RobotsRules {
        RobotsRules::new(self.rules.clone(), self.crawl_delay)
    }

    /// Whether the agent given to [`RobotsTxt::parse`] may fetch `url`.
    pub fn is_allowed(&self, url: &NormUrl) -> bool {
        self.allows(&self.agent, url)
    }

    /// Whether `agent` (a product token such as `Googlebot`) may fetch `url`,
    /// by Google's matching rules (longest match wins, `Allow` on ties).
    pub fn allows(&self, agent: &str, url: &NormUrl) -> bool {
        let mut matcher = RobotsMatcher::<LinearMatch>::default();
        matcher.one_agent_allowed_by_robots(&self.matcher_body, agent, url.as_str())
    }
}

/// Google's longest-match strategy, as the crate's default, with a linear
/// pattern matcher (see the module docs).
#[derive(Debug, Default)]
pub struct LinearMatch;

impl RobotsMatchStrategy for LinearMatch {
    fn match_allow(&self, path: &str, pattern: &str) -> i32 {
        longest_match(path, pattern)
    }

    fn match_disallow(&self, path: &str, pattern: &str) -> i32 {
        longest_match(path, pattern)
    }

    /// Whether `path` matches `pattern` from its start
    /// ([`sitemapd_parser::robots_rules::pattern_matches`], shared with the
    /// store's checks).
    fn matches(path: &str, pattern: &str) -> bool {
        sitemapd_parser::robots_rules::pattern_matches(path, pattern)
    }
}

/// The match priority: the pattern's length when it matches, else -1.
fn longest_match(path: &str, pattern: &str) -> i32 {
    if LinearMatch::matches(path, pattern) {
        i32::try_from(pattern.len()).unwrap_or(i32::MAX)
    } else {
        -1
    }
}

/// `sitemapd` in `sitemapd/0.1 (+https://…)`.
fn product_token(user_agent: &str) -> &str {
    let end = user_agent
        .find(|c: char| !(c.is_ascii_alphabetic() || c == '-' || c == '_'))
        .unwrap_or(user_agent.len());
    &user_agent[..end]
}

fn at(line: u64) -> Position {
    Position { line, column: 1 }
}

/// The line (1-based, LF, CR and CRLF ending one) of the first byte of
/// `body` that is not UTF-8; `None` if it is all UTF-8. When the body was
/// `cut` at the byte cap, a sequence left incomplete by the cut does not
/// count (its line is dropped anyway).
fn first_invalid_utf8_line(body: &[u8], cut: bool) -> Option<u64> {
    let error = std::str::from_utf8(body).err()?;
    if cut && error.error_len().is_none() {
        return None;
    }
    let before = &body[..error.valid_up_to()];
    let breaks = before
        .iter()
        .enumerate()
        .filter(|&(i, &b)| b == b'\n' || (b == b'\r' && before.get(i + 1) != Some(&b'\n')))
        .count();
    Some(breaks as u64 + 1)
}

/// Splits like the `robotstxt` crate (LF, CR and CRLF end a line), strips a
/// BOM (also one mis-decoded as Latin-1 and re-encoded, `ï»¿`), cuts lines to
/// [`MAX_LINE_BYTES`], and drops a last line cut by the byte cap.
fn split_lines(text: &str, cut: bool) -> Vec<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let text = text.strip_prefix("\u{ef}\u{bb}\u{bf}").unwrap_or(text);
    let mut lines: Vec<&str> = Vec::new();
    let mut rest = text;
    loop {
        match rest.find(['\n', '\r']) {
            Some(i) => {
                lines.push(&rest[..i]);
                let skip = if rest[i..].starts_with("\r\n") { 2 } else { 1 };
                rest = &rest[i + skip..];
            }
            None => {
                if !cut {
                    lines.push(rest);
                }
                break;
            }
        }
    }
    for line in &mut lines {
        if line.len() > MAX_LINE_BYTES {
            let mut end = MAX_LINE_BYTES;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            *line = &line[..end];
        }
    }
    lines
}

/// Collects what the crate's parser reports: sitemap records, crawl delays
/// per group, and the lines that are not group members (for the R1 fix).
struct Collector {
    agent: String,
    sitemaps: Vec<(u64, String)>,
    non_group_lines: std::collections::HashSet<u64>,
    group: Vec<String>,
    group_has_rules: bool,
    delays: HashMap<String, f64>,
    /// The agents of the current group as the matcher sees it: only
    /// `Allow`/`Disallow` lines end one (a `Crawl-delay` does not, R1).
    rule_group: Vec<String>,
    rule_group_has_rules: bool,
    /// Rules of the groups naming the agent, and of the `*` groups.
    agent_rules: Vec<(bool, String)>,
    global_rules: Vec<(bool, String)>,
    /// A group named the agent (its rules apply, even none).
    agent_seen: bool,
    /// Line of a `Sitemap:` record with an empty value, whose URL may be on
    /// the next line.
    empty_sitemap_line: Option<u64>,
}

impl Collector {
    fn new(agent: String) -> Self {
        Self {
            agent,
            sitemaps: Vec::new(),
            non_group_lines: Default::default(),
            group: Vec::new(),
            group_has_rules: false,
            delays: HashMap::new(),
            rule_group: Vec::new(),
            rule_group_has_rules: false,
            agent_rules: Vec::new(),
            global_rules: Vec::new(),
            agent_seen: false,
            empty_sitemap_line: None,
        }
    }

    /// The agent's rules: its own groups', else the `*` groups'.
    fn agent_rules(&self) -> Vec<(bool, String)> {
        if self.agent_seen {
            self.agent_rules.clone()
        } else {
            self.global_rules.clone()
        }
    }

    /// An `Allow` (`true`) or `Disallow` line in the current group.
    fn rule(&mut self, allow: bool, value: &str) {
        self.rule_line();
        self.rule_group_has_rules = true;
        let rule = (allow, value.to_string());
        if self.rule_group.contains(&self.agent) {
            self.agent_rules.push(rule.clone());
        }
        if self.rule_group.iter().any(|a| a == "*") {
            self.global_rules.push(rule);
        }
    }

    fn crawl_delay(&self) -> Option<f64> {
        self.delays
            .get(&self.agent)
            .or_else(|| self.delays.get("*"))
            .copied()
    }

    fn rule_line(&mut self) {
        self.group_has_rules = true;
        self.empty_sitemap_line = None;
    }
}

impl RobotsParseHandler for Collector {
    fn handle_robots_start(&mut self) {}
    fn handle_robots_end(&mut self) {}

    fn handle_user_agent(&mut self, _line: u32, user_agent: &str) {
        if self.group_has_rules {
            self.group.clear();
            self.group_has_rules = false;
        }
        if self.rule_group_has_rules {
            self.rule_group.clear();
            self.rule_group_has_rules = false;
        }
        let token = product_token(user_agent.trim()).to_ascii_lowercase();
        self.agent_seen |= token == self.agent;
        self.rule_group.push(token.clone());
        self.group.push(token);
        if user_agent.trim_start().starts_with('*') {
            self.rule_group.push("*".into());
            self.group.push("*".into());
        }
        self.empty_sitemap_line = None;
    }

    fn handle_allow(&mut self, _line: u32, value: &str) {
        self.rule(true, value);
    }

    fn handle_disallow(&mut self, _line: u32, value: &str) {
        self.rule(false, value);
    }

    fn handle_sitemap(&mut self, line: u32, value: &str) {
        let line = u64::from(line);
        self.non_group_lines.insert(line);
        self.empty_sitemap_line = value.trim().is_empty().then_some(line);
        self.sitemaps.push((line, value.to_string()));
    }

    fn handle_unknown_action(&mut self, line: u32, action: &str, value: &str) {
        let line = u64::from(line);
        self.non_group_lines.insert(line);
        let key = action.trim().to_ascii_lowercase();
        // `Sitemap:` with its URL on the next line: the crate reads that line
        // as the key `https` with the value `//host/…`.
        let continues_sitemap = self.empty_sitemap_line.take() == Some(line - 1)
            && (key == "http" || key == "https")
            && value.starts_with("//");
        if continues_sitemap {
            if let Some(record) = self.sitemaps.last_mut() {
                record.1 = format!("{key}:{value}");
            }
            return;
        }
        let delay = value.trim().parse::<f64>().ok();
        if let (true, Some(delay)) = (
            key == "crawl-delay",
            delay.filter(|d| d.is_finite() && *d >= 0.0),
        ) {
            for agent in &self.group {
                self.delays.entry(agent.clone()).or_insert(delay);
            }
            // A later `User-agent` line starts a new group for the delay.
            self.group_has_rules = true;
        }
    }
}

/// Directive names found glued to the end of a sitemap URL
/// (`…/sitemap.xmlHost: example.com`).
const GLUED_DIRECTIVES: [&str; 6] = [
    "host:",
    "user-agent:",
    "disallow:",
    "allow:",
    "crawl-delay:",
    "clean-param:",
];

/// Extensions that make `name.ext/…` a file name rather than a host.
const FILE_EXTENSIONS: [&str; 9] = [
    "xml", "gz", "txt", "php", "html", "htm", "asp", "aspx", "jsp",
];

/// Turns raw `Sitemap:` values into normalised, de-duplicated URLs (R2, R3),
/// with a diagnostic for every repair and drop.
fn resolve_sitemaps(
    records: &[(u64, String)],
    robots_url: Option<&NormUrl>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<DeclaredSitemap> {
    let mut seen: HashMap<NormUrl, u64> = HashMap::new();
    let mut out = Vec::new();
    for (line, raw) in records {
        let line = *line;
        let mut warn =
            |message: String| diagnostics.push(Diagnostic::warning(Rule::R3, at(line), message));
        let Some(value) = repair_value(raw, &mut warn) else {
            continue;
        };
        let url = match NormUrl::parse(&value) {
            Ok(url) => url,
            Err(UrlError::Relative) => {
                let scheme = robots_url.map_or("https", |u| u.scheme());
                let (joined, how) = match (host_like(&value), robots_url) {
                    (true, _) => (
                        NormUrl::parse(&format!("{scheme}://{value}")),
                        "read as a URL without its scheme",
                    ),
                    (false, Some(base)) => {
                        (base.join(&value), "resolved against the robots.txt URL")
                    }
                    (false, None) => {
                        warn(format!(
                            "relative sitemap {value:?} dropped: no robots.txt URL to resolve it against"
                        ));
                        continue;
                    }
                };
                match joined {
                    Ok(url) => {
                        warn(format!(
                            "sitemap {value:?} is not an absolute URL; {how}: {url}"
                        ));
                        url
                    }
                    Err(e) => {
                        warn(format!("sitemap {value:?} dropped: {e}"));
                        continue;
                    }
                }
            }
            Err(e) => {
                warn(format!("sitemap {value:?} dropped: {e}"));
                continue;
            }
        };
        if let Some(first) = seen.get(&url) {
            diagnostics.push(Diagnostic::warning(
                Rule::R2,
                at(line),
                format!("sitemap {url} already declared on line {first}"),
            ));
            continue;
        }
        seen.insert(url.clone(), line);
        out.push(DeclaredSitemap { url, line });
    }
    out
}

/// Lenient repairs of a `Sitemap:` value; `None` when nothing usable is left.
fn repair_value(raw: &str, warn: &mut impl FnMut(String)) -> Option<String> {
    let mut value = raw.trim();
    if value.is_empty() {
        warn("empty Sitemap: value dropped".into());
        return None;
    }
    // Mojibake or control characters before the URL (`Â\u{a0} https://…`).
    let junk_end = value
        .find(|c: char| c.is_ascii_graphic())
        .unwrap_or(value.len());
    if junk_end > 0 {
        warn(format!("characters before the URL ignored in {value:?}"));
        value = &value[junk_end..];
    }
    // `Sitemap: Sitemap: https://…`
    while let Some(rest) = value
        .get(..8)
        .filter(|key| key.eq_ignore_ascii_case("sitemap:"))
        .and_then(|_| value.get(8..))
    {
        warn(format!("repeated 'Sitemap:' key ignored in {value:?}"));
        value = rest.trim_start();
    }
    let lower = value.to_ascii_lowercase();
    let glued_at = |d: &str| {
        lower.match_indices(d).map(|(i, _)| i).find(|&i| {
            i > 0
                && lower[i + d.len()..]
                    .chars()
                    .next()
                    .is_none_or(char::is_whitespace)
        })
    };
    if let Some(cut) = GLUED_DIRECTIVES.iter().filter_map(|d| glued_at(d)).min() {
        warn(format!(
            "directive glued to the sitemap URL cut off: {:?}",
            &value[cut..]
        ));
        value = value[..cut].trim_end();
    }
    if value.contains("{{") || value.contains("{%") || value.contains("<?") {
        warn(format!("unrendered template {value:?} dropped"));
        return None;
    }
    (!value.is_empty()).then(|| value.to_string())
}

/// `www.example.com/sitemap.xml`: a host name without a scheme (a dot in the
/// first segment, followed by a path, and not a file name like `map.xml/`).
fn host_like(value: &str) -> bool {
    let Some((first, _)) = value.split_once('/') else {
        return false;
    };
    let Some((_, tld)) = first.rsplit_once('.') else {
        return false;
    };
    !first.is_empty()
        && first
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == ':')
        && tld.chars().all(|c| c.is_ascii_alphabetic())
        && tld.len() >= 2
        && !FILE_EXTENSIONS.contains(&tld.to_ascii_lowercase().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn robots(body: &str) -> RobotsTxt {
        let url = NormUrl::parse("https://example.com/robots.txt").unwrap();
        RobotsTxt::parse(body.as_bytes(), Some(&url), "FooBot/1.0")
    }

    fn sitemaps(r: &RobotsTxt) -> Vec<&str> {
        r.sitemaps.iter().map(|s| s.url.as_str()).collect()
    }

    fn url(s: &str) -> NormUrl {
        NormUrl::parse(s).unwrap()
    }

    /// Google's robots_test.cc, `ID_SitemapsAndUnknownDirectivesDoNotEndGroups`
    /// shape: non-group lines inside a group do not split it (R1).
    #[test]
    fn r1_sitemap_line_does_not_end_the_group() {
        let body = "User-agent: FooBot\n\
                    Sitemap: https://example.com/sitemap.xml\n\
                    User-agent: BarBot\n\
                    Disallow: /\n";
        let r = robots(body);
        let page = url("https://example.com/page");
        assert!(!r.allows("FooBot", &page), "FooBot shares BarBot's group");
        assert!(!r.allows("BarBot", &page));
        assert!(r.allows("BazBot", &page));
        // The crate alone gets this wrong: it is the defect worked around.
        let mut m = robotstxt::DefaultMatcher::default();
        assert!(m.one_agent_allowed_by_robots(body, "FooBot", page.as_str()));
    }

    #[test]
    fn r1_unknown_directive_does_not_end_the_group() {
        let body = "User-agent: FooBot\nCrawl-delay: 5\nUser-agent: BarBot\nDisallow: /x\n";
        let r = robots(body);
        assert!(!r.allows("FooBot", &url("https://example.com/x")));
        assert_eq!(r.crawl_delay, Some(5.0));
    }

    #[test]
    fn r1_sitemaps_count_anywhere_any_case() {
        let body = "Sitemap: https://example.com/a.xml\n\
                    User-agent: *\n\
                    sitemap:https://example.com/b.xml\n\
                    Disallow: /private\n\
                    SITEMAP : https://example.com/c.xml # comment\n";
        let r = robots(body);
        assert_eq!(
            sitemaps(&r),
            [
                "https://example.com/a.xml",
                "https://example.com/b.xml",
                "https://example.com/c.xml"
            ]
        );
        assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
    }

    #[test]
    fn r2_duplicates_after_normalisation_are_flagged() {
        let r =
            robots("Sitemap: https://EXAMPLE.com/a.xml\nSitemap: https://example.com:443/a.xml\n");
        assert_eq!(sitemaps(&r), ["https://example.com/a.xml"]);
        assert_eq!(r.diagnostics[0].rule, Rule::R2);
        assert_eq!(r.diagnostics[0].position.line, 2);
    }

    #[test]
    fn r3_repairs_and_drops() {
        let body = "Sitemap: /rel.xml\n\
                    Sitemap: sitemap.xml\n\
                    Sitemap: www.other.org/map.xml\n\
                    Sitemap: ftp://example.com/x.xml\n\
                    Sitemap:\n\
                    Sitemap: {{ site.url }}/sitemap.xml\n\
                    Sitemap: Sitemap: https://example.com/twice.xml\n\
                    Sitemap: pl/cms.xmlHost: pl\n\
                    Sitemap: \u{c2}\u{a0} https://example.com/nbsp.xml\n";
        let r = robots(body);
        assert_eq!(
            sitemaps(&r),
            [
                "https://example.com/rel.xml",
                "https://example.com/sitemap.xml",
                "https://www.other.org/map.xml",
                "https://example.com/twice.xml",
                "https://example.com/pl/cms.xml",
                "https://example.com/nbsp.xml",
            ]
        );
        assert_eq!(r.sitemap_records, 9);
        assert!(r.diagnostics.iter().all(|d| d.rule == Rule::R3));
        let lines: Vec<u64> = r.diagnostics.iter().map(|d| d.position.line).collect();
        for line in 1..=9 {
            assert!(lines.contains(&line), "line {line} not flagged: {lines:?}");
        }
    }

    #[test]
    fn r3_url_on_the_line_after_a_bare_sitemap_key() {
        let r = robots("Sitemap:\nhttps://example.com/next.xml\n");
        assert_eq!(sitemaps(&r), ["https://example.com/next.xml"]);
    }

    #[test]
    fn r4_only_the_first_500_kib_is_read() {
        let mut body = String::from("Sitemap: https://example.com/first.xml\n");
        while body.len() < MAX_ROBOTS_BYTES - 10 {
            body.push_str("# padding padding padding padding padding padding\n");
        }
        body.push_str(
            "Sitemap: https://example.com/cut.xml\nSitemap: https://example.com/late.xml\n",
        );
        let r = robots(&body);
        assert_eq!(sitemaps(&r), ["https://example.com/first.xml"]);
        assert!(r.truncated);
        assert!(r.diagnostics.iter().any(|d| d.rule == Rule::R4));
    }

    #[test]
    fn c1_invalid_utf8_is_flagged_once_with_its_line() {
        let url = NormUrl::parse("https://example.com/robots.txt").unwrap();
        let body = b"# ok\r\nUser-agent: *\r\nDisallow: /caf\xE9\nSitemap: /s\xFF.xml\n";
        let r = RobotsTxt::parse(body, Some(&url), "FooBot/1.0");
        let c1: Vec<_> = r
            .diagnostics
            .iter()
            .filter(|d| d.rule == Rule::C1)
            .collect();
        assert_eq!(c1.len(), 1, "{:?}", r.diagnostics);
        assert_eq!(c1[0].position.line, 3);
        assert_eq!(sitemaps(&r), ["https://example.com/s%EF%BF%BD.xml"]);
        // Valid UTF-8: nothing to say.
        assert!(robots("Disallow: /café\n").diagnostics.is_empty());
        // A character cut by the byte cap (its line is dropped): not invalid.
        let mut long = vec![b'#'; MAX_ROBOTS_BYTES - 1];
        long.extend_from_slice("é\n".as_bytes());
        let r = RobotsTxt::parse(&long, Some(&url), "FooBot/1.0");
        assert!(r.truncated);
        assert!(
            !r.diagnostics.iter().any(|d| d.rule == Rule::C1),
            "{:?}",
            r.diagnostics
        );
    }

    #[test]
    fn long_multibyte_line_does_not_panic() {
        // The crate alone panics on this (char count used as a byte offset).
        let body = format!(
            "User-agent: *\nDisallow: /{}\nSitemap: https://example.com/s.xml\n",
            "é".repeat(20_000)
        );
        let r = robots(&body);
        assert_eq!(sitemaps(&r), ["https://example.com/s.xml"]);
        assert!(r.allows("x", &url("https://example.com/other")));
        let crate_alone = std::panic::catch_unwind(|| {
            let mut m = robotstxt::DefaultMatcher::default();
            m.one_agent_allowed_by_robots(&body, "x", "https://example.com/other")
        });
        assert!(crate_alone.is_err(), "the defect worked around is gone");
    }

    #[test]
    fn multibyte_characters_after_the_url_start_do_not_panic() {
        // Found by the robots fuzz target: a byte-offset slice inside 'é'.
        let r = robots("Sitemap: abcdefgéh\nSitemap: sitemap:é\nSitemap: Sitemap:\n");
        assert_eq!(r.sitemap_records, 3);
    }

    /// The crate's own doc examples and Google's matching rules hold for
    /// the linear matcher.
    #[test]
    fn linear_match_agrees_with_the_crate() {
        use robotstxt::matcher::LongestMatchRobotsMatchStrategy as Crate;
        let cases = [
            ("/", "/"),
            ("/abc", "/"),
            ("/", "/abc"),
            ("/google/robotstxt/tree/master", "/*/*/tree/master"),
            (
                "/google/robotstxt/tree/master/index.html",
                "/*/*/tree/master",
            ),
            ("/google/robotstxt/tree/master", "/*/*/tree/master$"),
            ("/google/robotstxt/tree/master/abc", "/*/*/tree/master$"),
            ("/google/robotstxt/tree/abc", "/*/*/tree/master"),
            ("/fish.php?id=1", "/*.php"),
            ("/fish.php", "/*.php$"),
            ("/fish.PHP", "/*.php$"),
            ("/a$b", "/a$b"),
            ("/ab", "/a$b"),
            ("", "*"),
            ("/x", "/x*$"),
            ("/x/y", "/**/y"),
        ];
        for (path, pattern) in cases {
            assert_eq!(
                LinearMatch::matches(path, pattern),
                Crate::matches(path, pattern),
                "{path:?} {pattern:?}"
            );
        }
    }

    #[test]
    fn hostile_wildcard_patterns_match_in_linear_time() {
        let a = "a".repeat(2_000);
        let body = format!("User-agent: *\nDisallow: /*{a}b\n");
        let r = robots(&body);
        // With the crate's matcher this takes hours; here, milliseconds.
        assert!(r.allows("x", &url(&format!("https://example.com/{a}"))));
    }

    /// The rule as written: `*` any run, a final `$` the end, else a
    /// literal byte; anchored at the start only.
    fn reference_match(path: &[u8], pattern: &[u8]) -> bool {
        match pattern {
            [] => true,
            [b'$'] => path.is_empty(),
            [b'*', rest @ ..] => (0..=path.len()).any(|k| reference_match(&path[k..], rest)),
            [c, rest @ ..] => path.first() == Some(c) && reference_match(&path[1..], rest),
        }
    }

    proptest::proptest! {
        #[test]
        fn linear_match_agrees_with_the_rule_on_random_patterns(
            path in "/[ab/$]{0,12}",
            pattern in "/[ab/*$]{0,8}",
        ) {
            proptest::prop_assert_eq!(
                LinearMatch::matches(&path, &pattern),
                reference_match(path.as_bytes(), pattern.as_bytes())
            );
        }
    }

    #[test]
    fn the_crate_matcher_is_also_wrong_on_some_patterns() {
        // Found while checking the linear matcher against the crate: the
        // crate's in-place `Vec::insert` shifts positions it still reads.
        use robotstxt::matcher::LongestMatchRobotsMatchStrategy as Crate;
        assert!(reference_match(b"////b/", b"/*/b*"));
        assert!(LinearMatch::matches("////b/", "/*/b*"));
        assert!(!Crate::matches("////b/", "/*/b*"));
    }

    #[test]
    fn boms_are_skipped_for_the_matcher() {
        for bom in ["\u{feff}", "\u{ef}\u{bb}\u{bf}"] {
            let r = robots(&format!("{bom}User-agent: *\nDisallow: /\n"));
            assert!(!r.allows("x", &url("https://example.com/a")), "{bom:?}");
        }
    }

    #[test]
    fn crawl_delay_prefers_own_group() {
        let r = robots(
            "User-agent: *\nCrawl-delay: 10\n\nUser-agent: foobot\nCrawl-delay: 2\nDisallow: /x\n",
        );
        assert_eq!(r.crawl_delay, Some(2.0));
        let r = robots(
            "User-agent: other\nCrawl-delay: 2\nDisallow: /\n\nUser-agent: *\nCrawl-delay: 7\n",
        );
        assert_eq!(r.crawl_delay, Some(7.0));
    }
}
