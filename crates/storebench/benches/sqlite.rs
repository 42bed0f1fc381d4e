//! The same URLs and records in SQLite (rusqlite, bundled SQLite), side by
//! side with the sled layouts: first insert, unchanged upsert,
//! unchanged read-and-compare, full rewrite, bytes per URL on disk, peak
//! RSS and the 1000 most due URLs of one host. Each variant in a child
//! process of this binary, on a fresh temporary directory. Prints figures;
//! asserts nothing.
//!
//! `cargo bench -p sitemapd-storebench --bench sqlite [-- --urls N --hosts H --variants a,b]`
//!
//! WAL, `synchronous = NORMAL`, a 64 MiB page cache (as sled's), and:
//! - `sqlite`: `urls(url TEXT PRIMARY KEY, host TEXT, due INTEGER, record
//!   BLOB)` and an index on `(host, due)`, one transaction per 10,000 rows;
//! - `sqlite-1txn`: the same, one transaction per pass over all rows;
//! - `sqlite-compact`: `urls(host_id INTEGER, path TEXT, due INTEGER,
//!   record BLOB, PRIMARY KEY (host_id, path)) WITHOUT ROWID` and an index
//!   on `(host_id, due)`, one transaction per 10,000 rows.

use rusqlite::{Connection, params};
use sitemapd_storebench::{
    Record, Spec, bench_main, dir_bytes, host, median, path, peak_rss_mib, record, url,
};
use std::time::Instant;

// As the layouts bench: the store's allocator (SQLite allocates with malloc too).
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const VARIANTS: &[&str] = &["sqlite", "sqlite-1txn", "sqlite-compact"];

struct Bench {
    conn: Connection,
    spec: Spec,
    compact: bool,
    /// Rows per transaction.
    txn: usize,
}

impl Bench {
    fn open(dir: &std::path::Path, name: &str, spec: Spec) -> Bench {
        let conn = Connection::open(dir.join("urls.sqlite")).expect("open SQLite");
        conn.pragma_update(None, "journal_mode", "WAL")
            .expect("WAL");
        conn.pragma_update(None, "synchronous", "NORMAL")
            .expect("synchronous");
        conn.pragma_update(None, "cache_size", -65_536)
            .expect("cache size");
        let compact = name == "sqlite-compact";
        if compact {
            conn.execute_batch(
                "CREATE TABLE urls(host_id INTEGER, path TEXT, due INTEGER, record BLOB, \
                 PRIMARY KEY (host_id, path)) WITHOUT ROWID;
                 CREATE INDEX urls_due ON urls(host_id, due);",
            )
        } else {
            conn.execute_batch(
                "CREATE TABLE urls(url TEXT PRIMARY KEY, host TEXT, due INTEGER, record BLOB);
                 CREATE INDEX urls_due ON urls(host, due);",
            )
        }
        .expect("create the table");
        let txn = if name == "sqlite-1txn" {
            usize::MAX
        } else {
            spec.batch
        };
        Bench {
            conn,
            spec,
            compact,
            txn,
        }
    }

    /// Runs `sql` once per URL with generation `generation`'s row, `txn`
    /// rows to a transaction.
    fn write_all(&self, sql: &str, generation: u32) {
        let mut pending = 0;
        self.conn.execute_batch("BEGIN").expect("begin");
        {
            let mut stmt = self.conn.prepare_cached(sql).expect("prepare");
            for h in 0..self.spec.hosts {
                let host_name = host(h);
                for i in 0..self.spec.per_host {
                    let rec = record(h, i, generation);
                    let value = rec.encode();
                    if self.compact {
                        stmt.execute(params![h as i64, path(i), rec.due, value])
                    } else {
                        stmt.execute(params![url(h, i), host_name, rec.due, value])
                    }
                    .expect("write a row");
                    pending += 1;
                    if pending >= self.txn {
                        self.conn.execute_batch("COMMIT; BEGIN").expect("commit");
                        pending = 0;
                    }
                }
            }
        }
        self.conn.execute_batch("COMMIT").expect("commit");
    }

