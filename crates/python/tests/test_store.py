"""`Store`: ingest, lease, complete and notify, in memory and on disk, and
that what a call acknowledged survives `kill -9`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import json
import textwrap
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import sitemapd
from conftest import CORPUS, corpus_files, urlset

NOW = 1_800_000_000.0


def test_ingest_lease_complete_in_memory() -> None:
    store = sitemapd.Store()
    assert store.path is None
    doc = urlset(*(f"https://a.example/p{i}" for i in range(30)), lastmod="2024-01-01")
    stats = store.ingest(doc.encode(), url="https://a.example/sitemap.xml", now=NOW)
    assert stats["entries"] == 30 and stats["new"] == 30 and stats["sitemaps"] == 1
    again = store.ingest(doc.encode(), url="https://a.example/sitemap.xml", now=NOW + 60)
    assert again["unchanged"] == 30 and again["new"] == 0
    peeked = store.peek(5, now=NOW)
    assert len(peeked) == 5 and all(p.lease_id is None for p in peeked)
    leased = store.lease(5, per_host=5, now=NOW)
    assert [lease.url for lease in leased] == [p.url for p in peeked]
    assert all(lease.lease_id is not None and lease.reason == "new" for lease in leased)
    assert all(lease.expires == int(NOW) + 300 for lease in leased)
    # A leased URL is not leased again while its lease holds.
    second = store.lease(30, per_host=30, now=NOW)
    assert not {lease.url for lease in second} & {lease.url for lease in leased}
    store.complete(leased[0].url, "changed", status=200, etag='"v1"', last_modified="Mon, 01 Jan 2024 00:00:00 GMT", now=NOW + 1)
    view = store.url(leased[0].url)
    assert view is not None
    assert view["etag"] == '"v1"' and view["last_outcome"] == "changed" and view["fetches"] == 1
    store.complete(leased[1].url, "gone", status=410, now=NOW + 1)
    store.complete(leased[2].url, "redirected", status=301, redirect_to="/moved", now=NOW + 1)
    store.complete(leased[3].url, "error", status=503, now=NOW + 1)
    stats_now = store.stats(now=NOW + 2)
    assert stats_now["gone"] == 1
    assert stats_now["last_outcomes"]["changed"] == 1


def test_a_lease_carries_the_validators_of_the_last_fetch() -> None:
    store = sitemapd.Store(policy="sitemap-hints")
    doc = '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://a.example/x</loc><changefreq>hourly</changefreq></url></urlset>'
    store.ingest(doc.encode(), url="https://a.example/sitemap.xml", now=NOW)
    (first,) = store.lease(1, now=NOW)
    assert first.etag is None and first.last_modified is None
    store.complete(first.url, "changed", etag='"abc"', last_modified="Tue, 02 Jan 2024 00:00:00 GMT", now=NOW + 10)
    (again,) = store.lease(1, now=NOW + 2 * 86_400)
    assert again.url == first.url
    assert (again.etag, again.last_modified) == ('"abc"', "Tue, 02 Jan 2024 00:00:00 GMT")


def test_notify_makes_a_url_due_now() -> None:
    store = sitemapd.Store()
    assert store.notify("https://b.example/new", now=NOW) is False
    assert store.notify("https://b.example/new", now=NOW) is True
    assert [p.url for p in store.peek(5, now=NOW)] == ["https://b.example/new"]


def test_errors_are_python_exceptions() -> None:
    store = sitemapd.Store()
    with pytest.raises(KeyError):
        store.complete("https://nowhere.example/x", "changed")
    with pytest.raises(ValueError, match="unknown outcome"):
        store.complete("https://nowhere.example/x", "fine")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="redirect_to"):
        store.complete("https://nowhere.example/x", "redirected")
    with pytest.raises(ValueError):
        store.notify("not a url")
    with pytest.raises(ValueError, match="ttl_s"):
        store.lease(1, ttl_s=0)
    with pytest.raises(ValueError, match="give url="):
        store.ingest(b"<urlset/>")
    with pytest.raises(sitemapd.StoreError):
        sitemapd.Store(policy="no-such-policy")


def test_a_store_on_disk_reopens_with_what_it_held(tmp_path: Path) -> None:
    path = tmp_path / "store"
    store = sitemapd.Store(path)
    stats = store.ingest(CORPUS / "urlset" / "adobe__theblog__sitemap.xml", now=NOW)
    assert stats["new"] > 10_000
    leased = store.lease(3, now=NOW)
    store.complete(leased[0].url, "not_modified", etag='"e"', now=NOW + 1)
    del store
    reopened = sitemapd.Store(path)
    assert str(reopened.path) == str(path)
    view = reopened.url(leased[0].url)
    assert view is not None and view["etag"] == '"e"'
    assert reopened.stats(now=NOW)["active"] == stats["new"]
    # A second process cannot open a store this one holds.
    with pytest.raises(sitemapd.StoreError):
        sitemapd.Store(path)


def test_what_a_call_returned_survives_kill_9(tmp_path: Path) -> None:
    """A child process ingests, leases and completes, printing each
    acknowledgement; it is killed with SIGKILL right after the last, and
    the store opened again holds all of it."""
    path = tmp_path / "store"
    script = textwrap.dedent(
        f"""
        import sys, time, sitemapd
        store = sitemapd.Store({str(path)!r})
        doc = "".join(f"<url><loc>https://k.example/p{{i}}</loc></url>" for i in range(500))
        doc = '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">' + doc + "</urlset>"
        store.ingest(doc.encode(), url="https://k.example/sitemap.xml", now={NOW})
        print("ingested", flush=True)
        for lease in store.lease(20, per_host=20, now={NOW}):
            store.complete(lease.url, "changed", etag='"x"', now={NOW} + 1)
            print("completed", lease.url, flush=True)
        print("leased", *[l.url for l in store.lease(5, per_host=5, now={NOW})], flush=True)
        time.sleep(3600)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    lines = []
    for line in child.stdout:
        lines.append(line.split())
        if line.startswith("leased"):
            break
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert lines[0] == ["ingested"]
    completed = [words[1] for words in lines if words[0] == "completed"]
    leased = lines[-1][1:]
    assert len(completed) == 20 and len(leased) == 5
    store = sitemapd.Store(path)
    assert store.stats(now=NOW)["active"] == 500
    for url in completed:
        view = store.url(url)
        assert view is not None and view["etag"] == '"x"' and view["fetches"] == 1
    for url in leased:
        view = store.url(url)
        assert view is not None and view["leased_until"] is not None


