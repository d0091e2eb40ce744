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
exit $failed
