#!/usr/bin/env bash
# Relay accuracy benchmark: added-delay error (p50/p99/max) with probes at half the link rate,
# the machine's own wake-up lateness under the relay's waiting (p99; same priority and load),
# and the delivered rate under a 150 % load, for each link rate (Mb/s).
# Usage: [REALTIME=1] bench/emu/run.sh [SECONDS_PER_RUN] [RATE_MBPS ...]   (default: 3 s; 1 10 100 200 400)
# REALTIME=1 runs the relay thread as SCHED_FIFO (needs root). BUSY=1 keeps one core busy with
# another process (a shell loop) for the whole run, as the issue-18 target asks. SPIN_US=N sets
# the relay's spin margin (default 60 µs; a SCHED_FIFO relay that spins much is stopped by the
# kernel's real-time throttling, 50 ms of every second).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -p tfrc-emu --example relay_accuracy >&2
target="${CARGO_TARGET_DIR:-target}"
echo "# $(date -u +%FT%TZ), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
busy=""
if [ "${BUSY:-0}" = 1 ]; then
    sh -c 'while :; do :; done' &
    busy=$!
    trap 'kill "$busy" 2>/dev/null || true' EXIT
    echo "one core kept busy by another process (pid $busy)"
fi
"$target/release/examples/relay_accuracy" "$@"
