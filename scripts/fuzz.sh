#!/usr/bin/env bash
# Runs the cargo-fuzz targets under fuzz/ one after another, each for a given
# time, and prints a summary per target. Not run in CI.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     # default: 600 s, every target
#   scripts/fuzz.sh 600                       # 10 minutes each, all targets
#   scripts/fuzz.sh 60 parse robots           # one minute each, two targets
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz --locked`).
# One fuzz process at a time (no -jobs/-fork). Built with debug assertions
# (integer overflow panics) and AddressSanitizer. A crash, a hang (one input
# over TIMEOUT seconds, default 10), an RSS over RSS_MB (default 2048) or a
# single allocation over it is a finding: the target stops, its input is
# written to fuzz/artifacts/TARGET/, and the next target runs.
#
# The committed seeds (fuzz/corpus/TARGET) are read, never written; what a
# run finds goes to fuzz/work/TARGET (git-ignored), which the next run starts
# from. Logs: fuzz/work/logs/TARGET.log.
set -uo pipefail
cd "$(dirname "$0")/../fuzz"

secs=${1:-600}
shift || true
all=(parse lanes dates url_scope robots robots_match record)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")
timeout_s=${TIMEOUT:-10}
rss_mb=${RSS_MB:-2048}

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "needs: rustup toolchain install nightly && cargo install cargo-fuzz --locked" >&2
    exit 2
fi

extra_args() {
    case $1 in
        parse | lanes) echo "-dict=dicts/parse.dict -max_len=16384" ;;
        robots) echo "-dict=dicts/robots.dict -max_len=8192" ;;
        robots_match) echo "-max_len=1100" ;;
        *) echo "-max_len=4096" ;;
    esac
}

cargo +nightly fuzz build -a || exit 2

mkdir -p work/logs
summary=()
status=0
for t in "${targets[@]}"; do
    mkdir -p "work/$t" "artifacts/$t"
    log="work/logs/$t.log"
    before=$(ls "artifacts/$t" | wc -l)
    echo "== $t: ${secs}s" >&2
    start=$(date +%s)
    # shellcheck disable=SC2046
    # lanes reads the parse target's input format: it shares its seeds.
    seeds="corpus/$t"
    [ "$t" = lanes ] && seeds=corpus/parse
    cargo +nightly fuzz run -a "$t" "work/$t" "$seeds" -- \
        -max_total_time="$secs" -timeout="$timeout_s" -rss_limit_mb="$rss_mb" \
        -malloc_limit_mb="$rss_mb" -print_final_stats=1 $(extra_args "$t") >"$log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    after=$(ls "artifacts/$t" | wc -l)
    last=$(grep -aE '^#[0-9]+' "$log" | tail -n 1)
    runs=$(grep -a 'stat::number_of_executed_units' "$log" | awk '{print $2}')
    [ -z "$runs" ] && runs=$(echo "$last" | sed -E 's/^#([0-9]+).*/\1/')
    rate=$(grep -a 'stat::average_exec_per_sec' "$log" | awk '{print $2}')
    [ -z "$rate" ] && rate=$(echo "$last" | sed -nE 's/.*exec\/s: ([0-9]+).*/\1/p')
    cov=$(echo "$last" | sed -nE 's/.*cov: ([0-9]+) ft: ([0-9]+).*/\1\/\2/p')
    corp=$(echo "$last" | sed -nE 's/.*corp: ([0-9]+\/[0-9]+[a-zA-Z]*).*/\1/p')
    found=$((after - before))
    what="none"
    if [ "$rc" -ne 0 ] || [ "$found" -gt 0 ]; then
        status=1
        what="$(grep -aoE 'ERROR: libFuzzer: [a-z-]+|panicked at [^ ]+' "$log" | head -n 1); $(grep -aoE 'Test unit written to [^ ]+' "$log" | tail -n 1 | sed 's/Test unit written to //')"
    fi
    summary+=("$(printf '%-13s %6ss %12s %8s %14s %14s  %s' "$t" "$took" "${runs:-?}" "${rate:-?}" "${cov:-?}" "${corp:-?}" "$what")")
done

printf '\n%-13s %7s %12s %8s %14s %14s  %s\n' target time runs exec/s cov/ft corpus findings
printf '%s\n' "${summary[@]}"
exit $status
