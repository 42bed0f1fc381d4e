"""ultimate-sitemap-parser's entry points over sitemapd's walk and parser.

``sitemap_tree_for_homepage(url)`` walks the site (robots.txt, then the
well-known paths when it declares none), with a time budget and the
address guard, and returns a tree: ``all_pages()``, ``all_sitemaps()``,
``sub_sitemaps`` and ``url``, as USP's does. Pages are read from the walk's
Arrow table as they are iterated, so the tree of a large site stays small.

Differences from USP: ``last_modified`` is an aware datetime in UTC (USP's
is naive where the sitemap's date had no zone); a page's ``priority`` is ``Decimal("0.5")`` when the
sitemap gave none, as USP reports it (``sitemapd.parse`` keeps it absent);
``web_client`` and the recursion callbacks are not supported (the walk's
keywords, ``max_depth`` and ``max_sitemaps`` among them, are); an index's
sub-sitemaps come in the order they were read; sitemaps are
recognised by content, text sitemaps and feeds included; a broken document
keeps the pages before the break.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

import sitemapd
from sitemapd._types import WalkOptions


class SitemapPageChangeFrequency(enum.Enum):
    """A page's ``<changefreq>``."""

    ALWAYS = "always"
    HOURLY = "hourly"
    DAILY = "daily"
    WEEKLY = "weekly"
    MONTHLY = "monthly"
    YEARLY = "yearly"
    NEVER = "never"


@dataclass(frozen=True)
class SitemapPage:
    """One page a sitemap lists."""

    url: str
    priority: Decimal = Decimal("0.5")
    last_modified: datetime | None = None
    change_frequency: SitemapPageChangeFrequency | None = None
    images: list[str] | None = None
    alternates: list[tuple[str, str]] | None = None
    news_story: dict[str, Any] | None = None


def _page(row: dict[str, Any]) -> SitemapPage:
    priority = row.get("priority")
    changefreq = row.get("changefreq")
    news = None
    for block in row.get("news") or []:
        news = {
            "title": block["title"],
            "publication_name": block["publication_name"],
            "publication_language": block["language"],
            "publish_date": block["publication_date"],
        }
    images = list(row.get("images") or [])
    alternates = [(a["hreflang"], a["href"]) for a in row.get("alternates") or []]
    return SitemapPage(
        url=row["loc"],
        priority=Decimal("0.5") if priority is None else Decimal(str(priority)),
        last_modified=row.get("lastmod"),
        change_frequency=SitemapPageChangeFrequency(changefreq) if changefreq else None,
        images=images or None,
        alternates=alternates or None,
        news_story=news,
    )


@dataclass
class Sitemap:
    """A node of the tree: the site itself, robots.txt, an index, or a
    sitemap of pages. ``pages`` is the node's own pages (a sitemap of
    pages), read on demand."""

    url: str
    kind: str
    sub_sitemaps: list[Sitemap] = field(default_factory=list)
    error: str | None = None
    _rows: Any = None

    def all_pages(self) -> Iterator[SitemapPage]:
        """Every page of this node and the nodes below it."""
        if self._rows is not None:
            for row in self._rows():
                yield _page(row)
        for sub in self.sub_sitemaps:
            yield from sub.all_pages()

    def all_sitemaps(self) -> Iterator[Sitemap]:
        """Every node below this one, depth first."""
        for sub in self.sub_sitemaps:
            yield sub
            yield from sub.all_sitemaps()

    @property
    def pages(self) -> list[SitemapPage]:
        return [_page(row) for row in self._rows()] if self._rows is not None else []

    def to_dict(self, with_pages: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"url": self.url, "type": self.kind}
        if self.error:
            out["reason"] = self.error
        if self.sub_sitemaps:
            out["sub_sitemaps"] = [s.to_dict(with_pages) for s in self.sub_sitemaps]
        if with_pages and self._rows is not None:
            out["pages"] = [p.__dict__ for p in self.pages]
        return out


