//! Crash recovery: `kill -9` of `sitemapd ingest` and of `sitemapd daemon`
//! at 50 random points each, during ingest and during lease/complete
//! traffic. After each kill the store opens and `stats --check` passes; a
//! resumed run (the same command again) ends with exactly the URL set a
//! clean run gives; every lease and completion the daemon acknowledged
//! survives the kill; and once the crawler has caught up no URL is left
//! leased. A store of one partition moved into sixteen as it opens is
//! killed at random points of the move: each open after finishes it, with
//! every URL as it was.
//!
//! The kill points come from a seeded generator: `SITEMAPD_CRASH_SEED=N`
//! replays a run (the seed in use is printed).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::daemon::{Daemon, TOKEN};
use common::{bin, indexed_site, json_lines, run, run_with_input, stderr, stdout};
use serde_json::{Value, json};
use sitemapd_storebench::copy_dir;
use sitemapd_testsite::client;

fn is_compaction_start(line: &str) -> bool {
    line.contains("compacting the store")
}

fn is_compaction_end(line: &str) -> bool {
    line.contains("store compacted")
}

/// The files of the database the store in `dir` uses: `db` in the store's
/// directory, or in the `generation-N` one a compaction wrote.
fn databases(dir: &Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n == "db" || n.starts_with("generation-"))
        .collect();
    found.sort();
    found
}

