"""``SitemapdScheduler`` and ``SitemapdOutcomeMiddleware`` driving a real
Scrapy crawl of loopback sites: each page fetched once, robots.txt obeyed,
conditional requests on the next run, and nothing lost to ``kill -9``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from conftest import LOOPBACK, Site, urlset

HERE = Path(__file__).parent
# Pages per host (5 hosts): 120 in the test suite; SITEMAPD_PAGES_PER_HOST=2000
# runs the same checks on 10,000 pages.
PAGES = int(os.environ.get("SITEMAPD_PAGES_PER_HOST", "120"))
BATCH = 16


def build(sites: list[Site], changed: frozenset[int] = frozenset(), changed_at: str = "") -> list[str]:
    """Each site: robots.txt disallowing /private/, a sitemap of PAGES
    pages with lastmods of their own (one date for all would be a sitemap's
    generation time, which the store does not trust; those in `changed`
    have the lastmod `changed_at`) and one private page,
    every page with an ETag. Returns the allowed page URLs."""
    allowed = []
    for n, site in enumerate(sites):
        site.serve("/robots.txt", f"User-agent: *\nDisallow: /private/\nSitemap: {site.url('/sitemap.xml')}\n")
        entries = "".join(
            f"<url><loc>{site.url(f'/page/{i}')}</loc><lastmod>{changed_at if n * PAGES + i in changed else f'2024-{1 + i % 12:02}-{1 + i % 28:02}'}</lastmod></url>"
            for i in range(PAGES)
        )
        entries += f"<url><loc>{site.url('/private/secret')}</loc></url>"
        site.serve("/sitemap.xml", urlset()[: -len("</urlset>")] + entries + "</urlset>")
        for i in range(PAGES):
            version = 2 if n * PAGES + i in changed else 1
            site.serve(f"/page/{i}", f"<html>{i} v{version}</html>", Content_Type="text/html", ETag=f'"{n}-{i}-v{version}"')
            allowed.append(site.url(f"/page/{i}"))
        site.serve("/private/secret", "no")
    return allowed


def spider_file(tmp_path: Path) -> Path:
    path = tmp_path / "crawl_spider.py"
    path.write_text(
        "import scrapy\n\nSITE = 'http://placeholder'\n\n\n"
        "class Crawl(scrapy.Spider):\n    name = 'crawl'\n\n    def parse(self, response):\n        pass\n"
    )
    return path


def settings(store: Path, sites: list[Site], ttl: float = 300.0) -> dict[str, Any]:
    return {
        "SCHEDULER": "sitemapd.scrapy.SitemapdScheduler",
        "DOWNLOADER_MIDDLEWARES": {"sitemapd.scrapy.SitemapdOutcomeMiddleware": 540},
        "SITEMAPD_STORE": str(store),
        "SITEMAPD_SEEDS": [site.url("/") for site in sites],
        "SITEMAPD_WALK": LOOPBACK,
        "SITEMAPD_BATCH": BATCH,
        "SITEMAPD_LEASE_TTL": ttl,
        "CONCURRENT_REQUESTS": 8,
        "HTTPERROR_ALLOW_ALL": True,
    }


def crawl(tmp_path: Path, config: dict[str, Any], output: bool = True) -> subprocess.Popen[str]:
    """A crawl in a child process; without `output`, what it prints is
    dropped (a pipe nobody reads would stop it once full)."""
    return subprocess.Popen(
        [sys.executable, str(HERE / "scrapy_run.py"), str(spider_file(tmp_path)), "Crawl", "http://unused", json.dumps(config)],
        stdout=subprocess.PIPE if output else subprocess.DEVNULL,
        stderr=subprocess.PIPE if output else subprocess.DEVNULL,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    return next(json.loads(line)["stats"] for line in out.splitlines() if line.startswith('{"stats"'))


def page_requests(sites: list[Site]) -> Counter[str]:
    return Counter(site.url(p) for site in sites for p in site.requests if p.startswith(("/page/", "/private/")))


def test_each_page_once_robots_obeyed_then_conditional(tmp_path: Path, sites: Callable[[int], list[Site]]) -> None:
    hosts = sites(5)
    allowed = build(hosts)
    store = tmp_path / "store"
    stats = finish(crawl(tmp_path, settings(store, hosts)))
    fetched = page_requests(hosts)
    assert set(fetched) == set(allowed)  # every page, nothing private
    assert max(fetched.values()) == 1
    assert stats["sitemapd/outcome/changed"] == len(allowed)

    # The sites change a tenth of their pages (new content, newer lastmods):
    # the next run fetches those, each with the validators the first run
    # stored, and nothing else.
    changed = frozenset(range(0, 5 * PAGES, 10))
    # The change comes after every fetch of the first run, and the store
    # keeps times in whole seconds: the next second.
    time.sleep(1.1)
    changed_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    build(hosts, changed=changed, changed_at=changed_at)
    for site in hosts:
        site.requests.clear()
        site.conditional.clear()
    stats = finish(crawl(tmp_path, settings(store, hosts)))
    again = page_requests(hosts)
    expected = {allowed[i] for i in changed}
    assert set(again) == expected
    conditional = [p for site in hosts for p in site.conditional if p.startswith("/page/")]
    assert len(conditional) >= 0.95 * sum(again.values())
    assert stats["sitemapd/outcome/changed"] == len(expected)


def test_kill_9_loses_nothing_and_refetches_at_most_a_batch(tmp_path: Path, sites: Callable[[int], list[Site]]) -> None:
    hosts = sites(5)
    allowed = build(hosts)
    store = tmp_path / "store"
    config = settings(store, hosts, ttl=2.0)
    first = crawl(tmp_path, config, output=False)
    # Killed once the sites have served a third of the pages.
    while sum(page_requests(hosts).values()) < len(allowed) // 3:
        assert first.poll() is None, "the crawl ended before it was killed"
        time.sleep(0.005)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    before = page_requests(hosts)
    assert len(allowed) // 3 <= sum(before.values()) < len(allowed)
    finish(crawl(tmp_path, config))
    fetched = page_requests(hosts)
    assert set(fetched) == set(allowed)
    twice = [url for url, n in fetched.items() if n > 1]
    assert max(fetched.values()) <= 2
    assert len(twice) <= BATCH
