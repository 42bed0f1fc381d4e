//! The walk against a real loopback HTTP server: robots.txt, every sitemap
//! format as an index child, redirects, conditional GET, retries, cycles,
//! depth, cross-submission and the address guard. Hostile servers (bombs,
//! endless or dripping bodies, resets, redirect loops, 429 storms …) have
//! their own suite, `hostile.rs`; the guard on every path into a fetch is
//! in `guard.rs`.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use futures_util::StreamExt;
use sitemapd_discovery::walk::{
    DEFAULT_PROBE_PATHS, Remembered, RobotsOutcome, RobotsReport, SitemapReport, SkipReason, Via,
};
use sitemapd_discovery::{
    FetchConfig, Fetcher, FollowRule, Seed, SitemapMemory, Validators, WalkConfig, WalkEvent,
    Walker,
};
use sitemapd_parser::{NormUrl, ParseOptions, Rule};
use sitemapd_testsite::{Body, Reply, Request, TestSite, gzip};

mod common;
use common::{failures, site_done, urlset, walk};

fn fetch_config() -> FetchConfig {
    FetchConfig {
        allow_private: true,
        min_delay: Duration::ZERO,
        backoff: Duration::from_millis(10),
        deadline: Duration::from_secs(20),
        ..FetchConfig::default()
    }
}

fn walker(fetch: FetchConfig, walk: WalkConfig) -> Walker {
    Walker::new(Fetcher::new(fetch).unwrap(), walk)
}

/// A walker with the test fetch config and the default walk config.
fn default_walker() -> Walker {
    walker(fetch_config(), WalkConfig::default())
}

/// A walker asking `memory`, with the test fetch config.
fn with_memory(memory: impl SitemapMemory + 'static, config: WalkConfig) -> Walker {
    walker(
        fetch_config(),
        WalkConfig {
            memory: Some(Arc::new(memory)),
            ..config
        },
    )
}

fn index(children: &[(String, Option<&str>)]) -> String {
    let mut s = String::from(
        r#"<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#,
    );
    for (loc, lastmod) in children {
        s.push_str(&format!("<sitemap><loc>{loc}</loc>"));
        if let Some(l) = lastmod {
            s.push_str(&format!("<lastmod>{l}</lastmod>"));
        }
        s.push_str("</sitemap>");
    }
    s.push_str("</sitemapindex>");
    s
}

/// A robots.txt: `rules` as given, then a `Sitemap:` line for each of
/// `sitemaps`.
fn robots_txt(rules: &str, sitemaps: &[String]) -> Reply {
    let mut body = rules.to_string();
    for url in sitemaps {
        body.push_str(&format!("Sitemap: {url}\n"));
    }
    Reply::ok(body)
}

/// A route answering 304 (with the ETag) when asked with `If-None-Match:
/// etag`, else `ok` with that ETag.
fn conditional(etag: &'static str, ok: Reply) -> impl Fn(&Request, u64) -> Reply {
    move |req, _| {
        if req.header("if-none-match") == Some(etag) {
            Reply::status(304).header("ETag", etag)
        } else {
            ok.clone().header("ETag", etag)
        }
    }
}

fn pages(site: &TestSite, prefix: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| site.url(&format!("/{prefix}/{i}")))
        .collect()
}

fn entries(events: &[WalkEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            WalkEvent::Entry { entry, .. } => Some(entry.loc.to_string()),
            _ => None,
        })
        .collect()
}

fn reports(events: &[WalkEvent]) -> Vec<&SitemapReport> {
    events
        .iter()
        .filter_map(|e| match e {
            WalkEvent::SitemapFetched(r) => Some(r.as_ref()),
            _ => None,
        })
        .collect()
}

fn report<'a>(events: &'a [WalkEvent], url: &str) -> &'a SitemapReport {
    reports(events)
        .into_iter()
        .find(|r| r.url.as_str() == url)
        .unwrap_or_else(|| panic!("no report for {url}: {events:#?}"))
}

fn skipped(events: &[WalkEvent]) -> Vec<(SkipReason, u64)> {
    events
        .iter()
        .filter_map(|e| match e {
            WalkEvent::ChildrenSkipped { reason, count, .. } => Some((*reason, *count)),
            _ => None,
        })
        .collect()
}

fn robots_events(events: &[WalkEvent]) -> Vec<&RobotsReport> {
    events
        .iter()
        .filter_map(|e| match e {
            WalkEvent::Robots(r) => Some(r),
            _ => None,
        })
        .collect()
}

fn robots_report(events: &[WalkEvent]) -> &RobotsReport {
    robots_events(events)
        .first()
        .copied()
        .expect("a Robots event")
}

struct Memory(HashMap<String, Remembered>);

impl SitemapMemory for Memory {
    fn recall(&self, url: &NormUrl) -> Option<Remembered> {
        self.0.get(url.as_str()).cloned()
    }
}

fn url(s: &str) -> NormUrl {
    NormUrl::parse(s).unwrap()
}

/// Remembered as not due, with these children.
fn not_due(children: &[String]) -> Remembered {
    Remembered {
        children: children.iter().map(|c| url(c)).collect(),
        not_due: true,
        ..Remembered::default()
    }
}

