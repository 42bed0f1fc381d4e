#!/usr/bin/env bash
# Cluster mode's cost against single-node mode, side by side on this
# machine: one store (200,000 URLs over 200 hosts in 6 partitions, ingested
# from a loopback site), then a crawler's load (threads leasing 1,000 and
# completing them as not modified, until 150,000 are done) on copies of it,
# by turns:
#   single:   `sitemapd daemon` alone, one crawler of 4 threads;
#   cluster1: the same daemon in cluster mode, one node, on 3 nats-server
#             processes (R3, fsync on every write): every lease and
#             completion appended to the replicated log first;
#   cluster3: three such nodes (2 partitions each), each with a crawler of
#             its own (4 threads) leasing and completing through it.
# Prints URLs/s (in all, and per node), the daemons' CPU per URL, and the
# CPU of every process (daemons and NATS, not the crawlers) per 1,000 URLs.
# Loopback only; needs a release build (cargo build --release) and the
# pinned nats-server (scripts/install-nats-server.sh).
# Usage: run.sh [ROUNDS] (default 2).
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
"$bin" ingest --store "$work/store" --partitions 6 --min-delay 0 --allow-private --scope none \
    http://127.0.0.1:18990/index.xml >/dev/null 2>&1
kill "$site"

# Waits until daemon log $1 says $2 at least $3 times (60 s at most).
await_log() {
    for _ in $(seq 300); do
        [ "$(grep -c "$2" "$1" || true)" -ge "$3" ] && return 0
        sleep 0.2
    done
    echo "timed out waiting for '$2' in $1" >&2
    exit 1
}

run() {
    local mode=$1 nodes=1 cluster=() npids=() dpids=() cpids=() i
    [ "$mode" = cluster3 ] && nodes=3
    rm -rf "$work"/run* "$work/nats"
    if [ "$mode" != single ]; then
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
        cluster=(--cluster nats://127.0.0.1:14222,nats://127.0.0.1:14223,nats://127.0.0.1:14224)
    fi
    # Every node starts from a copy of the whole store and serves the
    # partitions it comes to own (membership stays put: what the store held
    # before the log is not in the log, and would not move with a partition).
    for i in $(seq "$nodes"); do
        cp -r "$work/store" "$work/run$i"
        local node=()
        [ "$mode" != single ] && node=("${cluster[@]}" --node-id "bench$i" --advertise "127.0.0.1:$((7998 + i))")
        SITEMAPD_TOKEN=bench-token "$bin" daemon --store "$work/run$i" --listen "127.0.0.1:$((18930 + i))" \
            --allow-private --min-delay 0 --lease-delay 0 "${node[@]}" >"$work/daemon$i.log" 2>&1 &
        dpids+=("$!")
        pids+=("$!")
        await_log "$work/daemon$i.log" "listening on" 1
    done
    # Ready: in cluster mode, each node serving its share (6 partitions).
    if [ "$mode" != single ]; then
        for i in $(seq "$nodes"); do
            await_log "$work/daemon$i.log" "partition taken over" $((6 / nodes))
        done
    fi
    sleep 1
    local d0 n0=0 d1 n1=0 out=() line
    d0=$(ticks "${dpids[@]}")
    [ ${#npids[@]} -gt 0 ] && n0=$(ticks "${npids[@]}")
    for i in $(seq "$nodes"); do
        python3 "$here/crawler.py" "$((18930 + i))" 4 $((150000 / nodes)) >"$work/crawler$i.out" &
        cpids+=("$!")
    done
    for p in "${cpids[@]}"; do wait "$p"; done
    d1=$(ticks "${dpids[@]}")
    [ ${#npids[@]} -gt 0 ] && n1=$(ticks "${npids[@]}")
    for i in $(seq "$nodes"); do out+=($(cat "$work/crawler$i.out")); done
    for p in "${dpids[@]}" "${npids[@]}"; do kill "$p"; wait "$p" 2>/dev/null || true; done
    python3 - "$mode" "$((d1 - d0))" "$((n1 - n0))" "${out[@]}" <<'PY'
import sys
mode, daemons, nats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
runs = [(int(u), float(s)) for u, s in zip(sys.argv[4::2], sys.argv[5::2])]
urls, secs = sum(u for u, _ in runs), max(s for _, s in runs)
per_node = " ".join(f"{u / s:,.0f}" for u, s in runs)
print(f"{mode:8} {urls / secs:8,.0f} URLs/s (per node: {per_node})  "
      f"daemons {daemons * 1e4 / urls:5.1f} µs/URL  NATS {nats * 1e4 / urls:5.1f} µs/URL  "
      f"all {(daemons + nats) * 10 / urls:.3f} CPU-s per 1,000 URLs")
PY
}

for _ in $(seq "$rounds"); do
    run single
    run cluster1
    run cluster3
done
