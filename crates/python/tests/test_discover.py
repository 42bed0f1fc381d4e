"""`discover`, `iter_discover` and `Store.ingest_site` on loopback sites:
the walk from robots.txt, the time budget, Ctrl-C, and the address guard."""

from __future__ import annotations

import gzip
import re
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

import pyarrow as pa
import pytest

import sitemapd
from conftest import HANG, LOOPBACK, Site, sitemapindex, urlset


def tree(site: Site, pages: int = 300) -> set[str]:
    """robots.txt → an index → a gzipped urlset, a text sitemap and a
    missing sitemap. Returns the page URLs."""
    xml_pages = [site.url(f"/p/{i}") for i in range(pages)]
    text_pages = [site.url(f"/t/{i}") for i in range(pages // 2)]
    site.serve("/robots.txt", f"User-agent: *\nDisallow: /p/1\nSitemap: {site.url('/index.xml')}\n")
    site.serve("/index.xml", sitemapindex(site.url("/pages.xml.gz"), site.url("/text.txt"), site.url("/gone.xml")))
    site.serve("/pages.xml.gz", gzip.compress(urlset(*xml_pages, lastmod="2024-03-04").encode()))
    site.serve("/text.txt", "\n".join(text_pages))
    return set(xml_pages) | set(text_pages)


def test_discover_walks_robots_to_every_sitemap(site: Site) -> None:
    pages = tree(site)
    found = sitemapd.discover(site.url("/"), **LOOPBACK)
    assert not found.timed_out
    urls = pa.table(found.urls)
    assert set(urls.column("loc").to_pylist()) == pages
    assert set(urls.column("sitemap").to_pylist()) == {site.url("/pages.xml.gz"), site.url("/text.txt")}
    sitemaps = {row["url"]: row for row in pa.table(found.sitemaps).to_pylist()}
    assert sitemaps[site.url("/index.xml")]["format"] == "sitemapindex"
    assert sitemaps[site.url("/index.xml")]["via"] == "robots"
    assert sitemaps[site.url("/pages.xml.gz")]["urls"] == 300
    assert sitemaps[site.url("/text.txt")]["format"] == "text"
    assert sitemaps[site.url("/gone.xml")]["status"] == 404
    assert sitemaps[site.url("/gone.xml")]["error"]
    streamed = list(sitemapd.iter_discover(site.url("/"), **LOOPBACK))
    assert {e.loc for e in streamed} == pages
    assert all(e.sitemap in (site.url("/pages.xml.gz"), site.url("/text.txt")) for e in streamed)


@pytest.mark.parametrize("follow", ["/pages", re.compile(r"\.gz$"), ["nothing", "pages\\.xml"], re.compile("/PAGES", re.I)])
def test_follow_takes_only_the_index_children_it_matches(site: Site, follow: Any) -> None:
    pages = tree(site)
    found = sitemapd.discover(site.url("/"), follow=follow, **LOOPBACK)
    assert set(pa.table(found.urls).column("loc").to_pylist()) == {p for p in pages if "/p/" in p}
    assert "/text.txt" not in site.requests and "/gone.xml" not in site.requests
    # robots.txt's own sitemaps are read whatever the rule says.
    assert sitemapd.discover(site.url("/"), follow=[], **LOOPBACK).urls.num_rows == 0
    assert site.requests.count("/index.xml") == 2


def test_the_address_guard_refuses_loopback_unless_allowed(site: Site) -> None:
    tree(site)
    refused = sitemapd.discover(site.url("/"), per_host_delay_s=0.0)
    assert refused.urls.num_rows == 0
    assert site.requests == []  # not one request reached the server


def test_a_hung_sitemap_ends_at_the_time_budget(site: Site) -> None:
    site.serve("/robots.txt", f"Sitemap: {site.url('/slow.xml')}\n")
    site.routes["/slow.xml"] = HANG
    started = time.monotonic()
    found = sitemapd.discover(site.url("/"), total_timeout_s=1.0, **LOOPBACK)
    elapsed = time.monotonic() - started
    assert found.timed_out
    assert elapsed < 1.0 + 2.0


def test_ctrl_c_raises_keyboard_interrupt(site: Site) -> None:
    site.serve("/robots.txt", f"Sitemap: {site.url('/slow.xml')}\n")
    site.routes["/slow.xml"] = HANG
    script = textwrap.dedent(
        f"""
        import signal, sitemapd, sys
        # As in a terminal: a process started in the background by a shell
        # inherits SIGINT ignored, and Python then leaves it so.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        print("walking", flush=True)
        try:
            sitemapd.discover({site.url("/")!r}, allow_addresses=["127.0.0.1"], total_timeout_s=600)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(0)
        print("not interrupted", flush=True)
        sys.exit(1)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "walking"
    while "/slow.xml" not in site.requests:
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    assert child.wait(timeout=30) == 0
    assert child.stdout.read().strip() == "interrupted"


def test_ingest_site_then_walk_again_conditionally(site: Site) -> None:
    pages = tree(site, pages=50)
    site.routes["/pages.xml.gz"] = (
        200,
        {"ETag": '"v1"'},
        gzip.compress(urlset(*(site.url(f"/p/{i}") for i in range(50)), lastmod="2024-03-04").encode()),
    )
    store = sitemapd.Store()
    first = store.ingest_site(site.url("/"), **LOOPBACK)
    assert first["new"] == len(pages)
    leased = {lease.url for lease in store.lease(1000, per_host=1000)}
    # robots.txt's `Disallow: /p/1` is a prefix: /p/1, /p/10 … /p/19.
    disallowed = {url for url in pages if url.startswith(site.url("/p/1"))}
    assert len(disallowed) == 11
    assert leased == pages - disallowed
    second = store.ingest_site(site.url("/"), **LOOPBACK)
    assert second["new"] == 0
    assert site.conditional == ["/pages.xml.gz"]  # the stored ETag came back


def test_bad_walk_arguments() -> None:
    with pytest.raises(TypeError, match="unexpected keyword"):
        sitemapd.discover("example.com", max_dept=3)
    with pytest.raises(ValueError):
        sitemapd.discover("example.com", total_timeout_s=-1)
    with pytest.raises(ValueError):
        sitemapd.discover("example.com", allow_addresses=["not-an-ip"])
    with pytest.raises(TypeError):
        sitemapd.discover(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="follow"):
        sitemapd.discover("example.com", follow="(unclosed")
    with pytest.raises(TypeError, match="follow"):
        sitemapd.discover("example.com", follow=[3])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="flags"):
        sitemapd.discover("example.com", follow=re.compile("x", re.ASCII))