def _rows_of(urls: Any, sitemap_url: str) -> Any:
    """The rows of `urls` (a pyarrow table) listed by one sitemap."""

    def rows() -> Iterator[dict[str, Any]]:
        import pyarrow.compute as pc  # type: ignore[import-untyped]

        for batch in urls.filter(pc.equal(urls["sitemap"], sitemap_url)).to_batches():
            yield from batch.to_pylist()

    return rows


def sitemap_tree_for_homepage(
    homepage_url: str,
    web_client: Any = None,
    use_robots: bool = True,
    use_known_paths: bool = True,
    extra_known_paths: set[str] | None = None,
    recurse_callback: Any = None,
    recurse_list_callback: Any = None,
    normalize_homepage_url: bool = True,
    **walk: Any,
) -> Sitemap:
    """The sitemap tree of a site (needs pyarrow, for the page table)."""
    if web_client is not None or recurse_callback is not None or recurse_list_callback is not None:
        raise TypeError("web_client and the recursion callbacks are not supported: give the walk's keywords")
    if not use_robots:
        raise TypeError("use_robots=False is not supported: the walk always reads robots.txt first")
    if extra_known_paths:
        raise TypeError("extra_known_paths is not supported")
    import pyarrow as pa

    site = homepage_url
    if normalize_homepage_url:
        from urllib.parse import urlsplit

        parts = urlsplit(homepage_url)
        site = f"{parts.scheme}://{parts.netloc}/"
    options: WalkOptions = {"probe": use_known_paths, **walk}  # type: ignore[typeddict-item]
    found = sitemapd.discover(site, **options)
    urls = pa.table(found.urls)
    fetches = pa.table(found.sitemaps).to_pylist()
    root = Sitemap(url=site, kind="IndexWebsiteSitemap")
    nodes: dict[str, Sitemap] = {}
    robots = Sitemap(url=site.rstrip("/") + "/robots.txt", kind="IndexRobotsTxtSitemap")
    for fetch in fetches:
        if fetch["format"] == "sitemapindex":
            kind = "IndexXMLSitemap"
        elif fetch["error"] is not None or fetch["format"] is None:
            kind = "InvalidSitemap"
        else:
            kind = {"text": "PagesTextSitemap", "rss": "PagesRSSSitemap", "atom": "PagesAtomSitemap"}.get(
                fetch["format"], "PagesXMLSitemap"
            )
        rows = _rows_of(urls, fetch["url"]) if kind.startswith("Pages") else None
        nodes[fetch["url"]] = Sitemap(url=fetch["url"], kind=kind, error=fetch["error"], _rows=rows)
    for fetch in fetches:
        node = nodes[fetch["url"]]
        parent = nodes.get(fetch["parent"]) if fetch["parent"] else None
        if parent is not None:
            parent.sub_sitemaps.append(node)
        elif fetch["via"] == "robots":
            robots.sub_sitemaps.append(node)
        else:
            root.sub_sitemaps.append(node)
    if robots.sub_sitemaps:
        root.sub_sitemaps.insert(0, robots)
    return root


def sitemap_from_str(content: str | bytes) -> Sitemap:
    """One sitemap document, parsed (child sitemaps of an index become
    invalid nodes, as USP makes them: nothing is fetched)."""
    doc = sitemapd.parse(content.encode() if isinstance(content, str) else content, scope="none")
    fmt = doc.summary.format
    if fmt == "sitemapindex":
        node = Sitemap(url="", kind="IndexXMLSitemap")
        for row in doc.sitemaps.to_pylist():
            node.sub_sitemaps.append(Sitemap(url=row["loc"], kind="InvalidSitemap", error="not fetched"))
        return node
    if fmt is None:
        return Sitemap(url="", kind="InvalidSitemap", error="not a sitemap")
    rows = doc.urls.to_pylist()
    return Sitemap(url="", kind="PagesXMLSitemap", _rows=lambda: iter(rows))
