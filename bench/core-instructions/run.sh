#!/usr/bin/env bash
# Instructions per operation of the protocol core, counted by callgrind (valgrind): the same
# operations on the same recorded endpoints as the criterion benchmark (crates/tfrc-proto/benches/
# core.rs), but counts that do not move with the machine's load.
#
#   bench/core-instructions/run.sh            a markdown table on stdout
#
# Each operation runs in its own callgrind process with collection switched on only inside the
# bench's `measured_*` function (crates/tfrc-proto/benches/core_instructions.rs), which makes
# every call of that operation on fresh copies of the recorded endpoints; the count is the total
# divided by the calls. Needs valgrind (Debian `valgrind`; installed when run as root).
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
if ! command -v valgrind >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >&2
    else
        echo "valgrind is not installed (apt-get install valgrind)" >&2
        exit 1
    fi
fi
binary=$(cargo bench -p tfrc-proto --bench core_instructions --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "core_instructions" and m.get("executable"):
        print(m["executable"])')
[ -x "$binary" ] || { echo "could not build the core_instructions bench" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| operation | instructions per call | calls |"
echo "|---|---:|---:|"
for profile in rfc ns2; do
    for op in "sender data:sender/data packet" "sender feedback:sender/feedback" \
        "receiver data:receiver/data packet" "receiver feedback:receiver/feedback"; do
        function=measured_${op%%:*}
        function=${function// /_}
        name=$profile/${op#*:}
        valgrind --tool=callgrind --toggle-collect="*$function" --callgrind-out-file="$work/out" \
            "$binary" "$profile" >"$work/calls" 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
        calls=$(awk -v name="$name" '$0 == "calls " name " " $NF { print $NF }' "$work/calls")
        total=$(sed -n 's/^summary: //p' "$work/out")
        [ -n "$calls" ] && [ -n "$total" ] || { echo "no count for $name" >&2; exit 1; }
        echo "| $name | $((total / calls)) | $calls |"
    done
done
