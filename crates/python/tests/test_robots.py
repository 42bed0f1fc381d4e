"""`parse_robots` against the sitemapd binary on every corpus robots.txt,
and the rules it answers for."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import sitemapd
from conftest import corpus_files

BASE = "https://example.com/robots.txt"


@pytest.mark.parametrize("path", corpus_files("robots"), ids=lambda p: p.name)
def test_sitemaps_and_delay_are_the_binarys(sitemapd_bin: Path, path: Path) -> None:
    run = subprocess.run(
        [str(sitemapd_bin), "robots", str(path), "--url", BASE, "--json"],
        capture_output=True,
        check=True,
    )
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    # The summary goes to stderr, with the diagnostics.
    notes = [json.loads(line) for line in run.stderr.splitlines() if line.startswith(b"{")]
    summary = next(note for note in notes if note.get("type") == "summary")
    robots = sitemapd.parse_robots(path.read_bytes(), url=BASE)
    assert robots.sitemaps == [line["url"] for line in lines if line["type"] == "sitemap"]
    assert robots.crawl_delay == summary["crawl_delay"]
    assert len(robots.diagnostics) == summary["diagnostics"]
    assert robots.truncated == summary["truncated"]


def test_rules_follow_the_agents_group() -> None:
    body = (
        b"User-agent: *\nDisallow: /private/\nCrawl-delay: 5\n\n"
        b"User-agent: sitemapd\nDisallow: /only-us/\nAllow: /only-us/open\nCrawl-delay: 2\n"
        b"Sitemap: /sitemap.xml\nSitemap: https://cdn.example.net/s.xml.gz\n"
    )
    ours = sitemapd.parse_robots(body, url=BASE, user_agent="sitemapd/0.1")
    assert ours.sitemaps == ["https://example.com/sitemap.xml", "https://cdn.example.net/s.xml.gz"]
    assert ours.crawl_delay == 2.0
    assert not ours.is_allowed("/only-us/x")
    assert ours.is_allowed("https://example.com/only-us/open")
    assert ours.is_allowed("/private/x")  # our own group, not `*`'s
    other = sitemapd.parse_robots(body, url=BASE, user_agent="otherbot")
    assert other.crawl_delay == 5.0
    assert not other.is_allowed("/private/x")
    assert other.is_allowed("/only-us/x")


def test_without_a_url_relative_sitemaps_are_dropped_with_a_diagnostic() -> None:
    robots = sitemapd.parse_robots(b"Sitemap: /relative.xml\nSitemap: https://e.example/a.xml\n")
    assert robots.sitemaps == ["https://e.example/a.xml"]
    assert robots.diagnostics and robots.diagnostics[0].line == 1
    with pytest.raises(ValueError):
        robots.is_allowed("/relative")


@pytest.mark.parametrize("body", [b"", b"\xff\xfe\x00garbage", b"Sitemap:" * 100_000, bytes(range(256)) * 64])
def test_any_bytes_parse(body: bytes) -> None:
    robots = sitemapd.parse_robots(body, url=BASE)
    assert robots.is_allowed("/")
