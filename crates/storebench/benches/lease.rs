//! What a lease of 1,000 URLs costs on bare sled 0.34, by what it reads and
//! writes (a `lease(1000)` p50 ≤ 10 ms at 10M URLs): the store's key layout 6
//! (records in zstd pages of 64, new URLs in due lists of 32) rebuilt on
//! bare sled, then 31 leases of 10 URLs from each of 100 hosts, each in one
//! sled batch, in four designs. Prints figures; asserts nothing.
//!
//! `cargo bench -p sitemapd-storebench --bench lease [-- --urls N --hosts H --cache-mib M --variants a,b]`
//!
//! Variants (each in a child process, on a fresh store):
//! - `per-url`: what the store does today. Each leased URL's record is
//!   read (a point read of its key of its own, then its page) and written
//!   back under a key of its own with the lease; the URLs leave their due
//!   lists (rewritten) for one lease list per host; the host record and
//!   its counts are written.
//! - `per-host`: the records are read as above, but written together in
//!   one key per host (the lease list carries them); lists, host and
//!   counts as above.
//! - `marks`: no record is read or written: the lease marks its entries in
//!   their due lists (rewritten), and writes the host and its counts.
//! - `marks-read`: `marks`, and each leased URL's record read (what a
//!   lease that must hand out each record's metadata would add).
//!
//! Every design reads the due lists the same way: a host's lists from its
//! first, decoding each until ten entries not yet leased are found.

use serde::{Deserialize, Serialize};
use sitemapd_storebench::{NOW, Record, Spec, arg, bench_main, median, path, record};
use std::time::Instant;

// The store's allocator, jemalloc, as in the scheduler's store bench.
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const VARIANTS: &[&str] = &["per-url", "per-host", "marks", "marks-read"];

/// URLs per page, and per due list (the store's `PAGE_CAP`, `LIST_CAP`).
const PAGE: usize = 64;
const LIST: usize = 32;
/// Hosts per lease, URLs per host.
const HOSTS_PER_LEASE: usize = 100;
const PER_HOST: usize = 10;
/// The lease's time to live, seconds.
const TTL: i64 = 300;

/// A due list entry: what a lease orders URLs by, and (`marks`) its lease.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    path: String,
    score: f32,
    rank: [u8; 11],
    lease: Option<(u64, i64)>,
}

/// An i64 as 8 bytes that sort like the numbers (the store's encoding).
fn ordered(t: i64) -> [u8; 8] {
    ((t as u64) ^ (1 << 63)).to_be_bytes()
}

fn key(prefix: u8, parts: &[&[u8]]) -> Vec<u8> {
    let mut k = vec![prefix];
    for p in parts {
        k.extend_from_slice(p);
    }
    k
}

/// `d` ‖ class 0 ‖ due ‖ rank of zeros ‖ NUL ‖ host ‖ NUL: the prefix of a
/// host's due lists due at `at`.
fn lists_of(at: i64, h: usize) -> Vec<u8> {
    key(
        b'd',
        &[
            &[0],
            &ordered(at),
            &[0; 11],
            &[0],
            format!("host-{h}.example").as_bytes(),
            &[0],
        ],
    )
}

fn list_key(at: i64, h: usize, n: u32) -> Vec<u8> {
    let mut k = lists_of(at, h);
    k.extend_from_slice(format!("{n:08x}").as_bytes());
    k
}

/// `prefix` ‖ host ‖ NUL ‖ path: a page (`p`, keyed by its last path) or
/// a record under a key of its own (`u`).
fn path_key(prefix: u8, h: usize, path: &str) -> Vec<u8> {
    key(
        prefix,
        &[
            format!("host-{h}.example").as_bytes(),
            &[0],
            path.as_bytes(),
        ],
    )
}

/// Host `h`'s record (`h`, 48 bytes) and counts (`t`, 24 bytes), filled
/// with `byte`.
fn host_records(batch: &mut sled::Batch, h: usize, byte: u8) {
    let host = format!("host-{h}.example");
    batch.insert(key(b'h', &[host.as_bytes()]), vec![byte; 48]);
    batch.insert(key(b't', &[host.as_bytes()]), vec![byte; 24]);
}