/// The NotDue events: (url, parent, depth).
fn not_due_events(events: &[WalkEvent]) -> Vec<(String, Option<String>, u32)> {
    events
        .iter()
        .filter_map(|e| match e {
            WalkEvent::NotDue {
                url, parent, depth, ..
            } => Some((
                url.to_string(),
                parent.as_ref().map(ToString::to_string),
                *depth,
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn robots_index_and_every_child_format() {
    let site = TestSite::start();
    site.route(
        "/robots.txt",
        robots_txt(
            "User-agent: *\nDisallow: /private\n",
            &[site.url("/index.xml"), site.url("/news.xml")],
        ),
    );
    site.route(
        "/index.xml",
        Reply::ok(index(&[
            (site.url("/a.xml"), None),
            (site.url("/b.xml.gz"), None),
            (site.url("/c.txt"), None),
            (site.url("/feed.rss"), None),
            (site.url("/feed.atom"), None),
        ])),
    );
    site.route("/a.xml", Reply::ok(urlset(&pages(&site, "a", 3))));
    site.route(
        "/b.xml.gz",
        Reply::ok(gzip(urlset(&pages(&site, "b", 4)).as_bytes())),
    );
    site.route("/c.txt", Reply::ok(pages(&site, "c", 2).join("\n")));
    site.route(
        "/feed.rss",
        Reply::ok(format!(
            r#"<rss version="2.0"><channel><title>t</title><item><link>{}</link><pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate></item></channel></rss>"#,
            site.url("/rss/1")
        )),
    );
    site.route(
        "/feed.atom",
        Reply::ok(format!(
            r#"<feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="{}"/><updated>2003-12-13T18:30:02Z</updated></entry></feed>"#,
            site.url("/atom/1")
        )),
    );
    // Content-Encoding gzip on a plain sitemap is inflated the same way.
    site.route(
        "/news.xml",
        Reply::ok(gzip(urlset(&pages(&site, "news", 2)).as_bytes()))
            .header("Content-Encoding", "gzip"),
    );
    let w = default_walker();
    let events = walk(&w, &site.url("/")).await;

    let robots = robots_report(&events);
    assert_eq!(robots.sitemaps.len(), 2);
    let RobotsOutcome::Parsed { robots: parsed } = &robots.outcome else {
        panic!("{robots:?}")
    };
    assert!(!parsed.is_allowed(&NormUrl::parse(&site.url("/private/x")).unwrap()));

    let got = entries(&events);
    assert_eq!(got.len(), 3 + 4 + 2 + 1 + 1 + 2, "{got:#?}");
    for prefix in ["/a/0", "/b/3", "/c/1", "/rss/1", "/atom/1", "/news/1"] {
        assert!(got.contains(&site.url(prefix)), "{prefix} missing");
    }
    let idx = report(&events, &site.url("/index.xml"));
    assert_eq!(idx.summary.as_ref().unwrap().sitemaps, 5);
    assert_eq!(idx.via, Via::Robots);
    let gz = report(&events, &site.url("/b.xml.gz"));
    assert_eq!(gz.depth, 1);
    assert_eq!(gz.parent.as_ref().unwrap().as_str(), site.url("/index.xml"));
    assert_eq!(gz.summary.as_ref().unwrap().gzip_layers, 1);
    assert!(gz.complete());
    assert_eq!(
        report(&events, &site.url("/news.xml"))
            .summary
            .as_ref()
            .unwrap()
            .urls,
        2
    );
    let totals = site_done(&events);
    assert_eq!((totals.sitemaps, totals.failed, totals.entries), (7, 0, 13));
    // Every request carried our user agent and asked for gzip only.
    for r in site.requests() {
        assert!(r.header("user-agent").unwrap().starts_with("sitemapd/"));
        assert_eq!(r.header("accept-encoding"), Some("gzip"));
    }
}

#[tokio::test]
async fn redirects_are_followed_and_recorded() {
    let site = TestSite::start();
    site.route("/old.xml", Reply::redirect(301, "/moved/new.xml"));
    site.route(
        "/moved/new.xml",
        Reply::redirect(307, &site.url("/final/sitemap.xml")),
    );
    site.route(
        "/final/sitemap.xml",
        Reply::ok(urlset(&pages(&site, "final", 2))),
    );
    let w = default_walker();
    let events = walk(&w, &site.url("/old.xml")).await;
    let r = report(&events, &site.url("/old.xml"));
    assert_eq!(r.final_url.as_str(), site.url("/final/sitemap.xml"));
    let hops: Vec<(u16, &str)> = r
        .redirects
        .iter()
        .map(|h| (h.status, h.to.as_str()))
        .collect();
    assert_eq!(
        hops,
        [
            (301, site.url("/moved/new.xml").as_str()),
            (307, site.url("/final/sitemap.xml").as_str())
        ]
    );
    // The scope is the final location's directory.
    assert_eq!(entries(&events).len(), 2);
}

#[tokio::test]
async fn conditional_get_reports_not_modified_and_new_validators() {
    let site = TestSite::start();
    let body = urlset(&pages(&site, "p", 2));
    site.route_fn(
        "/sitemap.xml",
        conditional(
            "\"v1\"",
            Reply::ok(body).header("Last-Modified", "Wed, 21 Oct 2015 07:28:00 GMT"),
        ),
    );
    let w = default_walker();
    let first = walk(&w, &site.url("/sitemap.xml")).await;
    let r = report(&first, &site.url("/sitemap.xml"));
    assert_eq!(r.validators.etag.as_deref(), Some("\"v1\""));
    assert_eq!(
        r.validators.last_modified.as_deref(),
        Some("Wed, 21 Oct 2015 07:28:00 GMT")
    );
    assert_eq!(entries(&first).len(), 2);

    let memory = Memory(HashMap::from([(
        site.url("/sitemap.xml"),
        Remembered {
            validators: r.validators.clone(),
            ..Remembered::default()
        },
    )]));
    let w = with_memory(memory, WalkConfig::default());
    let second = walk(&w, &site.url("/sitemap.xml")).await;
    let r = report(&second, &site.url("/sitemap.xml"));
    assert!(r.not_modified);
    assert_eq!(r.status, 304);
    assert!(entries(&second).is_empty());
    let last = site.requests().pop().unwrap();
    assert_eq!(
        last.header("if-modified-since"),
        Some("Wed, 21 Oct 2015 07:28:00 GMT")
    );
}

#[tokio::test]
async fn server_errors_are_retried_then_succeed() {
    let site = TestSite::start();
    site.route_seq(
        "/sitemap.xml",
        vec![
            Reply::status(503),
            Reply::status(500),
            Reply::ok(urlset(&pages(&site, "p", 1))),
        ],
    );
    let w = default_walker();
    let events = walk(&w, &site.url("/sitemap.xml")).await;
    let r = report(&events, &site.url("/sitemap.xml"));
    assert_eq!(r.attempts, 3);
    assert_eq!(entries(&events).len(), 1);

    // Three failures in a row: the sitemap fails with the last status.
    site.route("/down.xml", Reply::status(502));
    let events = walk(&w, &site.url("/down.xml")).await;
    assert_eq!(
        failures(&events),
        [(site.url("/down.xml"), "HTTP 502".to_string())]
    );
    assert_eq!(site.hits("/down.xml"), 3);
}

#[tokio::test]
async fn retry_after_is_honoured_and_capped() {
    let site = TestSite::start();
    site.route_seq(
        "/sitemap.xml",
        vec![
            Reply::status(429).header("Retry-After", "1"),
            Reply::ok(urlset(&pages(&site, "p", 1))),
        ],
    );
    let w = default_walker();
    let started = Instant::now();
    let events = walk(&w, &site.url("/sitemap.xml")).await;
    assert_eq!(entries(&events).len(), 1);
    let times: Vec<Instant> = site.requests().iter().map(|r| r.at).collect();
    assert!(
        times[1] - times[0] >= Duration::from_millis(950),
        "{:?}",
        times[1] - times[0]
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    site.route(
        "/slow-down.xml",
        Reply::status(429).header("Retry-After", "3600"),
    );
    let events = walk(&w, &site.url("/slow-down.xml")).await;
    let failed = failures(&events);
    assert!(failed[0].1.contains("retry after"), "{failed:?}");
    assert_eq!(site.hits("/slow-down.xml"), 1);
}

#[tokio::test]
async fn index_cycles_and_depth_are_bounded() {
    let site = TestSite::start();
    // a -> b -> a (cycle), a -> d1 -> d2 -> d3 -> d4 (too deep).
    site.route(
        "/a.xml",
        Reply::ok(index(&[
            (site.url("/b.xml"), None),
            (site.url("/d1.xml"), None),
        ])),
    );
    site.route(
        "/b.xml",
        Reply::ok(index(&[
            (site.url("/a.xml"), None),
            (site.url("/b.xml"), None),
        ])),
    );
    for i in 1..=4 {
        site.route(
            &format!("/d{i}.xml"),
            Reply::ok(index(&[(site.url(&format!("/d{}.xml", i + 1)), None)])),
        );
    }
    let w = default_walker();
    let events = walk(&w, &site.url("/a.xml")).await;
    let skips = skipped(&events);
    assert!(skips.contains(&(SkipReason::Seen, 2)), "{skips:?}");
    assert!(skips.contains(&(SkipReason::Depth, 1)), "{skips:?}");
    assert_eq!(site.hits("/a.xml"), 1);
    assert_eq!(site.hits("/d3.xml"), 1);
    assert_eq!(site.hits("/d4.xml"), 0);
    // A redirect onto a sitemap already walked is a cycle too.
    site.route(
        "/a.xml",
        Reply::ok(index(&[(site.url("/alias.xml"), None)])),
    );
    site.route("/alias.xml", Reply::redirect(301, "/a.xml"));
    let events = walk(&w, &site.url("/a.xml")).await;
    assert!(skipped(&events).contains(&(SkipReason::Seen, 1)));
}

#[tokio::test]
async fn the_follow_rule_takes_an_index_children_and_not_robots_sitemaps() {
    let site = TestSite::start();
    site.route("/robots.txt", Reply::ok("Sitemap: /news-index.xml\n"));
    site.route(
        "/news-index.xml",
        Reply::ok(index(&[
            (site.url("/news-1.xml"), None),
            (site.url("/shop-1.xml"), None),
            (site.url("/news-2.xml"), None),
        ])),
    );
    for name in ["news-1", "shop-1", "news-2"] {
        site.route(
            &format!("/{name}.xml"),
            Reply::ok(urlset(&[site.url(&format!("/{name}"))])),
        );
    }
    let follow: FollowRule = Arc::new(|url| url.as_str().contains("/news-"));
    let w = walker(
        fetch_config(),
        WalkConfig {
            follow: Some(follow),
            ..WalkConfig::default()
        },
    );
    let events = walk(&w, &site.url("/")).await;
    assert_eq!(skipped(&events), [(SkipReason::NotFollowed, 1)]);
    let mut pages = entries(&events);
    pages.sort();
    assert_eq!(pages, [site.url("/news-1"), site.url("/news-2")]);
    assert_eq!(site.hits("/shop-1.xml"), 0);
    // A rule that takes nothing still reads what robots.txt lists.
    let none: FollowRule = Arc::new(|_| false);
    let w = walker(
        fetch_config(),
        WalkConfig {
            follow: Some(none),
            ..WalkConfig::default()
        },
    );
    let events = walk(&w, &site.url("/")).await;
    assert_eq!(skipped(&events), [(SkipReason::NotFollowed, 3)]);
    assert_eq!(site.hits("/news-index.xml"), 2);
}

#[tokio::test]
async fn sitemap_cap_per_site() {
    let site = TestSite::start();
    let children: Vec<(String, Option<&str>)> = (0..20)
        .map(|i| (site.url(&format!("/s{i}.xml")), None))
        .collect();
    site.route("/index.xml", Reply::ok(index(&children)));
    let w = walker(
        fetch_config(),
        WalkConfig {
            max_sitemaps_per_site: 5,
            ..WalkConfig::default()
        },
    );
    let events = walk(&w, &site.url("/index.xml")).await;
    assert!(
        skipped(&events).contains(&(SkipReason::Cap, 16)),
        "{:?}",
        skipped(&events)
    );
    // The cap holds for robots.txt's list too.
    let robots: String = (0..20).map(|i| format!("Sitemap: /s{i}.xml\n")).collect();
    site.route("/robots.txt", Reply::ok(robots));
    let events = walk(&w, &site.url("/")).await;
    assert_eq!(skipped(&events), [(SkipReason::Cap, 15)]);
    assert_eq!(site.hits("/s4.xml"), 1);
    assert_eq!(site.hits("/s5.xml"), 0);
}

#[tokio::test]
async fn i3_children_not_newer_than_the_last_fetch_are_skipped() {
    let site = TestSite::start();
    site.route(
        "/index.xml",
        Reply::ok(index(&[
            (site.url("/old.xml"), Some("2020-01-01")),
            (site.url("/new.xml"), Some("2030-01-01")),
            (site.url("/undated.xml"), None),
            // Fetched at 22:13 that day: a change later that day is possible.
            (site.url("/same-day.xml"), Some("2023-11-14")),
        ])),
    );
    for p in ["/old.xml", "/new.xml", "/undated.xml", "/same-day.xml"] {
        site.route(p, Reply::ok(urlset(&[site.url(&format!("{p}/page"))])));
    }
    // 2023-11-14T22:13:20Z
    let fetched_at = Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000));
    let memory = Memory(
        ["/old.xml", "/new.xml", "/undated.xml", "/same-day.xml"]
            .iter()
            .map(|p| {
                (
                    site.url(p),
                    Remembered {
                        fetched_at,
                        ..Remembered::default()
                    },
                )
            })
            .collect(),
    );
    let w = with_memory(memory, WalkConfig::default());
    let events = walk(&w, &site.url("/index.xml")).await;
    assert_eq!(skipped(&events), [(SkipReason::NotChanged, 1)]);
    assert_eq!(site.hits("/old.xml"), 0);
    assert_eq!(site.hits("/new.xml"), 1);
    assert_eq!(site.hits("/undated.xml"), 1);
    assert_eq!(site.hits("/same-day.xml"), 1);
}

/// Two hosts, `a.test` and `b.test`, both on loopback.
fn two_hosts() -> (TestSite, TestSite, FetchConfig) {
    let a = TestSite::start();
    let b = TestSite::start();
    let loopback: IpAddr = "127.0.0.1".parse().unwrap();
    let config = FetchConfig {
        resolve: HashMap::from([
            ("a.test".to_string(), vec![loopback]),
            ("b.test".to_string(), vec![loopback]),
        ]),
        ..fetch_config()
    };
    (a, b, config)
}

#[tokio::test]
async fn cross_host_sitemap_needs_robots_authorisation() {
    let (a, b, config) = two_hosts();
    let a_url = |p: &str| format!("http://a.test:{}{p}", a.port());
    let b_url = |p: &str| format!("http://b.test:{}{p}", b.port());
    // a.test's robots.txt lists a sitemap hosted on b.test, listing a.test pages.
    a.route("/robots.txt", robots_txt("", &[b_url("/maps/a-index.xml")]));
    b.route(
        "/maps/a-index.xml",
        Reply::ok(index(&[(b_url("/maps/a-pages.xml"), None)])),
    );
    b.route(
        "/maps/a-pages.xml",
        Reply::ok(urlset(&[
            a_url("/page1"),
            a_url("/page2"),
            b_url("/maps/own"),
        ])),
    );
    let w = walker(config, WalkConfig::default());
    let events = walk(&w, &a_url("/")).await;
    // Authorised by a.test's robots.txt, down through the index (R5).
    assert_eq!(
        entries(&events),
        [a_url("/page1"), a_url("/page2"), b_url("/maps/own")]
    );

    // The same sitemap walked on its own: a.test pages are out of scope.
    let events = walk(&w, &b_url("/maps/a-pages.xml")).await;
    assert_eq!(entries(&events), [b_url("/maps/own")]);
    let summary = report(&events, &b_url("/maps/a-pages.xml"))
        .summary
        .clone()
        .unwrap();
    assert_eq!(summary.diagnostics.get(&Rule::L6), Some(&2));
}

#[tokio::test]
async fn address_guard_refuses_private_literals_and_names_without_connecting() {
    let site = TestSite::start();
    site.route("/sitemap.xml", Reply::ok(urlset(&pages(&site, "p", 1))));
    let config = FetchConfig {
        allow_private: false,
        resolve: HashMap::from([("evil.test".to_string(), vec!["127.0.0.1".parse().unwrap()])]),
        connect_timeout: Duration::from_secs(30),
        ..fetch_config()
    };
    let w = walker(config, WalkConfig::default());
    let started = Instant::now();
    let events = walk(&w, "http://10.0.0.1/sitemap.xml").await;
    let failed = failures(&events);
    assert!(failed[0].1.contains("address guard refused"), "{failed:?}");
    assert!(failed[0].1.contains("private"), "{failed:?}");
    let events = walk(&w, &format!("http://evil.test:{}/sitemap.xml", site.port())).await;
    let failed = failures(&events);
    assert!(failed[0].1.contains("127.0.0.1: loopback"), "{failed:?}");
    let events = walk(&w, &site.url("/sitemap.xml")).await;
    assert!(failures(&events)[0].1.contains("address guard"));
    assert_eq!(site.connections(), 0, "nothing may reach the server");
    // No connect timeout waited (30 s): a refusal is immediate.
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[tokio::test]
async fn robots_outcomes_rfc_9309() {
    // 404: no rules, no sitemaps: probe the well-known paths.
    let site = TestSite::start();
    site.route(
        "/sitemap_index.xml",
        Reply::ok(urlset(&pages(&site, "p", 2))),
    );
    site.route("/feed", Reply::ok("<html><body>not a feed</body></html>"));
    let w = default_walker();
    let events = walk(&w, &site.url("/")).await;
    let robots = robots_report(&events);
    assert!(matches!(robots.outcome, RobotsOutcome::Unavailable));
    assert_eq!(
        report(&events, &site.url("/sitemap_index.xml")).via,
        Via::Probe
    );
    assert_eq!(entries(&events).len(), 2);
    let missed = events
        .iter()
        .filter(|e| matches!(e, WalkEvent::ProbeMissed { .. }))
        .count();
    assert_eq!(missed, 7);
    assert!(
        events.iter().any(
            |e| matches!(e, WalkEvent::ProbeMissed { reason, .. } if reason == "not a sitemap")
        )
    );
    assert_eq!(site_done(&events).failed, 0);

    // Probing off.
    let w_off = walker(
        fetch_config(),
        WalkConfig {
            probe: false,
            ..WalkConfig::default()
        },
    );
    let events = walk(&w_off, &site.url("/")).await;
    assert!(entries(&events).is_empty());
    assert_eq!(site.hits("/sitemap.xml"), 1);

    // 503 (after retries): try later, and no probing.
    let down = TestSite::start();
    down.route("/robots.txt", Reply::status(503));
    let events = walk(&w, &down.url("/")).await;
    let robots = robots_report(&events);
    assert!(
        matches!(&robots.outcome, RobotsOutcome::Unreachable { reason } if reason == "HTTP 503")
    );
    assert_eq!(down.hits("/robots.txt"), 3);
    assert_eq!(down.hits("/sitemap.xml"), 0);

    // Redirected robots.txt: relative sitemaps resolve against where it ended.
    let moved = TestSite::start();
    moved.route("/robots.txt", Reply::redirect(301, "/new/robots.txt"));
    moved.route("/new/robots.txt", Reply::ok("Sitemap: sm.xml\n"));
    let events = walk(&w, &moved.url("/")).await;
    let robots = robots_report(&events);
    assert_eq!(robots.sitemaps[0].as_str(), moved.url("/new/sm.xml"));
    assert_eq!(robots.diagnostics[0].rule, Rule::R3);
}

/// The least gap the server sees between two requests 0.3 s apart (a
/// `Crawl-delay: 0.3`): the server stamps each request when it has read its
/// head, so a first request stamped late (its thread waiting for a core)
/// shortens the gap it sees. Half the delay: a margin ten times that noise
/// on a loaded machine, and far above the milliseconds with no delay.
const CRAWL_DELAY_SEEN: Duration = Duration::from_millis(150);

#[tokio::test]
async fn crawl_delay_and_min_delay_space_requests() {
    let site = TestSite::start();
    site.route(
        "/robots.txt",
        robots_txt(
            "User-agent: *\nCrawl-delay: 0.3\n",
            &[site.url("/1.xml"), site.url("/2.xml"), site.url("/3.xml")],
        ),
    );
    for i in 1..=3 {
        site.route(
            &format!("/{i}.xml"),
            Reply::ok(urlset(&pages(&site, "p", 1))),
        );
    }
    let w = default_walker();
    let events = walk(&w, &site.url("/")).await;
    assert_eq!(reports(&events).len(), 3);
    let times: Vec<Instant> = site.requests().iter().map(|r| r.at).collect();
    for pair in times.windows(2).skip(1) {
        assert!(
            pair[1] - pair[0] >= CRAWL_DELAY_SEEN,
            "{:?}",
            pair[1] - pair[0]
        );
    }
}

#[tokio::test]
async fn sites_in_parallel_and_a_dropped_stream_stops_the_walk() {
    let sites: Vec<TestSite> = (0..4).map(|_| TestSite::start()).collect();
    for s in &sites {
        s.route("/robots.txt", robots_txt("", &[s.url("/s.xml")]));
        s.route("/s.xml", Reply::ok(urlset(&pages(s, "p", 10))));
    }
    let w = default_walker();
    let seeds = sites
        .iter()
        .map(|s| Seed::parse(&s.url("/")).unwrap())
        .collect();
    let events: Vec<WalkEvent> = w.walk(seeds).collect().await;
    assert_eq!(entries(&events).len(), 40);
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, WalkEvent::SiteDone(_)))
            .count(),
        4
    );

    let endless = TestSite::start();
    let line = format!("{}\n", endless.url("/p"));
    endless.route(
        "/endless.txt",
        Reply::ok("").body(Body::Repeat {
            chunk: bytes::Bytes::from(line),
            count: None,
        }),
    );
    endless.route("/small.txt", Reply::ok(format!("{}\n", endless.url("/q"))));
    // One request in flight per host: the endless body holds the only slot.
    let w = walker(
        FetchConfig {
            per_host_in_flight: 1,
            ..fetch_config()
        },
        WalkConfig {
            parse: ParseOptions {
                max_entries: u64::MAX,
                max_bytes: u64::MAX,
                ..ParseOptions::default()
            },
            ..WalkConfig::default()
        },
    );
    let mut stream = w.walk(vec![Seed::parse(&endless.url("/endless.txt")).unwrap()]);
    let mut n = 0;
    while let Some(e) = stream.next().await {
        if matches!(e, WalkEvent::Entry { .. }) {
            n += 1;
            if n == 1000 {
                break;
            }
        }
    }
    assert_eq!(n, 1000);
    // Dropping the stream stops the walk (its driver is aborted, and a send
    // to the closed channel ends the site task), and with it the body: the
    // host's only slot comes free, so a new walk on the same fetcher gets
    // through. A walk that kept reading would hold it until the deadline.
    drop(stream);
    let next = w.walk(vec![Seed::parse(&endless.url("/small.txt")).unwrap()]);
    let events: Vec<WalkEvent> = tokio::time::timeout(Duration::from_secs(10), next.collect())
        .await
        .expect("the dropped walk still holds the host's slot");
    assert_eq!(entries(&events), [endless.url("/q")]);
}

#[tokio::test]
async fn probes_obey_robots_disallow() {
    let site = TestSite::start();
    site.route("/robots.txt", Reply::ok("User-agent: *\nDisallow: /\n"));
    site.route("/sitemap.xml", Reply::ok(urlset(&pages(&site, "p", 1))));
    let w = default_walker();
    let events = walk(&w, &site.url("/")).await;
    let disallowed = events
        .iter()
        .filter(|e| matches!(e, WalkEvent::ProbeMissed { reason, .. } if reason == "disallowed by robots.txt"))
        .count();
    assert_eq!(disallowed, 8);
    assert_eq!(site.hits("/sitemap.xml"), 0);
}

/// The deadline of the back-pressure tests: ten times what reading a
/// [`BIG`]-entry document waits for the network on a loaded machine (a
/// fraction of a second), and shorter than [`STALL`].
const STALL_DEADLINE: Duration = Duration::from_secs(3);
/// How long the consumer of those tests stalls: longer than the deadline.
const STALL: Duration = Duration::from_millis(3_500);
/// Entries of their document: more than the walk and the parser buffer
/// (about 4,000), so that the body is still being read when the consumer
/// stalls.
const BIG: usize = 10_000;

#[tokio::test]
async fn a_slow_consumer_does_not_cut_a_document() {
    let site = TestSite::start();
    site.route("/big.xml", Reply::ok(urlset(&pages(&site, "p", BIG))));
    let w = walker(
        FetchConfig {
            deadline: STALL_DEADLINE,
            ..fetch_config()
        },
        WalkConfig::default(),
    );
    let mut stream = w.walk(vec![Seed::parse(&site.url("/big.xml")).unwrap()]);
    let first = stream.next().await;
    assert!(matches!(first, Some(WalkEvent::Entry { .. })));
    // The consumer stalls for longer than the deadline: back-pressure, not
    // network time.
    tokio::time::sleep(STALL).await;
    let rest: Vec<WalkEvent> = stream.collect().await;
    assert_eq!(entries(&rest).len(), BIG - 1);
    let r = report(&rest, &site.url("/big.xml"));
    assert_eq!(r.cut, None);
    assert!(r.complete());
}

#[tokio::test]
async fn an_html_page_listed_as_a_sitemap_is_a_failure() {
    let site = TestSite::start();
    site.route("/robots.txt", robots_txt("", &[site.url("/sitemap.xml")]));
    site.route(
        "/sitemap.xml",
        Reply::ok("<!DOCTYPE html><html><body>Not found</body></html>"),
    );
    let w = default_walker();
    let events = walk(&w, &site.url("/")).await;
    assert_eq!(
        failures(&events),
        [(site.url("/sitemap.xml"), "not a sitemap".to_string())]
    );
    let totals = site_done(&events);
    assert_eq!((totals.sitemaps, totals.failed), (0, 1));
}

#[tokio::test]
async fn the_last_answer_is_reported_when_a_retry_would_pass_the_deadline() {
    let site = TestSite::start();
    site.route("/busy.xml", Reply::status(429).header("Retry-After", "30"));
    let w = walker(
        FetchConfig {
            deadline: Duration::from_secs(5),
            ..fetch_config()
        },
        WalkConfig::default(),
    );
    let events = walk(&w, &site.url("/busy.xml")).await;
    assert_eq!(
        failures(&events),
        [(site.url("/busy.xml"), "HTTP 429".to_string())]
    );
    assert_eq!(site.hits("/busy.xml"), 1);

    // Nothing listens on this port: the error says so, not "deadline". The
    // port stays bound (not listening) for the whole test, so no other
    // test's server can take it meanwhile.
    let closed = tokio::net::TcpSocket::new_v4().unwrap();
    closed.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = closed.local_addr().unwrap().port();
    let w = walker(
        FetchConfig {
            // A refused connection takes milliseconds: the deadline is
            // far off, the retry's wait (5 to 15 s) beyond it.
            deadline: Duration::from_secs(5),
            backoff: Duration::from_secs(10),
            ..fetch_config()
        },
        WalkConfig::default(),
    );
    let started = Instant::now();
    let events = walk(&w, &format!("http://127.0.0.1:{port}/sitemap.xml")).await;
    let failed = failures(&events);
    assert!(failed[0].1.starts_with("connection failed"), "{failed:?}");
    // Not retried: the wait would end past the deadline.
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(closed);
}

#[tokio::test]
async fn a_redirected_robots_txt_paces_the_host_it_led_to() {
    let (a, b, config) = two_hosts();
    let b_url = |p: &str| format!("http://b.test:{}{p}", b.port());
    a.route("/robots.txt", Reply::redirect(301, &b_url("/robots.txt")));
    b.route(
        "/robots.txt",
        robots_txt(
            "User-agent: *\nCrawl-delay: 0.3\n",
            &[b_url("/1.xml"), b_url("/2.xml")],
        ),
    );
    b.route("/1.xml", Reply::ok(urlset(&[b_url("/p1")])));
    b.route("/2.xml", Reply::ok(urlset(&[b_url("/p2")])));
    let w = walker(config, WalkConfig::default());
    let events = walk(&w, &format!("http://a.test:{}/", a.port())).await;
    assert_eq!(reports(&events).len(), 2);
    let times: Vec<Instant> = b.requests().iter().map(|r| r.at).collect();
    assert_eq!(times.len(), 3);
    assert!(
        times[2] - times[1] >= CRAWL_DELAY_SEEN,
        "{:?}",
        times[2] - times[1]
    );
}

#[tokio::test]
async fn duplicate_seeds_are_walked_once() {
    let site = TestSite::start();
    site.route("/s.xml", Reply::ok(urlset(&pages(&site, "p", 1))));
    let w = default_walker();
    let seeds = vec![
        Seed::parse(&site.url("/s.xml")).unwrap(),
        Seed::parse(&site.url("/s.xml").replace("http://", "HTTP://")).unwrap(),
    ];
    let events: Vec<WalkEvent> = w.walk(seeds).collect().await;
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, WalkEvent::SiteDone(_)))
            .count(),
        1
    );
    assert_eq!(site.hits("/s.xml"), 1);
}

