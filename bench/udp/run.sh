#!/usr/bin/env bash
# Benchmarks of the UDP tools on loopback (not tests; see docs/udp-tools.md, "Benchmarks").
#
#   bench/udp/run.sh [SECONDS] [OUT_DIR]
#
# 1. Goodput and CPU of one unconstrained TFRC flow (`tfrc send` / `tfrc recv`), with 1400-byte
#    and 8000-byte packets, and of `iperf3 -u -b 0` with the same datagram sizes, in the same run.
# 2. Pacing accuracy of TFRC at 10 and 100 Mbit/s (`--max-rate`): the distribution of the error
#    between scheduled and actual send times (p50 / p99 / p99.9 / max).
# 3. One 1400-byte TFRC flow through `tfrc emulate` with no shaping (forwarding speed).
# 4. The same 1400-byte goodput runs and 100 Mbit/s pacing while another process keeps one core
#    busy (a shell loop this script starts and stops).
# 5. Right after each pacing run, in the same conditions (load, priority), the machine's own
#    wake-up lateness at the run's packet interval (crates/tfrc-udp/examples/wakeup_probe.rs: the
#    sender's sleep-then-spin wait with nothing else to do, and a kernel sleep alone): the floor
#    under the pacing error, which the table reports the sender's error against.
#
# Every run's JSON is kept in OUT_DIR (default out/bench-udp); a Markdown table is printed and
# written to OUT_DIR/summary.md. CPU is in percent of one core, as iperf3 reports it. The
# machine's load is printed first: other work on the machine lowers every number.
set -euo pipefail
cd "$(dirname "$0")/../.."

DURATION=${1:-10}
OUT=${2:-out/bench-udp}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
mkdir -p "$OUT"

cargo build --release -p tfrc-cli >&2
cargo build --release -p tfrc-udp --example wakeup_probe >&2
TFRC="$CARGO_TARGET_DIR/release/tfrc"
PROBE="$CARGO_TARGET_DIR/release/examples/wakeup_probe"

if ! command -v iperf3 >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y iperf3 >&2 || true
    fi
fi
for tool in jq python3; do
    command -v "$tool" >/dev/null || { echo "bench/udp/run.sh needs $tool" >&2; exit 1; }
done

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# run_tfrc NAME SEND-ARGS...: one TFRC flow; leaves NAME.send.json and NAME.recv.json.
run_tfrc() {
    local name=$1
    shift
    "$TFRC" recv --listen 127.0.0.1:0 --once --json --idle-timeout 5s \
        >"$OUT/$name.recv.json" 2>"$OUT/$name.recv.err" &
    local receiver=$!
    local address=""
    for _ in $(seq 100); do
        address=$(awk '/Server listening on/ {print $4; exit}' "$OUT/$name.recv.err" 2>/dev/null || true)
        [ -n "$address" ] && break
        sleep 0.05
    done
    if [ -z "$address" ]; then
        echo "$name: the receiver did not start: $(cat "$OUT/$name.recv.err")" >&2
        kill "$receiver" 2>/dev/null || true
        return 1
    fi
    local relay=""
    if [ -n "${THROUGH_RELAY:-}" ]; then
        # `tfrc emulate` between them, its link fast enough not to shape (100 Gbit/s: 0.1 µs
        # per 1432-byte packet), no delay, 1000 packets of queue.
        local port
        port=$(free_port)
        "$TFRC" emulate --listen "127.0.0.1:$port" --forward "$address" --rate 100Gbps \
            --queue droptail:1000 --time "$((DURATION + 15))" --json \
            >"$OUT/$name.emulate.json" 2>"$OUT/$name.emulate.err" &
        relay=$!
        address="127.0.0.1:$port"
        sleep 0.3
    fi
    if ! "$TFRC" send --to "$address" --time "$DURATION" --json "$@" >"$OUT/$name.send.json"; then
        echo "$name: tfrc send failed" >&2
    fi
    if ! wait "$receiver"; then
        echo "$name: tfrc recv failed: $(cat "$OUT/$name.recv.err")" >&2
    fi
    if [ -n "$relay" ]; then
        kill -INT "$relay" 2>/dev/null || true
        wait "$relay" 2>/dev/null || true
    fi
}

