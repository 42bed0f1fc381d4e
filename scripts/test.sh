#!/usr/bin/env bash
# The project's test command (README, "Tests"; CI runs it, .ci/run): the
# formatting and lint checks (cargo fmt --check, clippy -D warnings), every
# Rust test of the workspace, then the Python package, built
# into a wheel and tested as a user installs it (scripts/python-tests.sh,
# which sets up its own venvs with the pinned maturin and pytest). The
# cluster tests start real nats-server processes: the pinned one is
# installed first (scripts/install-nats-server.sh). Arguments
# go to `cargo test`. Ends with one line counting every test that ran.
set -euo pipefail
cd "$(dirname "$0")/.."

# A full run builds once: incremental caches would only take disk (8.3 of
# the 21 GB of a target directory reused over a few runs). A caller may ask
# for them.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo --version
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

NATS_SERVER=${NATS_SERVER:-$(scripts/install-nats-server.sh)}
export NATS_SERVER
cargo test --workspace --locked "$@" 2>&1 | tee "$log"
scripts/python-tests.sh 2>&1 | tee -a "$log"

# cargo prints one result line per test binary, pytest one for its run.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;/) p += $i; if ($(i+1) ~ /^failed;/) f += $i } }
     /^(=+ )?[0-9]+ (passed|failed).* in [0-9.]+s/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed,?$/) p += $i; if ($(i+1) ~ /^failed,?$/) f += $i } }
     END { printf "total: %d passed, %d failed\n", p, f }' "$log"
