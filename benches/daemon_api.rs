//! `sitemapd daemon` through its HTTP API, with the real binary and a
//! loopback site served by a second copy of this bench (`--serve`). Prints
//! figures; asserts nothing.
//!
//! Default (`cargo bench --bench daemon_api`, 1–2 minutes): the daemon
//! follows `big1.test` (an index of 20 sitemaps x 50,000 URLs); once 200,000
//! URLs are in, `big2.test` (the same shape) is added through
//! `POST /v1/sites`, so a refresh is ingesting while 4 client threads loop
//! lease (n 100, per_host 100) then complete (not-modified) for 20 s.
//! Prints URLs/s taken through a full lease + complete, lease and complete
//! latencies, and what the concurrent ingest read meanwhile.
//!
//! The store hands out at most one URL per host per second (its lease
//! politeness, 1 s by default; the daemon's `--min-delay` is the sitemap
//! fetcher's and does not change it), and a lease gives a host no more than
//! `ttl / delay` URLs ahead. So the sitemaps' URLs are spread over
//! `--url-hosts` hosts (default 1,000; never fetched, hence `--scope none`):
//! with one host the figure is the politeness, not the API.
//! Options: `--sitemaps N --urls-per-sitemap N --url-hosts N --workers N
//! --seconds S --warm N`.
//!
//! Soak (`cargo bench --bench daemon_api -- --soak-minutes 60 --sites 100`):
//! `siteN.test`, each with one sitemap of 1,000 URLs that changes every minute
//! (a rotating 5% of lastmods move, 5 URLs are replaced) behind an ETag (304
//! when unchanged); the daemon refreshes every 30–120 s; 2 workers lease 50
//! every 200 ms and complete them (1 in 4 changed). Every 30 s a row: the
//! daemon's RSS, store size, active URLs, queue depth and sitemap fetches by
//! status; at the end RSS at 5 min, at the end, the peak and the slope over
//! the second half, worker errors and API latencies.
//!
//! URLFrontier beside the HTTP API (`cargo bench --bench daemon_api --
//! --frontier`, about 2 minutes): a 1M-URL store, GetURLs + PutURLs
//! against lease + complete in alternating windows; see
//! `daemon_api/frontier.rs`.
//!
//! A big write beside a crawler's leases (`cargo bench --bench daemon_api --
//! --big-batch`, under a minute): leases timed while one PutDiscovered
//! batch of 100,000 URLs is written, against the same URLs through
//! PutURLs and against no write; see `daemon_api/big_batch.rs`.
//!
//! The IndexNow intake (`cargo bench --bench daemon_api -- --indexnow`, a
//! few minutes): pushes of 10,000 URLs per POST accepted per second, the
//! lease latency with and without them, and the daemon's memory under
//! 1,000,000 pushes of random hosts and keys; see `daemon_api/indexnow.rs`.
//!
//! `--daemon-cpus LIST` (`0`, `0,1`, `0-3`) pins the daemon to those CPUs
//! (its clients are not pinned), for scaling figures.
//!
//! The daemon's log goes to a file in the temp directory (path printed).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[path = "daemon_api/big_batch.rs"]
mod big_batch;
#[path = "daemon_api/frontier.rs"]
mod frontier;
#[path = "daemon_api/indexnow.rs"]
mod indexnow;

use serde_json::{Value, json};
use sitemapd_testsite::{Reply, Request, TestSite, client};

/// The API token the daemon is started with.
const TOKEN: &str = "bench-token";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return; // cargo test --benches asks for a list; nothing to do
    }
    if args.iter().any(|a| a == "--serve") {
        return serve(&args);
    }
    if args.iter().any(|a| a == "--frontier") {
        return frontier::compare(&args);
    }
    if args.iter().any(|a| a == "--big-batch") {
        return big_batch::run(&args);
    }
    if args.iter().any(|a| a == "--indexnow") {
        return indexnow::run(&args);
    }
    match arg::<f64>(&args, "--soak-minutes") {
        Some(minutes) => soak(&args, minutes),
        None => throughput(&args),
    }
}

/// The value after `name`, parsed.
fn arg<T: FromStr>(args: &[String], name: &str) -> Option<T> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
}

// ---------------------------------------------------------------------------
// The site process
// ---------------------------------------------------------------------------

/// The `Host` header of a request, as sent (`name:port`).
fn host(req: &Request) -> Option<String> {
    req.header("host").map(str::to_owned)
}

