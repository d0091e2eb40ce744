#!/usr/bin/env bash
# Real multithreaded programs from Debian's packages under `corral run`:
# their output must be byte-identical to a run without corral, and the
# report must list their threads with wait shares.
#
#   tests/real-programs.sh [CORRAL]   (default: target/release/corral, built if missing)
#
# Needs xz-utils, zstd, pigz, pbzip2 and coreutils (scripts/ci-deps.sh
# installs them); a missing program fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

corral=${1:-target/release/corral}
if [[ ! -x $corral || ! -f $(dirname "$corral")/libcorral_preload.so || ! -f $(dirname "$corral")/libcorral_shim.so ]]; then
    cargo build --release -q -p corral -p corral-preload -p corral-shim
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# 24 MB of text: enough for every compressor to use both threads.
head -c 18000000 /dev/urandom | base64 >"$work/in.txt"

# sort -S 64M sorts in memory on 2 threads (with a smaller buffer it merges
# on one, and corral starts no monitor in a single-threaded process).
programs=(
    "xz -T2 -3 -c $work/in.txt"
    "zstd -T2 -q -c $work/in.txt"
    "pigz -p 2 -c $work/in.txt"
    "pbzip2 -p2 -c $work/in.txt"
    "sort --parallel=2 -S 64M $work/in.txt"
)
failed=0
for cmd in "${programs[@]}"; do
    read -r -a argv <<<"$cmd"
    plain=$("${argv[@]}" | sha256sum)
    # As a user runs it: these programs barely contend, so the default
    # keeps them on glibc's locks (--load-after-contended); output only.
    under=$("$corral" run --quiet -- "${argv[@]}" | sha256sum)
    if [[ $plain == "$under" ]]; then
        echo "ok   ${argv[0]} (corral run's defaults): identical output"
    else
        echo "FAIL ${argv[0]} (corral run's defaults): output differs"
        failed=1
    fi
    # corral's locks from the first call, with each policy.
    for policy in none lca; do
        under=$("$corral" run --quiet --policy "$policy" --load-after-contended 0 --report "$work/report.json" -- "${argv[@]}" | sha256sum)
        shares=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(" ".join("%d:%.3f%s" % (t["tid"], t["wait_share"], "*" if t["lock_intensive"] else "") for t in r["threads"]))
' "$work/report.json")
        if [[ $plain == "$under" && -n $shares ]]; then
            echo "ok   ${argv[0]} --policy $policy: identical output; wait shares (* = lock-intensive): $shares"
        else
            echo "FAIL ${argv[0]} --policy $policy: output differs or no threads reported"
            failed=1
        fi
    done
done
exit $failed
