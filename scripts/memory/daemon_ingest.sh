#!/usr/bin/env bash
# daemon_ingest.sh BIN STORE: the daemon on a fresh STORE (127.0.0.1:18710) is
# given the loopback site :18081 (1M URLs), then :18082 (1M URLs); RSS printed
# every 10 s; then 60 s idle; then SIGTERM. Needs the sites made by gen_site.py
# (`python3 gen_site.py DIR 18081 20 50000`, the same for 18082) and served
# (`python3 -m http.server PORT --bind 127.0.0.1 --directory DIR/pPORT`).
B=$1; S=$2; shift 2
# SCRAPE=1: GET /metrics at every sample, as Prometheus would (it counts the queue: a scan of the due index).
rss() { [ -n "$SCRAPE" ] && curl -s 127.0.0.1:18710/metrics > /dev/null; echo "$(date +%T) $1 $(grep -E 'VmRSS|VmHWM' /proc/$pid/status | tr -s ' ' | tr '\n' ' ') entries=$(entries)"; }
# Entries of the sites' last walks (GET /v1/sites: no scan of the store).
entries() { curl -s 127.0.0.1:18710/v1/sites | python3 -c 'import json,sys; print(sum(s.get("last_entries") or 0 for s in json.load(sys.stdin)["sites"]))'; }
"$@" $B daemon --store "$S" --listen 127.0.0.1:18710 --allow-private > /tmp/hmem-daemon.log 2>&1 &
pid=$!
sleep 3; rss start
for port in 18081 18082; do
  curl -s -X POST -H 'content-type: application/json' -d "{\"sites\":[\"http://127.0.0.1:$port/\"]}" 127.0.0.1:18710/v1/sites; echo
  want=$(( port == 18081 ? 1000000 : 2000000 ))
  for ((i=0; i<120; i++)); do
    sleep 10; rss "site$port"
    n=$(entries)
    [ "${n:-0}" -ge "$want" ] && break
  done
done
for i in 1 2 3 4 5 6; do sleep 10; rss idle; done
kill -TERM $pid; wait $pid
