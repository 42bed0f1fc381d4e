"""``SitemapSpider``: Scrapy's spider of the same name, with sitemapd's
parser underneath.

The attributes are Scrapy's (``sitemap_urls``, ``sitemap_rules``,
``sitemap_follow``, ``sitemap_alternate_links``, ``sitemap_filter``).
What differs:

- a sitemap is recognised by its content, whatever its Content-Type or
  suffix, and text sitemaps, RSS and Atom feeds are read too;
- a broken or truncated document (gzip included) yields the entries
  before the break;
- parsing runs in a thread, with the GIL released, so the reactor keeps
  downloading;
- at most ``sitemap_concurrency`` sitemaps are downloaded or wait to be
  read at once, and two are read at once, so a sitemap tree holds at most
  ``sitemap_concurrency + 2`` bodies whatever ``CONCURRENT_REQUESTS`` says
  (Scrapy's spider reads each in the reactor, which slows its downloads
  instead).
  The spider adds its downloader middleware, ``SitemapDownloadSlots``
  (at 950, after Retry and Redirect), to enforce this; page requests
  pass through it untouched;
- each page request carries its sitemap entry in ``meta["sitemap"]``
  (``loc``, ``lastmod``, ``changefreq``, ``priority``, ``alternate``,
  ``lastmod_precision``, ``images``), and the parser's diagnostics are
  counted in the crawl stats as ``sitemapd/diagnostics/<rule>``;
- with ``sitemap_follow_robots = True``, ``sitemap_follow`` also filters
  the sitemaps robots.txt lists (Scrapy's spider fetches them all, and so
  does this one by default).
"""

from __future__ import annotations

import itertools
import logging
import re
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.http import Request, Response
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.spiders import Spider
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import DeferredSemaphore
from twisted.internet.threads import deferToThread
from twisted.python.failure import Failure

import sitemapd
from sitemapd import _native

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from typing_extensions import Self

logger = logging.getLogger(__name__)

Entry = dict[str, Any]


class Sitemap:
    """Scrapy's ``scrapy.utils.sitemap.Sitemap``: a document's entries as
    dicts of text (``loc``, ``lastmod`` at the precision the sitemap gave,
    ``lastmod_precision``, ``changefreq``, ``priority``, ``alternate``,
    ``images``: what the sitemap said), and its ``type`` (``urlset`` or
    ``sitemapindex``; text sitemaps and feeds list pages, so they are
    ``urlset``; ``None`` for what is no sitemap). Unlike Scrapy's, it reads
    every format, and a broken document yields what came before the break.
    The document is read with the GIL released, and each dict is made when
    it is iterated; its entries are held until then, up to `max_entries`
    (the protocol's 50,000 by default)."""

    def __init__(
        self, xmltext: bytes | str, *, url: str | None = None, max_bytes: int = 52_428_800, max_entries: int = 50_000
    ) -> None:
        body = xmltext.encode() if isinstance(xmltext, str) else xmltext
        self._read = _native.read_sitemap(body, url=url, max_bytes=max_bytes, max_entries=max_entries)
        self.type: str | None = self._read.kind
        self.summary: sitemapd.Summary = self._read.summary

    def __len__(self) -> int:
        return len(self._read)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._read)


SLOT_KEY = "sitemapd_sitemap"
"""The meta key of a sitemap request: the name of its download slot, which a
redirect or a retry of it keeps."""


