#!/bin/bash
# The crawler example end to end, on loopback only:
#   1. a small site (python3 -m http.server on 127.0.0.1) with robots.txt -> sitemap.xml of 5 URLs:
#      3 pages (200), a directory without its slash (http.server answers 301 to /old/) and a missing page (404);
#   2. `sitemapd daemon` on a temporary store, following that site, with the URLFrontier service on 127.0.0.1;
#   3. crawler.py, twice: a first pass that reports every URL due again at once (--refetch-secs 0), then,
#      after one page is edited, a second pass with the defaults (due again in a day);
#   4. what sitemapd recorded for each URL (its HTTP API), then everything is stopped.
# Binary: $SITEMAPD, else target/debug/sitemapd of this checkout (build it with `cargo build`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${SITEMAPD:-$here/../../../target/debug/sitemapd}
[ -x "$bin" ] || { echo "no sitemapd binary at $bin (cargo build, or set SITEMAPD)" >&2; exit 1; }
[ -f "$here/urlfrontier_pb2.py" ] || "$here/generate.sh"

tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
# A token exercises the bearer path (on loopback the daemon would also run without one).
export SITEMAPD_TOKEN=demo-token-0123456789abcdef

# 1. The site.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
site="http://127.0.0.1:$port"
mkdir -p "$tmp/site/old"
for page in index a b old/index; do echo "<html><body>$page, version 1</body></html>" > "$tmp/site/$page.html"; done
printf 'User-agent: *\nAllow: /\nSitemap: %s/sitemap.xml\n' "$site" > "$tmp/site/robots.txt"
{
  echo '<?xml version="1.0" encoding="UTF-8"?>'
  echo '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
  for path in / /a.html /b.html /old /missing.html; do echo "  <url><loc>$site$path</loc></url>"; done
  echo '</urlset>'
} > "$tmp/site/sitemap.xml"
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$tmp/site" > "$tmp/site.log" 2>&1 &
pids+=($!)

# 2. The daemon: loopback site (--allow-private), no spacing of its own sitemap fetches (--min-delay 0) nor
#    of the URLs of one host it hands out (--lease-delay 0: pass 1 takes all 5 in one call), HTTP API and
#    URLFrontier on free loopback ports, read back from its log.
"$bin" daemon --store "$tmp/store" --listen 127.0.0.1:0 --urlfrontier-listen 127.0.0.1:0 \
  --allow-private --min-delay 0 --lease-delay 0 "$site/" > "$tmp/daemon.log" 2>&1 &
daemon=$!
pids+=($daemon)
from_log() { sed -n "s#.*$1\([0-9.:]*\).*#\1#p" "$tmp/daemon.log" | head -1; }
api=""
for _ in $(seq 1 300); do  # up to 30 s: both listeners up and the sitemap's 5 URLs stored
  frontier=$(from_log "URLFrontier service listening on ")
  api=$(from_log "listening on http://")
  if [ -n "$frontier" ] && [ -n "$api" ] &&
     curl -sf -H "Authorization: Bearer $SITEMAPD_TOKEN" "http://$api/v1/stats" | grep -q '"active":5'; then
    break
  fi
  sleep 0.1
done
curl -sf -H "Authorization: Bearer $SITEMAPD_TOKEN" "http://$api/v1/stats" | grep -q '"active":5' ||
  { echo "the daemon did not become ready:" >&2; cat "$tmp/daemon.log" >&2; exit 1; }
echo "site $site, sitemapd API http://$api, URLFrontier $frontier"

# 3. The crawler, twice.
echo "--- pass 1: one GetURLs of up to 10 URLs, each reported due again now"
python3 "$here/crawler.py" "$frontier" --rounds 1 --per-queue 10 --refetch-secs 0
echo "<html><body>a, version 2</body></html>" > "$tmp/site/a.html"
echo "--- a.html edited; pass 2: the defaults (2 URLs per queue, due again in a day)"
python3 "$here/crawler.py" "$frontier"

# 4. What sitemapd made of the reports.
echo "--- sitemapd's records (GET /v1/urls)"
python3 - "$api" "$site" <<'PY'
import json, os, sys, urllib.parse, urllib.request
api, site = sys.argv[1:]
for path in ["/", "/a.html", "/b.html", "/old", "/old/", "/missing.html"]:
    req = urllib.request.Request(f"http://{api}/v1/urls?url=" + urllib.parse.quote(site + path, safe=""),
                                 headers={"Authorization": "Bearer " + os.environ["SITEMAPD_TOKEN"]})
    try:
        r = json.load(urllib.request.urlopen(req))["record"]
    except urllib.error.HTTPError as e:
        print(f"{site + path:<36} HTTP {e.code}: {e.read().decode().strip()}")
        continue
    print(f"{r['url']:<36} fetches={r['fetches']} last_outcome={r['last_outcome']} status={r['status']} "
          f"due={r['due_rfc3339']} reason={r['reason']}")
PY
kill -TERM "$daemon"
wait "$daemon" && echo "daemon stopped cleanly" || { echo "daemon exit $?"; cat "$tmp/daemon.log"; }