/// Server mode: prints the port, serves until stdin closes. Any host name
/// is answered: `bigN.test` gets the big site (robots.txt -> index ->
/// sitemaps), `siteN.test` the changing site of the soak.
fn serve(args: &[String]) {
    let sitemaps: usize = arg(args, "--sitemaps").unwrap_or(20);
    let per: usize = arg(args, "--urls-per-sitemap").unwrap_or(50_000);
    let url_hosts: usize = arg(args, "--url-hosts").unwrap_or(1);
    let site = TestSite::start();
    let started = Instant::now();
    let start_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;

    site.route_fn("/robots.txt", |req, _| match host(req) {
        Some(h) if h.starts_with("big") => Reply::ok(format!(
            "User-agent: *\nAllow: /\nSitemap: http://{h}/sitemap_index.xml\n"
        )),
        Some(h) => Reply::ok(format!(
            "User-agent: *\nAllow: /\nSitemap: http://{h}/sitemap.xml\n"
        )),
        None => Reply::status(400),
    });
    site.route_fn("/sitemap_index.xml", move |req, _| match host(req) {
        Some(h) if h.starts_with("big") => {
            let mut s = String::from(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
            );
            for part in 0..sitemaps {
                s.push_str(&format!(
                    "<sitemap><loc>http://{h}/sitemap-part-{part}.xml</loc></sitemap>\n"
                ));
            }
            s.push_str("</sitemapindex>\n");
            Reply::ok(s).header("Content-Type", "application/xml")
        }
        _ => Reply::status(404),
    });
    for part in 0..sitemaps {
        site.route_fn(
            &format!("/sitemap-part-{part}.xml"),
            move |req, _| match host(req) {
                Some(h) => Reply::ok(big_sitemap(&h, part, per, url_hosts))
                    .header("Content-Type", "application/xml"),
                None => Reply::status(400),
            },
        );
    }
    site.route_fn("/sitemap.xml", move |req, _| {
        let Some(h) = host(req) else {
            return Reply::status(400);
        };
        let Some(n) = h
            .strip_prefix("site")
            .and_then(|r| r.split('.').next())
            .and_then(|n| n.parse::<u64>().ok())
        else {
            return Reply::status(404);
        };
        // Each site turns over at its own second of the minute.
        let phase_ms = (n % 100) * 600;
        let t_ms = started.elapsed().as_millis() as u64 + phase_ms;
        let epoch = (t_ms / 60_000) as i64;
        let epoch_start = start_unix + epoch * 60 - (phase_ms / 1000) as i64;
        let etag = format!("\"s{n}-e{epoch}\"");
        if req.header("if-none-match") == Some(etag.as_str()) {
            return Reply::status(304).header("ETag", &etag);
        }
        Reply::ok(changing_sitemap(&h, epoch, epoch_start))
            .header("Content-Type", "application/xml")
            .header("ETag", &etag)
    });
    println!("{}", site.port());
    std::io::stdout().flush().unwrap();
    let mut sink = String::new();
    let _ = std::io::stdin().read_line(&mut sink);
}

/// A urlset of `urls` entries. With `url_hosts` > 1 its URLs are spread
/// over that many hosts (`u{k}.` + the site's name, never fetched: the
/// daemon runs with `--scope none`), so that the lease's per-host
/// politeness is not what the bench measures.
fn big_sitemap(host: &str, part: usize, urls: usize, url_hosts: usize) -> String {
    let mut s = String::with_capacity(urls * 140 + 200);
    s.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n");
    let name = host.split(':').next().unwrap_or(host);
    for i in 0..urls {
        let url_host = if url_hosts > 1 {
            format!("u{}.{name}", (part * urls + i) % url_hosts)
        } else {
            host.to_string()
        };
        s.push_str(&format!(
            "<url><loc>http://{url_host}/catalog/part-{part}/section-{}/product-{i}.html</loc><lastmod>2024-{:02}-{:02}T10:20:30+00:00</lastmod></url>\n",
            i % 97,
            i % 12 + 1,
            i % 28 + 1,
        ));
    }
    s.push_str("</urlset>\n");
    s
}

/// URLs per soak site.
const SOAK_URLS: i64 = 1_000;

/// The soak site's sitemap at minute `epoch` (which began at `epoch_start`,
/// Unix seconds): slot `j`'s lastmod moves when its group of 50 comes round
/// (one group a minute, 20 groups: 5% a minute), and its block of 5 slots is
/// replaced by new URLs at minute `block` (then every 200 minutes).
fn changing_sitemap(host: &str, epoch: i64, epoch_start: i64) -> String {
    let mut s = String::with_capacity(SOAK_URLS as usize * 130 + 200);
    s.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n");
    let at = |e: i64| epoch_start - (epoch - e) * 60;
    for j in 0..SOAK_URLS {
        let block = j / 5;
        let replaced = if block == 0 {
            epoch / 200
        } else if epoch >= block {
            (epoch - block) / 200 + 1
        } else {
            0
        };
        let group = j / 50;
        let moved = epoch - (epoch - group).rem_euclid(20);
        let born = epoch - (epoch - block).rem_euclid(200);
        // The later of its group's last turn and its replacement.
        let last = [
            (moved >= 1).then_some(moved),
            (replaced > 0).then_some(born),
        ]
        .into_iter()
        .flatten()
        .max();
        let lastmod = last.map_or(1_704_067_200 + j * 3_600, at); // else 2024-01-01 plus j hours
        s.push_str(&format!(
            "<url><loc>http://{host}/articles/{j}-v{replaced}.html</loc><lastmod>{}</lastmod></url>\n",
            sitemapd_testsite::w3c(lastmod)
        ));
    }
    s.push_str("</urlset>\n");
    s
}

/// Starts the site process; returns it and its port. It stops when its
/// stdin closes (this process ending included).
fn start_site(extra: &[String]) -> (Child, u16) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .arg("--serve")
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let port = first
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("site process said {first:?}"));
    (child, port)
}

// ---------------------------------------------------------------------------
// A minimal HTTP/1.1 client (one connection per request)
// ---------------------------------------------------------------------------

/// The daemon's API at one address.
#[derive(Clone, Copy)]
struct Api {
    addr: SocketAddr,
}

impl Api {
    /// One request with the bench's token.
    fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<client::Response, String> {
        client::request(self.addr, method, path, Some(TOKEN), body)
    }

