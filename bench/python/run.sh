#!/usr/bin/env bash
# What the Python package adds to the simulator (issue 19; see bench/python/bench.py):
#
#   bench/python/run.sh            prints a Markdown table, writes out/bench-python.json
#
# Builds the `tfrc` binary (release) and the package (`pip install ./python`, release profile,
# into the venv target/bench-venv, created with PYTHON, default python3, with Dask), both from
# this checkout, so the CLI and the package are the same build. Set REUSE_VENV=1 to skip the
# package build when the venv already has it. The sweep part takes about 2 × 40 s plus the
# Dask run on 2 cores; other work on the machine slows every side, the ratios are what matter.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
venv=target/bench-venv
cargo build --release --locked -p tfrc-cli
if [ "${REUSE_VENV:-0}" != 1 ] || [ ! -x "$venv/bin/python" ]; then
    "${PYTHON:-python3}" -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip
    "$venv/bin/pip" install -q "dask[distributed]"
    "$venv/bin/pip" install -q ./python
fi
mkdir -p out
TFRC="$CARGO_TARGET_DIR/release/tfrc" "$venv/bin/python" bench/python/bench.py out/bench-python.json
