"""`parse`, `iter_entries` and `iter_batches` against the sitemapd binary,
on every corpus file, and on inputs given every way Python can give them."""

from __future__ import annotations

import gzip
import io
import json
import math
import subprocess
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import sitemapd
from conftest import CORPUS, FIXTURES, corpus_files

DOCUMENTS = [
    p
    for kind in ("urlset", "sitemapindex", "text", "feed", "gzip")
    for p in corpus_files(kind)
]


def cli_events(binary: Path, path: Path, url: str | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """What `sitemapd parse` writes for `path`: its events and its summary."""
    command = [str(binary), "parse", str(path), "--diagnostics", "json", "--max-diagnostics-per-rule", "0"]
    if url:
        command += ["--url", url]
    run = subprocess.run(command, capture_output=True, check=False)
    events = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    diagnostics = [json.loads(line) for line in run.stderr.splitlines() if line.startswith(b"{")]
    return events, {"diagnostics": diagnostics}


def w3c(value: datetime | None) -> str | None:
    """A lastmod as the CLI writes it (RFC 3339 in UTC, fraction trimmed)."""
    if value is None:
        return None
    v = value.astimezone(timezone.utc)
    text = f"{v.year:04}-{v.month:02}-{v.day:02}T{v.hour:02}:{v.minute:02}:{v.second:02}"
    if v.microsecond:
        text += f".{v.microsecond:06}".rstrip("0")
    return text + "Z"


def row_as_cli(row: dict[str, Any]) -> dict[str, Any]:
    """A `urls` table row in the CLI's JSON shape (absent fields left out)."""
    out: dict[str, Any] = {"type": "url", "loc": row["loc"]}
    if row["lastmod"] is not None:
        out["lastmod"] = w3c(row["lastmod"])
        out["lastmod_precision"] = row["lastmod_precision"]
    if row["changefreq"] is not None:
        out["changefreq"] = row["changefreq"]
    if row["priority"] is not None:
        out["priority"] = row["priority"]
    if row["images"]:
        out["images"] = [{"loc": loc} for loc in row["images"]]
    if row["alternates"]:
        out["alternates"] = row["alternates"]
    return out


def cli_url_shape(event: dict[str, Any]) -> dict[str, Any]:
    """A CLI url event with what the table does not carry whole (videos,
    news: compared apart) left out, and sub-second lastmods trimmed to
    the microseconds a table holds."""
    event = {k: v for k, v in event.items() if k not in ("videos", "news")}
    if "lastmod" in event and "." in event["lastmod"]:
        head, frac = event["lastmod"][:-1].split(".")
        frac = frac[:6].rstrip("0")
        event["lastmod"] = f"{head}.{frac}Z" if frac else f"{head}Z"
    if "priority" in event:
        event["priority"] = float(event["priority"])
    return event


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_tables_hold_what_the_binary_writes(sitemapd_bin: Path, path: Path) -> None:
    events, _ = cli_events(sitemapd_bin, path, None)
    parsed = sitemapd.parse(path)
    urls = pa.table(parsed.urls).to_pylist()
    sitemaps = pa.table(parsed.sitemaps).to_pylist()
    cli_urls = [cli_url_shape(e) for e in events if e["type"] == "url"]
    cli_sitemaps = [e for e in events if e["type"] == "sitemap"]
    assert [row_as_cli(r) for r in urls] == cli_urls
    assert [
        {"loc": r["loc"], **({"lastmod": w3c(r["lastmod"]), "lastmod_precision": r["lastmod_precision"]} if r["lastmod"] else {})}
        for r in sitemaps
    ] == [{k: v for k, v in e.items() if k != "type"} for e in cli_sitemaps]
    assert parsed.summary.urls == len(urls)
    assert parsed.summary.sitemaps == len(sitemaps)
    # The diagnostics table counts what the summary counts.
    rules: dict[str, int] = {}
    for rule in pa.table(parsed.diagnostics).column("rule").to_pylist():
        rules[rule] = rules.get(rule, 0) + 1
    assert rules == parsed.summary.diagnostics


@pytest.mark.parametrize("path", DOCUMENTS[::7], ids=lambda p: p.name)
def test_iter_entries_and_batches_yield_the_table_rows(path: Path) -> None:
    table = pa.table(sitemapd.parse(path).urls)
    entries = [e for e in sitemapd.iter_entries(path) if isinstance(e, sitemapd.UrlEntry)]
    assert [e.loc for e in entries] == table.column("loc").to_pylist()
    assert [e.lastmod for e in entries] == table.column("lastmod").to_pylist()
    assert [e.priority for e in entries] == table.column("priority").to_pylist()
    reader = pa.RecordBatchReader.from_stream(sitemapd.iter_batches(path, rows=97))
    streamed = reader.read_all()
    assert streamed.equals(table.cast(streamed.schema)) or streamed.num_rows == table.num_rows == 0
    assert all(b.num_rows <= 97 for b in sitemapd.iter_batches(path, rows=97))


def test_every_way_of_giving_a_document_reads_the_same() -> None:
    path = CORPUS / "urlset" / "adobe__theblog__sitemap.xml"
    data = path.read_bytes()
    expected = pa.table(sitemapd.parse(path).urls)
    assert expected.num_rows > 10_000
    for src in (
        str(path),
        data,
        bytearray(data),
        memoryview(data),
        io.BytesIO(data),
        io.BytesIO(gzip.compress(data)),
        gzip.compress(gzip.compress(data)),
        open(path, "rb"),
    ):
        assert pa.table(sitemapd.parse(src).urls).equals(expected), type(src)


def test_the_contract_document_fills_every_column() -> None:
    parsed = sitemapd.parse(FIXTURES / "parse" / "contract.xml", url="http://www.example.com/sitemap.xml")
    rows = pa.table(parsed.urls).to_pylist()
    first, second = rows[0], rows[1]
    assert first["loc"] == "http://www.example.com/catalog?item=12&desc=vacation_hawaii"
    assert first["lastmod"] == datetime(2004, 12, 23, 18, 0, 15, tzinfo=timezone.utc)
    assert first["lastmod_precision"] == "second"
    assert first["changefreq"] == "weekly"
    assert first["priority"] == 0.3  # the decimal written, not float32's 0.30000001
    assert second["images"] == ["http://cdn.example.com/merger.jpg"]
    assert second["videos"][0]["title"] == "Merger"
    assert second["videos"][0]["duration"] == 600
    assert second["news"] == [
        {
            "title": "Companies A, B in Merger Talks",
            "publication_name": "The Example Times",
            "language": "en",
            "publication_date": datetime(2008, 12, 23, tzinfo=timezone.utc),
        }
    ]
    assert first["news"] == [] and first["videos"] == []
    assert second["alternates"] == [{"hreflang": "de", "href": "http://www.example.com/de/news/merger.html"}]
    entry = next(e for e in sitemapd.iter_entries(FIXTURES / "parse" / "contract.xml") if isinstance(e, sitemapd.UrlEntry) and e.videos)
    assert entry.news is not None and entry.news["title"] == "Companies A, B in Merger Talks"
    assert entry.alternates == [("de", "http://www.example.com/de/news/merger.html")]


@pytest.mark.parametrize("text", ["0", "0.0", "0.5", "0.8", "0.33", "0.123", "0.1234567", "1", "1.0", "0.05"])
def test_a_priority_is_the_decimal_written(text: str) -> None:
    doc = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://e.example/a</loc><priority>{text}</priority></url></urlset>'
    assert pa.table(sitemapd.parse(doc.encode()).urls).column("priority").to_pylist() == [float(text)]
    entry = next(iter(sitemapd.iter_entries(doc.encode())))
    assert isinstance(entry, sitemapd.UrlEntry) and entry.priority == float(text)


def test_absent_values_stay_null() -> None:
    doc = b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://e.example/a</loc></url></urlset>'
    row = pa.table(sitemapd.parse(doc).urls).to_pylist()[0]
    assert row["priority"] is None  # not the protocol's 0.5
    assert row["lastmod"] is None and row["changefreq"] is None
    entry = next(iter(sitemapd.iter_entries(doc)))
    assert isinstance(entry, sitemapd.UrlEntry)
    assert entry.priority is None and entry.lastmod is None


def test_a_bad_value_drops_the_value_and_says_why() -> None:
    doc = (
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<url><loc>https://e.example/a</loc><lastmod>yesterday</lastmod><priority>7</priority></url>"
        b"<url><loc>https://e.example/b</loc><lastmod>2024-02-30</lastmod></url></urlset>"
    )
    parsed = sitemapd.parse(doc)
    assert pa.table(parsed.urls).column("loc").to_pylist() == ["https://e.example/a", "https://e.example/b"]
    diagnostics = pa.table(parsed.diagnostics).to_pylist()
    assert {d["rule"] for d in diagnostics} >= {"X7"}
    assert all(d["line"] == 1 and d["column"] > 0 for d in diagnostics)
    found = [e for e in sitemapd.iter_entries(doc, diagnostics=True) if isinstance(e, sitemapd.Diagnostic)]
    assert [(d.rule, d.line, d.column) for d in found] == [(d["rule"], d["line"], d["column"]) for d in diagnostics]


def test_a_broken_document_keeps_what_came_before_the_break() -> None:
    data = (CORPUS / "urlset" / "adobe__theblog__sitemap.xml").read_bytes()
    whole = sitemapd.parse(data).summary.urls
    cut = sitemapd.parse(data[: len(data) // 2])
    assert 0 < cut.summary.urls < whole
    assert not cut.summary.complete
    truncated_gzip = gzip.compress(data)[:-5000]
    partial = sitemapd.parse(truncated_gzip)
    assert 0 < partial.summary.urls < whole and not partial.summary.complete


def test_limits_stop_reading_and_say_so() -> None:
    path = CORPUS / "urlset" / "adobe__theblog__sitemap.xml"
    limited = sitemapd.parse(path, max_entries=10)
    assert limited.summary.urls == 10 and not limited.summary.complete
    assert "C4" in limited.summary.diagnostics
    by_bytes = sitemapd.parse(path, max_bytes=4096)
    assert not by_bytes.summary.complete and "C3" in by_bytes.summary.diagnostics
    bomb = gzip.compress(b"<urlset>" + b" " * (64 << 20))
    assert sitemapd.parse(bomb, max_bytes=1 << 20).summary.diagnostics.get("C3") == 1


@pytest.mark.parametrize("garbage", [b"", b"\x00" * 100, b"\x1f\x8b\x08garbage", b"<urlset><url><loc>", "é".encode("utf-16")])
def test_garbage_is_no_sitemap_and_no_exception(garbage: bytes) -> None:
    parsed = sitemapd.parse(garbage)
    assert parsed.urls.num_rows == 0
    assert list(sitemapd.iter_entries(garbage)) == []


def test_bad_arguments_are_python_errors() -> None:
    with pytest.raises(TypeError, match="src must be"):
        sitemapd.parse(12)  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError):
        sitemapd.parse("/nonexistent/sitemap.xml")
    with pytest.raises(ValueError, match="scope"):
        sitemapd.parse(b"", scope="everywhere")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="url"):
        sitemapd.parse(b"", url="not a url")
    with pytest.raises(ValueError):
        sitemapd.iter_batches(b"", rows=0)
    with pytest.raises(TypeError, match="binary mode"):
        sitemapd.parse(io.StringIO("text, not bytes"))  # type: ignore[arg-type]


def test_a_file_that_reads_more_than_asked_ends_the_document() -> None:
    class Overflowing(io.RawIOBase):
        def read(self, n: int = -1) -> bytes:
            return b"<urlset>" + b" " * max(n, 0)

    parsed = sitemapd.parse(Overflowing())
    assert not parsed.summary.complete
    assert parsed.urls.num_rows == 0
    assert any("returned" in m for m in pa.table(parsed.diagnostics).column("message").to_pylist())


def test_the_scope_rule_follows_the_url_given() -> None:
    doc = urlset_bytes("https://e.example/blog/a", "https://e.example/shop/b", "https://other.example/c")
    directory = sitemapd.parse(doc, url="https://e.example/blog/sitemap.xml")
    assert pa.table(directory.urls).column("loc").to_pylist() == ["https://e.example/blog/a"]
    assert directory.summary.out_of_scope
    host = sitemapd.parse(doc, url="https://e.example/blog/sitemap.xml", scope="host")
    assert host.urls.num_rows == 2
    assert sitemapd.parse(doc, url="https://e.example/blog/sitemap.xml", scope="none").urls.num_rows == 3


def urlset_bytes(*locs: str) -> bytes:
    items = "".join(f"<url><loc>{loc}</loc></url>" for loc in locs)
    return f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{items}</urlset>'.encode()


def test_tables_go_to_polars_and_pandas_with_their_types() -> None:
    import pandas as pd
    import polars as pl

    parsed = sitemapd.parse(FIXTURES / "parse" / "contract.xml")
    frame = parsed.urls.to_polars()
    assert isinstance(frame, pl.DataFrame)
    assert frame.schema["lastmod"] == pl.Datetime("us", "UTC")
    assert frame.schema["priority"] == pl.Float64
    assert pl.from_arrow(parsed.urls.to_pyarrow()).equals(frame)  # type: ignore[union-attr]
    df = parsed.urls.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert str(df["lastmod"].dtype) == "datetime64[us, UTC]"
    assert df["priority"].isna().sum() == sum(1 for p in frame["priority"] if p is None)
    assert len(parsed.urls) == frame.height == len(df)
    assert math.isclose(frame["priority"].drop_nulls()[0], 0.3)


def test_parsing_releases_the_gil() -> None:
    """While another thread parses, this one keeps running: the longest
    pause between its steps is a small part of the parse, where a parse
    holding the GIL would pause it for the whole parse."""
    doc = urlset_bytes(*(f"https://e.example/page/{i}" for i in range(200_000)))
    span: list[float] = []

    def work() -> None:
        span.append(time.perf_counter())
        sitemapd.parse(doc)
        span.append(time.perf_counter())

    steps: list[float] = []
    thread = threading.Thread(target=work)
    thread.start()
    while thread.is_alive():
        steps.append(time.perf_counter())
    thread.join()
    start, end = span
    inside = [t for t in steps if start <= t <= end]
    assert len(inside) > 2, "no step ran while the parse did"
    longest = max(b - a for a, b in zip(inside, inside[1:]))
    assert longest < (end - start) / 4, (longest, end - start)
