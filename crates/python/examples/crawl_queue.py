"""A crawl loop over the store: ingest a sitemap, lease what is due,
report how each fetch ended, and see what comes next.

    python crawl_queue.py fixtures/corpus/urlset/adobe__theblog__sitemap.xml
"""

from __future__ import annotations

import sys

import sitemapd


def crawl(path: str, rounds: int = 3) -> dict[str, int]:
    store = sitemapd.Store()  # in memory; Store("crawl-store") keeps it on disk
    stats = store.ingest(path)
    print(f"ingested {stats['entries']} entries, {stats['new']} new")
    outcomes: dict[str, int] = {}
    for _ in range(rounds):
        for lease in store.lease(100, per_host=100):
            # A real crawler fetches lease.url here, with If-None-Match:
            # lease.etag and If-Modified-Since: lease.last_modified.
            outcome: sitemapd.Outcome = "changed" if lease.etag is None else "not_modified"
            store.complete(lease.url, outcome, status=200, etag='"v1"')
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
    print("next due:", [p.url for p in store.peek(3)])
    return outcomes


if __name__ == "__main__":
    print(crawl(sys.argv[1]))
