#!/usr/bin/env bash
# Re-records the kernel cells of the modern conformance matrix (docs/conformance.md, "Today's TCP
# against ns-3"): kernel CUBIC and BBR (the testbed's namespaces, the emulator's links) for a few
# cells of conformance/modern.toml, beside our simulator and ns-3.37 on the very same scenario.
#
#   results/today-tcp/record.sh [CELL...]     default: the cells below
#
# For each cell: `tfrc conformance --matrix MATRIX --only CELL --replications 2 --keep-runs` writes the
# cell's replication-0 scenario and runs it in ns-3 and in our simulator (runs/CELL/0/{ns3,ours}), ours
# with TCP's Linux default (the matrix's `tcp_profile = "ns3"` turned to "rfc");
# `tfrc testbed run` runs the same scenario.toml with the kernel's TCP (root, TUN; real time).
# Cells with BBR flows also run ns-3.37's BBR as packaged (`tfrc ns3 --bbr-as-packaged`).
# Everything lands in results/today-tcp/CELL/{kernel,ours,ns3,ns3-packaged}/ (summary.json, flows.csv,
# scenario.toml), and summary.md is rewritten from them. Needs root, ns-3 (libns3-dev), g++.
#
#   REPLICATIONS=R results/today-tcp/record.sh CELL...
#
# also runs replications 0..R-1 of each cell on all three sides (the kernel's one after the other,
# in real time: R minutes per minute of scenario) into CELL/replications/<r>/{kernel,ours,ns3}/
# (summary.json); summary.md then has a "Replications" table with 95 % intervals.
#
#   MATRIX=results/today-tcp/outside-matrix.toml REPLICATIONS=R results/today-tcp/record.sh CELL...
#
# takes the cells from another matrix file of the same grammar (default: conformance/modern.toml),
# such as the cells outside the matrix that `outside-matrix.toml` lists.
set -euo pipefail
REPLICATIONS=${REPLICATIONS:-1}
MATRIX=${MATRIX:-conformance/modern.toml}
cd "$(dirname "$0")/../.."
CELLS=("$@")
[ ${#CELLS[@]} -eq 0 ] && CELLS=(cubic-4 newreno-4 bbr-1 bbr-4 cubic-bbr cubic-newreno)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release -p tfrc-cli >&2
TFRC="$CARGO_TARGET_DIR/release/tfrc"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Our side is TCP's Linux default (`tcp_profile = "rfc"`), which the kernel judges; the matrix's own
# default (`ns3` in conformance/modern.toml) is the profile it compares with ns-3 (docs/ns3.md).
sed 's/^tcp_profile = "ns3"/tcp_profile = "rfc"/' "$MATRIX" >"$work/matrix.toml"
for cell in "${CELLS[@]}"; do
    echo "== $cell" >&2
    "$TFRC" conformance --matrix "$work/matrix.toml" --only "$cell" --replications $(( REPLICATIONS > 2 ? REPLICATIONS : 2 )) --keep-runs --quiet --out "$work/$cell" >/dev/null || true
    out=results/today-tcp/$cell
    rm -rf "$out"
    mkdir -p "$out"
    for side in ours ns3; do
        mkdir -p "$out/$side"
        cp "$work/$cell/runs/$cell/0/$side/"{scenario.toml,summary.json,flows.csv} "$out/$side/"
    done
    # ns-3.37's BBR as packaged beside `tfrc ns3`'s default (upstream fixes, docs/ns3.md "BBR").
    if grep -q 'variant = "bbr"' "$out/ns3/scenario.toml"; then
        "$TFRC" ns3 "$out/ns3/scenario.toml" --bbr-as-packaged --out "$work/$cell-packaged" >/dev/null
        mkdir -p "$out/ns3-packaged"
        cp "$work/$cell-packaged/"{scenario.toml,summary.json,flows.csv} "$out/ns3-packaged/"
    fi
    "$TFRC" testbed run "$out/ours/scenario.toml" --out "$out/kernel" >"$out/kernel.log" 2>&1
    rm -f "$out/kernel/state.csv" "$out/kernel/links.csv"
    if [ "$REPLICATIONS" -gt 1 ]; then
        for ((r = 0; r < REPLICATIONS; r++)); do
            rep=$out/replications/$r
            for side in ours ns3; do
                mkdir -p "$rep/$side"
                cp "$work/$cell/runs/$cell/$r/$side/summary.json" "$rep/$side/"
            done
            mkdir -p "$rep/kernel"
            if [ "$r" -eq 0 ]; then
                # Replication 0's kernel run is the one just made above (same scenario.toml).
                cp "$out/kernel/summary.json" "$rep/kernel/"
            else
                "$TFRC" testbed run "$work/$cell/runs/$cell/$r/ours/scenario.toml" --out "$work/kernel-$cell-$r" >/dev/null 2>&1
                cp "$work/kernel-$cell-$r/summary.json" "$rep/kernel/"
            fi
        done
    fi
done
python3 results/today-tcp/summarize.py >results/today-tcp/summary.md
cat results/today-tcp/summary.md