/// A crawled store (records its completions wrote under keys of their
/// own) compacted by `stats --compact`, the run killed at random points of
/// the compaction (moving records into their pages, then copying the
/// files): after each kill the store opens, `stats --check` passes, every
/// URL is exported as before, and one database is left (the old or the
/// new, never neither or both once opened).
#[test]
fn kill_9_while_a_store_compacts() {
    let source = ingested(3, 4_000);
    // A crawl of a third of the URLs: records under keys of their own.
    let o = run(&[
        &["queue", "-n", "5000", "--lease", "3600"][..],
        &store_arg(source.path()),
    ]
    .concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report: String = json_lines(&stdout(&o))
        .iter()
        .map(|row| {
            format!(
                "{}\n",
                json!({"url": row["url"], "outcome": "not-modified"})
            )
        })
        .collect();
    let o = run_with_input(
        &[&["complete"][..], &store_arg(source.path())].concat(),
        report.as_bytes(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let reference = export(source.path());
    assert_eq!(reference.len(), 12_000);
    let compact = |dir: &Path| logged(&["stats", "--compact"], dir);
    let phase = Phase {
        name: "compaction",
        start: is_compaction_start,
        end: is_compaction_end,
    };
    // A clean compaction: how long it takes, and what it leaves.
    let (clean, full) = phase.time(source.path(), &compact);
    assert_eq!(databases(clean.path()), ["generation-1"]);
    assert!(
        export(clean.path()) == reference,
        "a clean compaction changed the URLs"
    );
    eprintln!("a compaction of a crawled store of 12,000 URLs takes {full:?}");
    phase.kill_at_random_points(source.path(), &compact, full, |dir, what| {
        assert_consistent(dir, what);
        let left = databases(dir);
        assert!(
            left == ["db"] || left == ["generation-1"],
            "{what}: databases left after an open: {left:?}"
        );
        assert!(
            export(dir) == reference,
            "{what}: the URLs differ from the store's before the compaction"
        );
        let o = compact(dir).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{what}: {}", stderr(&o));
        assert!(export(dir) == reference, "{what}: compacted again");
    });
}

/// A store of a site of `sitemaps` sitemaps of `per_sitemap` URLs each,
/// ingested.
fn ingested(sitemaps: usize, per_sitemap: usize) -> tempfile::TempDir {
    let site = indexed_site(sitemaps, per_sitemap);
    let store = tempfile::tempdir().unwrap();
    let o = bin()
        .args([
            "ingest",
            "--allow-private",
            "--min-delay",
            "0",
            &site.url("/"),
        ])
        .args(store_arg(store.path()))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    store
}

/// `sitemapd ARGS --store DIR`, logging at info (the lines a [`Phase`]
/// is told by).
fn logged(args: &[&str], dir: &Path) -> std::process::Command {
    let mut cmd = bin();
    cmd.args(args)
        .args(store_arg(dir))
        .env("SITEMAPD_LOG", "info");
    cmd
}

/// A run's phase, told by a log line at its start and one at its end.
struct Phase {
    name: &'static str,
    start: fn(&str) -> bool,
    end: fn(&str) -> bool,
}

impl Phase {
    /// Runs `command` to the end on copies of the store in `source`, three
    /// times: a copy, and the shortest the phase took (the machine's speed
    /// drifts; a kill point within the shortest lands in the phase).
    fn time(
        &self,
        source: &Path,
        command: &dyn Fn(&Path) -> std::process::Command,
    ) -> (tempfile::TempDir, Duration) {
        let mut shortest: Option<(tempfile::TempDir, Duration)> = None;
        for _ in 0..3 {
            let clean = tempfile::tempdir().unwrap();
            copy_dir(source, clean.path());
            let mut run = IngestRun::spawn(command(clean.path()));
            let from = run.wait_for("phase start", self.start);
            let full = run.wait_for("phase end", self.end) - from;
            let (status, lines) = run.end();
            assert!(status.success(), "{}", lines.join("\n"));
            if shortest.as_ref().is_none_or(|(_, d)| full < *d) {
                shortest = Some((clean, full));
            }
        }
        shortest.expect("three runs")
    }

    /// `KILLS / 5` runs of `command` on copies of the store in `source`,
    /// each killed at a random point of the phase (which takes about
    /// `full`), then `check`ed; at least `KILLS / 10` must land in the
    /// phase.
    fn kill_at_random_points(
        &self,
        source: &Path,
        command: &dyn Fn(&Path) -> std::process::Command,
        full: Duration,
        check: impl Fn(&Path, &str),
    ) {
        let mut rng = rng();
        let mut landed = 0;
        let mut missed = Vec::new();
        for kill in 0..KILLS / 5 {
            let dir = tempfile::tempdir().unwrap();
            copy_dir(source, dir.path());
            let mut run = IngestRun::spawn(command(dir.path()));
            let started = run.wait_for("phase start", self.start);
            let at = Duration::from_micros(rng.u64(0..full.as_micros().max(1) as u64));
            std::thread::sleep((started + at).saturating_duration_since(Instant::now()));
            run.child.kill().unwrap();
            let (status, lines) = run.end();
            let what = format!("kill {kill}, {at:?} into the {}", self.name);
            if status.signal() == Some(libc::SIGKILL) && !lines.iter().any(|l| (self.end)(l)) {
                landed += 1;
            } else {
                missed.push(format!("{what}: {status}"));
            }
            check(dir.path(), &what);
        }
        eprintln!(
            "{}: {landed} kills landed in it; missed: {missed:?}",
            self.name
        );
        assert!(
            landed >= KILLS / 10,
            "{landed} kills in the {}; missed: {missed:?}",
            self.name
        );
    }
}

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

/// A run of `sitemapd ingest` with its stderr read line by line as it comes.
struct IngestRun {
    child: std::process::Child,
    lines: mpsc::Receiver<(Instant, String)>,
    reader: JoinHandle<()>,
    /// The lines read so far.
    seen: Vec<String>,
}

/// The progress line of a robots.txt read ("…/robots.txt: 2 sitemaps
/// declared", "…: 1 sitemap declared"): printed after the walk wrote the
/// robots rules, so the run is writing to the store from then on.
fn is_robots_line(line: &str) -> bool {
    line.ends_with(" sitemaps declared") || line.ends_with(" sitemap declared")
}

/// The last line of a run: printed after the session's last write and flush.
fn is_summary_line(line: &str) -> bool {
    line.starts_with("ingest: ")
}

/// A sitemap's progress line: its entries are all written.
fn is_sitemap_line(line: &str) -> bool {
    line.contains("/sitemaps/") && (line.ends_with(" urls") || line.ends_with("not modified"))
}

impl IngestRun {
    fn spawn(mut cmd: std::process::Command) -> IngestRun {
        let mut child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send((Instant::now(), line));
            }
        });
        IngestRun {
            child,
            lines,
            reader,
            seen: Vec::new(),
        }
    }

    /// Waits for a line `is` accepts: when it came.
    fn wait_for(&mut self, what: &str, is: fn(&str) -> bool) -> Instant {
        loop {
            match self.lines.recv_timeout(Duration::from_secs(60)) {
                Ok((at, line)) => {
                    let found = is(&line);
                    self.seen.push(line);
                    if found {
                        return at;
                    }
                }
                Err(_) => panic!("no {what} line; stderr:\n{}", self.seen.join("\n")),
            }
        }
    }

    /// Waits for the end: the exit status, and every line.
    fn end(mut self) -> (std::process::ExitStatus, Vec<String>) {
        let status = self.child.wait().unwrap();
        self.reader.join().unwrap();
        self.seen
            .extend(self.lines.try_iter().map(|(_, line)| line));
        (status, self.seen)
    }
}

