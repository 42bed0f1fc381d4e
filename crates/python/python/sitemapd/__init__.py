"""sitemapd: read every sitemap format, discover sitemaps through robots.txt,
and keep a crawl queue, from Python.

>>> import sitemapd
>>> doc = sitemapd.parse(b'''<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
...   <url><loc>https://example.com/a</loc><lastmod>2024-05-06</lastmod></url>
... </urlset>''', url="https://example.com/sitemap.xml")
>>> doc.urls.num_rows
1
>>> [e.loc for e in sitemapd.iter_entries(b"https://example.com/b\\n")]
['https://example.com/b']

Tables (``parse(...).urls``, ``.sitemaps``, ``.diagnostics``) speak the Arrow
PyCapsule interface: ``pyarrow.table(t)``, ``polars.DataFrame(t)`` and
``t.to_pandas()`` take them without a copy. Nothing here imports pyarrow,
pandas or polars until asked to.
"""

from sitemapd._types import IngestStats, Outcome, Scope, Source, WalkOptions
from sitemapd._native import (
    BatchReader,
    Diagnostic,
    DiscoverIterator,
    Discovered,
    DiscoveryError,
    EntryIterator,
    Lease,
    Parsed,
    Robots,
    SitemapRef,
    Simulation,
    SitemapdError,
    Store,
    StoreError,
    Summary,
    Table,
    UrlEntry,
    __version__,
    discover,
    iter_batches,
    iter_discover,
    iter_entries,
    parse,
    parse_robots,
    simulate,
)

__all__ = [
    "IngestStats",
    "Outcome",
    "Scope",
    "Source",
    "WalkOptions",
    "BatchReader",
    "Diagnostic",
    "DiscoverIterator",
    "Discovered",
    "DiscoveryError",
    "EntryIterator",
    "Lease",
    "Parsed",
    "Robots",
    "SitemapRef",
    "Simulation",
    "SitemapdError",
    "Store",
    "StoreError",
    "Summary",
    "Table",
    "UrlEntry",
    "__version__",
    "discover",
    "iter_batches",
    "iter_discover",
    "iter_entries",
    "parse",
    "parse_robots",
    "simulate",
]