class SitemapDownloadSlots:
    """The downloader middleware of ``SitemapSpider``: a sitemap request
    waits here for one of the spider's ``sitemap_concurrency`` slots, and
    holds it until its body is read or its download fails. A request that
    goes back to the scheduler (a retry, a redirect) gives its slot back
    there, as it holds no body while it waits, and takes one again when it
    comes back here; one the scheduler or a handler of its signals drops
    (a duplicate, an offsite redirect) never comes back. A request the
    spider middlewares filter out never reaches here, so never holds a
    slot. A request waiting here counts against ``CONCURRENT_REQUESTS``."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_request(self, request: Request) -> None:
        spider = self.crawler.spider
        slot = request.meta.get(SLOT_KEY)
        if isinstance(spider, SitemapSpider) and slot is not None:
            await spider._take_slot(slot)


def _regex(x: re.Pattern[str] | str) -> re.Pattern[str]:
    return re.compile(x) if isinstance(x, str) else x


def _iterloc(entries: Iterable[Entry], alternates: bool) -> Iterator[tuple[str, Entry]]:
    for entry in entries:
        if entry.get("loc"):
            yield entry["loc"], entry
        if alternates:
            for href in entry.get("alternate", ()):
                yield href, entry


class SitemapSpider(Spider):
    """Scrapy's ``SitemapSpider`` with sitemapd's parser (see the module)."""

    sitemap_urls: Sequence[str] = ()
    sitemap_rules: Sequence[tuple[re.Pattern[str] | str, Any]] = [("", "parse")]
    sitemap_follow: Sequence[re.Pattern[str] | str] = [""]
    sitemap_alternate_links: bool = False
    sitemap_follow_robots: bool = False
    """Apply ``sitemap_follow`` to the sitemaps robots.txt lists too."""
    sitemap_max_bytes: int = 52_428_800
    """The byte limit of one sitemap after decompression (the protocol's 50 MiB)."""
    sitemap_max_entries: int = 50_000
    """The entries read of one sitemap (the protocol's 50,000; the rest are
    counted in the stats as ``sitemapd/diagnostics/C4``)."""
    sitemap_concurrency: int = 2
    """Sitemaps downloaded or waiting to be read at once (each holds its
    body, up to ``sitemap_max_bytes``, until it is read). Page requests are
    not counted."""

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        super().update_settings(settings)
        middlewares = settings.getdict("DOWNLOADER_MIDDLEWARES")
        if not any(str(name).endswith("SitemapDownloadSlots") for name in middlewares):
            middlewares[f"{__name__}.SitemapDownloadSlots"] = 950
            # At the priority the setting already has, if higher (a
            # command line's), so that the middleware joins it.
            priority = max(settings.getpriority("DOWNLOADER_MIDDLEWARES") or 0, SETTINGS_PRIORITIES["spider"])
            settings.set("DOWNLOADER_MIDDLEWARES", middlewares, priority=priority)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        spider = super().from_crawler(crawler, *args, **kwargs)
        # A request going back to the scheduler (or dropped on its way
        # there) holds no body: its slot is free for another.
        crawler.signals.connect(spider._rescheduled, signal=signals.request_scheduled)
        crawler.signals.connect(spider._rescheduled, signal=signals.request_dropped)
        return spider

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cbs: list[tuple[re.Pattern[str], Any]] = []
        for rule, callback in self.sitemap_rules:
            if isinstance(callback, str):
                callback = getattr(self, callback)
            self._cbs.append((_regex(rule), callback))
        self._follow = [_regex(x) for x in self.sitemap_follow]
        # Sitemaps read at once: each holds its slot until Scrapy has taken
        # its entries, and two keep two cores busy.
        self._parsing = DeferredSemaphore(2)
        self._downloads = DeferredSemaphore(max(1, self.sitemap_concurrency))
        self._held: set[str] = set()
        # Unique across runs: a JOBDIR or shared queue keeps an earlier
        # run's requests, numbers and all.
        run = uuid.uuid4().hex
        self._slot_names = (f"{run}-{n}" for n in itertools.count())

    async def start(self) -> AsyncIterator[Any]:
        for url in self.sitemap_urls:
            yield self._sitemap_request(url)

    def _sitemap_request(self, url: str) -> Request:
        return Request(
            url, callback=self._parse_sitemap, errback=self._sitemap_failed, meta={SLOT_KEY: next(self._slot_names)}
        )

    async def _take_slot(self, slot: str) -> None:
        """Waits for a download slot, unless `slot` (a redirect or retry of
        a request that has one) holds one already."""
        if slot not in self._held:
            await maybe_deferred_to_future(self._downloads.acquire())
            self._held.add(slot)

    def _give_slot(self, request: Request | None) -> None:
        slot = request.meta.get(SLOT_KEY) if request is not None else None
        if slot in self._held:
            self._held.remove(slot)
            self._downloads.release()

    def _rescheduled(self, request: Request) -> None:
        self._give_slot(request)

    def _sitemap_failed(self, failure: Failure) -> Failure:
        # The failure goes on: Scrapy logs it as it would without an errback.
        self._give_slot(getattr(failure, "request", None))
        return failure

    def sitemap_filter(self, entries: Iterable[Entry]) -> Iterable[Entry]:
        """Override to filter entries by their attributes (``lastmod``…)."""
        yield from entries

    def _count(self, sitemap: Sitemap) -> None:
        stats = getattr(getattr(self, "crawler", None), "stats", None)
        if stats is None:
            return
        stats.inc_value("sitemapd/sitemaps")
        stats.inc_value("sitemapd/entries", len(sitemap))
        for rule, count in sitemap.summary.diagnostics.items():
            stats.inc_value(f"sitemapd/diagnostics/{rule}", count)

    async def _parse_sitemap(self, response: Response) -> AsyncIterator[Request]:
        if response.url.endswith("/robots.txt"):
            self._give_slot(response.request)
            robots = sitemapd.parse_robots(response.body, url=response.url)
            for url in robots.sitemaps:
                if not self.sitemap_follow_robots or any(x.search(url) for x in self._follow):
                    yield self._sitemap_request(url)
            return
        await maybe_deferred_to_future(self._parsing.acquire())
        try:
            try:
                sitemap: Sitemap = await maybe_deferred_to_future(
                    deferToThread(
                        Sitemap,
                        response.body,
                        url=response.url,
                        max_bytes=self.sitemap_max_bytes,
                        max_entries=self.sitemap_max_entries,
                    )
                )
            finally:
                self._give_slot(response.request)
            self._count(sitemap)
            if sitemap.type is None:
                logger.warning("Ignoring invalid sitemap: %(response)s", {"response": response}, extra={"spider": self})
                return
            if sitemap.type == "sitemapindex":
                for loc, _ in _iterloc(self.sitemap_filter(sitemap), self.sitemap_alternate_links):
                    if any(x.search(loc) for x in self._follow):
                        yield self._sitemap_request(loc)
                return
            for loc, entry in _iterloc(self.sitemap_filter(sitemap), self.sitemap_alternate_links):
                for rule, callback in self._cbs:
                    if rule.search(loc):
                        yield Request(loc, callback=callback, meta={"sitemap": entry})
                        break
        finally:
            self._parsing.release()
