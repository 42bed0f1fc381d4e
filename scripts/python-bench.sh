#!/usr/bin/env bash
# The Python package's benchmarks against its peers (crates/python/benches/peers.py):
# a release wheel and the release binary, installed into a venv of their own
# with the pinned peers. Arguments go to peers.py (--quick: no 2.5M-URL site).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
venvs=target/python
build=$venvs/build
if [ ! -x "$build/bin/maturin" ]; then
    "$python" -m venv "$build"
    "$build/bin/pip" install --quiet --disable-pip-version-check -r crates/python/requirements-build.txt
fi
cargo build --release --locked --bin sitemapd
rm -rf target/wheels-release
"$build/bin/maturin" build --manifest-path crates/python/Cargo.toml --locked --release --out target/wheels-release
wheel=$(ls target/wheels-release/sitemapd-*.whl)
echo "python-bench: wheel $wheel, $(du -h "$wheel" | cut -f1)"
bench=$venvs/bench
rm -rf "$bench"
"$python" -m venv "$bench"
"$bench/bin/pip" install --quiet --disable-pip-version-check --no-index "$wheel"
"$bench/bin/pip" install --quiet --disable-pip-version-check -r crates/python/requirements-bench.txt
SITEMAPD_BIN=$PWD/target/release/sitemapd "$bench/bin/python" crates/python/benches/peers.py "$@"
