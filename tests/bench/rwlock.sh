#!/usr/bin/env bash
# glibc's rwlock against corral's (`corral run`, default policy) on one
# small program: readers-heavy (5 % writes) and writer-heavy (50 %), 2 and
# 8 threads. Runs alternate glibc / corral, REPS times each; prints the
# median of each column. Builds what it needs.
#
#   tests/bench/rwlock.sh [MS per run, default 1000] [REPS, default 3]
set -euo pipefail
cd "$(dirname "$0")/../.."
ms=${1:-1000}
reps=${2:-3}
[[ -x target/release/corral && -f target/release/libcorral_preload.so ]] ||
    cargo build --release -q -p corral -p corral-preload
mkdir -p target/bench
cc -O2 -Wall -Werror -pthread -o target/bench/rwlock_bench tests/bench/rwlock_bench.c
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
printf '%-14s %7s | %10s %8s %9s | %10s %8s %9s\n' workload threads \
    "glibc Mop/s" "cpu-s/s" "ns-cpu/op" "corral Mop/s" "cpu-s/s" "ns-cpu/op"
for pct in 5 50; do
    for threads in 2 8; do
        : >target/bench/glibc.txt
        : >target/bench/corral.txt
        for _ in $(seq "$reps"); do
            target/bench/rwlock_bench "$threads" "$pct" "$ms" >>target/bench/glibc.txt
            target/release/corral run --quiet -- target/bench/rwlock_bench "$threads" "$pct" "$ms" \
                >>target/bench/corral.txt
        done
        row=()
        for side in glibc corral; do
            for col in 1 3 5; do
                row+=("$(awk -v c=$col '{print $c}' target/bench/$side.txt | median)")
            done
        done
        printf '%-14s %7s | %10s %8s %9s | %10s %8s %9s\n' "$pct% writes" "$threads" "${row[@]}"
    done
done