/// Where a `kill -9` of an ingest landed.
enum Landed {
    /// On the running process, after its walk began writing (the robots
    /// line printed) and before it finished (no summary line): `sitemaps`
    /// sitemaps fully written by then.
    MidWrite { sitemaps: usize },
    /// Not mid-write: the run had ended, or had printed its summary.
    Missed(String),
}

/// Starts `cmd`, sends SIGKILL `after` the robots line, and says where the
/// kill landed: judged by the exit status (death by SIGKILL: the process
/// was alive) and by the progress lines printed before it died.
fn kill_ingest(cmd: std::process::Command, after: Duration) -> Landed {
    let mut run = IngestRun::spawn(cmd);
    let writing = run.wait_for("robots.txt", is_robots_line);
    std::thread::sleep((writing + after).saturating_duration_since(Instant::now()));
    // SIGKILL; Ok also when the process has already exited.
    run.child.kill().unwrap();
    let (status, lines) = run.end();
    let finished = lines.iter().any(|l| is_summary_line(l));
    if status.signal() != Some(libc::SIGKILL) {
        return Landed::Missed(format!("the run had exited ({status})"));
    }
    if finished {
        return Landed::Missed("killed after its summary line".into());
    }
    Landed::MidWrite {
        sitemaps: lines.iter().filter(|l| is_sitemap_line(l)).count(),
    }
}

/// A run to the end: its status, lines, and the time from the robots line
/// to the summary line (the time it spends writing).
fn ingest_to_the_end(cmd: std::process::Command) -> (Duration, Vec<String>) {
    let mut run = IngestRun::spawn(cmd);
    let from = run.wait_for("robots.txt", is_robots_line);
    let to = run.wait_for("summary", is_summary_line);
    let (status, lines) = run.end();
    assert!(status.success(), "{status}:\n{}", lines.join("\n"));
    (to - from, lines)
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
    // A clean run: the reference URL set, and how long a first run writes.
    // The same command again on its store: how long a run writes when
    // every sitemap answers 304 (the least a resumed run writes).
    let clean = tempfile::tempdir().unwrap();
    let (full, lines) = ingest_to_the_end(ingest(clean.path()));
    assert_eq!(lines.iter().filter(|l| is_sitemap_line(l)).count(), 6);
    let reference = url_set(clean.path());
    assert_eq!(reference.len(), 6_000);
    let (least, lines) = ingest_to_the_end(ingest(clean.path()));
    assert_eq!(
        lines.iter().filter(|l| l.ends_with("not modified")).count(),
        6,
        "{}",
        lines.join("\n")
    );
    eprintln!("a first run writes for {full:?}, a run of 304s for {least:?}");

    let mut rng = rng();
    let mut landed = 0;
    let mut missed = Vec::new();
    // How many sitemaps the killed run had fully written, per kill.
    let mut written = [0usize; 7];
    // Five stores, ten kills each, then the same command to the end.
    for store in 0..KILLS / 10 {
        let dir = tempfile::tempdir().unwrap();
        // A resumed run writes at least what its predecessor had left when
        // killed: each kill point is drawn over that, so that it lands
        // while the run is still writing.
        let mut left = full;
        let mut kills = 0;
        let mut attempts = 0;
        while kills < 10 {
            attempts += 1;
            assert!(
                attempts <= 20,
                "store {store}: {attempts} attempts for {kills} kills mid-write; missed: {missed:?}"
            );
            let at = Duration::from_micros(rng.u64(0..left.as_micros().max(1) as u64));
            let what = format!("store {store}, kill {kills}, {at:?} into the writes");
            match kill_ingest(ingest(dir.path()), at) {
                Landed::MidWrite { sitemaps } => {
                    kills += 1;
                    landed += 1;
                    written[sitemaps.min(6)] += 1;
                    left = left.saturating_sub(at).max(least);
                }
                Landed::Missed(why) => {
                    missed.push(format!("{what}: {why}"));
                    left = least;
                }
            }
            assert_consistent(dir.path(), &what);
        }
        let o = ingest(dir.path()).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert_consistent(dir.path(), &format!("store {store}, resumed"));
        assert!(
            url_set(dir.path()) == reference,
            "store {store}: the resumed run's URL set differs from a clean run's"
        );
    }
    eprintln!(
        "ingest: {landed} kills landed mid-write (by sitemaps fully written when killed, 0..=6: {written:?}); {} attempts missed: {missed:?}",
        missed.len()
    );
    assert_eq!(landed, KILLS);
}

