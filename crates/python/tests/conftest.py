"""Fixtures of the Python package's tests: the repository's own fixture
files, the sitemapd binary (for differential checks), and HTTP servers on
127.0.0.1 only."""

from __future__ import annotations

import http.server
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "fixtures"
CORPUS = FIXTURES / "corpus"


def corpus_files(kind: str) -> list[Path]:
    """The corpus files of one kind (urlset, sitemapindex, text, feed,
    gzip, robots), in name order."""
    files = sorted(p for p in (CORPUS / kind).iterdir() if p.is_file())
    assert files, f"no corpus files under {CORPUS / kind}"
    return files


@pytest.fixture(scope="session")
def sitemapd_bin() -> Path:
    """The sitemapd binary that `cargo test` built, for comparisons."""
    given = os.environ.get("SITEMAPD_BIN")
    candidates = [Path(given)] if given else []
    candidates += [REPO / "target" / "debug" / "sitemapd", REPO / "target" / "release" / "sitemapd"]
    for path in candidates:
        if path.is_file():
            return path
    found = shutil.which("sitemapd")
    if found:
        return Path(found)
    pytest.fail(
        "the sitemapd binary is missing: build it with `cargo build` "
        "(or set SITEMAPD_BIN), or run scripts/test.sh"
    )


Reply = tuple[int, dict[str, str], bytes] | Callable[[], tuple[int, dict[str, str], bytes]]


@dataclass
class Site:
    """A web site on 127.0.0.1: routes from path to reply, and the paths
    requested, in order."""

    port: int
    routes: dict[str, Reply] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    """The paths requested, in order."""
    conditional: list[str] = field(default_factory=list)
    """The paths of the requests with If-None-Match or If-Modified-Since."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def serve(self, path: str, body: bytes | str, status: int = 200, **headers: str) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.routes[path] = (status, dict(headers), data)


def _start(state: Site) -> http.server.ThreadingHTTPServer:
    """Serves `state` on 127.0.0.1 (its port set to the one bound)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            with state.lock:
                state.requests.append(self.path)
            reply = state.routes.get(self.path)
            if reply is HANG:
                time.sleep(3600)
                return
            if callable(reply):
                reply = reply()
            status, headers, body = reply if reply else (404, {}, b"not found")
            if self.headers.get("If-None-Match") or self.headers.get("If-Modified-Since"):
                with state.lock:
                    state.conditional.append(self.path)
            etag = headers.get("ETag")
            if etag is not None and self.headers.get("If-None-Match") == etag:
                status, body = 304, b""
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key.replace("_", "-"), value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def site() -> Iterator[Site]:
    """A loopback site; a path it has no route for answers 404, a route
    whose reply is `HANG` never answers, a GET whose `If-None-Match` is the
    route's `ETag` gets a 304, and the path of every conditional GET is
    noted in `conditional`."""
    state = Site(port=0)
    server = _start(state)
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def sites() -> Iterator[Callable[[int], list[Site]]]:
    """Makes `n` loopback sites (hosts: one port each), as `site` is."""
    servers: list[http.server.ThreadingHTTPServer] = []

    def make(n: int) -> list[Site]:
        made = [Site(port=0) for _ in range(n)]
        servers.extend(_start(state) for state in made)
        return made

    yield make
    for server in servers:
        server.shutdown()
        server.server_close()


def _hang() -> tuple[int, dict[str, str], bytes]:
    raise AssertionError("never called")


HANG: Reply = _hang
"""A reply that never comes: the request hangs."""


def urlset(*locs: str, lastmod: str | None = None) -> str:
    """A urlset of `locs`, each with `lastmod` when given."""
    items = "".join(
        f"<url><loc>{loc}</loc>" + (f"<lastmod>{lastmod}</lastmod>" if lastmod else "") + "</url>"
        for loc in locs
    )
    return f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{items}</urlset>'


def sitemapindex(*locs: str) -> str:
    items = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    return f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{items}</sitemapindex>'


# Loopback servers are private addresses: the guard refuses them unless
# told. These keywords allow 127.0.0.1 and nothing else.
LOOPBACK = {"allow_addresses": ["127.0.0.1"], "per_host_delay_s": 0.0}
