#!/usr/bin/env bash
# The lock profile's cost on sysbench mutex: `corral run --policy none`
# with the profile on and with --no-lock-profile, at an uncontended point
# (1 thread) and a contended one (4 threads, one mutex), REPEAT rounds in
# a random order each round; prints each point's median time and on/off.
# Usage: scripts/profile-cost.sh [REPEAT]   (release build: cargo build --release)
set -euo pipefail
repeat=${1:-9}
root=$(cd "$(dirname "$0")/.." && pwd)
corral=$root/target/release/corral
export CORRAL_PRELOAD=$root/target/release/libcorral_preload.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[[ -n ${KEEP:-} ]] && trap - EXIT && echo "runs in $tmp" >&2
# point: threads and locks per thread (sysbench's total time is measured)
declare -A threads=([uncontended]=1 [contended]=4)
declare -A locks=([uncontended]=4000000 [contended]=200000)
for ((r = 0; r < repeat; r++)); do
    for run in $(printf '%s\n' uncontended:on uncontended:off contended:on contended:off | shuf); do
        point=${run%:*} prof=${run#*:}
        flag=()
        [[ $prof == off ]] && flag=(--no-lock-profile)
        "$corral" run --quiet --policy none "${flag[@]}" -- sysbench mutex \
            --threads="${threads[$point]}" --mutex-num=1 --mutex-loops=0 \
            --mutex-locks="${locks[$point]}" run |
            awk '/total time:/ {sub("s", "", $3); print $3}' >>"$tmp/$run"
    done
done
median() { sort -g "$1" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
printf '%-12s %10s %10s %8s\n' point on_s off_s on/off
for point in uncontended contended; do
    on=$(median "$tmp/$point:on") off=$(median "$tmp/$point:off")
    printf '%-12s %10s %10s %8.3f\n' "$point" "$on" "$off" "$(echo "$on / $off" | bc -l)"
done
