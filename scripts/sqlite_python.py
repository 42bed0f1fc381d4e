#!/usr/bin/env python3
"""The store bench's SQLite comparator in Python: SQLite through
Python's sqlite3 (WAL, one transaction per pass, a (host, due) index), fed
the URLs the store bench generates (`cargo bench -p sitemapd-scheduler
--bench store`: `https://host-H.example/catalog/section-(I % 37)/item-I.html`,
a lastmod, weekly, priority 0.5). Prints inserts/s, unchanged upserts/s
(an upsert that writes only when a field differs), bytes per URL on disk
after a checkpoint, and the time to select the 1,000 most due URLs of one
host. Not part of the tests: run it beside the store bench to compare.

    python3 scripts/sqlite_python.py [URLS [HOSTS]]   (default 2500000 2500)
"""

import os
import sqlite3
import sys
import tempfile
import time

URLS = int(sys.argv[1]) if len(sys.argv) > 1 else 2_500_000
HOSTS = int(sys.argv[2]) if len(sys.argv) > 2 else 2_500
PER_HOST = URLS // HOSTS


def rows():
    for h in range(HOSTS):
        host = f"host-{h}.example"
        for i in range(PER_HOST):
            url = f"https://{host}/catalog/section-{i % 37}/item-{i}.html"
            lastmod = 1_690_000_000 + (i % 1000) * 3600
            yield (url, host, 1_700_000_000, lastmod, "weekly", 0.5)


def main():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "urls.db")
        db = sqlite3.connect(path, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(
            "CREATE TABLE urls (url TEXT PRIMARY KEY, host TEXT, due INTEGER,"
            " lastmod INTEGER, changefreq TEXT, priority REAL)"
        )
        db.execute("CREATE INDEX urls_host_due ON urls (host, due)")
        total = PER_HOST * HOSTS

        t = time.perf_counter()
        db.execute("BEGIN")
        db.executemany("INSERT INTO urls VALUES (?, ?, ?, ?, ?, ?)", rows())
        db.execute("COMMIT")
        insert = time.perf_counter() - t

        t = time.perf_counter()
        db.execute("BEGIN")
        db.executemany(
            "INSERT INTO urls VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (url) DO UPDATE SET"
            " lastmod = excluded.lastmod, changefreq = excluded.changefreq,"
            " priority = excluded.priority WHERE lastmod IS NOT excluded.lastmod"
            " OR changefreq IS NOT excluded.changefreq OR priority IS NOT excluded.priority",
            rows(),
        )
        db.execute("COMMIT")
        upsert = time.perf_counter() - t

        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))

        times = []
        for h in range(0, HOSTS, max(1, HOSTS // 31))[:31]:
            t = time.perf_counter()
            got = db.execute(
                "SELECT url FROM urls WHERE host = ? ORDER BY due LIMIT 1000",
                (f"host-{h}.example",),
            ).fetchall()
            times.append((time.perf_counter() - t) * 1000)
            assert len(got) == min(1000, PER_HOST)
        times.sort()
        db.close()
        print(
            f"SQLite {sqlite3.sqlite_version} through Python {sys.version.split()[0]}'s sqlite3,"
            f" {total} URLs over {HOSTS} hosts: insert {total / insert:,.0f} rows/s;"
            f" unchanged upsert {total / upsert:,.0f} rows/s; {size / total:.0f} bytes per URL;"
            f" 1,000 most due of a host: median {times[len(times) // 2]:.2f} ms"
        )


if __name__ == "__main__":
    main()
