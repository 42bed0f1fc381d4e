#!/usr/bin/env bash
# Cluster mode's cost against single-node mode, side by side on this
# machine: one store (200,000 URLs over 200 hosts, ingested from a loopback
# site), then a crawler's load (4 threads leasing 1,000 and completing them
# as not modified, until 150,000 are done) on a copy of it, by turns:
#   single:  `sitemapd daemon` alone;
#   cluster: the same daemon in cluster mode, one node, on 3 nats-server
#            processes (R3, fsync on every write): every lease and
#            completion appended to the replicated log first.
# Prints URLs/s, the daemon's CPU per URL, and the CPU of every process
# (daemon and NATS) per 1,000 URLs. Loopback only; needs a release build
# (cargo build --release) and the pinned nats-server
# (scripts/install-nats-server.sh). Usage: run.sh [ROUNDS] (default 2).
set -euo pipefail
cd "$(dirname "$0")/../.."

rounds=${1:-2}
bin=$PWD/target/release/sitemapd
nats=${NATS_SERVER:-$PWD/target/nats/bin/nats-server}
here=$PWD/scripts/cluster-bench
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
[ -x "$bin" ] || { echo "no $bin: cargo build --release" >&2; exit 1; }
[ -x "$nats" ] || { echo "no nats-server: scripts/install-nats-server.sh" >&2; exit 1; }

# CPU ticks (1/100 s) the processes used so far.
ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat"))); done; echo "$t"; }

mkdir "$work/site"
python3 "$here/site.py" "$work/site" 18990 20 10000 200
python3 -m http.server 18990 --bind 127.0.0.1 --directory "$work/site" >/dev/null 2>&1 &
site=$!
pids+=("$site")
sleep 1
"$bin" ingest --store "$work/store" --min-delay 0 --allow-private --scope none \
    http://127.0.0.1:18990/index.xml >/dev/null 2>&1
kill "$site"

run() {
    local mode=$1 extra=() npids=()
    rm -rf "$work/run" "$work/nats" && cp -r "$work/store" "$work/run"
    if [ "$mode" = cluster ]; then
        mkdir "$work/nats"
        for i in 1 2 3; do
            cat >"$work/nats/n$i.conf" <<CONF
server_name: n$i
listen: 127.0.0.1:$((14221 + i))
jetstream { store_dir: "$work/nats/n$i", sync_interval: always }
cluster { name: bench, listen: 127.0.0.1:$((16221 + i)),
  routes: [ nats-route://127.0.0.1:16222, nats-route://127.0.0.1:16223, nats-route://127.0.0.1:16224 ] }
CONF
            "$nats" -c "$work/nats/n$i.conf" >"$work/nats/n$i.log" 2>&1 &
            npids+=("$!")
            pids+=("$!")
        done
        sleep 3
        extra=(--cluster nats://127.0.0.1:14222,nats://127.0.0.1:14223,nats://127.0.0.1:14224
            --node-id bench --advertise 127.0.0.1:7999)
    fi
    SITEMAPD_TOKEN=bench-token "$bin" daemon --store "$work/run" --listen 127.0.0.1:18931 \
        --allow-private --min-delay 0 --lease-delay 0 "${extra[@]}" >"$work/daemon.log" 2>&1 &
    local daemon=$!
    pids+=("$daemon")
    # Ready: listening, and in cluster mode serving its partition.
    for _ in $(seq 300); do
        if grep -q "listening on" "$work/daemon.log" &&
            { [ "$mode" = single ] || grep -q "partition taken over" "$work/daemon.log"; }; then
            break
        fi
        sleep 0.2
    done
    sleep 1
    local d0 n0=0 d1 n1=0 out
    d0=$(ticks "$daemon")
    [ ${#npids[@]} -gt 0 ] && n0=$(ticks "${npids[@]}")
    out=$(python3 "$here/crawler.py" 18931 4 150000)
    d1=$(ticks "$daemon")
    [ ${#npids[@]} -gt 0 ] && n1=$(ticks "${npids[@]}")
    kill "$daemon"
    wait "$daemon" 2>/dev/null || true
    for p in "${npids[@]}"; do kill "$p"; wait "$p" 2>/dev/null || true; done
    python3 - "$mode" $out "$((d1 - d0))" "$((n1 - n0))" <<'PY'
import sys
mode, urls, secs, daemon, nats = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
print(f"{mode:8} {urls / secs:8,.0f} URLs/s  daemon {daemon * 1e4 / urls:5.1f} µs/URL  "
      f"NATS {nats * 1e4 / urls:5.1f} µs/URL  all {(daemon + nats) * 10 / urls:.3f} CPU-s per 1,000 URLs")
PY
}

for _ in $(seq "$rounds"); do
    run single
    run cluster
done
