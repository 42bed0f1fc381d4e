#!/usr/bin/env bash
# Soak: the daemon follows a loopback fixture of SITES sites whose sitemaps
# change every minute (ETag/304 when not), while two crawler workers lease
# and complete, for MINUTES minutes. Prints a row every 30 s (RSS, disk,
# active URLs, queue depth, leases, completions, errors, sitemap fetches by
# status), then RSS at 5 min / end / peak and its slope over the second
# half, worker errors, lease and complete latency percentiles, and the
# store's consistency (`sitemapd stats --check`) after a clean stop.
#
#   scripts/soak.sh [MINUTES] [SITES]     default: 30 minutes, 200 sites
#
# Not part of CI. Output also goes to soak-<date>.log in the current folder.
# Exits non-zero when the soak fails: the daemon exited during it, or the
# store is INCONSISTENT after the stop (or the bench did not build).
set -euo pipefail
minutes="${1:-30}"
sites="${2:-200}"
cd "$(dirname "$0")/.."
log="soak-$(date +%Y%m%d-%H%M%S).log"
status=0
cargo bench --bench daemon_api -- --soak-minutes "$minutes" --sites "$sites" 2>&1 | tee "$log" || status=$?
echo "log: $log"
if [ "$status" -ne 0 ]; then
    echo "soak FAILED (exit $status)" >&2
fi
exit "$status"