#[tokio::test]
async fn waiting_for_the_politeness_gate_does_not_spend_the_deadline() {
    let site = TestSite::start();
    site.route(
        "/robots.txt",
        robots_txt("", &[site.url("/1.xml"), site.url("/2.xml")]),
    );
    site.route("/1.xml", Reply::ok(urlset(&pages(&site, "a", BIG))));
    site.route("/2.xml", Reply::ok(urlset(&pages(&site, "b", 10))));
    let w = walker(
        FetchConfig {
            deadline: STALL_DEADLINE,
            per_host_in_flight: 1,
            ..fetch_config()
        },
        WalkConfig::default(),
    );
    // The consumer stalls while 1.xml holds the host's only slot: 2.xml
    // waits for it longer than its whole deadline, and must still be read.
    let mut stream = w.walk(vec![Seed::parse(&site.url("/")).unwrap()]);
    while let Some(e) = stream.next().await {
        if matches!(e, WalkEvent::Entry { .. }) {
            break;
        }
    }
    tokio::time::sleep(STALL).await;
    let rest: Vec<WalkEvent> = stream.collect().await;
    assert!(failures(&rest).is_empty(), "{:?}", failures(&rest));
    assert_eq!(entries(&rest).len(), BIG + 9);
}

#[tokio::test]
async fn an_unchanged_index_is_descended_through_remembered_children() {
    let site = TestSite::start();
    site.route_fn(
        "/index.xml",
        conditional("\"i1\"", Reply::ok("<sitemapindex/>")),
    );
    site.route("/child.xml", Reply::ok(urlset(&pages(&site, "c", 2))));
    let memory = Memory(HashMap::from([(
        site.url("/index.xml"),
        Remembered {
            validators: Validators {
                etag: Some("\"i1\"".into()),
                last_modified: None,
            },
            children: vec![url(&site.url("/child.xml"))],
            ..Remembered::default()
        },
    )]));
    let w = with_memory(memory, WalkConfig::default());
    let events = walk(&w, &site.url("/index.xml")).await;
    assert!(report(&events, &site.url("/index.xml")).not_modified);
    assert_eq!(entries(&events).len(), 2);
    assert_eq!(report(&events, &site.url("/child.xml")).depth, 1);
}