    /// A JSON request; an error for anything but 2xx (with the body).
    fn json(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
        let bytes = body.map(|b| serde_json::to_vec(b).unwrap());
        let r = self.call(method, path, bytes.as_deref())?;
        if !(200..300).contains(&r.status) {
            return Err(format!(
                "{method} {path}: HTTP {}: {}",
                r.status,
                String::from_utf8_lossy(&r.body).trim()
            ));
        }
        serde_json::from_slice(&r.body).map_err(|e| format!("{method} {path}: bad JSON: {e}"))
    }

    /// `GET /metrics` as series -> value.
    fn metrics(&self) -> Result<Metrics, String> {
        let r = self.call("GET", "/metrics", None)?;
        if r.status != 200 {
            return Err(format!("GET /metrics: HTTP {}", r.status));
        }
        Ok(Metrics::parse(&String::from_utf8_lossy(&r.body)))
    }

    /// `GET /v1/stats`'s `stats` object.
    fn stats(&self) -> Result<Value, String> {
        Ok(self.json("GET", "/v1/stats", None)?["stats"].take())
    }
}

/// A Prometheus text exposition: `name{labels}` -> value.
struct Metrics(BTreeMap<String, f64>);

impl Metrics {
    fn parse(text: &str) -> Self {
        let mut m = BTreeMap::new();
        for line in text.lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            if let Some((series, value)) = line.rsplit_once(' ')
                && let Ok(v) = value.parse::<f64>()
            {
                m.insert(series.to_string(), v);
            }
        }
        Metrics(m)
    }

    /// Sum over every series of this metric (counters: `name_total`).
    fn sum(&self, name: &str) -> f64 {
        self.by_label(name, "").values().sum()
    }

    /// This metric's series by the value of `label` (`""`: one key).
    fn by_label(&self, name: &str, label: &str) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for (series, v) in &self.0 {
            let (base, labels) = series.split_once('{').unwrap_or((series, ""));
            if base != name && base != format!("{name}_total") {
                continue;
            }
            let key = if label.is_empty() {
                String::new()
            } else {
                let pat = format!("{label}=\"");
                labels
                    .split_once(&pat)
                    .and_then(|(_, r)| r.split_once('"'))
                    .map_or(String::new(), |(v, _)| v.to_string())
            };
            *out.entry(key).or_insert(0.0) += v;
        }
        out
    }
}

// ---------------------------------------------------------------------------
// The daemon process
// ---------------------------------------------------------------------------

/// Warnings and errors in the daemon's log.
#[derive(Default)]
struct LogCount {
    warn: u64,
    error: u64,
    /// The first few such lines.
    first: Vec<String>,
    /// The latest such line.
    last: Option<String>,
}

struct Daemon {
    child: Child,
    api: Api,
    /// Its URLFrontier service's address, once its log said it.
    frontier: Arc<Mutex<Option<SocketAddr>>>,
    /// Its IndexNow intake's address, once its log said it.
    indexnow: Arc<Mutex<Option<SocketAddr>>>,
    log_path: PathBuf,
    log: Arc<Mutex<LogCount>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// ANSI escape sequences out.
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The CPUs `--daemon-cpus LIST` (`0`, `0,1`, `0-3`) pins the daemon to;
/// `None`: any.
fn daemon_cpus() -> Option<Vec<usize>> {
    let args: Vec<String> = std::env::args().collect();
    let list: String = arg(&args, "--daemon-cpus")?;
    let mut cpus = Vec::new();
    for part in list.split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (usize, usize) = (
            a.parse().expect("--daemon-cpus: CPU numbers"),
            b.parse().expect("--daemon-cpus: CPU numbers"),
        );
        assert!(
            b < libc::CPU_SETSIZE as usize,
            "--daemon-cpus: CPUs below {}",
            libc::CPU_SETSIZE
        );
        cpus.extend(a..=b);
    }
    Some(cpus)
}

