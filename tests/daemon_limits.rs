//! The API's bounds: stored strings no longer
//! than a sitemap could give them, list routes in pages, per-host stats only
//! on request.

mod common;

use common::daemon::Daemon;
use serde_json::{Value, json};

#[test]
fn overlong_strings_are_refused_with_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(&dir.path().join("store"), &[]);
    let long_url = format!("https://a.example/{}", "p".repeat(4_000));
    let (status, e) = d.call("POST", "/v1/notify", Some(json!({ "urls": [long_url] })));
    assert_eq!(status, 400, "{e}");
    assert!(e["error"].as_str().unwrap().contains("2048"), "{e}");
    assert!(e["error"].as_str().unwrap().len() < 400, "{e}");
    let long_label = format!("https://{}.example/", "h".repeat(300));
    let (status, e) = d.call("POST", "/v1/notify", Some(json!({ "urls": [long_label] })));
    assert_eq!(status, 400, "{e}");
    assert_eq!(d.active(), 0, "nothing stored");

    d.post("/v1/notify", json!({ "urls": ["https://a.example/x"] }));
    let item = |etag: String| json!([{ "url": "https://a.example/x", "outcome": "changed", "etag": etag }]);
    let (status, e) = d.call("POST", "/v1/complete", Some(item("e".repeat(100_000))));
    assert_eq!(status, 400, "{e}");
    assert!(e["error"].as_str().unwrap().contains("at most 1024"), "{e}");
    d.post("/v1/complete", item("\"ok\"".into()));
    let record = d.get("/v1/urls?url=https://a.example/x")["record"].clone();
    assert_eq!(record["etag"], "\"ok\"");
}

fn seeds(d: &Daemon, route: &str) -> Vec<String> {
    let mut all = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let path = match &after {
            None => format!("{route}?limit=2"),
            Some(a) => format!("{route}?limit=2&after={a}"),
        };
        let page: Value = d.get(&path);
        let items = page["sites"].as_array().unwrap();
        assert!(items.len() <= 2);
        all.extend(
            items
                .iter()
                .map(|s| s["site"].as_str().unwrap().to_string()),
        );
        match page["next"].as_str() {
            Some(next) => after = Some(next.to_string()),
            None => return all,
        }
    }
}

#[test]
fn lists_come_in_pages_and_per_host_stats_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let site = sitemapd_testsite::TestSite::start();
    let d = Daemon::start(&dir.path().join("store"), &[]);
    let added: Vec<String> = (0..5).map(|i| site.url(&format!("/s{i}.xml"))).collect();
    d.post("/v1/sites", json!({ "sites": added }));
    let listed = seeds(&d, "/v1/sites");
    assert_eq!(listed, added, "every site once, in order, over three pages");
    for bad in ["0", "10001", "x"] {
        let (status, e) = d.call("GET", &format!("/v1/sites?limit={bad}"), None);
        assert_eq!(status, 400, "limit={bad}: {e}");
        assert!(e["error"].is_string(), "{e}");
    }

    d.post(
        "/v1/notify",
        json!({ "urls": ["https://a.example/1", "https://b.example/1", "https://c.example/1"] }),
    );
    let stats = d.get("/v1/stats");
    assert_eq!(stats["hosts"], 3);
    assert!(stats["stats"].get("hosts").is_none(), "opt-in: {stats}");
    let first = d.get("/v1/stats?hosts=true&limit=2");
    let names: Vec<&String> = first["stats"]["hosts"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(names, ["a.example", "b.example"]);
    assert_eq!(first["next"], "b.example");
    let rest = d.get("/v1/stats?hosts=true&limit=2&after=b.example");
    let names: Vec<&String> = rest["stats"]["hosts"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["c.example"]);
    assert!(rest["next"].is_null());
}

/// A site's sitemaps in pages: flat, in URL order, each naming its parent.
#[test]
fn a_sites_sitemaps_come_in_pages() {
    let site = common::indexed_site(3, 2);
    let dir = tempfile::tempdir().unwrap();
    let root = site.url("/");
    let d = Daemon::start(&dir.path().join("store"), &[&root]);
    d.wait_for("the walk", |d| d.active() == 6);
    let tree = d.get(&format!("/v1/sitemaps?site={root}"));
    assert_eq!(
        tree["sitemaps"].as_array().unwrap().len(),
        1,
        "one index: {tree}"
    );
    let mut urls = Vec::new();
    let mut path = format!("/v1/sitemaps?site={root}&limit=2");
    loop {
        let page = d.get(&path);
        let nodes = page["sitemaps"].as_array().unwrap();
        assert!(nodes.len() <= 2, "{page}");
        for n in nodes {
            assert!(n.get("children").is_none(), "flat: {n}");
            urls.push(n["url"].as_str().unwrap().to_string());
        }
        match page["next"].as_str() {
            Some(next) => path = format!("/v1/sitemaps?site={root}&limit=2&after={next}"),
            None => break,
        }
    }
    let mut sorted = urls.clone();
    sorted.sort();
    assert_eq!(urls, sorted);
    assert_eq!(urls.len(), 4, "the index and its 3 sitemaps: {urls:?}");
}
