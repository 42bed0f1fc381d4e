//! Key layouts on bare sled 0.34: first insert, unchanged
//! re-ingest, full rewrite, bytes per URL on disk, peak RSS and a
//! lease-like read, per layout variant, each variant in a child process of
//! this binary (so that its peak RSS is its own) on a fresh temporary
//! directory. Prints figures; asserts nothing.
//!
//! `cargo bench -p sitemapd-storebench --bench layouts [-- --urls N --hosts H --variants a,b]`
//!
//! Variants:
//! - `two-keys`: today's layout, `u` ‖ URL → record and
//!   `d` ‖ class ‖ due ‖ rank ‖ URL → empty.
//! - `one-key`: `u` ‖ host id (4 bytes BE) ‖ path → record; no due index.
//! - `one-key-sorted`: the same, each batch's keys sorted before insert.
//! - `grouped-64`, `grouped-256`: one key per 64 / 256 URLs of a host,
//!   `p` ‖ host id ‖ first path → (varint length ‖ path ‖ varint length ‖
//!   record)*, the host's URLs sorted by path and cut into groups.
//! - `grouped-256-deflate`: the same value deflated (level 1).

use sitemapd_storebench::{
    Record, Spec, bench_main, dir_bytes, dir_files, get_varint, median, path, peak_rss_mib,
    put_varint, record, url, url_prefix,
};
use std::collections::BinaryHeap;
use std::io::{Read, Write};
use std::time::Instant;

// The store's allocator, jemalloc, as in the scheduler's store bench.
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const VARIANTS: &[&str] = &[
    "two-keys",
    "one-key",
    "one-key-sorted",
    "grouped-64",
    "grouped-256",
    "grouped-256-deflate",
];

/// URLs a lease-like read returns.
const LEASE: usize = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    TwoKeys,
    OneKey { sorted: bool },
    Grouped { size: usize, deflate: bool },
}

impl Layout {
    fn parse(name: &str) -> Option<Layout> {
        Some(match name {
            "two-keys" => Layout::TwoKeys,
            "one-key" => Layout::OneKey { sorted: false },
            "one-key-sorted" => Layout::OneKey { sorted: true },
            "grouped-64" => Layout::Grouped {
                size: 64,
                deflate: false,
            },
            "grouped-256" => Layout::Grouped {
                size: 256,
                deflate: false,
            },
            "grouped-256-deflate" => Layout::Grouped {
                size: 256,
                deflate: true,
            },
            _ => return None,
        })
    }
}

/// An i64 as 8 bytes that sort like the numbers (the store's encoding).
fn ordered(t: i64) -> [u8; 8] {
    ((t as u64) ^ (1 << 63)).to_be_bytes()
}

/// `u` ‖ URL.
fn url_key(url: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + url.len());
    k.push(b'u');
    k.extend_from_slice(url.as_bytes());
    k
}

/// `d` ‖ class ‖ due ‖ rank (priority, lastmod newest first, URL length) ‖ URL.
fn due_key(rec: &Record, url: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(21 + url.len());
    k.push(b'd');
    k.push(rec.class);
    k.extend_from_slice(&ordered(rec.due));
    k.push(0);
    k.extend_from_slice(
        &rec.lastmod
            .map_or([0xff; 8], |at| ordered(at.saturating_neg())),
    );
    k.extend_from_slice(&u16::try_from(url.len()).unwrap_or(u16::MAX).to_be_bytes());
    k.extend_from_slice(url.as_bytes());
    k
}

/// `prefix` ‖ host id (4 bytes BE) ‖ path.
fn host_key(prefix: u8, h: usize, path: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(5 + path.len());
    k.push(prefix);
    k.extend_from_slice(&(h as u32).to_be_bytes());
    k.extend_from_slice(path.as_bytes());
    k
}

fn host_prefix(prefix: u8, h: usize) -> Vec<u8> {
    host_key(prefix, h, "")
}