/// What the daemon acknowledged to the crawler.
#[derive(Default)]
struct Ledger {
    /// Completions answered 200, per URL.
    completed: HashMap<String, u64>,
    /// Leases answered 200 and not completed since: the lease's expiry.
    leased: HashMap<String, i64>,
    /// The last batch completed, notified again when a lease comes back
    /// empty (see [`crawler`]; less the URLs the ledger holds a lease of,
    /// with other completed URLs instead).
    last_batch: Vec<String>,
}

/// How a crawler thread ended.
struct Ended {
    /// Writes the daemon acknowledged in this run: leases that handed out
    /// URLs, completions, notifications.
    writes: u64,
    /// The call left unanswered (the daemon gone): its route and when it
    /// was sent. None: told to stop.
    unanswered: Option<(&'static str, Instant)>,
}

/// A crawler: lease 100 (ttl 2 s), complete them not-modified, until told
/// to stop or the daemon stops answering. With `busy`, a lease that comes
/// back empty is followed by a notification of the last batch completed
/// (due again at once), so that the daemon is always writing: a kill never
/// lands on a daemon with nothing left to do.
fn crawler(
    daemon: &Daemon,
    ledger: Arc<std::sync::Mutex<Ledger>>,
    stop: Arc<AtomicBool>,
    busy: bool,
) -> JoinHandle<Ended> {
    let addr = daemon.addr;
    std::thread::spawn(move || {
        let mut writes = 0;
        // The answer, if the daemon gave one (Err: it is gone; the route
        // and when it was sent).
        let call = |path: &'static str, body: Value| -> Result<Value, (&'static str, Instant)> {
            let body = body.to_string();
            let sent = Instant::now();
            let r = client::request(addr, "POST", path, Some(TOKEN), Some(body.as_bytes()))
                .map_err(|_| (path, sent))?;
            assert_eq!(r.status, 200, "{path}: {}", r.text());
            Ok(serde_json::from_str(&r.text()).unwrap())
        };
        let ended = |writes, unanswered| Ended { writes, unanswered };
        while !stop.load(Ordering::Relaxed) {
            let v = match call("/v1/lease", json!({ "n": 100, "ttl_secs": 2 })) {
                Ok(v) => v,
                Err(e) => return ended(writes, Some(e)),
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
                // Not a URL whose lease the ledger holds: a notification
                // drops a lease (the store's rule), and the ledger would
                // take that for a lost one.
                let again: Vec<String> = {
                    let ledger = ledger.lock().unwrap();
                    let free = |u: &&String| !ledger.leased.contains_key(*u);
                    let last = ledger.last_batch.iter().filter(free);
                    // Any completed URL when the last batch is all leased.
                    let others = ledger.completed.keys().filter(free);
                    last.chain(others).take(100).cloned().collect()
                };
                if !busy || again.is_empty() {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
                match call("/v1/notify", json!({ "urls": again })) {
                    Ok(_) => writes += 1,
                    Err(e) => return ended(writes, Some(e)),
                }
                continue;
            }
            writes += 1;
            ledger.lock().unwrap().leased.extend(urls.iter().cloned());
            let items: Vec<Value> = urls
                .iter()
                .map(|(u, _)| json!({ "url": u, "outcome": "not-modified" }))
                .collect();
            let done = match call("/v1/complete", Value::Array(items)) {
                Ok(v) => v,
                Err(e) => return ended(writes, Some(e)),
            };
            writes += 1;
            assert_eq!(done["completed"], urls.len(), "{done}");
            let mut ledger = ledger.lock().unwrap();
            ledger.last_batch = urls.iter().map(|(u, _)| u.clone()).collect();
            for (url, _) in urls {
                ledger.leased.remove(&url);
                *ledger.completed.entry(url).or_default() += 1;
            }
        }
        ended(writes, None)
    })
}

/// Every acknowledged completion is in the store, and every acknowledged
/// lease not completed since is either still there (held until its expiry,
/// reason leased, or lease-expired after it), or was completed after all
/// (the answer lost), or ran out and the URL was leased again by a lease
/// whose answer the kill cut off (a later expiry the ledger never saw: the
/// leases last 2 s, and a restart can take longer).
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
        // Held until its expiry ("leased" before it, "lease-expired" after).
        let held = row["reason"] == "leased" || row["reason"] == "lease-expired";
        let kept = held && row["due"] == *expires;
        let completed_after_all = row["fetches"].as_u64().unwrap() > completed;
        let due = row["due"].as_i64().unwrap_or(i64::MIN);
        let ran_out = *expires <= now_unix();
        let leased_again = held && due > *expires && ran_out;
        assert!(
            kept || completed_after_all || leased_again,
            "{what}: lease of {url} lost: {row}"
        );
    }
}

