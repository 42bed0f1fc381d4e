#!/usr/bin/env bash
# Crawl on change, measured: every scenario of `sitemapd simulate`
# on the default world (10,000 pages, 100 hosts, 30 days), 5 seeds, every
# policy and the oracle at the default budget (2,000 fetches a day), then
# lastmod, adaptive and the oracle at a scarce (500) and a plentiful (10,000)
# budget. Prints one markdown table row per scenario, policy and budget:
# freshness (mean ± 95% CI over the seeds), fetches a day, wasted share and
# change recall, each run's folder kept under OUT.
#
#   scripts/scenario-table.sh [OUT] [SEEDS]     default: scenario-table, 5
#
# Not part of CI: over an hour on a 2-core machine (estimated from runs of each
# part); most of it is the liar and turncoat worlds, whose every sitemap read
# re-ingests every entry.
set -euo pipefail
out="${1:-scenario-table}"
seeds="${2:-5}"
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=target/release/sitemapd
scenarios="truthful day-precision noisy liar silent mixed turncoat"
mkdir -p "$out"
for s in $scenarios; do
    "$bin" simulate --scenario "$s" --seeds "$seeds" --out "$out/$s" > "$out/$s.log" 2>&1
done
for b in 500 10000; do
    for s in $scenarios; do
        "$bin" simulate --scenario "$s" --seeds "$seeds" --budget "$b" \
            --policies lastmod,adaptive,oracle --out "$out/b$b-$s" > "$out/b$b-$s.log" 2>&1
    done
done
echo "| scenario | budget/day | policy | freshness | fetches/day | wasted share | change recall |"
echo "|---|---|---|---|---|---|---|"
row() { # folder scenario budget
    awk -F, -v scen="$2" -v budget="$3" '
        NR > 1 { v[$1, $2] = $3; ci[$1, $2] = $4; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
        END {
            for (i = 1; i <= n; i++) {
                p = order[i]
                printf "| %s | %s | %s | %.4f ± %.4f | %.0f | %.3f | %.3f |\n", scen, budget, p,
                    v[p, "freshness"], ci[p, "freshness"], v[p, "fetches_per_day"],
                    v[p, "wasted_share"], v[p, "change_recall"]
            }
        }' "$1/summary.csv"
}
for s in $scenarios; do row "$out/$s" "$s" 2000; done
for b in 500 10000; do
    for s in $scenarios; do row "$out/b$b-$s" "$s" "$b"; done
done
