"""``sitemapd.scrapy.SitemapSpider`` against Scrapy's own: the examples of
Scrapy's documentation with only the import changed, and the sitemaps
Scrapy's spider passes over."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import Site, sitemapindex, urlset

HERE = Path(__file__).parent
EXAMPLES = HERE / "scrapy_examples.py"
IMPORT = "from scrapy.spiders import SitemapSpider"


def run(spiders: Path, name: str, site: Site, settings: dict[str, Any] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    out = subprocess.run(
        [sys.executable, str(HERE / "scrapy_run.py"), str(spiders), name, site.url(""), json.dumps(settings or {})],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    stats = next(line["stats"] for line in lines if "stats" in line)
    return [line for line in lines if "url" in line], stats


@pytest.fixture
def swapped(tmp_path: Path) -> Path:
    """The examples with the one import changed."""
    text = EXAMPLES.read_text()
    assert text.count(IMPORT) == 1
    path = tmp_path / "swapped_examples.py"
    path.write_text(text.replace(IMPORT, "from sitemapd.scrapy import SitemapSpider"))
    return path


def docs_site(site: Site) -> None:
    """The site the documentation's examples assume."""
    site.serve("/robots.txt", f"User-agent: *\nSitemap: {site.url('/sitemap_index.xml')}\n")
    site.serve("/sitemap_index.xml", sitemapindex(site.url("/sitemap_shops.xml"), site.url("/sitemap_blog.xml")))
    site.serve("/sitemap_shops.xml", urlset(site.url("/shop/a"), site.url("/shop/b"), lastmod="2005-03-01"))
    site.serve("/sitemap_blog.xml", urlset(site.url("/blog/x"), site.url("/shop/c"), lastmod="2004-03-01"))
    site.serve(
        "/sitemap.xml",
        urlset(site.url("/product/1"), site.url("/category/2"), site.url("/other/4"), lastmod="2005-06-01")[:-len("</urlset>")]
        + f"<url><loc>{site.url('/product/old')}</loc><lastmod>2004-12-31</lastmod></url></urlset>",
    )
    for path in ("/shop/a", "/shop/b", "/shop/c", "/blog/x", "/product/1", "/product/old", "/category/2", "/other/4", "/about"):
        site.serve(path, f"<html>{path}</html>", Content_Type="text/html")


def visits(seen: list[dict[str, Any]], site: Site) -> set[tuple[str, str | None]]:
    return {(entry["url"].removeprefix(site.url("")), entry["callback"]) for entry in seen}


@pytest.mark.parametrize("name", ["MySpider", "RulesSpider", "FollowSpider", "OtherSourcesSpider", "FilteredSpider"])
def test_the_documentations_examples_run_with_the_import_swapped(site: Site, swapped: Path, name: str) -> None:
    docs_site(site)
    scrapy_seen, _ = run(EXAMPLES, name, site)
    ours_seen, stats = run(swapped, name, site)
    assert visits(ours_seen, site) == visits(scrapy_seen, site)
    assert len(visits(ours_seen, site)) >= 3
    pages = [entry for entry in ours_seen if entry["sitemap"] is not None]
    assert pages and all(entry["sitemap"]["loc"] == entry["url"] for entry in pages)
    assert stats["sitemapd/sitemaps"] >= 1


def test_the_filter_reads_lastmod_as_the_documentation_does(site: Site, swapped: Path) -> None:
    docs_site(site)
    seen, _ = run(swapped, "FilteredSpider", site)
    fetched = {e["url"].removeprefix(site.url("")) for e in seen}
    assert "/product/1" in fetched and "/product/old" not in fetched
    (entry,) = [e["sitemap"] for e in seen if e["url"].endswith("/product/1")]
    assert entry["lastmod"] == "2005-06-01" and entry["lastmod_precision"] == "day"


def one_spider(tmp_path: Path, base: str, sitemap_urls: list[str], body: str = "pass") -> Path:
    path = tmp_path / "spider.py"
    path.write_text(
        f"{base}\n\nSITE = 'http://placeholder'\n\n\nclass Spider(SitemapSpider):\n"
        f"    name = 'one'\n    sitemap_urls = {sitemap_urls!r}\n\n    def parse(self, response):\n        {body}\n"
    )
    return path


MISSED = {
    # A sitemap served as HTML, at an address without .xml.
    "html_content_type": ("/sitemap", "text/html; charset=utf-8", False),
    # A sitemap at a path with no suffix, served as octet-stream.
    "no_suffix": ("/sitemaps/pages", "application/octet-stream", False),
    # A gzip file cut short (Scrapy's spider reads part of it too).
    "truncated_gzip": ("/pages.xml.gz", "application/gzip", True),
    # A text sitemap.
    "text_sitemap": ("/sitemap.txt", "text/plain", False),
}


