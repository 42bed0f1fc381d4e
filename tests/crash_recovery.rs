//! Crash recovery: `kill -9` of `sitemapd ingest` and of `sitemapd daemon`
//! at 50 random points each, during ingest and during lease/complete
//! traffic. After each kill the store opens and `stats --check` passes; a
//! resumed run (the same command again) ends with exactly the URL set a
//! clean run gives; every lease and completion the daemon acknowledged
//! survives the kill; and once the crawler has caught up no URL is left
//! leased.
//!
//! The kill points come from a seeded generator: `SITEMAPD_CRASH_SEED=N`
//! replays a run (the seed in use is printed).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::daemon::{Daemon, TOKEN};
use common::{bin, indexed_site, json_lines, run, stderr, stdout};
use serde_json::{Value, json};
use sitemapd_testsite::client;

/// Kill points per test.
const KILLS: usize = 50;

fn rng() -> fastrand::Rng {
    let seed = std::env::var("SITEMAPD_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_261_122);
    eprintln!("kill points from SITEMAPD_CRASH_SEED={seed}");
    fastrand::Rng::with_seed(seed)
}

fn store_arg(dir: &Path) -> [&str; 2] {
    ["--store", dir.to_str().unwrap()]
}

/// `stats --check` passes on the store.
fn assert_consistent(dir: &Path, what: &str) {
    let o = run(&[&["stats", "--check"][..], &store_arg(dir)].concat());
    assert_eq!(
        o.status.code(),
        Some(0),
        "{what}: stats --check failed:\n{}{}",
        stdout(&o),
        stderr(&o)
    );
}

/// Every exported row, by URL.
fn export(dir: &Path) -> BTreeMap<String, Value> {
    let o = run(&[&["export"][..], &store_arg(dir)].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    json_lines(&stdout(&o))
        .into_iter()
        .map(|row| (row["url"].as_str().unwrap().to_string(), row))
        .collect()
}

/// The URL set of a store: each URL with what its sitemaps said of it.
fn url_set(dir: &Path) -> BTreeMap<String, Value> {
    export(dir)
        .into_iter()
        .map(|(url, r)| {
            let said = json!([r["lastmod"], r["changefreq"], r["priority"], r["retired"]]);
            (url, said)
        })
        .collect()
}

fn leased_count(dir: &Path) -> u64 {
    let o = run(&[&["stats", "--json"][..], &store_arg(dir)].concat());
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["leased"].as_u64().unwrap()
}

#[test]
fn kill_9_of_ingest_at_50_random_points() {
    let site = indexed_site(6, 1_000);
    let root = site.url("/");
    let ingest = |dir: &Path| {
        let mut cmd = bin();
        cmd.args(["ingest", "--allow-private", "--min-delay", "0", &root])
            .args(store_arg(dir));
        cmd
    };
    let clean = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let o = ingest(clean.path()).output().unwrap();
    let full = started.elapsed();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let reference = url_set(clean.path());
    assert_eq!(reference.len(), 6_000);

    let mut rng = rng();
    // Five stores, ten kills each, then the same command to the end.
    for store in 0..KILLS / 10 {
        let dir = tempfile::tempdir().unwrap();
        for k in 0..10 {
            let at = Duration::from_millis(rng.u64(0..=full.as_millis() as u64));
            let mut child = ingest(dir.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(at);
            let _ = child.kill(); // SIGKILL
            let _ = child.wait();
            assert_consistent(dir.path(), &format!("store {store}, kill {k} at {at:?}"));
        }
        let o = ingest(dir.path()).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert_consistent(dir.path(), &format!("store {store}, resumed"));
        assert!(
            url_set(dir.path()) == reference,
            "store {store}: the resumed run's URL set differs from a clean run's"
        );
    }
}

/// What the daemon acknowledged to the crawler.
#[derive(Default)]
struct Ledger {
    /// Completions answered 200, per URL.
    completed: HashMap<String, u64>,
    /// Leases answered 200 and not completed since: the lease's expiry.
    leased: HashMap<String, i64>,
}

/// A crawler: lease 100 (ttl 2 s), complete them not-modified, until told
/// to stop or the daemon stops answering.
fn crawler(
    daemon: &Daemon,
    ledger: Arc<std::sync::Mutex<Ledger>>,
    stop: Arc<AtomicBool>,
) -> JoinHandle<()> {
    let addr = daemon.addr;
    std::thread::spawn(move || {
        // The answer, if the daemon gave one (None: it is gone).
        let call = |path: &str, body: Value| -> Option<Value> {
            let body = body.to_string();
            let r = client::request(addr, "POST", path, Some(TOKEN), Some(body.as_bytes())).ok()?;
            assert_eq!(r.status, 200, "{path}: {}", r.text());
            Some(serde_json::from_str(&r.text()).unwrap())
        };
        while !stop.load(Ordering::Relaxed) {
            let Some(v) = call("/v1/lease", json!({ "n": 100, "ttl_secs": 2 })) else {
                return;
            };
            let urls: Vec<(String, i64)> = v["urls"]
                .as_array()
                .unwrap()
                .iter()
                .map(|u| {
                    let url = u["url"].as_str().unwrap().to_string();
                    (url, u["expires"].as_i64().unwrap())
                })
                .collect();
            if urls.is_empty() {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            ledger.lock().unwrap().leased.extend(urls.iter().cloned());
            let items: Vec<Value> = urls
                .iter()
                .map(|(u, _)| json!({ "url": u, "outcome": "not-modified" }))
                .collect();
            let Some(done) = call("/v1/complete", Value::Array(items)) else {
                return;
            };
            assert_eq!(done["completed"], urls.len(), "{done}");
            let mut ledger = ledger.lock().unwrap();
            for (url, _) in urls {
                ledger.leased.remove(&url);
                *ledger.completed.entry(url).or_default() += 1;
            }
        }
    })
}

/// Every acknowledged completion is in the store, and every acknowledged
/// lease not completed since is either still there (due at its expiry,
/// reason lease-expired) or was completed after all (the answer lost).
fn assert_acknowledged_survive(dir: &Path, ledger: &Ledger, what: &str) {
    let rows = export(dir);
    for (url, n) in &ledger.completed {
        let fetches = rows[url]["fetches"].as_u64().unwrap();
        assert!(
            fetches >= *n,
            "{what}: {url}: {n} completions acknowledged, {fetches} stored"
        );
    }
    for (url, expires) in &ledger.leased {
        let row = &rows[url];
        let completed = ledger.completed.get(url).copied().unwrap_or(0);
        let kept = row["reason"] == "lease-expired" && row["due"] == *expires;
        let completed_after_all = row["fetches"].as_u64().unwrap() > completed;
        assert!(
            kept || completed_after_all,
            "{what}: lease of {url} lost: {row}"
        );
    }
}

#[test]
fn kill_9_of_the_daemon_at_50_random_points() {
    let site = indexed_site(3, 1_000);
    let root = site.url("/");
    let args = [
        "--lease-delay",
        "0",
        "--per-host",
        "1000",
        "--lease-ttl",
        "2",
        &root,
    ];
    let all_in = |d: &Daemon| d.active() == 3_000;

    // A clean run: the reference URL set, and how long the first ingest takes.
    let clean = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let d = Daemon::start(clean.path(), &args);
    d.wait_for("the first ingest", all_in);
    let ingest_time = started.elapsed();
    assert!(d.terminate().0.success());
    let reference = url_set(clean.path());
    assert_eq!(reference.len(), 3_000);

    let mut rng = rng();
    // Half the kills during the first ingest of a new store, each followed
    // by the same command to the end.
    for k in 0..KILLS / 2 {
        let dir = tempfile::tempdir().unwrap();
        let at = Duration::from_millis(rng.u64(0..=ingest_time.as_millis() as u64));
        let d = Daemon::start(dir.path(), &args);
        std::thread::sleep(at);
        d.kill_9();
        let what = format!("ingest kill {k} at {at:?}");
        assert_consistent(dir.path(), &what);
        let d = Daemon::start(dir.path(), &args);
        d.wait_for("the resumed ingest", all_in);
        assert!(d.terminate().0.success());
        assert_consistent(dir.path(), &what);
        assert!(
            url_set(dir.path()) == reference,
            "{what}: the resumed run's URL set differs from a clean run's"
        );
    }

    // The other half during lease/complete traffic on one store.
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(dir.path(), &args);
    d.wait_for("the first ingest", all_in);
    assert!(d.terminate().0.success());
    let ledger = Arc::new(std::sync::Mutex::new(Ledger::default()));
    for k in 0..KILLS / 2 {
        let at = Duration::from_millis(rng.u64(100..=1_500));
        let d = Daemon::start(dir.path(), &args);
        let stop = Arc::new(AtomicBool::new(false));
        let worker = crawler(&d, ledger.clone(), stop.clone());
        std::thread::sleep(at);
        d.kill_9();
        worker.join().unwrap();
        let what = format!("traffic kill {k} at {at:?}");
        assert_consistent(dir.path(), &what);
        assert_acknowledged_survive(dir.path(), &ledger.lock().unwrap(), &what);
    }
    assert!(
        !ledger.lock().unwrap().completed.is_empty(),
        "the crawler completed nothing"
    );

    // Resumed: the crawler catches up; leases the daemon granted but never
    // got to answer expire back into the queue and are handed out again.
    let d = Daemon::start(dir.path(), &args);
    let stop = Arc::new(AtomicBool::new(false));
    let worker = crawler(&d, ledger.clone(), stop.clone());
    d.wait_for("every URL completed and no lease left", |d| {
        let caught_up = ledger.lock().unwrap().completed.len() == 3_000;
        caught_up && d.get("/v1/stats")["stats"]["leased"] == 0
    });
    stop.store(true, Ordering::Relaxed);
    worker.join().unwrap();
    assert!(d.terminate().0.success());
    assert_consistent(dir.path(), "resumed traffic");
    assert_acknowledged_survive(dir.path(), &ledger.lock().unwrap(), "resumed traffic");
    assert!(url_set(dir.path()) == reference);
    assert_eq!(leased_count(dir.path()), 0);
    let rows = export(dir.path());
    assert!(rows.values().all(|r| r["fetches"].as_u64().unwrap() >= 1));
}