fn squeeze<T: Serialize>(value: &T) -> Vec<u8> {
    let raw = postcard::to_stdvec(value).expect("encodes");
    zstd::bulk::compress(&raw, 1).expect("compresses")
}

fn unsqueeze<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> T {
    let raw = zstd::bulk::decompress(bytes, 1 << 20).expect("decompresses");
    postcard::from_bytes(&raw).expect("decodes")
}

struct Bench {
    db: sled::Db,
    spec: Spec,
    /// Leases each host had.
    leases: Vec<usize>,
    next_id: u64,
    sled_ops: usize,
}

impl Bench {
    /// Every host's URLs in pages of 64 (path order) and due lists of 32
    /// (newest lastmod first, as the store ranks them), host records and
    /// counts.
    fn fill(&mut self) {
        let mut batch = sled::Batch::default();
        for h in 0..self.spec.hosts {
            let mut urls: Vec<(String, Record)> = (0..self.spec.per_host)
                .map(|i| (path(i), record(h, i, 0)))
                .collect();
            urls.sort_by(|a, b| a.0.cmp(&b.0));
            for page in urls.chunks(PAGE) {
                let last = &page[page.len() - 1].0;
                let records: Vec<(String, Vec<u8>)> =
                    page.iter().map(|(p, r)| (p.clone(), r.encode())).collect();
                batch.insert(path_key(b'p', h, last), squeeze(&records));
            }
            let mut entries: Vec<Entry> = urls
                .iter()
                .map(|(p, r)| Entry {
                    path: p.clone(),
                    score: 0.0,
                    rank: rank(r, p),
                    lease: None,
                })
                .collect();
            entries.sort_by_key(|e| e.rank);
            for (n, list) in entries.chunks(LIST).enumerate() {
                batch.insert(list_key(NOW, h, n as u32), squeeze(&list.to_vec()));
            }
            host_records(&mut batch, h, 7);
            if h % 100 == 99 {
                self.db
                    .apply_batch(std::mem::take(&mut batch))
                    .expect("fill");
            }
        }
        self.db.apply_batch(batch).expect("fill");
        self.db.flush().expect("flush");
    }

    /// A URL's record: its key of its own, else its page.
    fn read_record(&self, h: usize, path: &str) -> Record {
        if let Some(own) = self.db.get(path_key(b'u', h, path)).expect("get") {
            return Record::decode(&own[..own.len() - 16]).expect("a record");
        }
        let (_, page) = self
            .db
            .range(path_key(b'p', h, path)..)
            .next()
            .expect("a page")
            .expect("read");
        let records: Vec<(String, Vec<u8>)> = unsqueeze(&page);
        let (_, bytes) = records
            .iter()
            .find(|(p, _)| p == path)
            .expect("in its page");
        Record::decode(bytes).expect("a record")
    }

