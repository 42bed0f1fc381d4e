"""The Python package against its peers, side by side in one run, each on
the same bytes: medians of 5, the cases interleaved, every case in a process of its own (its
seconds and peak RSS measured inside it; "added" is the peak over the
process with sitemapd imported). A case on the 50k document runs once to
warm up and then three times in its process (the median); the Rust binary
is a fresh process each time, as a command is. The Scrapy spiders and
ultimate-sitemap-parser's walk of the 2.5M-URL site run 3 times and once.
Two parses at once, in threads and in processes, are measured in
interleaved rounds. Prints a Markdown table; asserts nothing.

    scripts/python-bench.sh            # builds the release wheel, installs the peers, runs this
    scripts/python-bench.sh --quick    # the in-memory cases only (no 2.5M-URL site)

Inputs are generated here: a 50,000-URL urlset of the shape real sitemaps
have (the parser benches' shape), a 47 MB urlset, a gzip bomb (1 GiB of
entries inflated from about 1 MB), and a loopback site of 50 sitemaps x 50,000 URLs served
by a separate ``python -m http.server`` process.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve()
REPEAT = 5


def urlset(n: int, host: str = "https://www.example.com", part: int = 0) -> bytes:
    rows = [
        f"  <url>\n    <loc>{host}/catalog/part-{part}/section-{i % 97}/product-{i}.html</loc>\n"
        f"    <lastmod>2024-{i % 12 + 1:02}-{i % 28 + 1:02}T10:20:30+00:00</lastmod>\n"
        f"    <changefreq>weekly</changefreq>\n    <priority>0.{i % 10}</priority>\n  </url>\n"
        for i in range(n)
    ]
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        + "".join(rows)
        + "</urlset>\n"
    ).encode()


def rss_mib() -> float:
    """This process's peak RSS since `reset_peak` (VmHWM)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak() -> None:
    """Forgets the peak RSS so far: a child inherits its parent's (the
    driver's) high-water mark across fork and exec."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


# --- the cases, each run in a process of its own: `peers.py --case NAME DIR`


def case(name: str, work: Path) -> dict[str, Any]:
    reset_peak()
    if name != "import":
        import sitemapd  # noqa: F401  (the baseline of "added" holds the module)

    # Only the cases of the 50k document read it: it would raise the others' baseline.
    small = (work / "50k.xml").read_bytes() if name in ON_50K else b""
    base = rss_mib()
    runs = []
    # The in-memory cases of the 50k document: one run to warm up, then the
    # median of three (a first call pays for page faults and lazy set-up).
    for _ in range(4 if name in ON_50K and name != "rust_cli" else 1):
        started = time.perf_counter()
        count = CASES[name](small, work)
        runs.append(time.perf_counter() - started)
    seconds = statistics.median(runs[1:] or runs)
    return {"seconds": seconds, "count": count, "rss_mib": rss_mib(), "added_mib": rss_mib() - base}


def c_sitemapd_parse(data: bytes, work: Path) -> int:
    import sitemapd

    return sitemapd.parse(data).urls.num_rows


def c_sitemapd_iter_entries(data: bytes, work: Path) -> int:
    import sitemapd

    return sum(1 for e in sitemapd.iter_entries(data) if e.loc)


def c_usp(data: bytes, work: Path) -> int:
    from usp.tree import sitemap_from_str

    return sum(1 for _ in sitemap_from_str(data.decode()).all_pages())


def c_advertools(data: bytes, work: Path) -> int:
    import logging

    import advertools

    logging.disable(logging.CRITICAL)
    return len(advertools.sitemap_to_df((work / "50k.xml").as_uri()))


def c_lxml_iterparse(data: bytes, work: Path) -> int:
    from lxml import etree

    ns = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
    rows = []
    for _, el in etree.iterparse(io.BytesIO(data), tag=f"{ns}url"):
        rows.append(
            (
                el.findtext(f"{ns}loc"),
                el.findtext(f"{ns}lastmod"),
                el.findtext(f"{ns}changefreq"),
                el.findtext(f"{ns}priority"),
            )
        )
        el.clear()
    return len(rows)


def c_scrapy_sitemap(data: bytes, work: Path) -> int:
    from scrapy.utils.sitemap import Sitemap

    return sum(1 for d in Sitemap(data) if d["loc"])


def c_rust_cli(data: bytes, work: Path) -> int:
    binary = os.environ["SITEMAPD_BIN"]
    with open(os.devnull, "wb") as null:
        subprocess.run([binary, "parse", str(work / "50k.xml")], stdout=null, stderr=subprocess.DEVNULL, check=True)
    return 50_000


def c_iter_47mb(data: bytes, work: Path) -> int:
    import sitemapd

    return sum(1 for _ in sitemapd.iter_entries(work / "47mb.xml", max_bytes=64 << 20, max_entries=1 << 20))


def c_iter_bomb(data: bytes, work: Path) -> int:
    import sitemapd

    entries = sitemapd.iter_entries(work / "bomb.gz", max_bytes=2 << 30, max_entries=1 << 30)
    for _ in entries:
        pass
    return entries.summary.bytes


def c_import(data: bytes, work: Path) -> int:
    import sitemapd  # noqa: F401

    return 1


def site_url(work: Path) -> str:
    return (work / "site.url").read_text().strip()


def c_discover_table(data: bytes, work: Path) -> int:
    import sitemapd

    found = sitemapd.discover(site_url(work), allow_addresses=["127.0.0.1"], per_host_delay_s=0.0, probe=False)
    return found.urls.num_rows


def c_discover_stream(data: bytes, work: Path) -> int:
    import sitemapd

    return sum(1 for _ in sitemapd.iter_discover(site_url(work), allow_addresses=["127.0.0.1"], per_host_delay_s=0.0))


def c_usp_site(data: bytes, work: Path) -> int:
    import logging

    from usp.tree import sitemap_tree_for_homepage

    logging.disable(logging.CRITICAL)
    return sum(1 for _ in sitemap_tree_for_homepage(site_url(work)).all_pages())


SPIDER = """
{import_line}

