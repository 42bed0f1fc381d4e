//! Every robots.txt of the real-world corpus: no panic, every `Sitemap:`
//! record the manifest counts is seen, and what is dropped or repaired is
//! flagged with an R rule.

use std::path::PathBuf;

use sitemapd_discovery::RobotsTxt;
use sitemapd_parser::{NormUrl, Rule};

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/corpus")
}

/// (file, Sitemap: records) from MANIFEST.tsv.
fn robots_files() -> Vec<(String, u64)> {
    let manifest = std::fs::read_to_string(corpus().join("MANIFEST.tsv")).unwrap();
    manifest
        .lines()
        .filter_map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            (cols.first() == Some(&"robots"))
                .then(|| (cols[1].to_string(), cols[6].parse().unwrap()))
        })
        .collect()
}

#[test]
fn every_corpus_robots_txt_yields_its_sitemap_records() {
    let files = robots_files();
    assert!(files.len() >= 70, "corpus robots files: {}", files.len());
    let base = NormUrl::parse("https://example.com/robots.txt").unwrap();
    for (file, records) in files {
        let body = std::fs::read(corpus().join("robots").join(&file)).unwrap();
        let robots = RobotsTxt::parse(&body, Some(&base), "sitemapd/0.1");
        assert_eq!(robots.sitemap_records, records, "{file}");
        assert!(robots.sitemaps.len() as u64 <= records, "{file}");
        let dropped = records - robots.sitemaps.len() as u64;
        let flagged = robots
            .diagnostics
            .iter()
            .filter(|d| matches!(d.rule, Rule::R2 | Rule::R3))
            .count() as u64;
        assert!(
            flagged >= dropped,
            "{file}: {dropped} dropped, {flagged} flagged"
        );
        for d in &robots.diagnostics {
            assert!(d.position.line >= 1, "{file}: {d:?}");
        }
    }
}

fn parse(file: &str) -> RobotsTxt {
    let body = std::fs::read(corpus().join("robots").join(file)).unwrap();
    let base = NormUrl::parse("https://example.com/robots.txt").unwrap();
    RobotsTxt::parse(&body, Some(&base), "sitemapd/0.1")
}

fn urls(r: &RobotsTxt) -> Vec<&str> {
    r.sitemaps.iter().map(|s| s.url.as_str()).collect()
}

#[test]
fn oddities_named_in_the_manifest() {
    // Same Sitemap line in 3 groups: one sitemap, two R2 notes.
    let r = parse("Apuhtin__ilikeit__robots.txt");
    assert_eq!(r.sitemaps.len(), 1);
    assert_eq!(
        r.diagnostics.iter().filter(|d| d.rule == Rule::R2).count(),
        2
    );
    // 'Sitemap:' then mojibake NBSP before the URL.
    let r = parse("bharath06__robotstxt__kooora.com");
    assert_eq!(r.sitemaps.len(), 1);
    assert!(urls(&r)[0].starts_with("http"), "{:?}", urls(&r));
    // Relative values are resolved against the robots.txt URL and flagged.
    let r = parse("bharath06__robotstxt__ddrk.me");
    assert_eq!(urls(&r), ["https://example.com/sitemap_index.xml"]);
    assert_eq!(r.diagnostics[0].rule, Rule::R3);
    // Unrendered Liquid is dropped.
    let r = parse("SMAC-Group__stat_conf_24__robots.txt");
    assert!(r.sitemaps.is_empty());
    // Two directives glued on one line.
    let r = parse("KqSMea8__ISI-PROJECT2__RobotsFiles__amway.pl");
    assert!(
        urls(&r).iter().all(|u| !u.contains("Host")),
        "{:?}",
        urls(&r)
    );
    // 44 sitemaps on 40 hosts (cross-host), no space after the colon.
    assert_eq!(parse("bharath06__robotstxt__gmw.cn").sitemaps.len(), 44);
    // The negative control has none.
    assert!(
        parse("bharath06__robotstxt__wikipedia.org")
            .sitemaps
            .is_empty()
    );
}

#[test]
fn double_encoded_bom_does_not_hide_the_first_group() {
    let r = parse("bharath06__robotstxt__www.gov.cn");
    assert_eq!(r.sitemaps.len(), 4);
}

/// Paths to check a file's rules against: the patterns of the file (the
/// first 40, for time: the matcher reads the whole file per check) made
/// into paths (wildcards and anchors filled in, one byte more and one
/// less), and a few every site has.
fn probe_paths(body: &str) -> Vec<String> {
    let mut paths: Vec<String> = ["/", "/index.html", "/a/b?c=d", "/private/x", "/wp-admin/"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for line in body.lines().filter(|l| l.contains('/')).take(40) {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim().to_ascii_lowercase();
        if key != "allow" && key != "disallow" {
            continue;
        }
        let value = value.split('#').next().unwrap_or("").trim();
        if !value.starts_with('/') {
            continue;
        }
        let filled = value.trim_end_matches('$').replace('*', "x");
        paths.push(filled.clone());
        paths.push(format!("{filled}z"));
        let mut shorter = filled.clone();
        shorter.pop();
        if !shorter.is_empty() {
            paths.push(shorter);
        }
    }
    paths
}

/// The rules handed to the store decide as the `robotstxt` matcher does,
/// for our agent, for Googlebot and for an agent no file names, on every
/// corpus robots.txt and every path its own patterns suggest.
#[test]
fn extracted_rules_agree_with_the_matcher_on_the_corpus() {
    let base = NormUrl::parse("https://example.com/robots.txt").unwrap();
    let mut checked = 0u64;
    let mut disallowed = 0u64;
    for (file, _) in robots_files() {
        let body = std::fs::read(corpus().join("robots").join(&file)).unwrap();
        let text = String::from_utf8_lossy(&body);
        for agent in ["sitemapd/0.1", "Googlebot/2.1", "nobody-named-this"] {
            let robots = RobotsTxt::parse(&body, Some(&base), agent);
            let rules = robots.rules();
            assert_eq!(rules.crawl_delay, robots.crawl_delay, "{file}");
            for path in probe_paths(&text) {
                let Ok(url) = base.join(&path) else {
                    continue;
                };
                assert_eq!(
                    rules.allows(&url),
                    robots.is_allowed(&url),
                    "{file}, agent {agent}, {url}"
                );
                checked += 1;
                disallowed += u64::from(!robots.is_allowed(&url));
            }
        }
    }
    assert!(checked > 5_000, "checked {checked}");
    assert!(disallowed > 500, "disallowed {disallowed} of {checked}");
}

/// The R1 fix holds for the rules handed over: a `Sitemap:` or
/// `Crawl-delay:` line inside a group does not end it.
#[test]
fn extracted_rules_keep_groups_across_sitemap_lines() {
    let body = b"User-agent: FooBot\nSitemap: https://example.com/s.xml\nUser-agent: sitemapd\nCrawl-delay: 2\nDisallow: /private/\n";
    let robots = RobotsTxt::parse(body, None, "FooBot/1.0");
    let url = NormUrl::parse("https://example.com/private/x").unwrap();
    assert!(!robots.rules().allows(&url));
    assert!(!robots.is_allowed(&url));
    let ours = RobotsTxt::parse(body, None, "sitemapd/0.1").rules();
    assert_eq!(ours.crawl_delay, Some(2.0));
    assert!(!ours.allows(&url));
}
