//! The address guard on every path into a fetch (security): a
//! robots.txt, a sitemap named by a robots.txt `Sitemap:` line, an index
//! child, a redirect hop (of a sitemap and of a robots.txt), each pointing at
//! host *names* that resolve to loopback or unspecified addresses, and at
//! literal private addresses.
//!
//! | Path into a fetch | Test |
//! |---|---|
//! | a site's robots.txt (the seed's host is a name resolving privately) | [`a_site_whose_name_resolves_privately_is_not_contacted`] |
//! | a seed sitemap (literal 10.x, a name resolving to 127.0.0.1, loopback) | `walk.rs`: `address_guard_refuses_private_literals_and_names_without_connecting` |
//! | robots.txt `Sitemap:` lines | [`robots_sitemap_lines_to_private_addresses_are_refused`] |
//! | sitemap index children | [`index_children_at_private_addresses_are_refused`] |
//! | redirects, at every hop, of sitemaps and robots.txt | [`redirects_to_private_addresses_are_refused_at_every_hop`] |
//! | sites added through the daemon API | `tests/hostile_daemon.rs`: `sites_added_through_the_api_pass_the_guard` |
//! | the address a response came from, checked again | [`a_response_from_a_private_peer_is_refused`] |
//!
//! The guard is on in these tests (`allow_private: false`). To serve the
//! first, legitimate document from the loopback test server, its one
//! address, 127.0.0.1, is let through ([`FetchConfig::allow_addresses`]);
//! nothing else is. The names resolve (through the fetcher's `resolve`
//! table, like `--resolve`) to other loopback addresses, `::1`,
//! `::ffff:127.0.0.1` and `0.0.0.0`: should the guard ever let one through,
//! the connection lands on this machine (`0.0.0.0` and the IPv4-mapped
//! address even on the test server itself, which would count the request).
//! Literal private addresses (`10.0.0.1`, `169.254.169.254`, `192.168.0.1`)
//! are refused before any connection is attempted.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use sitemapd_discovery::walk::RobotsOutcome;
use sitemapd_discovery::{
    FetchConfig, FetchError, Fetcher, Validators, WalkConfig, WalkEvent, Walker,
};
use sitemapd_parser::NormUrl;
use sitemapd_testsite::{Reply, TestSite};

mod common;
use common::{failures, site_done, urlset, walk};

/// Names and where they resolve: all somewhere on this machine, none of
/// them the test server's 127.0.0.1.
const NAMES: [(&str, &str); 4] = [
    ("loopback.test", "127.0.0.2"),
    ("six.test", "::1"),
    ("mapped.test", "::ffff:127.0.0.1"),
    ("zero.test", "0.0.0.0"),
];

/// The time a walk of refusals may take: far below the 15 s a single retry
/// would wait, and far above the few milliseconds it takes (a loaded machine
/// adds at most a second or so).
const NOT_RETRIED: Duration = Duration::from_secs(10);

fn guarded() -> Walker {
    let resolve: HashMap<String, Vec<IpAddr>> = NAMES
        .iter()
        .map(|(name, ip)| (name.to_string(), vec![ip.parse().unwrap()]))
        .collect();
    let config = FetchConfig {
        allow_private: false,
        allow_addresses: vec!["127.0.0.1".parse().unwrap()],
        resolve,
        min_delay: Duration::ZERO,
        // A refusal must not be retried: with a 30 s backoff (15 to 45 s
        // with its jitter, within the deadline) a retry shows, far beyond
        // the [`NOT_RETRIED`] the tests allow.
        backoff: Duration::from_secs(30),
        deadline: Duration::from_secs(120),
        ..FetchConfig::default()
    };
    Walker::new(Fetcher::new(config).unwrap(), WalkConfig::default())
}

/// Every private target for `path` on the test server's port: the names,
/// the same addresses as literals, and literal private addresses elsewhere.
fn targets(site: &TestSite, path: &str) -> Vec<String> {
    let port = site.port();
    let mut out: Vec<String> = NAMES
        .iter()
        .map(|(name, _)| format!("http://{name}:{port}{path}"))
        .collect();
    out.extend([
        format!("http://127.0.0.2:{port}{path}"),
        format!("http://[::1]:{port}{path}"),
        format!("http://[::ffff:127.0.0.1]:{port}{path}"),
        format!("http://0.0.0.0:{port}{path}"),
        // 127.0.0.3 written as one number (WHATWG URL hosts): still refused.
        format!("http://2130706435:{port}{path}"),
        format!("http://10.0.0.1{path}"),
        format!("http://169.254.169.254/latest/meta-data{path}"),
        format!("http://192.168.0.1:8080{path}"),
    ]);
    out
}