/// Counts how often the walk asks its memory.
struct CountingMemory(Arc<AtomicUsize>);

impl SitemapMemory for CountingMemory {
    fn recall(&self, _: &NormUrl) -> Option<Remembered> {
        self.0.fetch_add(1, Ordering::Relaxed);
        None
    }
}

#[tokio::test]
async fn the_memory_is_asked_once_per_sitemap() {
    let site = TestSite::start();
    site.route(
        "/index.xml",
        Reply::ok(index(&[
            (site.url("/a.xml"), Some("2024-01-01")),
            (site.url("/b.xml"), None),
        ])),
    );
    site.route("/a.xml", Reply::ok(urlset(&pages(&site, "a", 1))));
    site.route("/b.xml", Reply::ok(urlset(&pages(&site, "b", 1))));
    let asked = Arc::new(AtomicUsize::new(0));
    let w = with_memory(CountingMemory(asked.clone()), WalkConfig::default());
    let events = walk(&w, &site.url("/index.xml")).await;
    assert_eq!(reports(&events).len(), 3);
    assert_eq!(asked.load(Ordering::Relaxed), 3);
}

#[tokio::test]
async fn a_not_due_sitemap_is_not_fetched() {
    let site = TestSite::start();
    site.route(
        "/robots.txt",
        robots_txt("", &[site.url("/due.xml"), site.url("/later.xml")]),
    );
    site.route("/due.xml", Reply::ok(urlset(&pages(&site, "d", 2))));
    site.route("/later.xml", Reply::ok(urlset(&pages(&site, "l", 3))));
    let memory = Memory(HashMap::from([(site.url("/later.xml"), not_due(&[]))]));
    let w = with_memory(memory, WalkConfig::default());
    let events = walk(&w, &site.url("/")).await;
    assert_eq!(site.hits("/later.xml"), 0);
    assert_eq!(site.hits("/due.xml"), 1);
    assert_eq!(not_due_events(&events), [(site.url("/later.xml"), None, 0)]);
    assert_eq!(entries(&events), pages(&site, "d", 2));
    let totals = site_done(&events);
    assert_eq!((totals.sitemaps, totals.not_due, totals.failed), (1, 1, 0));
    let event = events
        .iter()
        .find(|e| matches!(e, WalkEvent::NotDue { .. }))
        .unwrap();
    assert_eq!(
        serde_json::to_value(event).unwrap(),
        serde_json::json!({
            "type": "not_due",
            "site": site.url("/"),
            "url": site.url("/later.xml"),
            "parent": null,
            "depth": 0,
        })
    );
    let done = serde_json::to_value(events.last().unwrap()).unwrap();
    assert_eq!(done["not_due"], 1);

    // A seed sitemap too; and no not_due field in totals without one.
    let events = walk(&w, &site.url("/later.xml")).await;
    assert_eq!(site.hits("/later.xml"), 0);
    assert_eq!(not_due_events(&events).len(), 1);
    let events = walk(&w, &site.url("/due.xml")).await;
    let done = serde_json::to_value(events.last().unwrap()).unwrap();
    assert!(done.get("not_due").is_none(), "{done}");
}