    /// One lease of 10 URLs from each of 100 hosts, in `design`.
    fn lease(&mut self, k: usize, design: &str) -> usize {
        let now = NOW + 10 * k as i64;
        let horizon = now + TTL;
        let mut batch = sled::Batch::default();
        let mut ops = 0;
        let mut leased = 0;
        for j in 0..HOSTS_PER_LEASE {
            let h = (k * HOSTS_PER_LEASE + j) % self.spec.hosts;
            self.leases[h] += 1;
            // The host's lists from its first, until ten entries not leased.
            let mut taken: Vec<Entry> = Vec::new();
            let prefix = lists_of(NOW, h);
            let mut end = prefix.clone();
            end.push(0xff);
            for item in self.db.range(prefix..end) {
                if taken.len() == PER_HOST {
                    break;
                }
                let (key, value) = item.expect("read");
                let mut list: Vec<Entry> = unsqueeze(&value);
                let mut changed = false;
                for e in list.iter_mut() {
                    if taken.len() < PER_HOST && e.lease.is_none_or(|(_, until)| until <= now) {
                        self.next_id += 1;
                        e.lease = Some((self.next_id, horizon));
                        taken.push(e.clone());
                        changed = true;
                    }
                }
                if !changed {
                    continue;
                }
                if design.starts_with("marks") {
                    batch.insert(key, squeeze(&list));
                } else {
                    list.retain(|e| e.lease.is_none());
                    if list.is_empty() {
                        batch.remove(key);
                    } else {
                        batch.insert(key, squeeze(&list));
                    }
                }
                ops += 1;
            }
            leased += taken.len();
            let records: Vec<Record> = if design == "marks" {
                Vec::new()
            } else {
                taken.iter().map(|e| self.read_record(h, &e.path)).collect()
            };
            match design {
                "per-url" => {
                    for (e, r) in taken.iter().zip(&records) {
                        let mut value = r.encode();
                        let (id, until) = e.lease.expect("leased");
                        value.extend_from_slice(&id.to_be_bytes());
                        value.extend_from_slice(&until.to_be_bytes());
                        batch.insert(path_key(b'u', h, &e.path), value);
                        ops += 1;
                    }
                    batch.insert(list_key(horizon, h, 0), squeeze(&taken));
                    ops += 1;
                }
                "per-host" => {
                    let bundle: Vec<(&Entry, Vec<u8>)> = taken
                        .iter()
                        .zip(records.iter().map(Record::encode))
                        .collect();
                    batch.insert(list_key(horizon, h, 0), squeeze(&bundle));
                    ops += 1;
                }
                _ => {}
            }
            host_records(&mut batch, h, 8);
            ops += 2;
        }
        self.db.apply_batch(batch).expect("apply");
        self.sled_ops = ops;
        leased
    }
}

/// The store's rank: priority, then newest lastmod, then shortest URL.
fn rank(r: &Record, path: &str) -> [u8; 11] {
    let mut rank = [0u8; 11];
    rank[1..9].copy_from_slice(&(u64::MAX - r.lastmod.unwrap_or(0) as u64).to_be_bytes());
    rank[9..].copy_from_slice(&(path.len() as u16).to_be_bytes());
    rank
}

fn run_one(design: &str, spec: Spec) {
    assert!(VARIANTS.contains(&design), "unknown variant {design}");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = sled::Config::new()
        .path(dir.path())
        .cache_capacity((arg("--cache-mib", 32) as u64) << 20)
        .flush_every_ms(Some(1000))
        .open()
        .expect("open sled");
    let mut b = Bench {
        db,
        spec,
        leases: vec![0; spec.hosts],
        next_id: 0,
        sled_ops: 0,
    };
    let t = Instant::now();
    b.fill();
    let fill = t.elapsed().as_secs_f64();
    let mut ms = Vec::new();
    let mut leased = 0;
    for k in 0..31 {
        let t = Instant::now();
        leased = b.lease(k, design);
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let p90 = {
        ms.sort_by(f64::total_cmp);
        ms[27]
    };
    println!(
        "  {design}: filled in {fill:.1} s; the last lease handed out {leased} URLs in {} sled writes",
        b.sled_ops
    );
    println!(
        "ROW|{design}|{}|{:.1}|{p90:.1}|{:.1}",
        b.sled_ops,
        median(&mut ms),
        ms[30]
    );
    drop(b);
    dir.close().expect("remove the temporary directory");
}

fn main() {
    bench_main(
        VARIANTS,
        run_one,
        |spec| {
            format!(
                "bare sled 0.34, cache {} MiB: {spec} in pages of {PAGE} and due lists of {LIST}; 31 leases of {PER_HOST} URLs from each of {HOSTS_PER_LEASE} hosts, one child process per design",
                arg("--cache-mib", 32),
            )
        },
        &["--cache-mib".to_owned(), arg("--cache-mib", 32).to_string()],
        &["design", "sled writes", "lease ms p50", "p90", "max"],
    );
}
