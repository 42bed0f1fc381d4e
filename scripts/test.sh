#!/usr/bin/env bash
# The project's test command (README, "Run the tests"; CI runs it after fmt
# and clippy): every Rust test of the workspace, then the Python package,
# built into a wheel and tested as a user installs it
# (scripts/python-tests.sh). Arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked "$@"
scripts/python-tests.sh