/// The daemon's options for crawler traffic: no politeness spacing, a
/// host's every URL in one lease, leases of 2 s.
const TRAFFIC: [&str; 6] = [
    "--lease-delay",
    "0",
    "--per-host",
    "1000",
    "--lease-ttl",
    "2",
];

/// The system clock, Unix seconds (what the daemon stamps leases with).
fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[test]
fn kill_9_of_the_daemon_at_50_random_points() {
    let site = indexed_site(3, 1_000);
    let root = site.url("/");
    let args = [&TRAFFIC[..], &[root.as_str()]].concat();
    let all_in = |d: &Daemon| d.active() == 3_000;
    // The first ingest is over: its session committed ("refresh done").
    let ingest_done = |log: &str| log.contains("refresh done");
    // Polls the daemon until its first ingest has written a URL: when.
    let writing = |d: &Daemon| {
        let start = Instant::now();
        while d.active() == 0 {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "no URL written:\n{}",
                d.log()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        Instant::now()
    };

    // A clean run: the reference URL set, and how long the first ingest
    // writes (from its first URL to its commit).
    let clean = tempfile::tempdir().unwrap();
    let d = Daemon::start(clean.path(), &args);
    let from = writing(&d);
    let start = Instant::now();
    while !ingest_done(&d.log()) {
        assert!(start.elapsed() < Duration::from_secs(120), "{}", d.log());
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut ingest_time = from.elapsed();
    d.wait_for("the first ingest", all_in);
    assert!(d.terminate().0.success());
    let reference = url_set(clean.path());
    assert_eq!(reference.len(), 3_000);
    eprintln!("the first ingest writes for {ingest_time:?}");

    let mut rng = rng();
    let mut missed = Vec::new();
    // Half the kills during the first ingest of a new store, from its first
    // URL written, each followed by the same command to the end.
    let mut landed = 0;
    while landed < KILLS / 2 {
        assert!(
            missed.len() <= KILLS / 2,
            "{} kills missed the ingest: {missed:?}",
            missed.len()
        );
        let dir = tempfile::tempdir().unwrap();
        let at = Duration::from_micros(rng.u64(0..ingest_time.as_micros() as u64));
        let d = Daemon::start(dir.path(), &args);
        let from = writing(&d);
        std::thread::sleep((from + at).saturating_duration_since(Instant::now()));
        let (killed, log) = d.kill_9();
        let what = format!("ingest kill {landed}, {at:?} after its first URL");
        assert!(killed, "{what}: the daemon had exited:\n{log}");
        if ingest_done(&log) {
            missed.push(format!("{what}: after the ingest's commit"));
            // This ingest wrote for less than `at`: draw the next kill
            // points over that.
            ingest_time = ingest_time.min(at);
        } else {
            landed += 1;
        }
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

    // The other half during lease/complete/notify traffic on one store.
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(dir.path(), &args);
    d.wait_for("the first ingest", all_in);
    assert!(d.terminate().0.success());
    let ledger = Arc::new(std::sync::Mutex::new(Ledger::default()));
    let mid_traffic = kill_mid_traffic(dir.path(), &args, &ledger, &mut rng, &mut missed);
    eprintln!(
        "daemon: {landed} kills mid-ingest, {mid_traffic} with a write in flight; missed: {missed:?}"
    );
    assert_eq!(
        (landed, mid_traffic),
        (KILLS / 2, KILLS / 2),
        "kills that landed mid-write; missed: {missed:?}"
    );
    assert!(
        !ledger.lock().unwrap().completed.is_empty(),
        "the crawler completed nothing"
    );

    resume_traffic(dir.path(), &args, &ledger, 3_000);
    assert!(url_set(dir.path()) == reference);
}

/// `KILLS / 2` kills of the daemon on the store in `dir` while a crawler
/// leases, completes and notifies (each at a random point 0.1 to 1.5 s
/// into a run, with a write in flight: a kill that found none is noted in
/// `missed` and drawn again), each followed by `stats --check` and the
/// check that what the daemon acknowledged survived. The kills that landed.
fn kill_mid_traffic(
    dir: &Path,
    args: &[&str],
    ledger: &Arc<std::sync::Mutex<Ledger>>,
    rng: &mut fastrand::Rng,
    missed: &mut Vec<String>,
) -> usize {
    let mut mid_traffic = 0;
    let mut k = 0;
    while mid_traffic < KILLS / 2 {
        assert!(
            missed.len() <= KILLS / 2,
            "{} kills missed: {missed:?}",
            missed.len()
        );
        k += 1;
        let at = Duration::from_millis(rng.u64(100..=1_500));
        let d = Daemon::start(dir, args);
        let stop = Arc::new(AtomicBool::new(false));
        let worker = crawler(&d, ledger.clone(), stop.clone(), true);
        std::thread::sleep(at);
        let kill_sent = Instant::now();
        let (killed, log) = d.kill_9();
        let what = format!("traffic kill {k} at {at:?}");
        assert!(killed, "{what}: the daemon had exited:\n{log}");
        let ended = worker.join().unwrap();
        // Mid-write: the daemon had acknowledged writes in this run, and a
        // write the crawler sent before the kill was never answered.
        match ended.unanswered {
            Some((_, sent)) if ended.writes > 0 && sent < kill_sent => mid_traffic += 1,
            Some((route, _)) => missed.push(format!(
                "{what}: {} writes acknowledged; the unanswered {route} was sent after the kill",
                ended.writes
            )),
            None => unreachable!("the crawler was not told to stop"),
        }
        assert_consistent(dir, &what);
        assert_acknowledged_survive(dir, &ledger.lock().unwrap(), &what);
    }
    mid_traffic
}

/// The daemon on the store in `dir` resumed after the kills: a crawler
/// catches up, and leases the daemon granted but never got to answer
/// expire back into the queue and are handed out again, until each of the
/// `total` URLs was completed and no lease is left.
fn resume_traffic(dir: &Path, args: &[&str], ledger: &Arc<std::sync::Mutex<Ledger>>, total: u64) {
    let d = Daemon::start(dir, args);
    let stop = Arc::new(AtomicBool::new(false));
    let worker = crawler(&d, ledger.clone(), stop.clone(), false);
    // Caught up by the store's count, not the ledger's: a completion that
    // a kill left applied but unanswered is in the store (the URL is done,
    // due again in a day) and never in the ledger.
    d.wait_for("every URL completed and no lease left", |d| {
        let stats = &d.get("/v1/stats")["stats"];
        stats["never_fetched"] == 0 && stats["leased"] == 0 && stats["active"] == total
    });
    stop.store(true, Ordering::Relaxed);
    assert!(worker.join().unwrap().unanswered.is_none());
    assert!(d.terminate().0.success());
    assert_consistent(dir, "resumed traffic");
    assert_acknowledged_survive(dir, &ledger.lock().unwrap(), "resumed traffic");
    assert_eq!(leased_count(dir), 0);
    let rows = export(dir);
    assert!(rows.values().all(|r| r["fetches"].as_u64().unwrap() >= 1));
}

/// Kills mid-lease and mid-completion on a store whose URLs span many
/// sites, so many partitions (each a keyspace with its own write lock, a
/// lease writing to several, a completion batch split over them): every
/// partition stays consistent, and what was acknowledged survives.
#[test]
fn kill_9_mid_lease_and_completion_across_partitions() {
    let args = [&TRAFFIC[..], &["--partitions", "16"]].concat();
    let dir = tempfile::tempdir().unwrap();
    let d = Daemon::start(dir.path(), &args);
    // 64 sites, 2,000 URLs, told to the daemon as changed.
    let urls: Vec<String> = (0..2_000)
        .map(|i| format!("https://s{}.example/p{i}", i % 64))
        .collect();
    let r = client::request(
        d.addr,
        "POST",
        "/v1/notify",
        Some(TOKEN),
        Some(json!({ "urls": urls }).to_string().as_bytes()),
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(d.terminate().0.success());
    let store = sitemapd_scheduler::Store::open(dir.path(), Default::default()).unwrap();
    assert_eq!(store.partitions(), 16);
    drop(store);
    let ledger = Arc::new(std::sync::Mutex::new(Ledger::default()));
    let mut missed = Vec::new();
    let landed = kill_mid_traffic(dir.path(), &args, &ledger, &mut rng(), &mut missed);
    eprintln!("across partitions: {landed} kills with a write in flight; missed: {missed:?}");
    assert!(
        !ledger.lock().unwrap().completed.is_empty(),
        "the crawler completed nothing"
    );
    resume_traffic(dir.path(), &args, &ledger, 2_000);
}

/// The line a store logs when it starts moving into partitions, and when
/// it is done.
fn is_move_start(line: &str) -> bool {
    line.contains("moving the store's hosts into their partitions")
}

fn is_move_end(line: &str) -> bool {
    line.contains("the store's hosts are in their partitions")
}

/// The partitions of the store in `dir` (opening it finishes a move cut
/// short).
fn partitions(dir: &Path) -> usize {
    sitemapd_scheduler::Store::open(dir, Default::default())
        .unwrap()
        .partitions()
}

/// A store of one partition moved into 16 (`queue --partitions 16`), the
/// run killed at random points of the move: after each kill the store
/// opens (finishing the move), `stats --check` passes, and every URL is
/// exported as it was before the move; the same command again leaves 16
/// partitions.
#[test]
fn kill_9_while_a_store_moves_into_partitions() {
    let source = ingested(6, 5_000);
    let reference = export(source.path());
    assert_eq!(reference.len(), 30_000);
    let move_into_16 = |dir: &Path| logged(&["queue", "-n", "1", "--partitions", "16"], dir);
    let phase = Phase {
        name: "move",
        start: is_move_start,
        end: is_move_end,
    };
    // A clean move: how long it takes, and what it leaves.
    let (clean, full) = phase.time(source.path(), &move_into_16);
    assert_eq!(partitions(clean.path()), 16);
    assert!(
        export(clean.path()) == reference,
        "a clean move changed the URLs"
    );
    eprintln!("a move of 30,000 URLs into 16 partitions takes {full:?}");
    phase.kill_at_random_points(source.path(), &move_into_16, full, |dir, what| {
        // The next open finishes the move, whatever it asks for.
        assert_eq!(partitions(dir), 16, "{what}");
        assert_consistent(dir, what);
        assert!(
            export(dir) == reference,
            "{what}: the URLs differ from the store's before the move"
        );
        let o = move_into_16(dir).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{what}: {}", stderr(&o));
        assert_eq!(partitions(dir), 16, "{what}");
    });
}