/// A group's value: (varint length ‖ path ‖ varint length ‖ record)*,
/// deflated or not.
fn group_value(pairs: &[(String, Vec<u8>)], deflate: bool) -> Vec<u8> {
    let mut raw = Vec::with_capacity(pairs.iter().map(|(p, v)| p.len() + v.len() + 2).sum());
    for (p, v) in pairs {
        put_varint(&mut raw, p.len() as u64);
        raw.extend_from_slice(p.as_bytes());
        put_varint(&mut raw, v.len() as u64);
        raw.extend_from_slice(v);
    }
    if !deflate {
        return raw;
    }
    let mut enc = flate2::write::DeflateEncoder::new(
        Vec::with_capacity(raw.len() / 2),
        flate2::Compression::fast(),
    );
    enc.write_all(&raw).expect("deflate into memory");
    enc.finish().expect("deflate into memory")
}

/// A group's (path, record bytes) pairs.
fn parse_group(bytes: &[u8], deflate: bool, scratch: &mut Vec<u8>) -> Vec<(Vec<u8>, Record)> {
    let mut raw: &[u8] = if deflate {
        scratch.clear();
        flate2::read::DeflateDecoder::new(bytes)
            .read_to_end(scratch)
            .expect("a deflated group");
        scratch
    } else {
        bytes
    };
    let mut out = Vec::new();
    while !raw.is_empty() {
        let (n, rest) = get_varint(raw).expect("a group's path length");
        let (p, rest) = rest.split_at(n as usize);
        let (n, rest) = get_varint(rest).expect("a group's record length");
        let (v, rest) = rest.split_at(n as usize);
        out.push((p.to_vec(), Record::decode(v).expect("a record")));
        raw = rest;
    }
    out
}

/// A host's URLs, (path, record) sorted by path, in generation `generation`.
fn host_sorted(h: usize, per_host: usize, generation: u32) -> Vec<(String, Record)> {
    let mut v: Vec<(String, Record)> = (0..per_host)
        .map(|i| (path(i), record(h, i, generation)))
        .collect();
    v.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    v
}

struct Bench {
    db: sled::Db,
    layout: Layout,
    spec: Spec,
    /// sled keys written.
    keys: usize,
    /// Bytes of values written (the first insert).
    value_bytes: usize,
}

impl Bench {
    /// Applies `batch` and starts a new one.
    fn apply(&self, batch: &mut sled::Batch, pending: &mut usize) {
        self.db
            .apply_batch(std::mem::take(batch))
            .expect("apply batch");
        *pending = 0;
    }

    /// Writes every URL's record of `generation`: `rewrite` reads each old
    /// record first (and moves its due entry), as a store's update does.
    fn write_all(&mut self, generation: u32, rewrite: bool) {
        let mut batch = sled::Batch::default();
        let mut pending = 0;
        let mut sorted_keys: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for h in 0..self.spec.hosts {
            match self.layout {
                Layout::TwoKeys => {
                    for i in 0..self.spec.per_host {
                        let u = url(h, i);
                        let rec = record(h, i, generation);
                        let key = url_key(&u);
                        if rewrite {
                            let old = self.db.get(&key).expect("get").expect("a record");
                            let old = Record::decode(&old).expect("a record");
                            batch.remove(due_key(&old, &u));
                        } else {
                            self.keys += 2;
                        }
                        let value = rec.encode();
                        self.value_bytes += value.len();
                        batch.insert(due_key(&rec, &u), &[] as &[u8]);
                        batch.insert(key, value);
                        pending += 1;
                        if pending >= self.spec.batch {
                            self.apply(&mut batch, &mut pending);
                        }
                    }
                }
                Layout::OneKey { sorted } => {
                    for i in 0..self.spec.per_host {
                        let rec = record(h, i, generation);
                        let key = host_key(b'u', h, &path(i));
                        if rewrite {
                            let old = self.db.get(&key).expect("get").expect("a record");
                            let _old = Record::decode(&old).expect("a record");
                        } else {
                            self.keys += 1;
                        }
                        let value = rec.encode();
                        self.value_bytes += value.len();
                        if sorted {
                            sorted_keys.push((key, value));
                        } else {
                            batch.insert(key, value);
                        }
                        pending += 1;
                        if pending >= self.spec.batch {
                            if sorted {
                                sorted_keys.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                                for (k, v) in sorted_keys.drain(..) {
                                    batch.insert(k, v);
                                }
                            }
                            self.apply(&mut batch, &mut pending);
                        }
                    }
                }
                Layout::Grouped { size, deflate } => {
                    let urls = host_sorted(h, self.spec.per_host, generation);
                    let mut scratch = Vec::new();
                    if rewrite {
                        // Read the host's groups in order, as a merge would.
                        let mut n = 0;
                        for kv in self.db.scan_prefix(host_prefix(b'p', h)) {
                            let (_, v) = kv.expect("scan");
                            n += parse_group(&v, deflate, &mut scratch).len();
                        }
                        assert_eq!(n, urls.len(), "host {h}'s stored URLs");
                    }
                    for chunk in urls.chunks(size) {
                        let pairs: Vec<(String, Vec<u8>)> =
                            chunk.iter().map(|(p, r)| (p.clone(), r.encode())).collect();
                        let value = group_value(&pairs, deflate);
                        self.value_bytes += value.len();
                        if !rewrite {
                            self.keys += 1;
                        }
                        batch.insert(host_key(b'p', h, &chunk[0].0), value);
                        pending += chunk.len();
                        if pending >= self.spec.batch {
                            self.apply(&mut batch, &mut pending);
                        }
                    }
                }
            }
        }
        if !sorted_keys.is_empty() {
            sorted_keys.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            for (k, v) in sorted_keys.drain(..) {
                batch.insert(k, v);
            }
        }
        self.apply(&mut batch, &mut pending);
        self.db.flush().expect("flush");
    }

