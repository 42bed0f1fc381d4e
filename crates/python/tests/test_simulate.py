"""`simulate()` against `sitemapd simulate`: the same settings give the
same tables."""

from __future__ import annotations

import csv
import math
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

import sitemapd

CONFIG = {
    "days": 4.0,
    "world": {"pages": 300, "hosts": 6},
    "crawl": {"budget": 120.0},
}
TOML = """
days = 4.0
[world]
pages = 300
hosts = 6
[crawl]
budget = 120.0
"""
POLICIES = ["lastmod", "adaptive", "oracle"]
SEEDS = [1, 2]


def number(text: str) -> float | None:
    return float(text) if text else None


def same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return a == b or (math.isnan(a) and math.isnan(b))


def test_tables_are_the_clis(sitemapd_bin: Path, tmp_path: Path) -> None:
    (tmp_path / "sim.toml").write_text(TOML)
    out = tmp_path / "out"
    subprocess.run(
        [str(sitemapd_bin), "simulate", "--config", str(tmp_path / "sim.toml"), "--scenario", "noisy",
         "--policies", ",".join(POLICIES), "--seeds", str(len(SEEDS)), "--first-seed", str(SEEDS[0]),
         "--out", str(out)],
        check=True,
        capture_output=True,
    )
    result = sitemapd.simulate(CONFIG, policies=POLICIES, seeds=SEEDS, scenario="noisy")
    summary = pa.table(result.summary).to_pylist()
    with open(out / "summary.csv") as f:
        cli_summary = list(csv.DictReader(f))
    assert [(r["policy"], r["metric"]) for r in summary] == [(r["policy"], r["metric"]) for r in cli_summary]
    for ours, theirs in zip(summary, cli_summary):
        if ours["metric"] == "wall_seconds":
            continue  # the one figure that is the machine's, not the simulation's
        for column in ("mean", "ci95", "sd", "min", "max"):
            assert same(ours[column], number(theirs[column])), (ours, theirs)
        assert ours["seeds"] == int(theirs["seeds"])
    series = pa.table(result.series).to_pylist()
    with open(out / "metrics.csv") as f:
        cli_series = list(csv.DictReader(f))
    assert len(series) == len(cli_series) > 0
    for ours, theirs in zip(series, cli_series):
        assert list(ours) == list(theirs)
        for key, value in theirs.items():
            expected: object = value if key == "policy" else number(value)
            assert same(ours[key], expected) if isinstance(expected, float) or expected is None else ours[key] == expected, key
    estimators = pa.table(result.estimators)
    assert estimators.num_rows > 0
    assert set(estimators.column("policy").to_pylist()) <= set(POLICIES)


def test_bad_settings_are_value_errors() -> None:
    with pytest.raises(ValueError, match="config"):
        sitemapd.simulate({"world": {"pagez": 3}})
    with pytest.raises(ValueError, match="config"):
        sitemapd.simulate({"days": -1.0})
    with pytest.raises(ValueError, match="unknown policy"):
        sitemapd.simulate(policies=["best"])
    with pytest.raises(ValueError, match="scenario"):
        sitemapd.simulate(scenario="optimistic")