#[tokio::test]
async fn a_not_due_index_is_walked_through_its_remembered_children() {
    let site = TestSite::start();
    site.route(
        "/index.xml",
        Reply::ok(index(&[(site.url("/forgotten.xml"), None)])),
    );
    site.route("/a.xml", Reply::ok(urlset(&pages(&site, "a", 2))));
    site.route("/b.xml", Reply::ok(urlset(&pages(&site, "b", 2))));
    site.route("/c.xml", Reply::ok(urlset(&pages(&site, "c", 1))));
    site.route("/forgotten.xml", Reply::ok(urlset(&pages(&site, "f", 1))));
    let memory = Memory(HashMap::from([
        (
            site.url("/index.xml"),
            not_due(&[site.url("/a.xml"), site.url("/nested.xml")]),
        ),
        // An index within, not due either: descended through as well.
        (
            site.url("/nested.xml"),
            not_due(&[site.url("/b.xml"), site.url("/c.xml")]),
        ),
        (site.url("/c.xml"), not_due(&[])),
    ]));
    let w = with_memory(memory, WalkConfig::default());
    let events = walk(&w, &site.url("/index.xml")).await;
    assert_eq!(site.hits("/index.xml"), 0);
    assert_eq!(site.hits("/nested.xml"), 0);
    assert_eq!(site.hits("/a.xml"), 1);
    assert_eq!(site.hits("/b.xml"), 1);
    assert_eq!(site.hits("/c.xml"), 0);
    assert_eq!(site.hits("/forgotten.xml"), 0);
    let mut got = not_due_events(&events);
    got.sort();
    assert_eq!(
        got,
        [
            (site.url("/c.xml"), Some(site.url("/nested.xml")), 2),
            (site.url("/index.xml"), None, 0),
            (site.url("/nested.xml"), Some(site.url("/index.xml")), 1),
        ]
    );
    let b = report(&events, &site.url("/b.xml"));
    assert_eq!(
        (b.depth, b.parent.as_ref().map(|p| p.as_str())),
        (2, Some(site.url("/nested.xml").as_str()))
    );
    assert_eq!(entries(&events).len(), 4);
    let totals = site_done(&events);
    assert_eq!((totals.sitemaps, totals.not_due), (2, 3));
}

