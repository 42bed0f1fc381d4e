"""advertools' ``sitemap_to_df`` over sitemapd's walk.

``sitemap_to_df(url)`` reads a sitemap, a sitemap index (with
``recursive=True``, every sitemap below it) or a robots.txt (every sitemap
it lists) into a pandas DataFrame with advertools' columns: ``loc``,
``lastmod`` (UTC timestamps), ``changefreq``, ``priority``, ``sitemap``,
``etag``, ``sitemap_last_modified``, ``sitemap_size_mb``, ``download_date``,
and ``errors`` for the sitemaps that failed (one row each), each column
only when some row has a value, as advertools does.

Differences: a bad lastmod is dropped (the column stays a timestamp
column; advertools turns it into strings); text sitemaps and feeds are
read; every request has a time limit and the address guard;
``max_workers`` and ``request_headers`` are accepted and not used (the
walk's own concurrency and User-Agent apply); needs pandas and pyarrow.
"""

from __future__ import annotations

from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any

import sitemapd


def _http_date(value: object) -> Any:
    if not isinstance(value, str) or not value:
        return None
    try:
        return parsedate_to_datetime(value).astimezone(timezone.utc)
    except (TypeError, ValueError):
        return None


def sitemap_to_df(
    sitemap_url: str,
    max_workers: int = 8,
    recursive: bool = True,
    request_headers: dict[str, str] | None = None,
    **walk: Any,
) -> Any:
    """The entries of a sitemap (index, or robots.txt) as a DataFrame."""
    import pandas as pd  # type: ignore[import-untyped]
    import pyarrow as pa  # type: ignore[import-untyped]

    del max_workers, request_headers
    options: dict[str, Any] = {"probe": False, **walk}
    if not recursive:
        options["max_depth"] = 0
    found = sitemapd.discover(sitemap_url, **options)
    download_date = datetime.now(timezone.utc)
    urls = pa.table(found.urls).select(["loc", "lastmod", "changefreq", "priority", "sitemap"]).to_pandas()
    fetches = pa.table(found.sitemaps).to_pandas()
    per_sitemap = pd.DataFrame(
        {
            "sitemap": fetches["url"],
            "etag": fetches["etag"],
            "sitemap_last_modified": pd.to_datetime(
                [_http_date(v) for v in fetches["last_modified"]], utc=True
            ),
            "sitemap_size_mb": fetches["bytes"] / (1 << 20),
            "download_date": pd.Timestamp(download_date),
            "errors": fetches["error"],
        }
    )
    ok = per_sitemap[per_sitemap["errors"].isna()].drop(columns=["errors"])
    frame = urls.merge(ok, on="sitemap", how="left")
    failed = per_sitemap[per_sitemap["errors"].notna()][["sitemap", "errors"]]
    if len(failed):
        frame = pd.concat([failed, frame], ignore_index=True)
    present = [c for c in frame.columns if frame[c].notna().any()]
    return frame[present]
