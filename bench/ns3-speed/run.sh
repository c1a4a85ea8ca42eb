#!/usr/bin/env bash
# Simulator speed against ns-3.37 (not a test; issue 39, docs/performance.md "Against ns-3").
#
#   bench/ns3-speed/run.sh [FLOWS...]        default: 64 1024
#
# For each FLOWS, runs bench/ns3-speed/dumbbell.toml (FLOWS bulk TCP NewReno flows over a
# 100 Mb/s, 40 ms dumbbell, 30 s simulated, 1 s bins) in `tfrc sim` (release build) and in
# ns-3.37 (the program `tfrc ns3` builds; timed alone on the run description `tfrc ns3 --dry-run`
# writes, so neither side's time includes building or converting), each under
# `/usr/bin/time -v`, and prints CPU time (user + system), peak resident memory and the ratios
# ns-3 / ours. VARIANT=cubic (or bbr) runs that variant instead. Both write their per-second
# samples (ours: flows.csv, state.csv, links.csv; ns-3: its samples file). Other work on the
# machine slows both sides; the ratio is what matters.
set -euo pipefail
cd "$(dirname "$0")/../.."
FLOWS_LIST=("$@")
[ ${#FLOWS_LIST[@]} -eq 0 ] && FLOWS_LIST=(64 1024)
VARIANT=${VARIANT:-newreno}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
for flows in "${FLOWS_LIST[@]}"; do
    [[ "$flows" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: FLOWS must be a positive integer, got '$flows'" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "run.sh needs /usr/bin/time (Debian package 'time')" >&2; exit 1; }
cargo build --release -p tfrc-cli >&2
TFRC="$CARGO_TARGET_DIR/release/tfrc"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME="$work/cache"

# measure TIME_FILE -> "cpu_s rss_mb"
measure() {
    local rss user system
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$1")
    user=$(sed -n 's/.*User time (seconds): //p' "$1")
    system=$(sed -n 's/.*System time (seconds): //p' "$1")
    awk -v u="$user" -v s="$system" -v r="$rss" 'BEGIN { printf "%.2f %.1f", u + s, r / 1024 }'
}

echo "| flows | variant | ours CPU s | ns-3 CPU s | ns-3 / ours | ours peak MB | ns-3 peak MB | ns-3 / ours |"
echo "|---|---|---|---|---|---|---|---|"
for flows in "${FLOWS_LIST[@]}"; do
    sets=(--set "flow.0.count=$flows" --set "flow.0.variant=$VARIANT")
    # Build the ns-3 program (cached under $XDG_CACHE_HOME) and write the run description.
    "$TFRC" ns3 bench/ns3-speed/dumbbell.toml "${sets[@]}" --set duration=1s --out "$work/warm-$flows" >/dev/null 2>&1
    "$TFRC" ns3 bench/ns3-speed/dumbbell.toml "${sets[@]}" --dry-run --out "$work/ns3-$flows" >/dev/null
    program=$(ls "$XDG_CACHE_HOME"/tfrc/ns3-*/tfrc-ns3 | head -1)
    /usr/bin/time -v "$program" "$work/ns3-$flows/ns3-run.txt" "$work/ns3-$flows/samples.txt" \
        >/dev/null 2>"$work/ns3-$flows.time"
    /usr/bin/time -v "$TFRC" sim bench/ns3-speed/dumbbell.toml "${sets[@]}" --out "$work/sim-$flows" \
        >/dev/null 2>"$work/sim-$flows.time"
    read -r ours_cpu ours_rss <<<"$(measure "$work/sim-$flows.time")"
    read -r ns3_cpu ns3_rss <<<"$(measure "$work/ns3-$flows.time")"
    awk -v f="$flows" -v v="$VARIANT" -v oc="$ours_cpu" -v nc="$ns3_cpu" -v orss="$ours_rss" -v nrss="$ns3_rss" \
        'BEGIN { printf "| %d | %s | %.2f | %.2f | %.1f× | %.1f | %.1f | %.1f× |\n", f, v, oc, nc, nc / oc, orss, nrss, nrss / orss }'
done
