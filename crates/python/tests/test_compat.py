"""``sitemapd.compat`` against the tools whose call shapes it keeps, on the
same loopback site: ultimate-sitemap-parser's tree, advertools' frame,
trafilatura's URL list."""

from __future__ import annotations

import gzip
import logging
import warnings
from decimal import Decimal

import pytest

from conftest import LOOPBACK, Site, sitemapindex, urlset
from sitemapd.compat import advertools as compat_advertools
from sitemapd.compat import trafilatura as compat_trafilatura
from sitemapd.compat import usp as compat_usp


def tree(site: Site) -> set[str]:
    """robots.txt → an index → a gzipped urlset with metadata, a second
    urlset with hreflang alternates, and a missing sitemap."""
    first = [site.url(f"/a/{i}") for i in range(60)]
    second = [site.url(f"/b/{i}") for i in range(30)]
    site.serve("/robots.txt", f"Sitemap: {site.url('/index.xml')}\n")
    site.serve("/index.xml", sitemapindex(site.url("/a.xml.gz"), site.url("/b.xml"), site.url("/missing.xml")))
    items = "".join(
        f"<url><loc>{loc}</loc><lastmod>2024-02-{1 + i % 28:02}</lastmod><changefreq>daily</changefreq>"
        f"<priority>0.{i % 10}</priority></url>"
        for i, loc in enumerate(first)
    )
    site.serve("/a.xml.gz", gzip.compress(urlset()[: -len("</urlset>")].encode() + items.encode() + b"</urlset>"))
    alternates = "".join(
        f'<url><loc>{loc}</loc><xhtml:link rel="alternate" hreflang="de" href="{loc}/de"/></url>' for loc in second
    )
    site.serve(
        "/b.xml",
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">'
        + alternates
        + "</urlset>",
        ETag='"b1"',
        Last_Modified="Tue, 02 Jan 2024 10:00:00 GMT",
    )
    return set(first) | set(second)


def test_usp_tree_has_usps_pages_and_shape(site: Site) -> None:
    import usp.tree

    pages = tree(site)
    ours = compat_usp.sitemap_tree_for_homepage(site.url("/some/page"), **LOOPBACK)
    theirs = usp.tree.sitemap_tree_for_homepage(site.url("/some/page"))
    assert {p.url for p in ours.all_pages()} == {p.url for p in theirs.all_pages()} == pages
    # The same nodes, of the same kinds (an index's children in the order
    # they were read, which two fetches at a time may change).
    assert {(type(s).__name__, s.url) for s in theirs.all_sitemaps()} == {(s.kind, s.url) for s in ours.all_sitemaps()}
    by_url = {p.url: p for p in ours.all_pages()}
    for page in theirs.all_pages():
        mine = by_url[page.url]
        assert mine.priority == page.priority
        # Ours is aware (UTC); USP's is naive where the date had no zone.
        theirs_time = page.last_modified
        mine_time = mine.last_modified
        if theirs_time is not None and theirs_time.tzinfo is None and mine_time is not None:
            mine_time = mine_time.replace(tzinfo=None)
        assert mine_time == theirs_time
        assert (mine.change_frequency.value if mine.change_frequency else None) == (
            page.change_frequency.value if page.change_frequency else None
        )
    assert by_url[site.url("/b/0")].priority == Decimal("0.5")  # USP's value for "not given"


def test_usp_from_str_reads_what_usp_reads() -> None:
    import usp.tree

    doc = urlset("https://e.example/a", "https://e.example/b", lastmod="2024-01-01")
    assert [p.url for p in compat_usp.sitemap_from_str(doc).all_pages()] == [
        p.url for p in usp.tree.sitemap_from_str(doc).all_pages()
    ]


def test_advertools_frame_has_advertools_columns(site: Site) -> None:
    import advertools

    tree(site)
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = advertools.sitemap_to_df(site.url("/index.xml"))
        ours = compat_advertools.sitemap_to_df(site.url("/index.xml"), **LOOPBACK)
    finally:
        logging.disable(logging.NOTSET)
    assert set(ours.columns) == set(theirs.columns)
    pages = lambda frame: sorted(zip(frame["loc"].dropna(), frame.loc[frame["loc"].notna(), "sitemap"]))  # noqa: E731
    assert pages(ours) == pages(theirs)
    assert str(ours["lastmod"].dtype) == "datetime64[us, UTC]"
    assert ours.loc[ours["sitemap"] == site.url("/b.xml"), "etag"].unique().tolist() == ['"b1"']
    assert set(ours["errors"].dropna().index) == set(ours.index[ours["sitemap"] == site.url("/missing.xml")])


def test_trafilatura_search_lists_the_sites_pages(site: Site) -> None:
    pages = tree(site)
    found = compat_trafilatura.sitemap_search(site.url("/"), sleep_time=0.0, allow_addresses=["127.0.0.1"])
    assert set(found) == pages and len(found) == len(pages)
    german = compat_trafilatura.sitemap_search(
        site.url("/"), target_lang="de", sleep_time=0.0, allow_addresses=["127.0.0.1"]
    )
    assert {u for u in german if u.endswith("/de")} == {site.url(f"/b/{i}/de") for i in range(30)}


def test_unsupported_usp_arguments_say_so() -> None:
    with pytest.raises(TypeError, match="not supported"):
        compat_usp.sitemap_tree_for_homepage("https://e.example/", use_robots=False)
