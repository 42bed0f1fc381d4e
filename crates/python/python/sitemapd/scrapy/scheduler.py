"""``SitemapdScheduler``: Scrapy's scheduler over a sitemapd store.

The store holds the crawl: every URL the seeds' sitemaps list, what each
fetch found, and when each URL is due again. The scheduler leases due URLs
a batch at a time and hands them to Scrapy as GET requests with the
conditional headers of their last fetch; ``SitemapdOutcomeMiddleware``
reports how each ended. A crash loses nothing the store acknowledged: a
restarted crawl goes on where it stopped, and the URLs of the batch leased
when it died come back when their lease runs out.

Settings:

``SITEMAPD_STORE``
    The store's directory (required).
``SITEMAPD_SEEDS``
    Sites or sitemap URLs walked into the store when the spider opens
    (robots.txt, every sitemap; conditional GETs on a later run).
``SITEMAPD_WALK``
    Keywords of the walk (``sitemapd.WalkOptions``), e.g.
    ``{"total_timeout_s": 300}``.
``SITEMAPD_LEASE_TTL``
    Seconds a leased URL waits for its outcome before it is due again
    (default 300).
``SITEMAPD_BATCH``
    URLs leased and not yet reported at most (default twice
    ``CONCURRENT_REQUESTS``): what a crash can make the next run fetch
    again. The store is written to disk before each lease, not after
    each report.
``SITEMAPD_PER_HOST``
    URLs of one host per lease (default ``SITEMAPD_BATCH``: Scrapy's own
    per-domain limits and delays pace the hosts).
``SITEMAPD_MIN_DELAY``
    The store's spacing of one host's URLs in a lease, seconds (default 0:
    left to Scrapy's ``DOWNLOAD_DELAY``; robots.txt ``Crawl-delay`` applies
    whatever this says).

What goes where: a URL the store serves is parsed by the spider's
``parse``. Requests the spider yields for URLs on the seeds' hosts, or
flagged ``meta["sitemapd"] = True``, join the store (which is also the
duplicate filter: a URL it holds is dropped); retries, redirects,
non-GET requests and other hosts' URLs stay in a memory queue for this run.
"""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy.http import Request

import sitemapd

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.spiders import Spider


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


