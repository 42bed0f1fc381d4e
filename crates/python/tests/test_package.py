"""The package as installed from its wheel: where it lives, what it
exports, and that it imports nothing it does not need."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import sitemapd
from conftest import CORPUS, REPO


def test_the_installed_wheel_is_what_is_tested() -> None:
    assert "site-packages" in Path(sitemapd.__file__).parts
    assert (Path(sitemapd.__file__).parent / "py.typed").is_file()
    assert (Path(sitemapd.__file__).parent / "_native.pyi").is_file()


def test_every_exported_name_exists() -> None:
    for name in sitemapd.__all__:
        assert hasattr(sitemapd, name), name
    assert sitemapd.StoreError.__mro__[1] is sitemapd.SitemapdError


def test_importing_loads_no_dataframe_library() -> None:
    code = "import sys, sitemapd; print(sorted(m for m in ('pyarrow', 'pandas', 'polars', 'numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_examples_run() -> None:
    sitemap = str(CORPUS / "urlset" / "adobe__theblog__sitemap.xml")
    examples = REPO / "crates" / "python" / "examples"
    table = subprocess.run(
        [sys.executable, str(examples / "parse_table.py"), sitemap], capture_output=True, text=True, check=True
    )
    assert "URLs, " in table.stdout and "year" in table.stdout
    crawl = subprocess.run(
        [sys.executable, str(examples / "crawl_queue.py"), sitemap], capture_output=True, text=True, check=True
    )
    assert "'changed': 300" in crawl.stdout