COUNT = [0]


class Count(SitemapSpider):
    name = "count"
    sitemap_urls = ["{url}robots.txt"]

    def sitemap_filter(self, entries):
        # The index's children are followed; pages are counted, not fetched.
        for entry in entries:
            if entry["loc"].endswith(".xml"):
                yield entry
            else:
                COUNT[0] += 1
"""


def _spider(work: Path, import_line: str) -> int:
    from scrapy.crawler import CrawlerProcess

    namespace: dict[str, Any] = {}
    exec(SPIDER.format(import_line=import_line, url=site_url(work)), namespace)
    process = CrawlerProcess({"LOG_LEVEL": "ERROR", "TELNETCONSOLE_ENABLED": False, "ROBOTSTXT_OBEY": False,
                              "DOWNLOAD_MAXSIZE": 0, "DOWNLOAD_WARNSIZE": 0})
    process.crawl(namespace["Count"])
    process.start()
    return int(namespace["COUNT"][0])


def c_spider_scrapy(data: bytes, work: Path) -> int:
    return _spider(work, "from scrapy.spiders import SitemapSpider")


def c_spider_sitemapd(data: bytes, work: Path) -> int:
    return _spider(work, "from sitemapd.scrapy import SitemapSpider")


def c_simulate_python(data: bytes, work: Path) -> int:
    import sitemapd

    result = sitemapd.simulate({"days": 10.0, "world": {"pages": 2000, "hosts": 20}}, policies=["lastmod", "adaptive"], seeds=[1, 2])
    return result.series.num_rows


def c_simulate_cli(data: bytes, work: Path) -> int:
    config = work / "sim.toml"
    config.write_text('days = 10.0\npolicies = ["lastmod", "adaptive"]\nseeds = 2\n[world]\npages = 2000\nhosts = 20\n')
    subprocess.run([os.environ["SITEMAPD_BIN"], "simulate", "--config", str(config), "--out", str(work / "sim-out")],
                   check=True, capture_output=True)
    return 1


# --- two parses at once against two in a row: in a pool of two threads,
# and in two processes (what the machine's two cores give with no shared
# interpreter at all). The two are measured in interleaved rounds, as this
# machine's speed drifts from one second to the next.

ROUNDS = 25


def _worker(data: bytes, conn: Any) -> None:
    import sitemapd

    while conn.recv():
        sitemapd.parse(data)
        conn.send(True)


def parallel_ratios(data: bytes) -> dict[str, list[float]]:
    """Per round, the time of two parses at once over the time of two in a
    row: with threads, and with processes."""
    import multiprocessing
    from concurrent.futures import ThreadPoolExecutor

    import sitemapd

    def one(_: object = None) -> None:
        sitemapd.parse(data)

    context = multiprocessing.get_context("fork")
    pipes = [context.Pipe() for _ in range(2)]
    workers = [context.Process(target=_worker, args=(data, child)) for _, child in pipes]
    for w in workers:
        w.start()
    ends = [parent for parent, _ in pipes]

    def processes_at_once() -> None:
        for end in ends:
            end.send(True)
        for end in ends:
            end.recv()

    def processes_in_a_row() -> None:
        for _ in range(2):
            ends[0].send(True)
            ends[0].recv()

    def timed(fn: Callable[[], object]) -> float:
        started = time.perf_counter()
        fn()
        return time.perf_counter() - started

    ratios: dict[str, list[float]] = {"threads": [], "processes": []}
    try:
        with ThreadPoolExecutor(2) as pool:
            for i in range(ROUNDS + 2):
                threads = timed(lambda: list(pool.map(one, range(2)))) / timed(lambda: (one(), one()))
                procs = timed(processes_at_once) / timed(processes_in_a_row)
                if i >= 2:  # two rounds to warm up
                    ratios["threads"].append(threads)
                    ratios["processes"].append(procs)
    finally:
        for end in ends:
            end.send(False)
        for w in workers:
            w.join()
    return ratios


CASES: dict[str, Callable[[bytes, Path], int]] = {
    name.removeprefix("c_"): fn for name, fn in globals().items() if name.startswith("c_") and callable(fn)
}


ON_50K = {
    "sitemapd_parse", "sitemapd_iter_entries",
    "usp", "advertools", "lxml_iterparse", "scrapy_sitemap", "rust_cli",
}


# --- the driver


def run(names: tuple[str, ...], work: Path, repeat: int = REPEAT) -> dict[str, dict[str, float]]:
    """Medians of `repeat` runs of each case, the cases interleaved (this
    machine's speed drifts: a peer measured minutes later would compare
    against another machine)."""
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for _ in range(repeat):
        for name in names:
            out = subprocess.run([sys.executable, str(HERE), "--case", name, str(work)], capture_output=True, text=True)
            if out.returncode != 0:
                raise SystemExit(f"{name} failed:\n{out.stderr[-2000:]}")
            runs[name].append(json.loads(out.stdout.splitlines()[-1]))
    return {
        name: {key: statistics.median(r[key] for r in results) for key in ("seconds", "count", "rss_mib", "added_mib")}
        for name, results in runs.items()
    }


def serve(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", str(directory)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server.stdout is not None
    line = server.stdout.readline().decode()  # "Serving HTTP on 127.0.0.1 port N ..."
    port = int(line.split(" port ")[1].split()[0])
    return server, f"http://127.0.0.1:{port}/"


def main() -> None:
    if sys.argv[1:2] == ["--case"]:
        print(json.dumps(case(sys.argv[2], Path(sys.argv[3]))))
        return
    if sys.argv[1:2] == ["--parallel"]:
        print(json.dumps(parallel_ratios((Path(sys.argv[2]) / "50k.xml").read_bytes())))
        return
    quick = "--quick" in sys.argv
    with tempfile.TemporaryDirectory(prefix="sitemapd-peers-") as tmp:
        work = Path(tmp)
        (work / "50k.xml").write_bytes(urlset(50_000))
        rows: list[tuple[str, str]] = []
        size = (work / "50k.xml").stat().st_size / 1e6
        r = run((
            "sitemapd_parse", "usp", "advertools", "lxml_iterparse", "rust_cli", "sitemapd_iter_entries",
            "scrapy_sitemap", "import", "simulate_python", "simulate_cli"), work)
        for name in ("sitemapd_parse", "usp", "advertools", "lxml_iterparse", "rust_cli", "sitemapd_iter_entries", "scrapy_sitemap"):
            assert r[name]["count"] == 50_000, (name, r[name]["count"])
        ours = r["sitemapd_parse"]["seconds"]
        rows.append(("parse 50k urlset (" + f"{size:.1f} MB" + "): `parse().urls`", f"{ours * 1000:.1f} ms, {size / ours:.0f} MB/s"))
        for peer, label in (("usp", "ultimate-sitemap-parser `sitemap_from_str` + `all_pages()`"), ("advertools", "advertools `sitemap_to_df` (file)"), ("lxml_iterparse", "lxml `iterparse`, 4 fields per URL")):
            rows.append((f"  against {label}", f"{r[peer]['seconds'] * 1000:.0f} ms: **{r[peer]['seconds'] / ours:.1f}×**"))
        rows.append(("  against `sitemapd parse FILE > /dev/null` (the Rust binary, whole process)", f"{r['rust_cli']['seconds'] * 1000:.0f} ms: **{r['rust_cli']['seconds'] / ours:.2f}×** the binary's rate"))
        it = r["sitemapd_iter_entries"]["seconds"]
        rows.append(("`iter_entries` against Scrapy's `Sitemap`", f"{it * 1000:.0f} ms against {r['scrapy_sitemap']['seconds'] * 1000:.0f} ms: **{r['scrapy_sitemap']['seconds'] / it:.1f}×**"))
        out = subprocess.run([sys.executable, str(HERE), "--parallel", str(work)], capture_output=True, text=True, check=True)
        ratios = json.loads(out.stdout.splitlines()[-1])
        for kind, label in (("threads", "two threads (a pool of two), one parse each, against two parses in a row"), ("processes", "  the machine's own ceiling: two processes, one parse each, against two in a row")):
            values = sorted(ratios[kind])
            rows.append((f"{label} ({ROUNDS} interleaved rounds)", f"**{statistics.median(values):.2f}×** the time (quartiles {values[len(values) // 4]:.2f}-{values[3 * len(values) // 4]:.2f})"))
        per_round = statistics.median(t / p for t, p in zip(ratios["threads"], ratios["processes"]))
        rows.append(("  threads over processes, round by round (median)", f"**{per_round:.2f}**"))
        rows.append(("`import sitemapd`", f"{r['import']['seconds'] * 1000:.1f} ms"))
        rows.append(("`simulate()` against `sitemapd simulate` (2 policies × 2 seeds, 2,000 pages, 10 days)", f"{r['simulate_python']['seconds']:.2f} s against {r['simulate_cli']['seconds']:.2f} s: **{r['simulate_cli']['seconds'] / r['simulate_python']['seconds']:.2f}×** its rate"))
        with open(work / "47mb.xml", "wb") as f:
            head = urlset(0)[: -len(b"</urlset>\n")]
            f.write(head)
            written, part = len(head), 0
            while written < 47_000_000:
                chunk = urlset(5_000, part=part)
                body = chunk[chunk.index(b"  <url>") : chunk.rindex(b"</urlset>")]
                f.write(body)
                written += len(body)
                part += 1
            f.write(b"</urlset>\n")
        with gzip.open(work / "bomb.gz", "wb", compresslevel=9) as f:
            f.write(b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">')
            entry = b"<url><loc>https://www.example.com/same</loc></url>"
            block = entry * ((1 << 20) // len(entry))
            for _ in range(1024):
                f.write(block)
        for name, label in (("iter_47mb", f"`iter_entries` over a {os.path.getsize(work / '47mb.xml') / 1e6:.0f} MB urlset"), ("iter_bomb", "`iter_entries` over a gzip bomb (1 GiB inflated)")):
            m = run((name,), work)[name]
            rows.append((label, f"+{m['added_mib']:.1f} MiB RSS ({m['rss_mib']:.0f} MiB peak), {m['seconds']:.2f} s, {m['count']:,.0f} {'entries' if name == 'iter_47mb' else 'bytes read'}"))
        if not quick:
            site = work / "site"
            site.mkdir()
            server, url = serve(site)
            try:
                (work / "site.url").write_text(url)
                index = ['<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
                for part in range(50):
                    (site / f"sitemap-{part}.xml").write_bytes(urlset(50_000, host=url.rstrip("/"), part=part))
                    index.append(f"<sitemap><loc>{url}sitemap-{part}.xml</loc></sitemap>")
                index.append("</sitemapindex>\n")
                (site / "index.xml").write_text("".join(index))
                (site / "robots.txt").write_text(f"User-agent: *\nSitemap: {url}index.xml\n")
                walked = run(("discover_table", "discover_stream"), work)
                table, stream = walked["discover_table"], walked["discover_stream"]
                rows.append(("`discover()` of 50 × 50,000 URLs (loopback), the full table", f"{table['seconds']:.1f} s, {table['count']:,.0f} URLs, {table['rss_mib']:.0f} MiB peak RSS"))
                rows.append(("`iter_discover()` of the same site", f"{stream['seconds']:.1f} s, {stream['rss_mib']:.0f} MiB peak RSS"))
                usp_site = run(("usp_site",), work, repeat=1)["usp_site"]
                spiders = run(("spider_scrapy", "spider_sitemapd"), work, repeat=3)
                spider_scrapy, spider_ours = spiders["spider_scrapy"], spiders["spider_sitemapd"]
                rows.append(("  against ultimate-sitemap-parser's `sitemap_tree_for_homepage` (one run)", f"{usp_site['seconds']:.1f} s, {usp_site['rss_mib']:.0f} MiB: **{usp_site['seconds'] / table['seconds']:.1f}×**"))
                rows.append(("`sitemapd.scrapy.SitemapSpider` against Scrapy's, same site, entries counted in `sitemap_filter` (medians of 3)", f"{spider_ours['seconds']:.1f} s, {spider_ours['rss_mib']:.0f} MiB, {spider_ours['count']:,.0f} entries against {spider_scrapy['seconds']:.1f} s, {spider_scrapy['rss_mib']:.0f} MiB, {spider_scrapy['count']:,.0f}: **{spider_scrapy['seconds'] / spider_ours['seconds']:.1f}×**"))
            finally:
                server.terminate()
        print("| case | figure |\n|---|---|")
        for label, figure in rows:
            print(f"| {label} | {figure} |")


if __name__ == "__main__":
    main()
