//! Shared parts of the storage-layout benchmarks: the synthetic
//! URLs and records both benches store, and the measuring helpers (peak
//! RSS, bytes on disk, the per-variant child processes).
//!
//! The URLs have the shape of the scheduler's store bench
//! (`crates/scheduler/benches/store.rs`):
//! `https://host-{h}.example/catalog/section-{i % 37}/item-{i}.html`, with
//! lastmod `1_690_000_000 + (i % 1000) * 3600`, changefreq weekly and
//! priority 0.5. Each URL's record is a postcard-encoded [`Record`] of
//! about 80 bytes whose fields vary per URL (times, an f32, varints, one
//! hash), so that compression sees realistic bytes, not zeros.
//!
//! The crate's README follows: the commands and the figures.
#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::Command;

/// Unix seconds of the first ingest.
pub const NOW: i64 = 1_700_000_000;

/// URLs per write batch by default (sled batch, SQLite transaction).
pub const BATCH: usize = 10_000;

/// How many URLs over how many hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// Hosts.
    pub hosts: usize,
    /// URLs of each host.
    pub per_host: usize,
    /// URLs per write batch (sled batch, SQLite transaction).
    pub batch: usize,
}

/// "N URLs over H hosts (P per host)", as the benches' titles say it.
impl std::fmt::Display for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} URLs over {} hosts ({} per host)",
            self.total(),
            self.hosts,
            self.per_host
        )
    }
}

impl Spec {
    /// `urls` URLs spread evenly over `hosts` hosts (rounded down to a
    /// multiple of `hosts`; at least one host), written `batch` URLs at a
    /// time (at least one).
    pub fn new(urls: usize, hosts: usize, batch: usize) -> Self {
        let hosts = hosts.max(1);
        Spec {
            hosts,
            per_host: urls / hosts,
            batch: batch.max(1),
        }
    }

    /// The command-line arguments that give this spec (for a child).
    pub fn args(&self) -> Vec<String> {
        [
            "--urls".to_owned(),
            self.total().to_string(),
            "--hosts".to_owned(),
            self.hosts.to_string(),
            "--batch".to_owned(),
            self.batch.to_string(),
        ]
        .to_vec()
    }

    /// All URLs.
    pub fn total(&self) -> usize {
        self.hosts * self.per_host
    }
}

/// The host name of host `h`.
pub fn host(h: usize) -> String {
    format!("host-{h}.example")
}

/// The path of a host's URL `i`.
pub fn path(i: usize) -> String {
    format!("/catalog/section-{}/item-{i}.html", i % 37)
}

/// URL `i` of host `h`.
pub fn url(h: usize, i: usize) -> String {
    format!(
        "https://host-{h}.example/catalog/section-{}/item-{i}.html",
        i % 37
    )
}

/// The URL prefix of every URL of host `h`.
pub fn url_prefix(h: usize) -> String {
    format!("https://host-{h}.example/")
}

/// A URL's record as a store keeps it: about 80 bytes of postcard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// First seen (unix seconds).
    pub first_seen: i64,
    /// The sitemap (id) it was first seen in.
    pub first_source: u64,
    /// Last seen in a sitemap.
    pub last_seen: i64,
    /// The lastmod (unix seconds).
    pub lastmod: Option<i64>,
    /// The lastmod's precision.
    pub lastmod_precision: u8,
    /// Lastmod values and when each was first seen.
    pub lastmod_history: Vec<(i64, i64)>,
    /// The changefreq.
    pub changefreq: Option<u8>,
    /// The sitemap priority.
    pub priority: Option<f32>,
    /// The last fetch's HTTP status.
    pub fetch_status: Option<u16>,
    /// A hash of the last fetch's validator (ETag): 8 random-looking bytes.
    pub etag_hash: Option<u64>,
    /// When it was last fetched (unix seconds).
    pub last_fetch: Option<i64>,
    /// How long the last fetch took, milliseconds.
    pub fetch_ms: Option<u32>,
    /// The last fetches: (when, outcome).
    pub visits: Vec<(i64, u8)>,
    /// The adaptive interval, seconds.
    pub interval: Option<f32>,
    /// When it is due (unix seconds).
    pub due: i64,
    /// The urgency class.
    pub class: u8,
    /// The store's sequence number of its last change.
    pub seq: u64,
    /// Sitemaps listing it: (sitemap id, that sitemap's fetch sequence).
    pub sources: Vec<(u64, u64)>,
    /// Out of the queue.
    pub retired: bool,
    /// Disallowed by robots.txt.
    pub blocked: bool,
}