class SitemapdScheduler:
    """The scheduler (see the module)."""

    def __init__(
        self,
        crawler: Crawler,
        store: str,
        seeds: list[str],
        walk: dict[str, Any],
        ttl_s: float,
        batch: int,
        per_host: int,
        min_delay_s: float,
    ) -> None:
        self.crawler = crawler
        self.store_path = store
        self.seeds = seeds
        self.walk = walk
        self.ttl_s = ttl_s
        self.batch = batch
        self.per_host = per_host
        self.min_delay_s = min_delay_s
        self.store: sitemapd.Store | None = None
        self.hosts: set[str] = set()
        self.memory: deque[Request] = deque()
        self.leased: deque[Request] = deque()
        # Leased URLs handed out and not yet reported, with when their lease
        # ends: a request Scrapy drops never reports, and its lease runs out.
        self.outstanding: dict[str, float] = {}
        self._pending_checked = 0.0
        self._pending = True

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SitemapdScheduler:
        settings = crawler.settings
        store = settings.get("SITEMAPD_STORE")
        if not store:
            raise ValueError("SitemapdScheduler needs SITEMAPD_STORE, the store's directory")
        seeds = settings.getlist("SITEMAPD_SEEDS")
        batch = settings.getint("SITEMAPD_BATCH", 2 * settings.getint("CONCURRENT_REQUESTS", 16))
        return cls(
            crawler,
            store=store,
            seeds=seeds,
            walk=dict(settings.getdict("SITEMAPD_WALK")),
            ttl_s=settings.getfloat("SITEMAPD_LEASE_TTL", 300.0),
            batch=batch,
            per_host=settings.getint("SITEMAPD_PER_HOST", batch),
            min_delay_s=settings.getfloat("SITEMAPD_MIN_DELAY", 0.0),
        )

    def open(self, spider: Spider) -> None:
        # Written to disk once per lease rather than once per URL: a crash
        # loses at most the reports since the last lease, and their URLs
        # (one batch at most) are fetched again.
        self.store = sitemapd.Store(self.store_path, min_delay_s=self.min_delay_s, durable=False)
        # The outcome middleware reports through this scheduler.
        self.crawler.sitemapd_scheduler = self  # type: ignore[attr-defined]
        stats = self.crawler.stats
        for seed in self.seeds:
            ingested = self.store.ingest_site(seed, **self.walk)
            if stats is not None:
                stats.inc_value("sitemapd/ingested_entries", ingested["entries"])
                stats.inc_value("sitemapd/ingested_new", ingested["new"])
            self.hosts.add(_host(seed if "://" in seed else f"https://{seed}"))

    def close(self, reason: str) -> None:
        if self.store is not None:
            self.store.flush()

    def _store(self) -> sitemapd.Store:
        if self.store is None:
            raise RuntimeError("the scheduler is not open")
        return self.store

    def has_pending_requests(self) -> bool:
        if self.memory or self.leased:
            return True
        # The store's answer, asked at most once a second: URLs due now, or
        # leased (by this run or a crashed one) and not yet reported.
        now = time.monotonic()
        if now - self._pending_checked >= 1.0:
            store = self._store()
            self._pending = bool(store.peek(1)) or store.stats()["leased"] > 0
            self._pending_checked = now
        return self._pending

    def enqueue_request(self, request: Request) -> bool:
        meta = request.meta
        stays_in_memory = (
            "sitemapd_url" in meta
            or "redirect_urls" in meta
            or "retry_times" in meta
            or request.method != "GET"
            or not (meta.get("sitemapd") or _host(request.url) in self.hosts)
        )
        if stays_in_memory:
            self.memory.append(request)
            return True
        (result,) = self._store().add([request.url])
        if result == "added":
            self._pending = True
            return True
        if request.dont_filter:
            self.memory.append(request)
            return True
        stats = self.crawler.stats
        if stats is not None:
            stats.inc_value("sitemapd/filtered_known")
        return False

    def _request(self, lease: sitemapd.Lease) -> Request:
        headers: dict[str, str] = {}
        if lease.etag:
            headers["If-None-Match"] = lease.etag
        if lease.last_modified:
            headers["If-Modified-Since"] = lease.last_modified
        return Request(
            lease.url,
            headers=headers,
            priority=int(lease.score * 1000),
            dont_filter=True,
            meta={"sitemapd_url": lease.url, "sitemapd_lease": lease.lease_id, "sitemapd_reason": lease.reason},
        )

    def next_request(self) -> Request | None:
        if self.memory:
            return self.memory.popleft()
        if not self.leased:
            now = time.time()
            for url in [u for u, until in self.outstanding.items() if until <= now]:
                del self.outstanding[url]
            room = self.batch - len(self.outstanding)
            if room > 0:
                store = self._store()
                store.flush()
                leases = store.lease(room, per_host=self.per_host, ttl_s=self.ttl_s)
                self.leased.extend(self._request(lease) for lease in leases)
                for lease in leases:
                    self.outstanding[lease.url] = now + self.ttl_s
                stats = self.crawler.stats
                if stats is not None and leases:
                    stats.inc_value("sitemapd/leased", len(leases))
        return self.leased.popleft() if self.leased else None

    def report(self, url: str, outcome: sitemapd.Outcome, **details: Any) -> None:
        """Records how fetching a leased `url` ended (the outcome
        middleware calls this); the keywords are `Store.complete`'s."""
        self._store().complete(url, outcome, **details)
        self.outstanding.pop(url, None)
        stats = self.crawler.stats
        if stats is not None:
            stats.inc_value(f"sitemapd/outcome/{outcome}")

    def __len__(self) -> int:
        return len(self.memory) + len(self.leased)
