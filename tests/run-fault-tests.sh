#!/usr/bin/env bash
# The fault tests of tests/faults: C programs that once made corral corrupt,
# hang or outlive the program it runs. Each runs under `corral run` with
# both policies and every lock algorithm (or those its `// fault-locks:`
# line names), loaded at the first call, and each parking lock once more
# loaded at the first contended hand-off (not where a `// fault-deferred: no:`
# line says why), and must exit 0 within its limit. The scripts there
# (tests/faults/*.sh CORRAL SCRATCH) check what a C program cannot, such as
# signals sent to corral itself.
#
#   tests/run-fault-tests.sh [CORRAL]   (default: target/release/corral,
#                                        built with the preload if missing)
set -euo pipefail
cd "$(dirname "$0")/.."

corral=${1:-target/release/corral}
if [[ ! -x $corral || ! -f $(dirname "$corral")/libcorral_preload.so || ! -f $(dirname "$corral")/libcorral_shim.so ]]; then
    cargo build --release -q -p corral -p corral-preload -p corral-shim
fi
corral=$(realpath "$corral")
out=target/faults
mkdir -p "$out"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
all_algs="tas ttas ticket ticket-backoff mcs clh k42 futex adaptive"
failed=0
for src in tests/faults/*.c; do
    name=$(basename "$src" .c)
    # shellcheck disable=SC2046
    cc -O2 -Wall -Werror -pthread -o "$out/$name" "$src" $(sed -n 's|^// fault-cflags: ||p' "$src")
    algs=$(sed -n 's|^// fault-locks: ||p' "$src")
    algs=${algs:-$all_algs}
    # `// fault-deferred: no: WHY` keeps a program off the mid-run load.
    deferred=$(sed -n 's|^// fault-deferred: \([a-z]*\).*|\1|p' "$src")
    bad=0
    # Each lock with corral loaded from the first call (--load-after-contended
    # 0: the default would leave a program that barely contends on glibc's
    # locks); a parking lock also loaded at the first contended hand-off, so the
    # switch from glibc's locks to corral's happens inside the program.
    runs=()
    for alg in $algs; do
        for policy in none lca; do
            runs+=("--lock $alg --policy $policy --load-after-contended 0")
        done
        if [[ $deferred != no && ($alg == futex || $alg == adaptive) ]]; then
            runs+=("--lock $alg --policy lca --load-after-contended 1")
        fi
    done
    for run in "${runs[@]}"; do
        read -r -a flags <<<"$run"
        set +e
        timeout 120 "$corral" run --quiet "${flags[@]}" \
            --events "$scratch/events.jsonl" -- "$out/$name" "$scratch/$name.data" \
            >"$scratch/out" 2>&1
        rc=$?
        set -e
        if [[ $rc != 0 ]]; then
            echo "FAIL $name $run (exit $rc)"
            head -20 "$scratch/out"
            failed=1
            bad=1
        fi
    done
    if [[ $bad == 0 ]]; then
        mid_run="; parking locks also loaded at the first contended hand-off"
        [[ $deferred == no ]] && mid_run=""
        echo "ok   $name ($(tail -1 "$scratch/out"); locks: $algs; policies none, lca$mid_run)"
    fi
done
for script in tests/faults/*.sh; do
    name=$(basename "$script" .sh)
    if timeout 120 bash "$script" "$corral" "$scratch" >"$scratch/out" 2>&1; then
        echo "ok   $name ($(tail -1 "$scratch/out"))"
    else
        echo "FAIL $name"
        cat "$scratch/out"
        failed=1
    fi
done
exit $failed
