"""Scrapy with sitemapd: a drop-in ``SitemapSpider``, a crash-safe
scheduler over a sitemapd store, and the middleware that reports each
fetch's outcome to it.

Swap the import to get the spider::

    from sitemapd.scrapy import SitemapSpider   # was: from scrapy.spiders import SitemapSpider

and these settings for the scheduler::

    SCHEDULER = "sitemapd.scrapy.SitemapdScheduler"
    DOWNLOADER_MIDDLEWARES = {"sitemapd.scrapy.SitemapdOutcomeMiddleware": 540}
    SITEMAPD_STORE = "crawl-store"
    SITEMAPD_SEEDS = ["example.com"]

Scrapy itself is not a dependency of sitemapd: this module needs it
installed (``pip install scrapy``).
"""

from sitemapd.scrapy.middleware import SitemapdOutcomeMiddleware
from sitemapd.scrapy.scheduler import SitemapdScheduler
from sitemapd.scrapy.spider import Sitemap, SitemapSpider

__all__ = ["Sitemap", "SitemapSpider", "SitemapdOutcomeMiddleware", "SitemapdScheduler"]
