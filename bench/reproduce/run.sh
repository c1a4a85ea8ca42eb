#!/usr/bin/env bash
# Time and size of the main job, `tfrc reproduce` with its defaults (not a test: machines here
# are shared and noisy, run it on a quiet one).
#
#   bench/reproduce/run.sh [REPLICATIONS]      default: the tool's default (10)
#
# Builds the release binary, runs `tfrc reproduce` into out/bench-reproduce under
# `/usr/bin/time -v`, and prints the wall time, the CPU time (user + system), the CPU use
# (CPU time / wall time, at most the number of cores), the peak resident memory, the report
# folder's size, and the sum of the runs' own wall times from runs.csv (what the simulations
# alone cost). Targets: under 90 s of wall time on 2 cores (issue 41; 120 s before),
# report folder under 200 MB.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
REPLICATIONS=${1:-}
if [ -n "$REPLICATIONS" ] && ! [[ "$REPLICATIONS" =~ ^[1-9][0-9]*$ ]]; then
    echo "run.sh: REPLICATIONS must be a positive integer, got '$REPLICATIONS'" >&2; exit 2
fi
if [ ! -x /usr/bin/time ]; then
    if [ "$(id -u)" = 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y time >&2
    else
        echo "run.sh needs /usr/bin/time (Debian package 'time')" >&2; exit 1
    fi
fi
cargo build --release -q -p tfrc-cli
OUT=out/bench-reproduce
rm -rf "$OUT"
mkdir -p "$(dirname "$OUT")"
ARGS=(reproduce --out "$OUT" --quiet)
[ -n "$REPLICATIONS" ] && ARGS+=(--replications "$REPLICATIONS")
/usr/bin/time -v "$CARGO_TARGET_DIR/release/tfrc" "${ARGS[@]}" >/dev/null 2>"$OUT.time"
python3 - "$OUT" "$OUT.time" "$(nproc)" <<'PY'
import csv, os, re, sys
out, timing, cores = sys.argv[1], open(sys.argv[2]).read(), int(sys.argv[3])
def field(name):
    return re.search(re.escape(name) + r": (.*)", timing).group(1).strip()
wall = field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")
wall_s = sum(float(part) * 60 ** i for i, part in enumerate(reversed(wall)))
cpu_s = float(field("User time (seconds)")) + float(field("System time (seconds)"))
rss_mb = int(field("Maximum resident set size (kbytes)")) / 1024
size_mb = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs) / 1e6
runs = list(csv.DictReader(open(os.path.join(out, "runs.csv"))))
sim_s = sum(float(r["wall_time_s"]) for r in runs)
replications = len({r["replication"] for r in runs})
print(f"tfrc reproduce: {replications} replication(s), {len(runs)} runs; wall {wall_s:.1f} s "
      f"(target < 90 s), CPU {cpu_s:.1f} s ({cpu_s / wall_s:.2f} of {cores} cores), "
      f"simulations alone {sim_s:.1f} s of CPU, peak memory {rss_mb:.0f} MB, "
      f"report {size_mb:.0f} MB (target < 200 MB)")
PY
