"""``SitemapdOutcomeMiddleware``: reports how each fetch of a URL the
``SitemapdScheduler`` handed out ended, to the store.

Place it at 540, between the engine and Scrapy's Retry (550) and Redirect
(600) middlewares, so that it sees final outcomes only: a 200 (or other
2xx) is ``changed``, with the response's ``ETag`` and ``Last-Modified``
kept for the next conditional GET; a 304 is ``not_modified``; 404 and 410
are ``gone``; a response reached through redirects reports the URL as
``redirected`` to where it ended; any other status, and an exception
once the retries are spent, is ``error``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.http import Request, Response

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.spiders import Spider

    from sitemapd.scrapy.scheduler import SitemapdScheduler


class SitemapdOutcomeMiddleware:
    """The downloader middleware (see the module)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SitemapdOutcomeMiddleware:
        return cls(crawler)

    def _scheduler(self) -> SitemapdScheduler | None:
        return getattr(self.crawler, "sitemapd_scheduler", None)

    def process_response(self, request: Request, response: Response, spider: Spider | None = None) -> Response:
        url = request.meta.get("sitemapd_url")
        scheduler = self._scheduler()
        if url is None or scheduler is None:
            return response
        status = response.status
        header = response.headers.get
        etag = header("ETag")
        last_modified = header("Last-Modified")
        # Only what the response says: a 304 without them keeps the stored ones.
        validators: dict[str, Any] = {}
        if etag:
            validators["etag"] = etag.decode("latin-1")
        if last_modified:
            validators["last_modified"] = last_modified.decode("latin-1")
        redirects = request.meta.get("redirect_urls")
        if redirects:
            reasons = request.meta.get("redirect_reasons") or [0]
            first = reasons[0] if isinstance(reasons[0], int) else 0
            scheduler.report(url, "redirected", status=first, redirect_to=response.url)
        elif status == 304:
            scheduler.report(url, "not_modified", status=304, **validators)
        elif 200 <= status < 300:
            scheduler.report(url, "changed", status=status, **validators)
        elif status in (404, 410):
            scheduler.report(url, "gone", status=status)
        else:
            scheduler.report(url, "error", status=status)
        return response

    def process_exception(self, request: Request, exception: BaseException, spider: Spider | None = None) -> None:
        url = request.meta.get("sitemapd_url")
        scheduler = self._scheduler()
        if url is not None and scheduler is not None:
            scheduler.report(url, "error", status=0)
