#!/usr/bin/env bash
# Re-records the kernel cells of the modern conformance matrix (docs/conformance.md, "Today's TCP
# against ns-3"): kernel CUBIC and BBR (the testbed's namespaces, the emulator's links) for a few
# cells of conformance/modern.toml, beside our simulator and ns-3.37 on the very same scenario.
#
#   results/today-tcp/record.sh [CELL...]     default: the cells below
#
# For each cell: `tfrc conformance --modern --only CELL --replications 2 --keep-runs` writes the
# cell's replication-0 scenario and runs it in ns-3 and in our simulator (runs/CELL/0/{ns3,ours});
# `tfrc testbed run` runs the same scenario.toml with the kernel's TCP (root, TUN; real time).
# Everything lands in results/today-tcp/CELL/{kernel,ours,ns3}/ (summary.json, flows.csv,
# scenario.toml), and summary.md is rewritten from them. Needs root, ns-3 (libns3-dev), g++.
set -euo pipefail
cd "$(dirname "$0")/../.."
CELLS=("$@")
[ ${#CELLS[@]} -eq 0 ] && CELLS=(cubic-1 bbr-1 cubic-bbr cubic-bbr-buffer-0.25 bbr-4-rtt-20)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release -p tfrc-cli >&2
TFRC="$CARGO_TARGET_DIR/release/tfrc"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for cell in "${CELLS[@]}"; do
    echo "== $cell" >&2
    "$TFRC" conformance --modern --only "$cell" --replications 2 --keep-runs --quiet --out "$work/$cell" >/dev/null || true
    out=results/today-tcp/$cell
    rm -rf "$out"
    mkdir -p "$out"
    for side in ours ns3; do
        mkdir -p "$out/$side"
        cp "$work/$cell/runs/$cell/0/$side/"{scenario.toml,summary.json,flows.csv} "$out/$side/"
    done
    "$TFRC" testbed run "$out/ours/scenario.toml" --out "$out/kernel" >"$out/kernel.log" 2>&1
    rm -f "$out/kernel/state.csv" "$out/kernel/links.csv"
done
python3 results/today-tcp/summarize.py >results/today-tcp/summary.md
cat results/today-tcp/summary.md
