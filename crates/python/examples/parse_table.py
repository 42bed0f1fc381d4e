"""Read a sitemap into a polars DataFrame and summarise it.

    python parse_table.py fixtures/corpus/urlset/adobe__theblog__sitemap.xml
"""

from __future__ import annotations

import sys

import polars as pl

import sitemapd


def summarise(path: str) -> pl.DataFrame:
    doc = sitemapd.parse(path)
    urls: pl.DataFrame = doc.urls.to_polars()
    print(f"{urls.height} URLs, {doc.diagnostics.num_rows} diagnostics, format {doc.summary.format}")
    by_year = (
        urls.filter(pl.col("lastmod").is_not_null())
        .group_by(pl.col("lastmod").dt.year().alias("year"))
        .agg(pl.len().alias("urls"))
        .sort("year")
    )
    return by_year


if __name__ == "__main__":
    print(summarise(sys.argv[1]))