impl Daemon {
    /// Starts `sitemapd daemon` on `127.0.0.1:0` with its log in `log_path`;
    /// returns once it said where it listens.
    fn start(store: &Path, extra: &[String], sites: &[String], log_path: PathBuf) -> Daemon {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sitemapd"));
        cmd.arg("daemon")
            .arg("--store")
            .arg(store)
            .args([
                "--listen",
                "127.0.0.1:0",
                "--allow-private",
                "--min-delay",
                "0",
            ])
            .args(extra)
            .args(sites)
            .env("SITEMAPD_TOKEN", TOKEN)
            .env("SITEMAPD_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let cpus = daemon_cpus();
        // SAFETY: prctl and sched_setaffinity are async-signal-safe; the
        // first only asks for SIGTERM should this process die first, so that
        // no daemon outlives the bench; the second pins the daemon to the
        // CPUs `--daemon-cpus` names.
        unsafe {
            cmd.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                if let Some(cpus) = &cpus {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    for &cpu in cpus {
                        libc::CPU_SET(cpu, &mut set);
                    }
                    if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().expect("cannot start sitemapd daemon");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(LogCount::default()));
        let (tx, rx) = mpsc::channel();
        let mut file = File::create(&log_path).unwrap();
        let counts = log.clone();
        let frontier = Arc::new(Mutex::new(None));
        let frontier_at = frontier.clone();
        let indexnow = Arc::new(Mutex::new(None));
        let indexnow_at = indexnow.clone();
        let reader = std::thread::spawn(move || {
            let mut r = BufReader::new(stderr);
            let mut buf = Vec::new();
            let mut tx = Some(tx);
            loop {
                buf.clear();
                match r.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let _ = file.write_all(&buf);
                let line = strip_ansi(String::from_utf8_lossy(&buf).trim_end());
                for (said, at) in [
                    ("URLFrontier service listening on ", &frontier_at),
                    ("IndexNow intake on http://", &indexnow_at),
                ] {
                    if let Some(i) = line.find(said) {
                        let addr: String = line[i + said.len()..]
                            .chars()
                            .take_while(|c| !c.is_whitespace() && *c != '/')
                            .collect();
                        *at.lock().unwrap() = addr.parse().ok();
                    }
                }
                if let Some(i) = line.find("listening on http://") {
                    let addr: String = line[i + "listening on http://".len()..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || ".:[]".contains(*c))
                        .collect();
                    if let (Some(tx), Ok(addr)) = (tx.take(), addr.parse::<SocketAddr>()) {
                        let _ = tx.send(addr);
                    }
                }
                let level = line.split_whitespace().nth(1).unwrap_or("");
                let json_level = |l: &str| line.contains(&format!("\"level\":\"{l}\""));
                let (warn, error) = (
                    level == "WARN" || json_level("WARN"),
                    level == "ERROR" || json_level("ERROR"),
                );
                if warn || error {
                    let mut c = counts.lock().unwrap();
                    c.warn += u64::from(warn);
                    c.error += u64::from(error);
                    if c.first.len() < 10 {
                        c.first.push(line.clone());
                    }
                    c.last = Some(line);
                }
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(addr) => addr,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = reader.join();
                panic!(
                    "the daemon did not say where it listens; its log:\n{}",
                    std::fs::read_to_string(&log_path).unwrap_or_default()
                );
            }
        };
        Daemon {
            child,
            api: Api { addr },
            frontier,
            indexnow,
            log_path,
            log,
            reader: Some(reader),
        }
    }

    /// Where its URLFrontier service listens, once it said so (10 s at most).
    fn frontier_addr(&self) -> SocketAddr {
        said(&self.frontier, "its URLFrontier service")
    }

    /// Where its IndexNow intake listens, once it said so (10 s at most).
    fn indexnow_addr(&self) -> SocketAddr {
        said(&self.indexnow, "its IndexNow intake")
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Some(status)` once it has exited.
    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// SIGTERM, then waits (SIGKILL after 60 s): how long it took, and how
    /// it ended.
    fn stop(mut self) -> (Duration, String) {
        let start = Instant::now();
        // SAFETY: a signal to our own child, by its pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let status = loop {
            if let Some(s) = self.exited() {
                break format!("{s}");
            }
            if start.elapsed() > Duration::from_secs(60) {
                let _ = self.child.kill();
                let s = self.child.wait().unwrap();
                break format!("still running 60 s after SIGTERM: killed ({s})");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let took = start.elapsed();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        (took, status)
    }

    fn print_log_summary(&self) {
        let c = self.log.lock().unwrap();
        println!(
            "daemon log: {} ({} WARN, {} ERROR lines)",
            self.log_path.display(),
            c.warn,
            c.error
        );
        for l in &c.first {
            println!("  {l}");
        }
        if c.warn + c.error > c.first.len() as u64
            && let Some(l) = &c.last
        {
            println!("  ...\n  {l}");
        }
    }
}

/// The address the daemon's log gave for `what`, once it did (10 s at most).
fn said(at: &Mutex<Option<SocketAddr>>, what: &str) -> SocketAddr {
    let start = Instant::now();
    loop {
        if let Some(addr) = *at.lock().unwrap() {
            return addr;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the daemon did not say where {what} listens"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// (VmRSS, VmHWM) of a process, MiB.
fn rss_mib(pid: u32) -> (f64, f64) {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        s.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .map_or(f64::NAN, |kib| kib / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// CPU seconds (user + system) a process used so far.
fn cpu_secs(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are 14 and 15.
    let after = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (ticks(11) + ticks(12)) / hz
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Bytes under a directory.
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

fn log_path(mode: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "sitemapd-daemon_api-{mode}-{}.log",
        std::process::id()
    ))
}

/// Percentiles of latencies in ms: `p50 / p99 / max (n)`.
fn percentiles(v: &mut [f64]) -> String {
    if v.is_empty() {
        return "no samples".into();
    }
    v.sort_by(f64::total_cmp);
    let p = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    format!(
        "p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} requests)",
        p(0.50),
        p(0.99),
        v[v.len() - 1],
        v.len()
    )
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// The `url` of every item of a lease answer.
fn leased_urls(v: &Value) -> Vec<String> {
    v["urls"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|u| u["url"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Mode 1: throughput
// ---------------------------------------------------------------------------

/// What one client thread did.
#[derive(Default)]
struct Worker {
    leased: u64,
    completed: u64,
    unknown: u64,
    empty_leases: u64,
    errors: Vec<String>,
    lease_ms: Vec<f64>,
    complete_ms: Vec<f64>,
    /// Lease + complete, for the leases that handed out URLs.
    round_ms: Vec<f64>,
}

/// How many URLs a lease asks for, and at most how many of one host.
#[derive(Clone, Copy)]
struct Batch {
    n: usize,
    per_host: usize,
}

/// What a window measured: URLs taken through a full round trip per second,
/// and each round trip's time (ms).
struct Figures {
    urls_per_s: f64,
    round_ms: Vec<f64>,
}

/// `workers` threads loop lease (`batch`) then complete (not-modified) for
/// `seconds`; each finishes its last pair. Prints the figures and what the
/// daemon did meanwhile.
fn window(daemon: &Daemon, workers: usize, seconds: f64, batch: Batch) -> Figures {
    let api = daemon.api;
    let m0 = api.metrics().unwrap();
    let cpu0 = cpu_secs(daemon.pid());
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs_f64(seconds);
    let handles: Vec<_> = (0..workers)
        .map(|_| {
            std::thread::spawn(move || {
                let mut w = Worker::default();
                while Instant::now() < deadline {
                    let t = Instant::now();
                    let r = api.json(
                        "POST",
                        "/v1/lease",
                        Some(&json!({ "n": batch.n, "ttl_secs": 300, "per_host": batch.per_host })),
                    );
                    let round = t;
                    w.lease_ms.push(ms(t));
                    let urls = match r {
                        Ok(v) => leased_urls(&v),
                        Err(e) => {
                            w.errors.push(e);
                            std::thread::sleep(Duration::from_millis(10));
                            continue;
                        }
                    };
                    if urls.is_empty() {
                        w.empty_leases += 1;
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                    w.leased += urls.len() as u64;
                    let items: Vec<Value> = urls
                        .iter()
                        .map(|u| json!({ "url": u, "outcome": "not-modified" }))
                        .collect();
                    let t = Instant::now();
                    let r = api.json("POST", "/v1/complete", Some(&Value::Array(items)));
                    w.complete_ms.push(ms(t));
                    w.round_ms.push(ms(round));
                    match r {
                        Ok(v) => {
                            w.completed += v["completed"].as_u64().unwrap_or(0);
                            w.unknown += v["unknown"].as_array().map_or(0, |a| a.len() as u64);
                        }
                        Err(e) => w.errors.push(e),
                    }
                }
                w
            })
        })
        .collect();
    let done: Vec<Worker> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let window = t0.elapsed().as_secs_f64();
    let cpu = cpu_secs(daemon.pid()) - cpu0;
    let (rss, hwm) = rss_mib(daemon.pid());
    let m1 = api.metrics().unwrap();
    let delta = |name: &str| m1.sum(name) - m0.sum(name);
    let read = delta("sitemapd_urls_ingested");

    let sum = |f: fn(&Worker) -> u64| done.iter().map(f).sum::<u64>();
    let (leased, completed) = (sum(|w| w.leased), sum(|w| w.completed));
    let leases = done.iter().map(|w| w.lease_ms.len()).sum::<usize>();
    let mut lease_ms: Vec<f64> = done.iter().flat_map(|w| w.lease_ms.clone()).collect();
    let mut complete_ms: Vec<f64> = done.iter().flat_map(|w| w.complete_ms.clone()).collect();
    let errors: Vec<&String> = done.iter().flat_map(|w| &w.errors).collect();
    println!(
        "  {window:.2} s, {workers} client threads, lease n={} per_host={} ttl 300 s, complete not-modified",
        batch.n, batch.per_host
    );
    println!(
        "  {:.0} URLs/s through lease + complete ({completed} completed, {leased} leased in {leases} leases: {:.1} URLs a lease; {} unknown, {} empty leases, {} errors)",
        completed as f64 / window,
        leased as f64 / leases.max(1) as f64,
        sum(|w| w.unknown),
        sum(|w| w.empty_leases),
        errors.len()
    );
    println!("  lease:    {}", percentiles(&mut lease_ms));
    println!("  complete: {}", percentiles(&mut complete_ms));
    println!(
        "  ingest meanwhile: {read:.0} URL entries read ({:.0}/s), {:.0} site walk(s) finished",
        read / window,
        delta("sitemapd_site_walks"),
    );
    println!(
        "  daemon: {cpu:.1} CPU s ({:.0}% of one core), RSS {rss:.0} MiB, peak {hwm:.0} MiB; load average after: {}",
        cpu / window * 100.0,
        loadavg()
    );
    print_errors_and_target(&errors, completed as f64 / window, 5_000.0);
    Figures {
        urls_per_s: completed as f64 / window,
        round_ms: done.iter().flat_map(|w| w.round_ms.clone()).collect(),
    }
}

/// The throughput mode's lease: 100 URLs, any number of one host.
const HUNDRED: Batch = Batch {
    n: 100,
    per_host: 100,
};

/// A window's first errors, and whether it met its target (URLs/s).
fn print_errors_and_target(errors: &[&String], urls_per_s: f64, target: f64) {
    for e in errors.iter().take(10) {
        println!("  error: {e}");
    }
    println!(
        "  target >= {target:.0} URLs/s: {}",
        if urls_per_s >= target {
            "met"
        } else {
            "NOT met"
        }
    );
}

fn throughput(args: &[String]) {
    let sitemaps: usize = arg(args, "--sitemaps").unwrap_or(20);
    let per: usize = arg(args, "--urls-per-sitemap").unwrap_or(50_000);
    let workers: usize = arg(args, "--workers").unwrap_or(4);
    let seconds: f64 = arg(args, "--seconds").unwrap_or(20.0);
    let warm: u64 = arg(args, "--warm").unwrap_or(200_000);
    let url_hosts: usize = arg(args, "--url-hosts").unwrap_or(1_000);

    let (mut site, port) = start_site(&[
        "--sitemaps".into(),
        sitemaps.to_string(),
        "--urls-per-sitemap".into(),
        per.to_string(),
        "--url-hosts".into(),
        url_hosts.to_string(),
    ]);
    let store = tempfile::tempdir().unwrap();
    let mut extra: Vec<String> = [
        "--per-host",
        "100000",
        "--resolve",
        "big1.test=127.0.0.1",
        "--resolve",
        "big2.test=127.0.0.1",
    ]
    .map(String::from)
    .to_vec();
    if url_hosts > 1 {
        extra.extend(["--scope".to_string(), "none".to_string()]);
    }
    println!(
        "site: big1.test and big2.test, each robots.txt -> index -> {sitemaps} sitemaps x {per} URLs = {} URLs, on {url_hosts} host(s) each",
        sitemaps * per
    );
    println!("load average before: {}", loadavg());
    let started = Instant::now();
    let daemon = Daemon::start(
        store.path(),
        &extra,
        &[format!("http://big1.test:{port}/")],
        log_path("throughput"),
    );
    let api = daemon.api;
    println!(
        "daemon pid {} on {} (started in {:.2} s)",
        daemon.pid(),
        api.addr,
        started.elapsed().as_secs_f64()
    );

    // Wait for the first site: the cheap counter first, then the full count.
    let fill = Instant::now();
    let mut last_print = Instant::now();
    let active_before = loop {
        std::thread::sleep(Duration::from_secs(2));
        let read = api
            .metrics()
            .map(|m| m.sum("sitemapd_urls_ingested"))
            .unwrap_or(0.0);
        if read as u64 >= warm {
            let active = api.stats().map(|s| s["active"].as_u64().unwrap_or(0));
            match active {
                Ok(a) if a >= warm => break a,
                Ok(_) => {}
                Err(e) => println!("  stats: {e}"),
            }
        }
        if last_print.elapsed() > Duration::from_secs(10) {
            last_print = Instant::now();
            println!(
                "  {:.0} s: {read:.0} URLs read, daemon RSS {:.0} MiB",
                fill.elapsed().as_secs_f64(),
                rss_mib(daemon.pid()).0
            );
        }
        if fill.elapsed() > Duration::from_secs(900) {
            println!("the daemon did not reach {warm} active URLs in 15 minutes; stopping");
            let (took, status) = daemon.stop();
            println!("daemon stopped in {:.2} s: {status}", took.as_secs_f64());
            return;
        }
    };
    println!(
        "first site: {active_before} active URLs after {:.1} s (its walk may go on)",
        fill.elapsed().as_secs_f64()
    );
    let added = api
        .json(
            "POST",
            "/v1/sites",
            Some(&json!({ "sites": [format!("http://big2.test:{port}/")] })),
        )
        .unwrap();
    println!("POST /v1/sites: {added}");
    println!("\nwindow 1, while big2.test is being ingested:");
    window(&daemon, workers, seconds, HUNDRED);

    // The same once both walks are over: what the ingest cost the API.
    let wait = Instant::now();
    loop {
        let walks = api
            .metrics()
            .map(|m| m.sum("sitemapd_site_walks"))
            .unwrap_or(0.0);
        if walks >= 2.0 || wait.elapsed() > Duration::from_secs(600) {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let stats = api.stats().unwrap_or(Value::Null);
    let active = stats["active"].as_u64().unwrap_or(1).max(1);
    println!(
        "\nboth walks done {:.1} s after window 1: {} active, {} due now, {} leased; store on disk {:.0} bytes per URL",
        wait.elapsed().as_secs_f64(),
        stats["active"],
        stats["due_now"],
        stats["leased"],
        dir_bytes(store.path()) as f64 / active as f64
    );
    println!("window 2, no ingest running:");
    window(&daemon, workers, seconds, HUNDRED);
    println!(
        "store on disk after window 2: {:.0} bytes per URL",
        dir_bytes(store.path()) as f64 / active as f64
    );

    println!();
    daemon.print_log_summary();
    let (took, status) = daemon.stop();
    println!(
        "daemon stopped {:.2} s after SIGTERM: {status}; store on disk {:.0} bytes per URL",
        took.as_secs_f64(),
        dir_bytes(store.path()) as f64 / active as f64
    );
    drop(site.stdin.take());
    let _ = site.wait();
}

// ---------------------------------------------------------------------------
// Mode 2: soak
// ---------------------------------------------------------------------------

/// Live counters the workers share with the sampler.
#[derive(Default)]
struct Live {
    leased: AtomicU64,
    completed: AtomicU64,
    errors: AtomicU64,
    unknown: AtomicU64,
}

/// One row of the table.
struct Sample {
    secs: f64,
    rss: f64,
    disk_mib: f64,
    active: Option<u64>,
    queue: Option<f64>,
}

fn soak(args: &[String], minutes: f64) {
    let sites: usize = arg(args, "--sites").unwrap_or(100);
    let every: f64 = arg(args, "--sample-secs").unwrap_or(30.0);
    let (mut site, port) = start_site(&[]);
    let store = tempfile::tempdir().unwrap();
    let mut extra: Vec<String> = [
        "--sitemap-secs",
        "60",
        "--min-refresh-secs",
        "30",
        "--max-refresh-secs",
        "120",
    ]
    .map(String::from)
    .to_vec();
    for n in 0..sites {
        extra.push("--resolve".into());
        extra.push(format!("site{n}.test=127.0.0.1"));
    }
    let site_urls: Vec<String> = (0..sites)
        .map(|n| format!("http://site{n}.test:{port}/"))
        .collect();
    println!(
        "soak: {minutes} min, {sites} sites x {SOAK_URLS} URLs (5% of lastmods move a minute, 5 URLs replaced a minute, ETag/304), refresh 30-120 s"
    );
    println!("load average before: {}", loadavg());
    let mut daemon = Daemon::start(store.path(), &extra, &site_urls, log_path("soak"));
    let (api, pid) = (daemon.api, daemon.pid());
    println!("daemon pid {pid} on {}", api.addr);

    let live = Arc::new(Live::default());
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..2)
        .map(|id| {
            let (live, stop) = (live.clone(), stop.clone());
            std::thread::spawn(move || soak_worker(id, api, &live, &stop))
        })
        .collect();

    println!();
    println!(
        "{:>6} {:>8} {:>8} {:>8} {:>8} {:>7} {:>9} {:>10} {:>6}  sitemap fetches by status",
        "min", "RSS MiB", "disk MiB", "active", "due now", "queue", "leased", "completed", "errors"
    );
    let start = Instant::now();
    let total = Duration::from_secs_f64(minutes * 60.0);
    let mut samples: Vec<Sample> = Vec::new();
    let mut crashed = None;
    let mut next = Duration::ZERO;
    loop {
        if let Some(s) = daemon.exited() {
            crashed = Some(s);
            break;
        }
        let elapsed = start.elapsed();
        if elapsed < next {
            std::thread::sleep((next - elapsed).min(Duration::from_secs(1)));
            continue;
        }
        let secs = elapsed.as_secs_f64();
        let (rss, _) = rss_mib(pid);
        let disk_mib = dir_bytes(store.path()) as f64 / (1 << 20) as f64;
        let stats = api.stats();
        let metrics = api.metrics();
        let (active, due) = match &stats {
            Ok(s) => (s["active"].as_u64(), s["due_now"].as_u64()),
            Err(e) => {
                println!("  stats: {e}");
                (None, None)
            }
        };
        let (queue, fetches) = match &metrics {
            Ok(m) => (
                m.0.get("sitemapd_queue_depth").copied(),
                m.by_label("sitemapd_sitemap_fetches", "status")
                    .iter()
                    .map(|(k, v)| format!("{k}:{v:.0}"))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            Err(e) => (None, format!("metrics: {e}")),
        };
        let opt = |v: Option<u64>| v.map_or("-".into(), |v| v.to_string());
        println!(
            "{:>6.1} {rss:>8.1} {disk_mib:>8.1} {:>8} {:>8} {:>7} {:>9} {:>10} {:>6}  {fetches}",
            secs / 60.0,
            opt(active),
            opt(due),
            queue.map_or("-".into(), |q| format!("{q:.0}")),
            live.leased.load(Ordering::Relaxed),
            live.completed.load(Ordering::Relaxed),
            live.errors.load(Ordering::Relaxed),
        );
        samples.push(Sample {
            secs,
            rss,
            disk_mib,
            active,
            queue,
        });
        if elapsed >= total {
            break;
        }
        next += Duration::from_secs_f64(every);
        if next > total {
            next = total;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let results: Vec<SoakWorker> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let (_, hwm) = rss_mib(pid);

    println!();
    if let Some(s) = crashed {
        println!(
            "THE DAEMON EXITED after {:.1} min: {s}",
            start.elapsed().as_secs_f64() / 60.0
        );
    }
    let at = |t: f64| {
        samples
            .iter()
            .min_by(|a, b| (a.secs - t).abs().total_cmp(&(b.secs - t).abs()))
    };
    if let (Some(s5), Some(end)) = (at(300.0), samples.last()) {
        let max = samples.iter().map(|s| s.rss).fold(f64::NAN, f64::max);
        println!(
            "RSS: {:.1} MiB at {:.1} min, {:.1} MiB at the end ({:.1} min), max sampled {max:.1} MiB, VmHWM {hwm:.1} MiB",
            s5.rss,
            s5.secs / 60.0,
            end.rss,
            end.secs / 60.0
        );
        let half: Vec<&Sample> = samples
            .iter()
            .filter(|s| s.secs >= end.secs / 2.0)
            .collect();
        println!(
            "slope over the second half ({} samples): RSS {:+.2} MiB/hour, store on disk {:+.1} MiB/hour ({:.1} -> {:.1} MiB); active {} -> {}, queue {} -> {}",
            half.len(),
            slope(&half, |s| s.rss) * 3_600.0,
            slope(&half, |s| s.disk_mib) * 3_600.0,
            half.first().map_or(0.0, |s| s.disk_mib),
            end.disk_mib,
            half.first()
                .and_then(|s| s.active)
                .map_or("-".into(), |v| v.to_string()),
            end.active.map_or("-".into(), |v| v.to_string()),
            half.first()
                .and_then(|s| s.queue)
                .map_or("-".into(), |v| format!("{v:.0}")),
            end.queue.map_or("-".into(), |v| format!("{v:.0}")),
        );
    }
    let sum = |f: fn(&SoakWorker) -> u64| results.iter().map(f).sum::<u64>();
    println!(
        "workers: {} leases ({} empty), {} URLs leased, {} completed, {} unknown, {} errors",
        sum(|w| w.leases),
        sum(|w| w.empty),
        live.leased.load(Ordering::Relaxed),
        live.completed.load(Ordering::Relaxed),
        live.unknown.load(Ordering::Relaxed),
        live.errors.load(Ordering::Relaxed)
    );
    for e in results.iter().flat_map(|w| &w.first_errors).take(10) {
        println!("  error: {e}");
    }
    let mut lease_ms: Vec<f64> = results.iter().flat_map(|w| w.lease_ms.clone()).collect();
    let mut complete_ms: Vec<f64> = results.iter().flat_map(|w| w.complete_ms.clone()).collect();
    println!("lease:    {}", percentiles(&mut lease_ms));
    println!("complete: {}", percentiles(&mut complete_ms));
    if let Ok(m) = api.metrics() {
        let show = |name: &str| {
            m.by_label(name, "status")
                .iter()
                .map(|(k, v)| format!("{k}:{v:.0}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        println!("sitemap fetches: {}", show("sitemapd_sitemap_fetches"));
        println!("robots fetches: {}", show("sitemapd_robots_fetches"));
        println!("ingest: {}", show("sitemapd_ingest_urls"));
        println!("completions: {}", show("sitemapd_completions"));
        println!(
            "site walks: {:.0}, URL entries read: {:.0}",
            m.sum("sitemapd_site_walks"),
            m.sum("sitemapd_urls_ingested")
        );
    }
    daemon.print_log_summary();
    let consistent = crashed.is_none() && {
        let (took, status) = daemon.stop();
        println!(
            "daemon stopped {:.2} s after SIGTERM: {status}",
            took.as_secs_f64()
        );
        check_store(store.path(), sites * SOAK_URLS as usize)
    };
    println!("load average after: {}", loadavg());
    drop(site.stdin.take());
    let _ = site.wait();
    // A soak whose daemon exited, or whose store fails the check, fails.
    if !consistent {
        println!(
            "SOAK FAILED: {}",
            if crashed.is_some() {
                "the daemon exited"
            } else {
                "the store is inconsistent"
            }
        );
        std::process::exit(1);
    }
}

/// Queue consistency after the soak: `sitemapd stats --check` on the
/// stopped daemon's store, and the active URL count against what the sites
/// list (each lists `expected` URLs in all at any time). Whether the check
/// passed.
fn check_store(store: &Path, expected: usize) -> bool {
    let out = Command::new(env!("CARGO_BIN_EXE_sitemapd"))
        .args(["stats", "--check", "--json", "--store"])
        .arg(store)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    println!(
        "store check: {} (exit {}); {} active (the sites list {expected} now), {} retired, {} leased, {} due now",
        if out.status.success() {
            "consistent"
        } else {
            "INCONSISTENT"
        },
        out.status.code().unwrap_or(-1),
        v["active"],
        v["retired"],
        v["leased"],
        v["due_now"],
    );
    if !out.status.success() {
        println!("{}", String::from_utf8_lossy(&out.stdout));
    }
    out.status.success()
}

/// Least-squares slope of `f` over time, per second.
fn slope(samples: &[&Sample], f: impl Fn(&Sample) -> f64) -> f64 {
    let n = samples.len() as f64;
    if n < 2.0 {
        return f64::NAN;
    }
    let mx = samples.iter().map(|s| s.secs).sum::<f64>() / n;
    let my = samples.iter().map(|s| f(s)).sum::<f64>() / n;
    let (mut num, mut den) = (0.0, 0.0);
    for s in samples {
        num += (s.secs - mx) * (f(s) - my);
        den += (s.secs - mx) * (s.secs - mx);
    }
    num / den
}

/// What one soak worker did.
#[derive(Default)]
struct SoakWorker {
    leases: u64,
    empty: u64,
    first_errors: Vec<String>,
    lease_ms: Vec<f64>,
    complete_ms: Vec<f64>,
}

impl SoakWorker {
    fn error(&mut self, live: &Live, id: usize, e: String) {
        let n = live.errors.fetch_add(1, Ordering::Relaxed) + 1;
        if n <= 20 {
            println!("  worker {id} error: {e}");
        }
        if self.first_errors.len() < 10 {
            self.first_errors.push(e);
        }
    }
}

/// Leases 50 every 200 ms and completes them (1 in 4 changed).
fn soak_worker(id: usize, api: Api, live: &Live, stop: &AtomicBool) -> SoakWorker {
    let mut w = SoakWorker::default();
    let tick = Duration::from_millis(200);
    let mut next = Instant::now();
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        next += tick;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
        let t = Instant::now();
        let r = api.json(
            "POST",
            "/v1/lease",
            Some(&json!({ "n": 50, "ttl_secs": 300 })),
        );
        w.lease_ms.push(ms(t));
        w.leases += 1;
        let urls = match r {
            Ok(v) => leased_urls(&v),
            Err(e) => {
                w.error(live, id, e);
                continue;
            }
        };
        if urls.is_empty() {
            w.empty += 1;
            continue;
        }
        live.leased.fetch_add(urls.len() as u64, Ordering::Relaxed);
        let items: Vec<Value> = urls
            .iter()
            .map(|u| {
                i += 1;
                let outcome = if i.is_multiple_of(4) {
                    "changed"
                } else {
                    "not-modified"
                };
                json!({ "url": u, "outcome": outcome })
            })
            .collect();
        let t = Instant::now();
        let r = api.json("POST", "/v1/complete", Some(&Value::Array(items)));
        w.complete_ms.push(ms(t));
        match r {
            Ok(v) => {
                live.completed
                    .fetch_add(v["completed"].as_u64().unwrap_or(0), Ordering::Relaxed);
                let unknown = v["unknown"].as_array().map_or(0, |a| a.len() as u64);
                live.unknown.fetch_add(unknown, Ordering::Relaxed);
            }
            Err(e) => w.error(live, id, e),
        }
    }
    w
}