    /// Reads every URL's record, decodes it and compares it with the
    /// incoming one; writes nothing. Returns the records that differed.
    fn reingest_unchanged(&self) -> usize {
        let mut differ = 0;
        for h in 0..self.spec.hosts {
            match self.layout {
                Layout::TwoKeys | Layout::OneKey { .. } => {
                    for i in 0..self.spec.per_host {
                        let rec = record(h, i, 0);
                        let key = match self.layout {
                            Layout::TwoKeys => url_key(&url(h, i)),
                            _ => host_key(b'u', h, &path(i)),
                        };
                        let old = self.db.get(&key).expect("get");
                        if old.and_then(|o| Record::decode(&o)).as_ref() != Some(&rec) {
                            differ += 1;
                        }
                    }
                }
                Layout::Grouped { deflate, .. } => {
                    // The host's incoming URLs sorted by path, merged with
                    // its groups read in order.
                    let urls = host_sorted(h, self.spec.per_host, 0);
                    let mut incoming = urls.iter();
                    let mut scratch = Vec::new();
                    for kv in self.db.scan_prefix(host_prefix(b'p', h)) {
                        let (_, v) = kv.expect("scan");
                        for (p, stored) in parse_group(&v, deflate, &mut scratch) {
                            match incoming.next() {
                                Some((ip, ir)) if ip.as_bytes() == p && *ir == stored => {}
                                _ => differ += 1,
                            }
                        }
                    }
                    differ += incoming.count();
                }
            }
        }
        differ
    }

    /// The `LEASE` most due URLs of host `h` (or all its URLs if fewer),
    /// by reading the host's records: the lease-like read per host.
    fn lease_host(&self, h: usize) -> usize {
        let mut heap = BinaryHeap::with_capacity(LEASE + 1);
        let mut keep = |due: i64, key: Vec<u8>| {
            heap.push((due, key));
            if heap.len() > LEASE {
                heap.pop();
            }
        };
        match self.layout {
            Layout::TwoKeys | Layout::OneKey { .. } => {
                let prefix = match self.layout {
                    Layout::TwoKeys => url_key(&url_prefix(h)),
                    _ => host_prefix(b'u', h),
                };
                for kv in self.db.scan_prefix(prefix) {
                    let (k, v) = kv.expect("scan");
                    keep(Record::decode(&v).expect("a record").due, k.to_vec());
                }
            }
            Layout::Grouped { deflate, .. } => {
                let mut scratch = Vec::new();
                for kv in self.db.scan_prefix(host_prefix(b'p', h)) {
                    let (_, v) = kv.expect("scan");
                    for (p, r) in parse_group(&v, deflate, &mut scratch) {
                        keep(r.due, p);
                    }
                }
            }
        }
        heap.len()
    }