def test_urls_is_the_binarys_export_and_hosts_add_up_to_the_stats(tmp_path: Path, sitemapd_bin: Path) -> None:
    path = tmp_path / "store"
    store = sitemapd.Store(path, min_delay_s=2.0)
    for i, doc in enumerate(corpus_files("urlset")[:12]):
        store.ingest(doc, url=f"https://corpus.example/{i}/sitemap.xml", scope="none", now=NOW)
    leased = store.lease(200, per_host=10, now=NOW)
    outcomes: list[tuple[Any, int]] = [("changed", 200), ("not_modified", 304), ("gone", 410), ("error", 503)]
    for i, lease in enumerate(leased[:40]):
        outcome, status = outcomes[i % 4]
        store.complete(lease.url, outcome, status=status, now=NOW + 1)
    urls = store.urls().to_pylist()
    hosts = store.hosts(now=NOW + 2).to_pylist()
    stats = store.stats(now=NOW + 2)
    del store  # the binary opens the store next: it must be closed

    out = subprocess.run([str(sitemapd_bin), "export", "--store", str(path), "--format", "jsonl"],
                         capture_output=True, text=True, check=True)
    exported = {row["url"]: row for row in map(json.loads, out.stdout.splitlines())}
    assert len(urls) == len(exported) >= 300
    assert {row["status"] for row in urls} >= {"queued", "gone"}
    for row in urls:
        theirs = exported[row["url"]]
        assert list(row) == list(theirs)
        for column, value in row.items():
            if isinstance(value, datetime):
                assert int(value.timestamp()) == theirs[column], (row["url"], column)
            elif column == "priority" and value is not None:
                assert abs(value - theirs[column]) < 1e-6
            else:
                assert value == theirs[column], (row["url"], column)

    assert sorted(h["host"] for h in hosts) == sorted(stats["hosts"])
    for host in hosts:
        counts = stats["hosts"][host["host"]]
        assert (host["active"], host["retired"], host["blocked"]) == (counts["active"], counts["retired"], counts["blocked"])
        assert host["lease_delay_s"] == 2.0 and host["lastmod_trusted"] == counts["lastmod_trusted"]
    assert sum(h["active"] for h in hosts) == stats["active"]
    assert len(hosts) >= 5
