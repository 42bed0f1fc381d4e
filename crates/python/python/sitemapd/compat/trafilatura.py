"""trafilatura's ``sitemap_search`` over sitemapd's walk.

``sitemap_search(url)`` finds a site's sitemaps (robots.txt, then the
well-known paths) and returns the page URLs they list, on the same domain
unless ``external=True``. With ``target_lang``, an entry's hreflang
alternates in that language are taken instead of its own URL (entries
without alternates are kept).

Differences: lastmods and the rest are not lost (use
``sitemapd.discover`` for them); bodies up to the protocol's 50 MiB are
read (trafilatura drops those over 20 MB); ``sleep_time`` is the pause
between two requests to the host, not after each sitemap.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import sitemapd


def sitemap_search(
    url: str,
    target_lang: str | None = None,
    external: bool = False,
    sleep_time: float = 2.0,
    max_sitemaps: int = 10_000,
    **walk: Any,
) -> list[str]:
    """The page URLs of a site's sitemaps (or of the sitemap `url`)."""
    options: dict[str, Any] = {"per_host_delay_s": sleep_time, "max_sitemaps": max_sitemaps, **walk}
    if external:
        options["scope"] = "none"
    host = (urlsplit(url if "://" in url else f"https://{url}").hostname or "").lower()
    seen: set[str] = set()
    out: list[str] = []
    for entry in sitemapd.iter_discover(url, **options):
        candidates = [entry.loc]
        if target_lang and entry.alternates:
            candidates = [href for lang, href in entry.alternates if lang.lower().startswith(target_lang.lower())]
        for candidate in candidates:
            if not external and (urlsplit(candidate).hostname or "").lower() != host:
                continue
            if candidate not in seen:
                seen.add(candidate)
                out.append(candidate)
    return out
