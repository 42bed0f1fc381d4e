//! The queue's promises, as a new user meets them, through the binary:
//! one order whatever `-n` (a site whose one important page sits in its
//! last sitemap), pushes in the next lease, the lease's bounds as usage
//! errors, last statuses and the gone/retired state the same in every view,
//! and an ingest that counts the entries a file lists twice.

mod common;

use std::path::Path;

use common::daemon::Daemon;
use common::{json_lines, run, run_with_input, stderr, stdout, with_store};
use serde_json::{Value, json};
use sitemapd_testsite::{Reply, TestSite};

/// robots.txt (Crawl-delay: 1) -> an index of three sitemaps: 200 old
/// pages in each of the first two, 49 pages and `/zz-important.html`
/// (priority 1.0, a recent lastmod) in the third.
fn site() -> TestSite {
    let site = TestSite::start();
    let urlset = |urls: String| {
        format!(r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>"#)
    };
    let old = |dir: &str, n: usize| -> String {
        (0..n)
            .map(|i| {
                format!(
                    "<url><loc>{}</loc><lastmod>2020-01-01</lastmod></url>",
                    site.url(&format!("/{dir}/p{i:03}.html"))
                )
            })
            .collect()
    };
    site.route("/a1.xml", Reply::ok(urlset(old("a1", 200))));
    site.route("/a2.xml", Reply::ok(urlset(old("a2", 200))));
    let important = format!(
        "<url><loc>{}</loc><priority>1.0</priority><lastmod>2026-11-20</lastmod></url>",
        site.url("/zz-important.html")
    );
    site.route("/a3.xml", Reply::ok(urlset(old("a3", 49) + &important)));
    let index: String = ["/a1.xml", "/a2.xml", "/a3.xml"]
        .iter()
        .map(|p| format!("<sitemap><loc>{}</loc></sitemap>", site.url(p)))
        .collect();
    site.route(
        "/index.xml",
        Reply::ok(format!(
            r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{index}</sitemapindex>"#
        )),
    );
    site.route(
        "/robots.txt",
        Reply::ok(format!(
            "User-agent: *\nCrawl-delay: 1\nSitemap: {}\n",
            site.url("/index.xml")
        )),
    );
    site
}

/// `from`'s files and folders into `to`.
fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// `ingest` of the whole site into the store at `dir`: what it said.
fn ingest(dir: &Path, site: &TestSite) -> String {
    let o = run(&with_store(
        dir,
        &[
            "ingest",
            "--allow-private",
            "--min-delay",
            "0",
            &site.url("/"),
        ],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    stderr(&o)
}

/// `queue -n n`: the URLs, in order.
fn queue(dir: &Path, n: usize) -> Vec<String> {
    let n = n.to_string();
    let o = run(&with_store(dir, &["queue", "-n", &n]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    json_lines(&stdout(&o))
        .iter()
        .map(|l| l["url"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_order_is_one_whatever_n() {
    let site = site();
    let dir = tempfile::tempdir().unwrap();
    let said = ingest(dir.path(), &site);
    assert!(said.contains("450 entries, 450 new"), "{said}");
    let all = queue(dir.path(), 1000);
    assert_eq!(all.len(), 450);
    assert_eq!(all[0], site.url("/zz-important.html"));
    for k in [1, 2, 5, 10, 50, 100] {
        assert_eq!(queue(dir.path(), k), all[..k], "queue -n {k}");
    }
    // A lease hands out the same first URL, and the first k of a lease of
    // n (the store as it was: a copy).
    let copy = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), copy.path());
    let lease = |dir: &Path, n: &str| -> Vec<String> {
        let o = run(&with_store(
            dir,
            &["queue", "-n", n, "--lease", "60", "--per-host", "10"],
        ));
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        json_lines(&stdout(&o))
            .iter()
            .map(|l| l["url"].as_str().unwrap().to_string())
            .collect()
    };
    let ten = lease(dir.path(), "10");
    let three = lease(copy.path(), "3");
    assert_eq!(ten[0], site.url("/zz-important.html"));
    assert_eq!(three, ten[..3]);
}

#[test]
fn a_push_is_in_the_next_lease() {
    let site = site();
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(&dir.path().join("store"), &[&site.url("/")]);
    d.wait_for("the site's URLs", |d| d.active() == 450);
    let known = site.url("/a1/p150.html");
    let new = site.url("/pushed-new.html");
    let answer = d.post("/v1/notify", json!({ "urls": [known, new] }));
    assert_eq!(answer, json!({ "added": 1, "known": 1 }));
    let leased = d.post("/v1/lease", json!({ "n": 5 }));
    let urls: Vec<&str> = leased["urls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["url"].as_str().unwrap())
        .collect();
    assert_eq!(urls.len(), 5, "{leased}");
    let mut first_two = urls[..2].to_vec();
    first_two.sort();
    let mut pushed = vec![known.as_str(), new.as_str()];
    pushed.sort();
    assert_eq!(first_two, pushed, "the pushes first: {leased}");
    assert!(
        leased["urls"].as_array().unwrap()[..2]
            .iter()
            .all(|l| l["due_reason"] == "notified")
    );
}

#[test]
fn the_lease_s_bounds_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().to_str().unwrap();
    for (args, says) in [
        (&["-n", "5", "--lease", "99999999999"][..], "604800"),
        (&["-n", "5", "--lease", "604801"][..], "604800"),
        (&["-n", "5", "--lease", "0"][..], "1..=604800"),
        (&["-n", "0"][..], "1.."),
    ] {
        let o = run(&[&["queue", "--store", store][..], args].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}

/// Every outcome records its status; a 410 shows the URL gone and retired
/// alike in `export`, `/v1/urls` and `stats`.
#[test]
fn statuses_and_the_gone_state_show_the_same_everywhere() {
    let site = site();
    let dir = tempfile::tempdir().unwrap();
    ingest(dir.path(), &site);
    let (a, b, c) = (
        site.url("/a1/p000.html"),
        site.url("/a1/p001.html"),
        site.url("/a1/p002.html"),
    );
    let report = format!(
        "{}\n{}\n{}\n",
        json!({ "url": a, "outcome": "changed" }),
        json!({ "url": b, "outcome": "not-modified" }),
        json!({ "url": c, "outcome": "gone", "status": 410 }),
    );
    let o = run_with_input(&with_store(dir.path(), &["complete"]), report.as_bytes());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(&with_store(dir.path(), &["export"]));
    let exported: Vec<Value> = json_lines(&stdout(&o));
    let view = |url: &str| exported.iter().find(|v| v["url"] == url).unwrap().clone();
    assert_eq!(view(&a)["last_status"], 200);
    assert_eq!(view(&b)["last_status"], 304);
    assert_eq!(
        (
            view(&c)["status"].clone(),
            view(&c)["retired"].clone(),
            view(&c)["last_status"].clone()
        ),
        (json!("gone"), json!(true), json!(410))
    );
    let o = run(&with_store(dir.path(), &["stats", "--json"]));
    let stats: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        (stats["active"].clone(), stats["gone"].clone()),
        (json!(449), json!(1))
    );
    drop(site);
    let d = Daemon::start(&dir.path().join("."), &[]);
    let record = d.get(&format!("/v1/urls?url={c}"))["record"].clone();
    assert_eq!(
        (record["status"].clone(), record["retired"].clone()),
        (json!("gone"), json!(true))
    );
    assert_eq!(d.get("/v1/stats")["stats"]["gone"], 1);
    assert_eq!(d.active(), 449);
}

/// A sitemap that lists 381 of its URLs twice: the summary says so.
#[test]
fn an_ingest_counts_the_entries_a_file_lists_twice() {
    let dir = tempfile::tempdir().unwrap();
    let file = format!(
        "{}/fixtures/corpus/urlset/adobe__theblog__sitemap.xml",
        env!("CARGO_MANIFEST_DIR")
    );
    let o = run(&with_store(dir.path(), &["ingest", &file]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("12964 entries, 12583 new, 0 updated, 0 unchanged, 381 duplicate"),
        "{}",
        stderr(&o)
    );
}
