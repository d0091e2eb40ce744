#!/usr/bin/env bash
# The C test programs of tests/c, each run without corral and then under
# libcorral_preload.so with every lock algorithm (policy none and lca):
# stdout and exit status must be identical. Contended loops use at most two
# threads: with more threads than cores, spinning FIFO locks without
# corral's policy collapse (the phenomenon corral exists for), which would
# make a correctness test slow, not wrong.
#
#   tests/run-c-tests.sh [PRELOAD.so]   (default: target/release/libcorral_preload.so,
#                                        built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."

preload=${1:-target/release/libcorral_preload.so}
if [[ ! -f $preload ]]; then
    cargo build --release -q -p corral-preload
fi
preload=$(realpath "$preload")
out=target/ctests
mkdir -p "$out"
algs="tas ttas ticket ticket-backoff mcs clh k42 futex adaptive"
failed=0
for src in tests/c/*.c; do
    name=$(basename "$src" .c)
    cc -O2 -Wall -Werror -pthread -o "$out/$name" "$src"
    set +e
    expected=$("$out/$name"); expected_rc=$?
    set -e
    bad=0
    for alg in $algs; do
        for policy in none lca; do
            set +e
            got=$(LD_PRELOAD=$preload CORRAL_LOCK=$alg CORRAL_POLICY=$policy timeout 60 "$out/$name")
            rc=$?
            set -e
            if [[ $rc != "$expected_rc" || $got != "$expected" ]]; then
                echo "FAIL $name --lock $alg --policy $policy (exit $rc, expected $expected_rc)"
                diff <(echo "$expected") <(echo "$got") | head -20 || true
                failed=1
                bad=1
            fi
        done
    done
    if [[ $bad == 0 ]]; then
        echo "ok   $name ($(echo "$expected" | wc -l) lines, 9 algorithms x 2 policies)"
    fi
done
# tests/c-deferred: programs for `corral run --load-after-contended`, which
# keeps a process on glibc's locks until contention loads corral: run under
# corral run (its shim and environment), each parking algorithm and policy;
# each prints "ok" and exits 0 (without the flag it fails: corral loads at
# once).
corral=target/release/corral
if [[ ! -x $corral ]]; then
    cargo build --release -q -p corral -p corral-shim
fi
for src in tests/c-deferred/*.c; do
    name=$(basename "$src" .c)
    cc -O2 -Wall -Werror -pthread -o "$out/$name" "$src"
    bad=0
    for alg in futex adaptive; do
        for policy in none lca; do
            set +e
            got=$(timeout 60 "$corral" run --quiet --lock "$alg" --policy "$policy" \
                --load-after-contended 1000 -- "$out/$name")
            rc=$?
            set -e
            if [[ $rc != 0 || $got != ok ]]; then
                echo "FAIL $name --lock $alg --policy $policy --load-after-contended 1000 (exit $rc): $got"
                failed=1
                bad=1
            fi
        done
    done
    if [[ $bad == 0 ]]; then
        echo "ok   $name (2 algorithms x 2 policies, deferred load)"
    fi
done
exit $failed