/// Each target failed with the guard's refusal, once.
#[track_caller]
fn all_refused(events: &[WalkEvent], targets: &[String]) {
    let failed: HashMap<String, String> = failures(events).into_iter().collect();
    for target in targets {
        let normalised = sitemapd_parser::NormUrl::parse(target).unwrap().to_string();
        let error = failed
            .get(&normalised)
            .unwrap_or_else(|| panic!("{target} did not fail: {failed:#?}"));
        assert!(
            error.starts_with("address guard refused"),
            "{target}: {error}"
        );
    }
}

#[tokio::test]
async fn a_site_whose_name_resolves_privately_is_not_contacted() {
    let site = TestSite::start();
    site.route("/robots.txt", Reply::ok("Sitemap: /landed.xml\n"));
    site.route("/landed.xml", Reply::ok(urlset(&[])));
    let w = guarded();
    let started = Instant::now();
    for (name, _) in NAMES {
        let events = walk(&w, &format!("http://{name}:{}/", site.port())).await;
        let robots = events
            .iter()
            .find_map(|e| match e {
                WalkEvent::Robots(r) => Some(r),
                _ => None,
            })
            .unwrap();
        let RobotsOutcome::Unreachable { reason } = &robots.outcome else {
            panic!("{name}: {:?}", robots.outcome)
        };
        assert!(
            reason.starts_with("address guard refused"),
            "{name}: {reason}"
        );
        assert!(reason.contains(name), "{name}: {reason}");
        // Unreachable robots.txt: nothing else is tried (no probes).
        assert_eq!(site_done(&events).sitemaps, 0);
    }
    assert_eq!(site.connections(), 0, "the guard let a connection through");
    // Refused at once: not retried after a backoff.
    assert!(started.elapsed() < NOT_RETRIED, "{:?}", started.elapsed());
}

#[tokio::test]
async fn robots_sitemap_lines_to_private_addresses_are_refused() {
    let site = TestSite::start();
    let evil = targets(&site, "/landed.xml");
    let mut robots = String::new();
    for t in &evil {
        robots.push_str(&format!("Sitemap: {t}\n"));
    }
    robots.push_str(&format!("Sitemap: {}\n", site.url("/good.xml")));
    site.route("/robots.txt", Reply::ok(robots));
    site.route("/good.xml", Reply::ok(urlset(&[site.url("/page")])));
    site.route("/landed.xml", Reply::ok(urlset(&[site.url("/landed")])));
    let w = guarded();
    let started = Instant::now();
    let events = walk(&w, &site.url("/")).await;
    all_refused(&events, &evil);
    assert_eq!(site.hits("/landed.xml"), 0);
    let totals = site_done(&events);
    assert_eq!((totals.sitemaps, totals.failed), (1, evil.len() as u64));
    assert!(started.elapsed() < NOT_RETRIED, "{:?}", started.elapsed());
}