#[tokio::test]
async fn a_not_due_child_is_descended_through_whatever_its_lastmod_says() {
    let site = TestSite::start();
    // The index is due and read; its child's lastmod is older than our last
    // fetch (I3 would skip it), but the child is not due: it is descended
    // through, to its remembered children, without being fetched.
    site.route(
        "/index.xml",
        Reply::ok(index(&[
            (site.url("/child.xml"), Some("2020-01-01")),
            (site.url("/old.xml"), Some("2020-01-01")),
        ])),
    );
    site.route("/child.xml", Reply::ok(index(&[])));
    site.route("/leaf.xml", Reply::ok(urlset(&pages(&site, "l", 1))));
    site.route("/old.xml", Reply::ok(urlset(&pages(&site, "o", 1))));
    let fetched_at = Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000));
    let memory = Memory(HashMap::from([
        (
            site.url("/child.xml"),
            Remembered {
                fetched_at,
                ..not_due(&[site.url("/leaf.xml")])
            },
        ),
        (
            site.url("/old.xml"),
            Remembered {
                fetched_at,
                ..Remembered::default()
            },
        ),
    ]));
    let w = with_memory(memory, WalkConfig::default());
    let events = walk(&w, &site.url("/index.xml")).await;
    assert_eq!(site.hits("/child.xml"), 0);
    assert_eq!(site.hits("/leaf.xml"), 1);
    assert_eq!(site.hits("/old.xml"), 0);
    assert_eq!(skipped(&events), [(SkipReason::NotChanged, 1)]);
    assert_eq!(entries(&events), [site.url("/l/0")]);

    // Depth still applies: the not-due child is not even announced.
    let w = with_memory(
        Memory(HashMap::from([(
            site.url("/child.xml"),
            not_due(&[site.url("/leaf.xml")]),
        )])),
        WalkConfig {
            max_depth: 0,
            ..WalkConfig::default()
        },
    );
    let events = walk(&w, &site.url("/index.xml")).await;
    assert!(not_due_events(&events).is_empty());
    assert_eq!(skipped(&events), [(SkipReason::Depth, 2)]);
}