/// A 64-bit mix of two numbers (splitmix64), for values that look random
/// but are the same on every run.
pub fn mix(a: u64, b: u64) -> u64 {
    let mut z = a
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(b)
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The lastmod of URL `i` (as in the scheduler's store bench).
pub fn lastmod(i: usize) -> i64 {
    1_690_000_000 + (i as i64 % 1000) * 3600
}

/// The record of URL `i` of host `h` in generation `generation` (0: the
/// first ingest; each later generation changes every record: last seen,
/// due time and sequence move on).
pub fn record(h: usize, i: usize, generation: u32) -> Record {
    let r = mix(h as u64, i as u64);
    let g = i64::from(generation);
    let week = 604_800.0_f32;
    Record {
        first_seen: NOW + (h as i64 % 3600),
        first_source: h as u64 + 1,
        last_seen: NOW + (h as i64 % 3600) + g * 3600,
        lastmod: Some(lastmod(i)),
        lastmod_precision: 3,
        lastmod_history: vec![(lastmod(i), NOW + (h as i64 % 3600))],
        changefreq: Some(3),
        priority: Some(0.5),
        fetch_status: (!r.is_multiple_of(4)).then_some(200),
        etag_hash: (!r.is_multiple_of(4)).then_some(mix(r, 1)),
        last_fetch: Some(NOW - (r % 86_400) as i64),
        fetch_ms: Some(40 + (r % 3000) as u32),
        visits: vec![(NOW - (r % 86_400) as i64, (r % 5) as u8)],
        interval: Some(week * (0.5 + (r % 17) as f32 / 16.0)),
        due: NOW + (r % 604_800) as i64 + g * 3600,
        class: u8::from(r.is_multiple_of(8)),
        seq: (h * 1000 + i) as u64 + u64::from(generation) * 1_000_000_007,
        sources: vec![(h as u64 + 1, 1 + u64::from(generation))],
        retired: false,
        blocked: r.is_multiple_of(97),
    }
}

impl Record {
    /// The postcard bytes.
    pub fn encode(&self) -> Vec<u8> {
        postcard::to_stdvec(self).expect("a record encodes")
    }

    /// Decodes postcard bytes.
    pub fn decode(bytes: &[u8]) -> Option<Record> {
        postcard::from_bytes(bytes).ok()
    }
}

/// Peak resident set size of this process, MiB (VmHWM).
pub fn peak_rss_mib() -> f64 {
    status_mib("VmHWM:")
}

/// Resident set size of this process now, MiB (VmRSS).
pub fn rss_mib() -> f64 {
    status_mib("VmRSS:")
}

/// Starts the peak resident set size ([`peak_rss_mib`]) again from the
/// current one (Linux: `5` written to `/proc/self/clear_refs`); whether it
/// could.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn status_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

/// CPU time the calling thread has used, ms (`CLOCK_THREAD_CPUTIME_ID`).
/// Beside a wall-clock time it says whether the timed work waited (on
/// I/O, a lock, or other threads such as sled's flusher, whose work is
/// not in it).
pub fn thread_cpu_ms() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write into; the clock id is a
    // constant every Linux knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    if rc != 0 {
        return 0.0;
    }
    t.tv_sec as f64 * 1000.0 + t.tv_nsec as f64 / 1e6
}

/// Bytes under a directory: (sum of file lengths, bytes allocated on disk).
pub fn dir_bytes(path: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let mut len = 0;
    let mut allocated = 0;
    for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() {
            let (l, a) = dir_bytes(&entry.path());
            len += l;
            allocated += a;
        } else {
            len += meta.len();
            allocated += meta.blocks() * 512;
        }
    }
    (len, allocated)
}

/// Copies the files of `from` into `to` (created if absent), directories
/// included: a closed store's directory, for a test or bench that runs on
/// copies of one store. Panics on an I/O error.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The files under a directory and their lengths, largest first.
pub fn dir_files(path: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() {
            let name = entry.file_name().to_string_lossy().into_owned();
            out.extend(
                dir_files(&entry.path())
                    .into_iter()
                    .map(|(n, l)| (format!("{name}/{n}"), l)),
            );
        } else {
            out.push((entry.file_name().to_string_lossy().into_owned(), meta.len()));
        }
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.1));
    out
}

