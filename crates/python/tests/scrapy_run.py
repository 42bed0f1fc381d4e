"""Runs one spider class on a site, and prints what it fetched as JSON:
``python scrapy_run.py MODULE CLASS SITE [SETTINGS_JSON]``. MODULE is a
file defining CLASS; the examples' ``SITE`` is replaced by the given one.
Each line: the URL fetched, its status, the callback's name and the
``meta["sitemap"]`` it carried."""

from __future__ import annotations

import importlib.util
import json
import sys
from typing import Any

from scrapy import signals
from scrapy.crawler import CrawlerProcess


def main() -> None:
    path, name, site = sys.argv[1:4]
    extra: dict[str, Any] = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    spec = importlib.util.spec_from_file_location("spiders", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    spider = getattr(module, name)
    for attr in ("sitemap_urls", "other_urls"):
        if hasattr(spider, attr):
            setattr(spider, attr, [u.replace(module.SITE, site) for u in getattr(spider, attr)])
    settings = {
        "LOG_LEVEL": "ERROR",
        "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "DOWNLOAD_DELAY": 0,
        "RETRY_ENABLED": False,
        **extra,
    }
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(spider)
    seen: list[dict[str, Any]] = []

    def received(response: Any, request: Any, spider: Any) -> None:
        callback = request.callback
        seen.append(
            {
                "url": response.url,
                "status": response.status,
                "callback": getattr(callback, "__name__", None),
                "sitemap": request.meta.get("sitemap"),
                "conditional": "If-None-Match" in request.headers or "If-Modified-Since" in request.headers,
            }
        )
        print(json.dumps(seen[-1]), flush=True)

    crawler.signals.connect(received, signal=signals.response_received)
    process.crawl(crawler)
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats else {}
    print(json.dumps({"stats": {k: v for k, v in stats.items() if isinstance(v, (int, float, str))}}), flush=True)


if __name__ == "__main__":
    main()