#[tokio::test]
async fn an_index_report_lists_its_children() {
    let site = TestSite::start();
    let body = index(&[
        (site.url("/b.xml"), None),
        (site.url("/a.xml"), Some("2024-01-01")),
        (site.url("/b.xml"), Some("2024-02-01")),
        (site.url("/c.xml"), None),
    ]);
    site.route_fn("/index.xml", conditional("\"i1\"", Reply::ok(body)));
    for p in ["/a.xml", "/b.xml", "/c.xml"] {
        site.route(p, Reply::ok(urlset(&[site.url(&format!("{p}/page"))])));
    }
    let w = default_walker();
    let events = walk(&w, &site.url("/index.xml")).await;
    let idx = report(&events, &site.url("/index.xml"));
    let children: Vec<&str> = idx.children.iter().map(|c| c.as_str()).collect();
    assert_eq!(
        children,
        [site.url("/b.xml"), site.url("/a.xml"), site.url("/c.xml")]
    );
    let json = serde_json::to_value(WalkEvent::SitemapFetched(Box::new(idx.clone()))).unwrap();
    assert_eq!(json["children"][1], site.url("/a.xml"));
    // A urlset lists none, and its JSON has no such field.
    let leaf = report(&events, &site.url("/a.xml"));
    assert!(leaf.children.is_empty());
    let json = serde_json::to_value(WalkEvent::SitemapFetched(Box::new(leaf.clone()))).unwrap();
    assert!(json.get("children").is_none(), "{json}");

    // A 304 reads nothing: no children reported (the remembered ones are
    // still walked).
    let memory = Memory(HashMap::from([(
        site.url("/index.xml"),
        Remembered {
            validators: idx.validators.clone(),
            children: vec![url(&site.url("/c.xml"))],
            ..Remembered::default()
        },
    )]));
    let w = with_memory(memory, WalkConfig::default());
    let events = walk(&w, &site.url("/index.xml")).await;
    let idx = report(&events, &site.url("/index.xml"));
    assert!(idx.not_modified);
    assert!(idx.children.is_empty());
    assert_eq!(site.hits("/c.xml"), 2);
}

