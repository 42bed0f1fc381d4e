"""The SitemapSpider examples of Scrapy's documentation, as written there
(only the site's address differs). The tests run them as they are and with
the import swapped for ``from sitemapd.scrapy import SitemapSpider``."""

from datetime import datetime

from scrapy import Request
from scrapy.spiders import SitemapSpider

SITE = "http://www.example.com"


class MySpider(SitemapSpider):
    name = "simplest"
    sitemap_urls = [SITE + "/sitemap.xml"]

    def parse(self, response):
        pass  # ... scrape item here ...


class RulesSpider(SitemapSpider):
    name = "rules"
    sitemap_urls = [SITE + "/sitemap.xml"]
    sitemap_rules = [
        ("/product/", "parse_product"),
        ("/category/", "parse_category"),
    ]

    def parse_product(self, response):
        pass  # ... scrape product ...

    def parse_category(self, response):
        pass  # ... scrape category ...


class FollowSpider(SitemapSpider):
    name = "follow"
    sitemap_urls = [SITE + "/robots.txt"]
    sitemap_rules = [
        ("/shop/", "parse_shop"),
    ]
    sitemap_follow = ["/sitemap_shops"]

    def parse_shop(self, response):
        pass  # ... scrape shop here ...


class OtherSourcesSpider(SitemapSpider):
    name = "other"
    sitemap_urls = [SITE + "/robots.txt"]
    sitemap_rules = [
        ("/shop/", "parse_shop"),
    ]

    other_urls = [SITE + "/about"]

    async def start(self):
        async for item_or_request in super().start():
            yield item_or_request
        for url in self.other_urls:
            yield Request(url, self.parse_other)

    def parse_shop(self, response):
        pass  # ... scrape shop here ...

    def parse_other(self, response):
        pass  # ... scrape other here ...


class FilteredSpider(SitemapSpider):
    name = "filtered"
    sitemap_urls = [SITE + "/sitemap.xml"]

    def sitemap_filter(self, entries):
        for entry in entries:
            date_time = datetime.strptime(entry["lastmod"], "%Y-%m-%d")
            if date_time.year >= 2005:
                yield entry


EXAMPLES = [MySpider, RulesSpider, FollowSpider, OtherSourcesSpider, FilteredSpider]
