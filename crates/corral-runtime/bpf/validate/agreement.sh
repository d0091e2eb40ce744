#!/usr/bin/env bash
# Checks corral's kernel lock-wait share against bpftrace run beside it.
#
#   agreement.sh [BENCH] [OPS]    (default: fops 100000; root, bpftrace)
#
# A shell that will exec `corral bench kernel BENCH --threads 8` is started
# first; bpftrace (spin_share.bt) and then `corral attach --observe-only`
# attach to its pid; the benchmark starts once both are in, so both see its
# whole life. Both count spin-lock waits while the task is on a CPU, over the
# same slices; the script prints both shares and their ratio.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
bench=${1:-fops}
ops=${2:-100000}
corral=${CORRAL:-$root/target/release/corral}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

sh -c "sleep 6; exec $corral bench kernel $bench --threads 8 --ops-per-worker $ops" >"$out/bench.txt" 2>&1 &
pid=$!
bpftrace "$here/spin_share.bt" "$pid" >"$out/bpftrace.txt" 2>&1 &
until grep -qs Attaching "$out/bpftrace.txt"; do sleep 0.1; done
"$corral" attach --pid "$pid" --observe-only --json >"$out/corral.json"
wait

python3 - "$pid" "$out" "$bench" <<'PY'
import json, re, sys
pid, out, bench = int(sys.argv[1]), sys.argv[2], sys.argv[3]
report = json.load(open(f"{out}/corral.json"))
threads = [t for t in report["threads"] if t["tgid"] == pid]
wait = sum(t["wait_ns"] for t in threads)
run = sum(t["slice_ns"] for t in threads)
waits = sum(t["waits"] for t in threads)
text = open(f"{out}/bpftrace.txt").read()
get = lambda key: int(re.search(r"@%s: (\d+)" % key, text).group(1))
bt_wait, bt_run, bt_waits = get("wait"), get("run"), get("waits")
print(f"{bench}: corral   {waits} waits, {wait} ns waiting in {run} ns of slices: share {100 * wait / run:.4f}%")
print(f"{bench}: bpftrace {bt_waits} waits, {bt_wait} ns waiting in {bt_run} ns of slices: share {100 * bt_wait / bt_run:.4f}%")
print(f"{bench}: corral / bpftrace share = {(wait / run) / (bt_wait / bt_run):.3f}")
PY