    fn insert_sql(&self) -> &'static str {
        if self.compact {
            "INSERT INTO urls(host_id, path, due, record) VALUES (?1, ?2, ?3, ?4)"
        } else {
            "INSERT INTO urls(url, host, due, record) VALUES (?1, ?2, ?3, ?4)"
        }
    }

    fn upsert_sql(&self) -> &'static str {
        if self.compact {
            "INSERT INTO urls(host_id, path, due, record) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT(host_id, path) DO UPDATE SET due = excluded.due, record = excluded.record \
             WHERE urls.record != excluded.record"
        } else {
            "INSERT INTO urls(url, host, due, record) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT(url) DO UPDATE SET host = excluded.host, due = excluded.due, \
             record = excluded.record WHERE urls.record != excluded.record"
        }
    }

    /// Reads every URL's record, decodes and compares it; writes nothing.
    /// Returns the records that differed.
    fn read_compare(&self) -> usize {
        let mut differ = 0;
        let sql = if self.compact {
            "SELECT record FROM urls WHERE host_id = ?1 AND path = ?2"
        } else {
            "SELECT record FROM urls WHERE url = ?1"
        };
        let mut stmt = self.conn.prepare_cached(sql).expect("prepare");
        for h in 0..self.spec.hosts {
            for i in 0..self.spec.per_host {
                let rec = record(h, i, 0);
                let stored: Vec<u8> = if self.compact {
                    stmt.query_row(params![h as i64, path(i)], |r| r.get(0))
                } else {
                    stmt.query_row(params![url(h, i)], |r| r.get(0))
                }
                .expect("read a row");
                if Record::decode(&stored).as_ref() != Some(&rec) {
                    differ += 1;
                }
            }
        }
        differ
    }

    /// The 1000 most due URLs of host `h`.
    fn lease_host(&self, h: usize) -> usize {
        if self.compact {
            let mut stmt = self
                .conn
                .prepare_cached("SELECT path FROM urls WHERE host_id = ?1 ORDER BY due LIMIT 1000")
                .expect("prepare");
            let rows = stmt
                .query_map(params![h as i64], |r| r.get::<_, String>(0))
                .expect("query");
            rows.collect::<Result<Vec<String>, _>>()
                .expect("rows")
                .len()
        } else {
            let mut stmt = self
                .conn
                .prepare_cached("SELECT url FROM urls WHERE host = ?1 ORDER BY due LIMIT 1000")
                .expect("prepare");
            let rows = stmt
                .query_map(params![host(h)], |r| r.get::<_, String>(0))
                .expect("query");
            rows.collect::<Result<Vec<String>, _>>()
                .expect("rows")
                .len()
        }
    }

    /// The 1000 most due URLs of all (no index on `due` alone: a scan).
    fn lease_global(&self) -> usize {
        let sql = if self.compact {
            "SELECT path FROM urls ORDER BY due LIMIT 1000"
        } else {
            "SELECT url FROM urls ORDER BY due LIMIT 1000"
        };
        let mut stmt = self.conn.prepare_cached(sql).expect("prepare");
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .expect("query");
        rows.collect::<Result<Vec<String>, _>>()
            .expect("rows")
            .len()
    }

    /// Checkpoints the WAL into the database (and truncates it).
    fn checkpoint(&self) {
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .expect("checkpoint");
    }
}

fn per_url(bytes: u64, spec: Spec) -> f64 {
    bytes as f64 / spec.total() as f64
}

/// Runs one variant; prints a `ROW` line of figures.
fn run_one(name: &str, spec: Spec) {
    assert!(VARIANTS.contains(&name), "unknown variant {name}");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let b = Bench::open(dir.path(), name, spec);
    let n = spec.total() as f64;

    let t = Instant::now();
    b.write_all(b.insert_sql(), 0);
    let first = n / t.elapsed().as_secs_f64();
    let rss_insert = peak_rss_mib();
    let (wal_before, _) = dir_bytes(dir.path());
    b.checkpoint();
    let (files_insert, alloc_insert) = dir_bytes(dir.path());

    let t = Instant::now();
    b.write_all(b.upsert_sql(), 0);
    let upsert = n / t.elapsed().as_secs_f64();
    let (files_upsert, _) = dir_bytes(dir.path());

    let t = Instant::now();
    let differ = b.read_compare();
    let compare = n / t.elapsed().as_secs_f64();

    let t = Instant::now();
    b.write_all(b.upsert_sql(), 1);
    let rewrite = n / t.elapsed().as_secs_f64();
    let rss_ingest = peak_rss_mib();
    b.checkpoint();
    let (files_rewrite, _) = dir_bytes(dir.path());

    let h = spec.hosts / 2;
    let mut host_ms = Vec::new();
    let mut leased = 0;
    for _ in 0..31 {
        let t = Instant::now();
        leased = b.lease_host(h);
        host_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let mut global_ms = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        b.lease_global();
        global_ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let rss_end = peak_rss_mib();
    println!(
        "  {name}: files before the first checkpoint {:.0} B/URL; after the unchanged upsert {:.0} B/URL (it wrote {:.1} MB); read-compare saw {differ} differing records; host lease read {leased} URLs",
        per_url(wal_before, spec),
        per_url(files_upsert, spec),
        files_upsert.saturating_sub(files_insert) as f64 / 1e6,
    );
    println!(
        "ROW|{name}|{first:.0}|{upsert:.0}|{compare:.0}|{rewrite:.0}|{:.0}|{:.0}|{:.0}|{rss_insert:.0}|{rss_ingest:.0}|{rss_end:.0}|{:.2}|{:.1}",
        per_url(files_insert, spec),
        per_url(alloc_insert, spec),
        per_url(files_rewrite, spec),
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
                "SQLite {} (bundled), WAL, synchronous NORMAL, cache 64 MiB: {spec}, transactions of {} rows, one child process per variant",
                rusqlite::version(),
                spec.batch
            )
        },
        &[],
        &[
            "variant",
            "first insert rows/s",
            "unchanged upsert rows/s",
            "unchanged read-compare rows/s",
            "full rewrite (upsert) rows/s",
            "B/URL after insert: files",
            "allocated",
            "B/URL after rewrite: files",
            "peak RSS MiB: first insert",
            "all ingests",
            "end",
            "host lease ms",
            "global lease ms",
        ],
    );
}