fn cached_robots(ttl: Option<Duration>) -> WalkConfig {
    WalkConfig {
        robots_ttl: ttl,
        ..WalkConfig::default()
    }
}

#[tokio::test]
async fn robots_txt_is_fetched_once_within_its_ttl() {
    let site = TestSite::start();
    site.route(
        "/robots.txt",
        robots_txt("User-agent: *\nCrawl-delay: 0.2\n", &[site.url("/s.xml")]),
    );
    site.route("/s.xml", Reply::ok(urlset(&pages(&site, "p", 1))));
    let w = walker(
        fetch_config(),
        cached_robots(Some(Duration::from_secs(3600))),
    );
    let first = walk(&w, &site.url("/")).await;
    assert!(!robots_report(&first).from_cache);
    // The politeness gate forgets the host (as when pruned): the cached
    // report's Crawl-delay is applied again.
    let host = url(&site.url("/")).host_key();
    w.fetcher().politeness().set_crawl_delay(&host, 0.0);
    assert_eq!(w.fetcher().politeness().delay(&host), Duration::ZERO);
    // A clone shares the cache.
    let second = walk(&w.clone(), &site.url("/")).await;
    assert_eq!(site.hits("/robots.txt"), 1);
    let robots = robots_report(&second);
    assert!(robots.from_cache);
    assert!(matches!(robots.outcome, RobotsOutcome::Parsed { .. }));
    assert_eq!(robots.sitemaps, [url(&site.url("/s.xml"))]);
    assert_eq!(robots.crawl_delay, Some(0.2));
    assert_eq!(
        w.fetcher().politeness().delay(&host),
        Duration::from_millis(200)
    );
    assert_eq!(site.hits("/s.xml"), 2);
    assert_eq!(entries(&second).len(), 1);
    let json = serde_json::to_value(WalkEvent::Robots(robots.clone())).unwrap();
    assert_eq!(json["from_cache"], true);
    let json = serde_json::to_value(WalkEvent::Robots(robots_report(&first).clone())).unwrap();
    assert_eq!(json["from_cache"], false);

    // Without a ttl (the default), every walk fetches it.
    let other = TestSite::start();
    other.route("/robots.txt", Reply::ok("User-agent: *\nDisallow:\n"));
    let w = walker(fetch_config(), cached_robots(None));
    for _ in 0..2 {
        let events = walk(&w, &other.url("/")).await;
        assert!(!robots_report(&events).from_cache);
    }
    assert_eq!(other.hits("/robots.txt"), 2);
}

#[tokio::test]
async fn an_unreachable_robots_txt_falls_back_to_the_cached_copy() {
    let site = TestSite::start();
    site.route_seq(
        "/robots.txt",
        vec![robots_txt("", &[site.url("/s.xml")]), Reply::status(503)],
    );
    site.route("/s.xml", Reply::ok(urlset(&pages(&site, "p", 1))));
    let w = walker(
        fetch_config(),
        cached_robots(Some(Duration::from_millis(1))),
    );
    let first = walk(&w, &site.url("/")).await;
    assert!(!robots_report(&first).from_cache);
    tokio::time::sleep(Duration::from_millis(20)).await;
    // Expired: fetched again, 503 three times (retries), then the cache.
    let second = walk(&w, &site.url("/")).await;
    assert_eq!(site.hits("/robots.txt"), 4);
    let robots = robots_events(&second);
    assert_eq!(robots.len(), 1);
    assert!(robots[0].from_cache);
    assert!(matches!(robots[0].outcome, RobotsOutcome::Parsed { .. }));
    assert_eq!(robots[0].status, Some(200));
    assert_eq!(site.hits("/s.xml"), 2);
    assert_eq!(entries(&second).len(), 1);

    // Nothing cached: unreachable it is, and nothing is walked.
    let down = TestSite::start();
    down.route("/robots.txt", Reply::status(503));
    let events = walk(&w, &down.url("/")).await;
    let robots = robots_report(&events);
    assert!(!robots.from_cache);
    assert!(matches!(robots.outcome, RobotsOutcome::Unreachable { .. }));
    assert_eq!(down.hits("/sitemap.xml"), 0);
}

#[tokio::test]
async fn cached_robots_without_sitemaps_probes_only_what_the_memory_recalls() {
    let site = TestSite::start();
    site.route("/robots.txt", Reply::ok("User-agent: *\nDisallow:\n"));
    site.route("/sitemap.xml", Reply::ok(urlset(&pages(&site, "p", 2))));
    // The store remembers the probe that was a sitemap.
    let memory = Memory(HashMap::from([(
        site.url("/sitemap.xml"),
        Remembered::default(),
    )]));
    let w = with_memory(memory, cached_robots(Some(Duration::from_secs(3600))));
    let first = walk(&w, &site.url("/")).await;
    assert_eq!(entries(&first).len(), 2);
    for path in DEFAULT_PROBE_PATHS {
        assert_eq!(site.hits(path), 1, "{path}");
    }
    let second = walk(&w, &site.url("/")).await;
    assert!(robots_report(&second).from_cache);
    assert_eq!(site.hits("/robots.txt"), 1);
    assert_eq!(site.hits("/sitemap.xml"), 2);
    for path in DEFAULT_PROBE_PATHS.iter().filter(|p| **p != "/sitemap.xml") {
        assert_eq!(site.hits(path), 1, "{path} probed again");
    }
    assert_eq!(report(&second, &site.url("/sitemap.xml")).via, Via::Probe);
    assert_eq!(entries(&second).len(), 2);
    assert!(
        !second
            .iter()
            .any(|e| matches!(e, WalkEvent::ProbeMissed { .. }))
    );
}