    /// The `LEASE` most due URLs of all: the due index's first keys for
    /// `two-keys`, a scan of every record for the layouts without one.
    fn lease_global(&self) -> usize {
        if self.layout == Layout::TwoKeys {
            return self.db.scan_prefix([b'd']).take(LEASE).count();
        }
        let mut heap = BinaryHeap::with_capacity(LEASE + 1);
        let mut keep = |due: i64| {
            heap.push(due);
            if heap.len() > LEASE {
                heap.pop();
            }
        };
        let mut scratch = Vec::new();
        for kv in self.db.iter() {
            let (_, v) = kv.expect("scan");
            match self.layout {
                Layout::Grouped { deflate, .. } => {
                    for (_, r) in parse_group(&v, deflate, &mut scratch) {
                        keep(r.due);
                    }
                }
                _ => keep(Record::decode(&v).expect("a record").due),
            }
        }
        heap.len()
    }
}

fn per_url(bytes: u64, spec: Spec) -> f64 {
    bytes as f64 / spec.total() as f64
}

/// Runs one variant; prints a `ROW` line of figures and a few details.
fn run_one(name: &str, spec: Spec) {
    let layout = Layout::parse(name).unwrap_or_else(|| panic!("unknown variant {name}"));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = sled::Config::new()
        .path(dir.path())
        .cache_capacity(64 << 20)
        .open()
        .expect("open sled");
    let mut b = Bench {
        db,
        layout,
        spec,
        keys: 0,
        value_bytes: 0,
    };
    let n = spec.total() as f64;

    let t = Instant::now();
    b.write_all(0, false);
    let first = n / t.elapsed().as_secs_f64();
    let rss_insert = peak_rss_mib();
    let (files_insert, alloc_insert) = dir_bytes(dir.path());
    let sled_insert = b.db.size_on_disk().expect("size on disk");
    let value_bytes = b.value_bytes;
    let files_detail = dir_files(dir.path());

    let t = Instant::now();
    let differ = b.reingest_unchanged();
    let again = n / t.elapsed().as_secs_f64();

    let t = Instant::now();
    b.write_all(1, true);
    let rewrite = n / t.elapsed().as_secs_f64();
    let rss_ingest = peak_rss_mib();
    let (files_rewrite, alloc_rewrite) = dir_bytes(dir.path());
    let sled_rewrite = b.db.size_on_disk().expect("size on disk");

    let host = spec.hosts / 2;
    let mut host_ms = Vec::new();
    let mut leased = 0;
    for _ in 0..31 {
        let t = Instant::now();
        leased = b.lease_host(host);
        host_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let runs = if layout == Layout::TwoKeys { 31 } else { 5 };
    let mut global_ms = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let got = b.lease_global();
        global_ms.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(got, LEASE.min(spec.total()));
    }
    let rss_end = peak_rss_mib();

    println!(
        "  {name}: {} sled keys, {:.1} value bytes per key ({:.1} per URL), unchanged re-ingest saw {differ} differing records, host lease read {leased} URLs",
        b.keys,
        value_bytes as f64 / b.keys as f64,
        value_bytes as f64 / n,
    );
    println!(
        "  {name}: files after first insert: {}",
        files_detail
            .iter()
            .take(6)
            .map(|(f, l)| format!("{f} {:.1} MB", *l as f64 / 1e6))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "ROW|{name}|{first:.0}|{again:.0}|{rewrite:.0}|{:.0}|{:.0}|{:.0}|{:.0}|{:.0}|{:.0}|{rss_insert:.0}|{rss_ingest:.0}|{rss_end:.0}|{:.2}|{:.1}",
        per_url(files_insert, spec),
        per_url(alloc_insert, spec),
        per_url(sled_insert, spec),
        per_url(files_rewrite, spec),
        per_url(alloc_rewrite, spec),
        per_url(sled_rewrite, spec),
        median(&mut host_ms),
        median(&mut global_ms),
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
                "bare sled 0.34, cache 64 MiB, one tree: {spec}, batches of {} URLs, one child process per variant",
                spec.batch
            )
        },
        &[],
        &[
            "variant",
            "first insert URLs/s",
            "unchanged re-ingest URLs/s",
            "full rewrite URLs/s",
            "B/URL after insert: files",
            "allocated",
            "sled size_on_disk",
            "B/URL after rewrite: files",
            "allocated",
            "sled size_on_disk",
            "peak RSS MiB: first insert",
            "all ingests",
            "end",
            "host lease ms",
            "global lease ms",
        ],
    );
}