/// The value after `--name` on the command line, or `default`.
pub fn arg(name: &str, default: usize) -> usize {
    arg_str(name)
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// The string after `--name` on the command line.
pub fn arg_str(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// The median of some figures (sorts them); 0 when there are none.
pub fn median(figures: &mut [f64]) -> f64 {
    figures.sort_by(f64::total_cmp);
    figures.get(figures.len() / 2).copied().unwrap_or(0.0)
}

/// Runs this executable again with `--variant name` and the given
/// arguments, and returns its standard output; the child's standard error
/// passes through. Each variant in its own process, so that its peak RSS
/// is its own.
pub fn run_variant(name: &str, args: &[String]) -> std::io::Result<String> {
    let exe = std::env::current_exe()?;
    let out = Command::new(exe)
        .arg("--variant")
        .arg(name)
        .args(args)
        .stderr(std::process::Stdio::inherit())
        .output()?;
    if !out.status.success() {
        return Err(std::io::Error::other(format!(
            "variant {name} failed: {}",
            out.status
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// What a bench binary was asked to do.
pub enum Invocation {
    /// Measure this one variant (a child process, `--variant NAME`).
    One(String),
    /// Run these variants, each in a child process (`--variants A,B`, or
    /// all of them), and print the table.
    All(Vec<String>),
}

/// The spec (`--urls`, default 1,000,000; `--hosts`, 10,000; `--batch`,
/// [`BATCH`]) and what to do, from the command line; `None` when cargo asks
/// for the list of tests (`--list`): there is nothing to do then.
pub fn invocation(variants: &[&str]) -> Option<(Spec, Invocation)> {
    if std::env::args().any(|a| a == "--list") {
        return None;
    }
    let spec = Spec::new(
        arg("--urls", 1_000_000),
        arg("--hosts", 10_000),
        arg("--batch", BATCH),
    );
    let asked = match (arg_str("--variant"), arg_str("--variants")) {
        (Some(one), _) => Invocation::One(one),
        (None, Some(list)) => Invocation::All(list.split(',').map(str::to_owned).collect()),
        (None, None) => Invocation::All(variants.iter().map(|v| v.to_string()).collect()),
    };
    Some((spec, asked))
}

/// Runs each of `variants` in a child process ([`run_variant`]) and gathers
/// what they print: the lines to show as they are, and the table rows
/// (lines starting `ROW|`, without it). A variant that fails is a line
/// saying so.
pub fn run_variants(variants: &[String], args: &[String]) -> (Vec<String>, Vec<String>) {
    let (mut lines, mut rows) = (Vec::new(), Vec::new());
    for v in variants {
        match run_variant(v, args) {
            Ok(out) => {
                for line in out.lines() {
                    match line.strip_prefix("ROW|") {
                        Some(row) => rows.push(row.to_owned()),
                        None => lines.push(line.to_owned()),
                    }
                }
            }
            Err(e) => lines.push(format!("  {v}: {e}")),
        }
    }
    (lines, rows)
}

/// A bench binary's `main`: as a child (`--variant NAME`) it runs
/// `run_one`; otherwise it prints `title`, runs each variant asked for in a
/// child process ([`run_variants`], with the spec's arguments and
/// `extra_args`), and prints what they said and the [`table`] of their rows
/// under `header`. Nothing when cargo asks for the list of tests.
pub fn bench_main(
    variants: &[&str],
    run_one: impl Fn(&str, Spec),
    title: impl Fn(Spec) -> String,
    extra_args: &[String],
    header: &[&str],
) {
    let Some((spec, asked)) = invocation(variants) else {
        return;
    };
    let variants = match asked {
        Invocation::One(v) => return run_one(&v, spec),
        Invocation::All(variants) => variants,
    };
    println!("{}", title(spec));
    let mut args = spec.args();
    args.extend_from_slice(extra_args);
    let (lines, rows) = run_variants(&variants, &args);
    for line in lines {
        println!("{line}");
    }
    println!();
    print!("{}", table(header, &rows));
}

/// A Markdown table: `header` (its cells joined by ` | `), then `rows`
/// (cells separated by `|`), every column after the first right-aligned.
pub fn table(header: &[&str], rows: &[String]) -> String {
    let mut out = format!(
        "| {} |\n|---|{}\n",
        header.join(" | "),
        "---:|".repeat(header.len() - 1)
    );
    for r in rows {
        out.push_str(&format!("| {} |\n", r.replace('|', " | ")));
    }
    out
}

/// Appends `n` as a LEB128 varint.
pub fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Reads a LEB128 varint at the front of `bytes`: the number and the rest.
pub fn get_varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut n = 0u64;
    for (k, &b) in bytes.iter().enumerate().take(10) {
        n |= u64::from(b & 0x7f) << (7 * k);
        if b & 0x80 == 0 {
            return Some((n, &bytes[k + 1..]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_table_has_one_separator_cell_per_header_cell() {
        let t = table(&["variant", "a", "b"], &["x|1|2".to_string()]);
        assert_eq!(t, "| variant | a | b |\n|---|---:|---:|\n| x | 1 | 2 |\n");
    }

    use super::*;

    #[test]
    fn records_are_about_80_bytes_and_round_trip() {
        let mut total = 0;
        for i in 0..1000 {
            let r = record(i % 10, i, 0);
            let bytes = r.encode();
            total += bytes.len();
            assert_eq!(Record::decode(&bytes), Some(r.clone()));
            assert_ne!(record(i % 10, i, 1), r);
        }
        let mean = total / 1000;
        assert!((75..=85).contains(&mean), "mean record {mean} bytes");
    }

    #[test]
    fn varints_round_trip() {
        for n in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut v = Vec::new();
            put_varint(&mut v, n);
            v.push(9);
            assert_eq!(get_varint(&v), Some((n, &[9u8][..])));
        }
    }

    #[test]
    fn url_is_host_prefix_and_path() {
        assert_eq!(url(3, 40), format!("{}{}", url_prefix(3), &path(40)[1..]));
        assert_eq!(url(3, 40), format!("https://{}{}", host(3), path(40)));
    }
}
