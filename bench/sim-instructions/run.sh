#!/usr/bin/env bash
# Instructions of the simulator and of ns-2.35 on the speed benchmark's scenario, counted by
# callgrind (valgrind): counts that do not move with the machine's load, beside bench/sim-speed's
# CPU times.
#
#   bench/sim-instructions/run.sh [FLOWS...]     default: 64
#
# For each FLOWS: bench/sim-speed/e003-speed.toml with FLOWS TFRC flows, 300 s simulated, bare (one
# sample at the end for `tfrc sim`; ns-2's script without its sampling events), each under
# `valgrind --tool=callgrind`; prints the instructions of each, the ratio, and ours per event.
# TFRC=path runs another build of `tfrc` (e.g. an older commit's, for a before/after count);
# NS2=0 leaves ns-2 out (it takes about a minute per 100 flows under valgrind). Needs valgrind
# (installed when run as root) and, for ns-2, Debian's ns2.
set -euo pipefail
cd "$(dirname "$0")/../.."
FLOWS_LIST=("$@")
[ ${#FLOWS_LIST[@]} -eq 0 ] && FLOWS_LIST=(64)
for flows in "${FLOWS_LIST[@]}"; do
    [[ "$flows" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: FLOWS must be a positive integer, got '$flows'" >&2; exit 2; }
done
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
if ! command -v valgrind >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >&2
    else
        echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1
    fi
fi
if [ -z "${TFRC:-}" ]; then
    cargo build --release -p tfrc-cli >&2
    TFRC="$CARGO_TARGET_DIR/release/tfrc"
fi
NS=${NS:-/usr/bin/ns}
SCENARIO=bench/sim-speed/e003-speed.toml
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# instructions OUT_FILE -> the run's total
instructions() { sed -n 's/^summary: //p' "$1"; }

echo "| flows | tfrc sim instructions | ns-2 instructions | ns-2 ÷ tfrc sim | tfrc sim events | instructions per event |"
echo "|---:|---:|---:|---:|---:|---:|"
for flows in "${FLOWS_LIST[@]}"; do
    valgrind --tool=callgrind --callgrind-out-file="$work/sim.out" "$TFRC" sim "$SCENARIO" \
        --set "flow.tfrc.count=$flows" --set output.interval=300s --out "$work/sim-$flows" \
        >"$work/sim.txt" 2>"$work/sim.err" || { tail -5 "$work/sim.err" >&2; exit 1; }
    sim=$(instructions "$work/sim.out")
    # "300.0 s simulated in W s wall time (R M events/s)": events = R M/s × W s (rounded).
    events=$(cat "$work/sim.txt" "$work/sim.err" | sed -n 's/.* in \([0-9.]*\) s wall time (\([0-9.]*\) M events\/s).*/\1 \2/p' |
        awk '{ printf "%.0f", $1 * $2 * 1e6 }')
    ns2=n/a; ratio=n/a
    if [ "${NS2:-1}" != 0 ] && [ -x "$NS" ]; then
        mkdir -p "$work/ns2-$flows"
        "$TFRC" ns2 "$SCENARIO" --set "flow.tfrc.count=$flows" --out "$work/ns2-$flows" --dry-run >/dev/null 2>&1
        sed -e '/^\$ns at \[lindex \$flow_times 0\]/d' -e '/^\$ns at \[lindex \$state_times 0\]/d' \
            "$work/ns2-$flows/ns2.tcl" >"$work/ns2-$flows/bare.tcl"
        (cd "$work/ns2-$flows" && valgrind --tool=callgrind --callgrind-out-file="$work/ns2.out" "$NS" bare.tcl \
            >/dev/null 2>"$work/ns2.err") || { tail -5 "$work/ns2.err" >&2; exit 1; }
        ns2=$(instructions "$work/ns2.out")
        ratio=$(awk -v a="$ns2" -v b="$sim" 'BEGIN { printf "%.1fx", a / b }')
    fi
    per_event=$(awk -v a="$sim" -v e="${events:-0}" 'BEGIN { if (e > 0) printf "%.0f", a / e; else print "n/a" }')
    echo "| $flows | $sim | $ns2 | $ratio | ${events:-n/a} | $per_event |"
done