@pytest.mark.parametrize("case", sorted(MISSED))
def test_sitemaps_scrapys_spider_passes_over_or_cuts_yield_urls(site: Site, tmp_path: Path, case: str) -> None:
    path, content_type, truncated = MISSED[case]
    pages = [site.url(f"/page/{i}") for i in range(40)]
    if case == "text_sitemap":
        body: bytes = "\n".join(pages).encode()
    else:
        body = urlset(*pages).encode()
    if truncated:
        body = gzip.compress(body)
        body = body[: len(body) * 2 // 3]
    site.serve(path, body, Content_Type=content_type)
    for page in pages:
        site.serve(page.removeprefix(site.url("")), "<html></html>", Content_Type="text/html")
    theirs, _ = run(one_spider(tmp_path, IMPORT, [site.url(path)]), "Spider", site)
    ours, _ = run(one_spider(tmp_path, "from sitemapd.scrapy import SitemapSpider", [site.url(path)]), "Spider", site)
    their_pages = [e for e in theirs if "/page/" in e["url"]]
    our_pages = [e for e in ours if "/page/" in e["url"]]
    if truncated:
        # Scrapy's spider reads a cut gzip file too, and fetches the cut
        # <loc> as a page; this one keeps every whole entry, and no part.
        ours_urls = {e["url"] for e in our_pages}
        assert {e["url"] for e in their_pages if e["url"] in pages} <= ours_urls
        assert ours_urls and ours_urls < set(pages)
    else:
        assert their_pages == []  # the reproduction: Scrapy's spider yields nothing
        assert {e["url"] for e in our_pages} == set(pages)


def test_robots_sitemaps_can_follow_the_follow_rule_and_diagnostics_count(site: Site, tmp_path: Path) -> None:
    site.serve("/robots.txt", f"Sitemap: {site.url('/keep.xml')}\nSitemap: {site.url('/skip.xml')}\n")
    site.serve("/keep.xml", urlset(site.url("/a"), lastmod="not a date"))
    site.serve("/skip.xml", urlset(site.url("/b")))
    site.serve("/a", "a")
    site.serve("/b", "b")
    spider = one_spider(tmp_path, "from sitemapd.scrapy import SitemapSpider", [site.url("/robots.txt")])
    spider.write_text(spider.read_text().replace("    name = 'one'", "    name = 'one'\n    sitemap_follow = ['/keep']\n    sitemap_follow_robots = True"))
    seen, stats = run(spider, "Spider", site)
    assert {e["url"] for e in seen} == {site.url("/robots.txt"), site.url("/keep.xml"), site.url("/a")}
    assert stats["sitemapd/diagnostics/X7"] == 1


@pytest.mark.parametrize(("slots", "depth_limit"), [(1, 0), (2, 0), (1, 3)])
def test_sitemap_downloads_stay_within_their_slots_and_nothing_stalls_the_tree(
    site: Site, tmp_path: Path, slots: int, depth_limit: int
) -> None:
    """At most `sitemap_concurrency` sitemaps at the server at once, while a
    tree nested deeper than that is read whole, and children that fail
    (404, a refused connection), are listed twice or are cut by Scrapy's
    DEPTH_LIMIT give their slots back."""
    in_flight = [0, 0]  # now, most

    def slow(body: str) -> Any:
        def reply() -> tuple[int, dict[str, str], bytes]:
            with site.lock:
                in_flight[0] += 1
                in_flight[1] = max(in_flight[1], in_flight[0])
            time.sleep(0.15)
            with site.lock:
                in_flight[0] -= 1
            return 200, {"Content_Type": "application/xml"}, body.encode()

        return reply

    depth = 4
    pages = []
    for level in range(depth):
        children = [site.url(f"/pages-{level}-{part}.xml") for part in "ab"]
        for child in children:
            locs = [site.url(f"/page/{level}/{child[-5]}/{i}") for i in range(3)]
            pages += locs
            site.routes[child.removeprefix(site.url(""))] = slow(urlset(*locs))
        listed = children + [children[0], site.url(f"/missing-{level}.xml"), "http://127.0.0.1:1/refused.xml"]
        if level + 1 < depth:
            listed.insert(0, site.url(f"/index-{level + 1}.xml"))
        site.routes[f"/index-{level}.xml"] = slow(sitemapindex(*listed))
    site.serve("/robots.txt", f"Sitemap: {site.url('/index-0.xml')}\n")
    for page in pages:
        site.serve(page.removeprefix(site.url("")), "page")
    spider = one_spider(tmp_path, "from sitemapd.scrapy import SitemapSpider", [site.url("/robots.txt")])
    spider.write_text(spider.read_text().replace("    name = 'one'", f"    name = 'one'\n    sitemap_concurrency = {slots}"))
    seen, _ = run(spider, "Spider", site, {"DEPTH_LIMIT": depth_limit})
    fetched = {e["url"] for e in seen if "/page/" in e["url"]}
    if depth_limit:
        # robots.txt 0, index-0 1, pages-0-* 2, their pages 3: the rest is deeper.
        assert fetched == {page for page in pages if "/page/0/" in page}
    else:
        assert fetched == set(pages)
        assert in_flight[1] == slots


def test_retried_redirected_and_offsite_sitemaps_give_their_slots_back(site: Site, tmp_path: Path) -> None:
    """One slot, more sitemaps than Scrapy's 16 downloads at once: a sitemap
    retried after a 503, one redirected onto a sitemap already requested,
    and one redirected off the allowed domains all let the tree go on."""
    children = [site.url(f"/pages-{i}.xml") for i in range(20)]
    pages = {i: [site.url(f"/page/{i}/{j}") for j in range(2)] for i in range(20)}
    for i, child in enumerate(children):
        site.serve(child.removeprefix(site.url("")), urlset(*pages[i]))
    # Scrapy's queue is last in, first out: the last child is fetched first.
    answers = iter([(503, {}, b"busy")])
    site.routes["/pages-19.xml"] = lambda: next(answers, (200, {}, urlset(*pages[19]).encode()))
    site.serve("/pages-1.xml", "", status=301, Location=children[2])
    site.serve("/pages-3.xml", "", status=301, Location=f"http://localhost:{site.port}/offsite.xml")
    site.serve("/index.xml", sitemapindex(*children))
    for links in pages.values():
        for page in links:
            site.serve(page.removeprefix(site.url("")), "page")
    spider = one_spider(tmp_path, "from sitemapd.scrapy import SitemapSpider", [site.url("/index.xml")])
    spider.write_text(spider.read_text().replace(
        "    name = 'one'", "    name = 'one'\n    sitemap_concurrency = 1\n    allowed_domains = ['127.0.0.1']"))
    seen, stats = run(spider, "Spider", site, {"RETRY_ENABLED": True})
    assert {e["url"] for e in seen if "/page/" in e["url"]} == {p for i in pages if i not in (1, 3) for p in pages[i]}
    assert site.requests.count("/pages-19.xml") == 2 and stats["retry/count"] == 1
    assert "/offsite.xml" not in site.requests


def test_the_spider_joins_middlewares_given_on_the_command_line() -> None:
    from scrapy.settings import Settings

    from sitemapd.scrapy import SitemapSpider

    settings = Settings()
    settings.set("DOWNLOADER_MIDDLEWARES", '{"mine.Middleware": 123}', priority="cmdline")
    SitemapSpider.update_settings(settings)
    middlewares = settings.getdict("DOWNLOADER_MIDDLEWARES")
    assert middlewares == {"mine.Middleware": 123, "sitemapd.scrapy.spider.SitemapDownloadSlots": 950}


def test_the_drop_in_sitemap_class_reads_what_scrapys_reads() -> None:
    from scrapy.utils.sitemap import Sitemap as ScrapySitemap

    from sitemapd.scrapy import Sitemap

    body = (
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">'
        b"<url><loc>https://e.example/a</loc><lastmod>2024-01-02</lastmod><changefreq>daily</changefreq>"
        b'<priority>0.7</priority><xhtml:link rel="alternate" hreflang="de" href="https://e.example/de/a"/></url>'
        b"<url><loc>https://e.example/b</loc></url></urlset>"
    )
    theirs = list(ScrapySitemap(body))
    ours = list(Sitemap(body))
    assert Sitemap(body).type == ScrapySitemap(body).type == "urlset"
    for mine, scrapys in zip(ours, theirs, strict=True):
        assert {k: v for k, v in mine.items() if k in scrapys} == scrapys


def test_the_drop_in_sitemap_class_holds_at_most_its_entry_limit() -> None:
    from sitemapd.scrapy import Sitemap

    body = urlset(*(f"https://e.example/{i}" for i in range(60_000))).encode()
    sitemap = Sitemap(body)
    assert len(sitemap) == len(list(sitemap)) == 50_000
    assert sitemap.summary.diagnostics.get("C4") == 1
    assert len(Sitemap(body, max_entries=60_000)) == 60_000