# run_iperf NAME LENGTH: iperf3 -u -b 0 with LENGTH-byte datagrams; leaves NAME.json.
run_iperf() {
    local name=$1 length=$2 port
    port=$(free_port)
    iperf3 -s -1 -p "$port" >/dev/null 2>&1 &
    local server=$!
    sleep 0.5
    iperf3 -c 127.0.0.1 -p "$port" -u -b 0 -l "$length" -t "$DURATION" -J >"$OUT/$name.json" || true
    wait "$server" || true
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; kernel $(uname -r)" | tee "$OUT/summary.md"

run_tfrc tfrc-1400 --packet-size 1400
run_tfrc tfrc-8000 --packet-size 8000
if command -v iperf3 >/dev/null; then
    run_iperf iperf3-1400 1400
    run_iperf iperf3-8000 8000
else
    echo "iperf3 not installed: its rows are skipped" | tee -a "$OUT/summary.md"
fi
# probe NAME [--realtime]: the wake-up probe at NAME's packet interval (from its send JSON), for
# half the run's duration; leaves NAME.probe.json.
probe() {
    local name=$1
    shift
    local interval_us
    interval_us=$(jq '.end.sender.seconds / .end.sender.packets * 1e6' "$OUT/$name.send.json" 2>/dev/null || echo 0)
    if [ "$(jq -n --argjson i "${interval_us:-0}" '$i > 0')" = true ]; then
        "$PROBE" "$interval_us" "$(( (DURATION + 1) / 2 ))" "$@" >"$OUT/$name.probe.json" 2>"$OUT/$name.probe.err" || true
    fi
}
run_tfrc pacing-10M --max-rate 10M
probe pacing-10M
run_tfrc pacing-100M --max-rate 100M
probe pacing-100M
# The same with a real-time sending thread (root only): shows how much of the tail is the
# scheduler making a woken sender wait for a CPU on a busy machine.
if [ "$(id -u)" = 0 ]; then
    run_tfrc pacing-10M-realtime --max-rate 10M --realtime
    probe pacing-10M-realtime --realtime
    run_tfrc pacing-100M-realtime --max-rate 100M --realtime
    probe pacing-100M-realtime --realtime
fi
# Through the emulator's relay with no shaping (issue 18: at least 1 Gbit/s forwarded).
THROUGH_RELAY=1 run_tfrc tfrc-1400-relay --packet-size 1400
# One core kept busy by another process for the rest of the runs.
timeout $((4 * DURATION + 60)) sh -c 'while :; do :; done' &
busy=$!
run_tfrc tfrc-1400-busy --packet-size 1400
if command -v iperf3 >/dev/null; then
    run_iperf iperf3-1400-busy 1400
fi
run_tfrc pacing-100M-busy --max-rate 100M
probe pacing-100M-busy
kill "$busy" 2>/dev/null || true
wait "$busy" 2>/dev/null || true

{
    echo
    echo "## Goodput and CPU, ${DURATION} s on loopback"
    echo
    echo "| run | datagram bytes | one core busy | sent (Mbit/s) | received (Mbit/s) | received vs iperf3 | loss % | sender CPU % | receiver CPU % | CPU s per Gbit (both ends) | sent packets/s | send offload |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    for run in 1400 8000 1400-relay 1400-busy; do
        size=${run%-*}
        busy=no
        [ "$run" = "$size-busy" ] && busy=yes
        send="$OUT/tfrc-$run.send.json"
        recv="$OUT/tfrc-$run.recv.json"
        iperf_received=0
        if [ -f "$OUT/iperf3-$run.json" ]; then
            iperf_received=$(jq '.end.sum_received.bits_per_second // 0' "$OUT/iperf3-$run.json" 2>/dev/null || echo 0)
        fi
        relay=false
        [ "$run" = "$size-relay" ] && relay=true
        jq -r --slurpfile r "$recv" --arg size "$size" --arg busy "$busy" --argjson peer "$iperf_received" --argjson relay "$relay" '
            (.end.receiver.bits_per_second // 0) as $received
            | ((.end.cpu_utilization_percent.host_total + $r[0].end.cpu_utilization_percent.host_total) / 100) as $cores
            | "| tfrc\(if $relay then " through tfrc emulate, unshaped" else "" end) | \($size) | \($busy) | \(.end.sender.bits_per_second / 1e6 | floor) | \($received / 1e6 | floor) | \(if $peer > 0 then "\($received / $peer * 100 | round / 100)x" else "n/a" end) | \((.end.receiver.loss_ratio // 0) * 100 | . * 1000 | round / 1000) | \(.end.cpu_utilization_percent.host_total | round) | \($r[0].end.cpu_utilization_percent.host_total | round) | \(if $received > 0 then $cores / ($received / 1e9) * 100 | round / 100 else "n/a" end) | \(.end.sender.packets / .end.sender.seconds | round) | \(.start.offload.send // "n/a") |"' "$send"
        if [ -f "$OUT/iperf3-$run.json" ]; then
            jq -r --arg size "$size" --arg busy "$busy" '
                (.end.sum_received.bits_per_second) as $received
                | ((.end.cpu_utilization_percent.host_total + .end.cpu_utilization_percent.remote_total) / 100) as $cores
                | "| iperf3 -u -b 0 | \($size) | \($busy) | \(.end.sum_sent.bits_per_second / 1e6 | floor) | \($received / 1e6 | floor) | 1x | \(.end.sum_received.lost_percent * 1000 | round / 1000) | \(.end.cpu_utilization_percent.host_total | round) | \(.end.cpu_utilization_percent.remote_total | round) | \(if $received > 0 then $cores / ($received / 1e9) * 100 | round / 100 else "n/a" end) | \(.end.sum_sent.packets / .end.sum_sent.seconds | round) | none |"' "$OUT/iperf3-$run.json" || echo "| iperf3 | $size | $busy | failed | | | | | | | | |"
        fi
    done
    echo
    echo "Rates count UDP payload bytes (TFRC header included), as iperf3 counts its datagrams."
    echo "CPU s per Gbit: the sender's and the receiver's CPU (cores) per Gbit/s received."
    echo
    echo "## Pacing error (actual − scheduled send time), µs"
    echo
    echo "| run | achieved (Mbit/s) | packets | p50 | p90 | p99 | p99.9 | max | sender CPU % | timer granularity (µs) | probe p99, same wait (µs) | probe p99, kernel sleep (µs) | p99 ÷ probe p99 (same wait) |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    for run in 10M 100M 10M-realtime 100M-realtime 100M-busy; do
        [ -f "$OUT/pacing-$run.send.json" ] || continue
        probe_json="$OUT/pacing-$run.probe.json"
        [ -s "$probe_json" ] || echo '{}' >"$probe_json"
        jq -r --arg run "$run" --slurpfile probe "$probe_json" '
            ($probe[0].sleep_then_spin.p99_us // null) as $floor
            | ($probe[0].sleep.p99_us // null) as $sleep
            | "| \($run) | \(.end.sender.bits_per_second / 1e6 * 10 | round / 10) | \(.end.pacing.samples) | \(.end.pacing.p50_us * 10 | round / 10) | \(.end.pacing.p90_us * 10 | round / 10) | \(.end.pacing.p99_us * 10 | round / 10) | \(.end.pacing.p999_us * 10 | round / 10) | \(.end.pacing.max_us | round) | \(.end.cpu_utilization_percent.host_total | round) | \(.start.timer.timer_granularity_us * 10 | round / 10) | \(if $floor then ($floor * 10 | round / 10) else "n/a" end) | \(if $sleep then ($sleep * 10 | round / 10) else "n/a" end) | \(if $floor and $floor > 0 then "\(.end.pacing.p99_us / $floor * 100 | round / 100)x" else "n/a" end) |"' "$OUT/pacing-$run.send.json"
    done
    echo
    echo "Probe: crates/tfrc-udp/examples/wakeup_probe.rs right after the run, same load and priority, at the run's mean packet interval; the target (issue 41) is pacing p99 within 1.2x the probe's p99."
    echo
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee -a "$OUT/summary.md"