#[tokio::test]
async fn index_children_at_private_addresses_are_refused() {
    let site = TestSite::start();
    let evil = targets(&site, "/landed.xml");
    let mut index =
        String::from(r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#);
    for t in evil.iter().chain([&site.url("/good.xml")]) {
        index.push_str(&format!("<sitemap><loc>{t}</loc></sitemap>"));
    }
    index.push_str("</sitemapindex>");
    site.route(
        "/robots.txt",
        Reply::ok(format!("Sitemap: {}\n", site.url("/index.xml"))),
    );
    site.route("/index.xml", Reply::ok(index));
    site.route("/good.xml", Reply::ok(urlset(&[site.url("/page")])));
    site.route("/landed.xml", Reply::ok(urlset(&[])));
    // Children on other hosts are out of the index's scope (I4) unless
    // cross-submission allows them: scope off, so that only the guard stands
    // between the index and its children.
    let w = {
        let base = guarded();
        Walker::new(
            base.fetcher().clone(),
            WalkConfig {
                parse: sitemapd_parser::ParseOptions {
                    scope: sitemapd_parser::ScopeMode::None,
                    ..Default::default()
                },
                ..WalkConfig::default()
            },
        )
    };
    let events = walk(&w, &site.url("/")).await;
    all_refused(&events, &evil);
    assert_eq!(site.hits("/landed.xml"), 0);
    let totals = site_done(&events);
    assert_eq!((totals.sitemaps, totals.failed), (2, evil.len() as u64));
}

#[tokio::test]
async fn redirects_to_private_addresses_are_refused_at_every_hop() {
    let site = TestSite::start();
    let evil = targets(&site, "/landed.xml");
    let mut robots = String::new();
    let mut listed = Vec::new();
    for (i, target) in evil.iter().enumerate() {
        // A chain: /r{i}/0 -> /r{i}/1 -> the private target.
        site.route(
            &format!("/r{i}/0"),
            Reply::redirect(301, &format!("/r{i}/1")),
        );
        site.route(&format!("/r{i}/1"), Reply::redirect(302, target));
        let first = site.url(&format!("/r{i}/0"));
        robots.push_str(&format!("Sitemap: {first}\n"));
        listed.push(first);
    }
    robots.push_str(&format!("Sitemap: {}\n", site.url("/good.xml")));
    site.route("/robots.txt", Reply::ok(robots));
    site.route("/good.xml", Reply::ok(urlset(&[site.url("/page")])));
    site.route("/landed.xml", Reply::ok(urlset(&[])));
    let w = guarded();
    let events = walk(&w, &site.url("/")).await;
    // Failed as the sitemaps listed, refused at the third hop.
    let failed: HashMap<String, String> = failures(&events).into_iter().collect();
    for (first, target) in listed.iter().zip(&evil) {
        let error = &failed[first];
        assert!(
            error.starts_with("address guard refused"),
            "{target}: {error}"
        );
    }
    for i in 0..evil.len() {
        assert_eq!(site.hits(&format!("/r{i}/1")), 1, "hop 2 of chain {i}");
    }
    assert_eq!(site.hits("/landed.xml"), 0);
    let totals = site_done(&events);
    assert_eq!((totals.sitemaps, totals.failed), (1, evil.len() as u64));

    // A robots.txt redirected to a private address: unreachable, and
    // nothing probed.
    let moved = TestSite::start();
    for (i, target) in targets(&moved, "/robots.txt").iter().enumerate() {
        moved.route("/robots.txt", Reply::redirect(301, target));
        let events = walk(&w, &moved.url("/")).await;
        let robots = events
            .iter()
            .find_map(|e| match e {
                WalkEvent::Robots(r) => Some(r),
                _ => None,
            })
            .unwrap();
        assert!(
            matches!(&robots.outcome, RobotsOutcome::Unreachable { reason } if reason.starts_with("address guard refused")),
            "{target}: {:?}",
            robots.outcome
        );
        assert_eq!(moved.hits("/robots.txt"), i + 1, "{target}: retried");
    }
    assert_eq!(moved.hits("/sitemap.xml"), 0);
}

/// The last of the guard's three checks: the address the response came
/// from. Names go through the guarded resolver, which never hands the
/// connector a forbidden address, so this check only ever sees what got
/// past it; to show it, the name `public.test` is resolved by the HTTP
/// client itself ([`FetchConfig::test_unguarded_resolve`], for tests only),
/// to the test server's 127.0.0.1, which is not let through. The request
/// goes out (the check is on the response), but the response is refused:
/// its body is not read and its redirect is not followed. Only an address
/// let through ([`FetchConfig::allow_addresses`]) is answered.
#[tokio::test]
async fn a_response_from_a_private_peer_is_refused() {
    let site = TestSite::start();
    site.route("/sitemap.xml", Reply::ok(urlset(&[site.url("/page")])));
    site.route("/moved.xml", Reply::redirect(301, "/sitemap.xml"));
    let loopback: IpAddr = "127.0.0.1".parse().unwrap();
    let fetcher = |allow: Vec<IpAddr>| {
        Fetcher::new(FetchConfig {
            allow_private: false,
            allow_addresses: allow,
            test_unguarded_resolve: HashMap::from([("public.test".to_string(), vec![loopback])]),
            min_delay: Duration::ZERO,
            // A refusal must not be retried (the server would count it).
            backoff: Duration::from_millis(10),
            ..FetchConfig::default()
        })
        .unwrap()
    };
    let url =
        |path: &str| NormUrl::parse(&format!("http://public.test:{}{path}", site.port())).unwrap();
    let guarded = fetcher(Vec::new());
    for path in ["/sitemap.xml", "/moved.xml"] {
        let refused = guarded
            .get(&url(path), &Validators::default())
            .await
            .unwrap_err();
        let FetchError::Refused(why) = &refused else {
            panic!("{path}: {refused:?}")
        };
        assert_eq!(
            why,
            &format!("{} connected to 127.0.0.1 (loopback)", url(path)),
            "{path}"
        );
        assert!(refused.to_string().starts_with("address guard refused"));
    }
    // Each asked for once: neither retried, and the redirect to
    // /sitemap.xml not followed.
    assert_eq!((site.hits("/sitemap.xml"), site.hits("/moved.xml")), (1, 1));

    // 127.0.0.1 let through: the same fetch is answered.
    let fetched = fetcher(vec![loopback])
        .get(&url("/moved.xml"), &Validators::default())
        .await
        .unwrap();
    assert_eq!(fetched.status, 200);
    assert_eq!(fetched.url, url("/sitemap.xml"));
}
