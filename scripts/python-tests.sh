#!/usr/bin/env bash
# The Python package's tests, on a fresh machine as on a developer's:
#   1. a build venv with the pinned maturin builds the wheel (abi3, one for
#      every CPython >= 3.10) into target/wheels;
#   2. a fresh venv installs it with `pip install --no-index`: the wheel
#      needs nothing else;
#   3. the pinned test packages join it, and pytest runs the tests
#      (servers on 127.0.0.1 only), stubtest checks the type stubs against
#      the built module, and mypy --strict checks the package's Python code
#      and the examples.
# Needs python3 (3.10 or newer) with venv and pip, and PyPI for step 1 and 3.
# SITEMAPD_WHEEL_PROFILE picks the cargo profile of the wheel (default dev:
# the tests do not measure speed; `release` for benchmarks).
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/need-python.sh
need_python python-tests 3 10

venvs=target/python
build=$venvs/build
if [ ! -x "$build/bin/maturin" ] || ! cmp -s crates/python/requirements-build.txt "$build/requirements.txt"; then
    rm -rf "$build"
    "$python" -m venv "$build"
    "$build/bin/pip" install --quiet --disable-pip-version-check -r crates/python/requirements-build.txt
    cp crates/python/requirements-build.txt "$build/requirements.txt"
fi

profile=${SITEMAPD_WHEEL_PROFILE:-dev}
rm -rf target/wheels
"$build/bin/maturin" build --manifest-path crates/python/Cargo.toml --locked \
    --profile "$profile" --out target/wheels
wheel=$(ls target/wheels/sitemapd-*.whl)
echo "python-tests: built $wheel ($(du -h "$wheel" | cut -f1))"

user=$venvs/user
rm -rf "$user"
"$python" -m venv "$user"
"$user/bin/pip" install --quiet --disable-pip-version-check --no-index "$wheel"
"$user/bin/python" -c 'import sitemapd; print("python-tests: import sitemapd", sitemapd.__version__, "from", sitemapd.__file__)'
"$user/bin/pip" install --quiet --disable-pip-version-check -r crates/python/requirements-test.txt

# From the tests' directory, so that `import sitemapd` is the installed one.
(cd crates/python/tests && "../../../$user/bin/python" -m pytest -q -p no:cacheprovider .)
(cd crates/python && "../../$user/bin/python" -m mypy.stubtest sitemapd._native)
(cd crates/python && "../../$user/bin/python" -m mypy --strict --no-incremental python/sitemapd examples)
echo "python-tests: stubtest and mypy --strict passed"
