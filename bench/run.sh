#!/usr/bin/env bash
# Every performance benchmark of issue 18, side by side with its peer, into one dated table:
#
#   bench/run.sh [OUT_FILE]        default: bench/results.md
#
# 1. Simulator against ns-2.35 (bench/sim-speed/run.sh 64 1024 10000): CPU time, sampled and
#    bare, peak memory, events/s; and both simulators' instructions at 64 flows under callgrind
#    (bench/sim-instructions/run.sh 64, about 5 minutes).
# 2. Protocol core per operation (cargo bench -p tfrc-proto --bench core): criterion's mean; and
#    instructions per operation under callgrind (bench/core-instructions/run.sh, issue 41).
# 3. Real UDP on loopback against iperf3 -u -b 0 (bench/udp/run.sh 5): goodput, CPU, pacing.
# 4. Emulator relay with one core kept busy (bench/emu/run.sh, BUSY=1), normal priority and
#    SCHED_FIFO when root: added-delay error and delivered rate.
# 5. The Python package against the CLI (bench/python/run.sh, issue 19): what `tfrc.simulate`
#    adds to a simulation, a 200-run sweep from Python, on Dask and with `tfrc sweep`.
# 6. Simulator against ns-3.37 (bench/ns3-speed/run.sh 64 1024, issue 39): a TCP-only dumbbell,
#    CPU time and peak memory of each, ratio ns-3 / ours.
# 7. The main job, `tfrc reproduce` with its defaults (bench/reproduce/run.sh, issue 41: under 90 s
#    of wall time on 2 cores): wall and CPU time, peak memory, report size.
#
# Needs ns-2 (Debian ns2), ns-3.37 (libns3-dev, g++, pkg-config), iperf3, jq, valgrind, /usr/bin/time (Debian time); as root it installs the
# missing ones. Takes about 22 minutes on 2 cores (10 of them building the Python package). The machine's load average is recorded at
# the start of each part: other work slows every figure, the ratios less.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench/results.md}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}

if [ "$(id -u)" = 0 ]; then
    missing=()
    command -v ns >/dev/null || missing+=(ns2)
    pkg-config --exists ns3-core 2>/dev/null || missing+=(libns3-dev)
    command -v g++ >/dev/null || missing+=(g++)
    command -v pkg-config >/dev/null || missing+=(pkg-config)
    command -v iperf3 >/dev/null || missing+=(iperf3)
    command -v jq >/dev/null || missing+=(jq)
    command -v valgrind >/dev/null || missing+=(valgrind)
    [ -x /usr/bin/time ] || missing+=(time)
    if [ ${#missing[@]} -gt 0 ]; then
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
    fi
fi

load() { cut -d' ' -f1-3 /proc/loadavg; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

{
    echo "# Benchmarks, $(date -u +%F) ($(date -u +%TZ))"
    echo
    echo "Machine: $(nproc) cores, kernel $(uname -r); commit $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)'). Written by \`bench/run.sh\`."
    echo
    echo "## 1. Simulator against ns-2.35 (e003 topology, 300 s simulated)"
    echo
    echo "Load average at the start: $(load)."
} >"$work/results.md"

bench/sim-speed/run.sh 64 1024 10000 >"$work/sim.txt" 2>"$work/sim.err" || { cat "$work/sim.err" >&2; exit 1; }
sed -n '/^| flows/,$p' "$work/sim.txt" >>"$work/results.md"
{
    echo
    echo "### Instructions (callgrind; bench/sim-instructions/run.sh 64), bare runs"
    echo
} >>"$work/results.md"
bench/sim-instructions/run.sh 64 >>"$work/results.md" 2>"$work/sim-instructions.err" ||
    { cat "$work/sim-instructions.err" >&2; exit 1; }

{
    echo
    echo "## 2. Protocol core, per operation (criterion, mean and its 95 % interval)"
    echo
    echo "Load average at the start: $(load)."
    echo
    echo "| operation | time |"
    echo "|---|---|"
} >>"$work/results.md"
cargo bench -p tfrc-proto --bench core -- --warm-up-time 1 --measurement-time 3 >"$work/core.txt" 2>&1 ||
    { tail -20 "$work/core.txt" >&2; exit 1; }
# The first "time:" line after each benchmark's name is its estimate; a second one, after
# "change:", compares with the previous run's and is left out.
awk '/^Benchmarking [a-z0-9]+\/.*per operation$/ { name = $0; sub(/^Benchmarking /, "", name); sub(/\/per operation$/, "", name); printed = 0 }
     /^ +time: +\[/ && !printed { gsub(/[\[\]]/, ""); printf "| %s | %s %s (%s %s – %s %s) |\n", name, $4, $5, $2, $3, $6, $7; printed = 1 }' \
    "$work/core.txt" >>"$work/results.md"

{
    echo
    echo "### Instructions per operation (callgrind; bench/core-instructions/run.sh)"
    echo
    echo "Counts that do not move with the machine's load; the same operations on the same recorded endpoints as the times above."
    echo
} >>"$work/results.md"
bench/core-instructions/run.sh >>"$work/results.md" 2>"$work/core-instructions.err" ||
    { cat "$work/core-instructions.err" >&2; exit 1; }

{
    echo
    echo "## 3. Real UDP on loopback, against iperf3 in the same run"
    echo
} >>"$work/results.md"
bench/udp/run.sh 5 "$work/udp" >/dev/null 2>"$work/udp.err" || { cat "$work/udp.err" >&2; exit 1; }
sed -e 's/^## /### /' "$work/udp/summary.md" >>"$work/results.md"

{
    echo
    echo "## 4. Emulator relay, one core kept busy by another process"
    echo
} >>"$work/results.md"
BUSY=1 bench/emu/run.sh 3 10 100 >>"$work/results.md" 2>"$work/emu.err" || { cat "$work/emu.err" >&2; exit 1; }
if [ "$(id -u)" = 0 ]; then
    echo >>"$work/results.md"
    REALTIME=1 BUSY=1 bench/emu/run.sh 3 10 100 >>"$work/results.md" 2>>"$work/emu.err" ||
        { cat "$work/emu.err" >&2; exit 1; }
fi

{
    echo
    echo "## 5. Python package against the CLI"
    echo
    echo "Load average at the start: $(load)."
    echo
} >>"$work/results.md"
bench/python/run.sh >>"$work/results.md" 2>"$work/python.err" || { cat "$work/python.err" >&2; exit 1; }

{
    echo
    echo "## 6. Simulator against ns-3.37 (TCP NewReno dumbbell, 100 Mb/s, 30 s simulated)"
    echo
    echo "Load average at the start: $(load)."
    echo
} >>"$work/results.md"
bench/ns3-speed/run.sh 64 1024 >>"$work/results.md" 2>"$work/ns3.err" || { cat "$work/ns3.err" >&2; exit 1; }

{
    echo
    echo "## 7. \`tfrc reproduce\` with its defaults (goal: under 90 s of wall time on 2 cores)"
    echo
    echo "Load average at the start: $(load)."
    echo
} >>"$work/results.md"
bench/reproduce/run.sh >"$work/reproduce.txt" 2>"$work/reproduce.err" || { cat "$work/reproduce.err" >&2; exit 1; }
tail -n 1 "$work/reproduce.txt" >>"$work/results.md"

cp "$work/results.md" "$OUT"
cat "$OUT"
