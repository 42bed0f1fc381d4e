"""Names for the shapes the API takes and returns, for type checkers and
readers alike."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import IO, Literal, TypedDict, Union

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes]]
"""A document: a path (str or os.PathLike), bytes, or a binary file."""

Scope = Literal["directory", "host", "none"]
"""Which URLs a sitemap may list: its directory and below (the protocol's
rule), its host, or any."""

Outcome = Literal["changed", "not_modified", "gone", "error", "redirected"]
"""How a fetch ended, for `Store.complete`."""


class WalkOptions(TypedDict, total=False):
    """The keywords of `discover`, `iter_discover` and `Store.ingest_site`."""

    max_depth: int
    """Index nesting followed at most (default 3)."""
    max_sitemaps: int
    """Sitemaps fetched per site at most (default 5,000)."""
    follow: str | re.Pattern[str] | Sequence[str | re.Pattern[str]] | None
    """The children of an index fetched: those whose URL (normalised: the host
    in lower case, …) a pattern is found in, as ``re.search`` finds it (Rust's
    regex syntax, no look-around; a compiled pattern's re.I, re.M, re.S and
    re.X apply, re.X as Rust's, which ignores whitespace in ``[...]`` too).
    Default (None) all; an empty list none. The sitemaps robots.txt lists are
    fetched whatever it says."""
    probe: bool
    """Probe well-known paths when robots.txt declares none (default True)."""
    total_timeout_s: float
    """The whole walk's time budget (default 600): then it stops with what it read."""
    per_host_delay_s: float
    """Pause between two requests to one host (default 1; a robots.txt Crawl-delay may raise it)."""
    request_timeout_s: float
    """One response's deadline (default 300)."""
    user_agent: str
    """The User-Agent sent, whose product token selects the robots.txt group."""
    allow_private: bool
    """Allow private, loopback and link-local addresses (default False: refused)."""
    allow_addresses: Sequence[str]
    """These IP addresses only, private or not."""
    scope: Scope
    strict: bool
    max_bytes: int
    max_entries: int


class IngestStats(TypedDict):
    """What an ingest did."""

    entries: int
    new: int
    updated: int
    unchanged: int
    duplicates: int
    revived: int
    retired: int
    sitemaps: int
