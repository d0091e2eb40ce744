#!/usr/bin/env bash
# Tracing overhead on a kernel-lock-light job: `xz -T2` alone and under
# `corral attach` (BPF tracing, monitor and policy), alternating, N pairs.
#
#   overhead.sh [PAIRS] [MIB]     (default: 8 pairs of 24 MiB; root, xz)
#
# Prints per pair the job's wall and CPU seconds, corral's own CPU seconds
# and how many of the job's threads it moved (a lock-light job: none), and at
# the end the median ratios traced / plain. On a shared machine compare CPU
# seconds: wall time there measures the neighbours.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
pairs=${1:-8}
mib=${2:-24}
corral=${CORRAL:-$root/target/release/corral}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Half random (base64), half text: compresses like ordinary data.
while (( $(stat -c %s "$out/data" 2>/dev/null || echo 0) < mib * 1048576 )); do
    head -c 262144 /dev/urandom | base64 >>"$out/data"
    cat "$root"/README* "$root"/crates/*/src/*.rs >>"$out/data" 2>/dev/null || true
done
job="xz -T2 -3 -c $out/data"

plain() { /usr/bin/time -f "%e %U %S" -o "$out/plain" $job >/dev/null; cat "$out/plain"; }
traced() {
    sh -c "sleep 0.7; exec /usr/bin/time -f '%e %U %S' -o $out/traced $job >/dev/null" &
    local pid=$!
    /usr/bin/time -f "%U %S" -o "$out/corral" "$corral" attach --pid "$pid" --json >"$out/report.json"
    wait
    local moved
    moved=$(python3 -c "import json; r = json.load(open('$out/report.json')); print(len(r['affinity']), sum(t['lock_intensive'] for t in r['threads']))")
    echo "$(cat "$out/traced") $(cat "$out/corral") $moved"
}
for i in $(seq 1 "$pairs"); do
    if (( i % 2 )); then p=$(plain); t=$(traced); else t=$(traced); p=$(plain); fi
    echo "$p $t" | tee -a "$out/pairs"
done
python3 - "$out/pairs" <<'PY'
import statistics, sys
wall, cpu, total = [], [], []
for line in open(sys.argv[1]):
    pw, pu, ps, tw, tu, ts, cu, cs, moves, intensive = map(float, line.split())
    wall.append(tw / pw)
    cpu.append((tu + ts) / (pu + ps))
    total.append((tu + ts + cu + cs) / (pu + ps))
print("columns: plain wall user sys | traced wall user sys | corral user sys | affinity changes, threads classified")
print(f"median traced/plain: wall {statistics.median(wall):.3f}, job CPU {statistics.median(cpu):.3f}, "
      f"job + corral CPU {statistics.median(total):.3f} over {len(wall)} pairs")
PY
