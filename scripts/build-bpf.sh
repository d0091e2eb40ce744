#!/usr/bin/env bash
# Rebuilds corral's kernel-lock BPF object from its C source, and records the
# source's SHA-256 beside it so a test can tell when the object is stale.
#
#   scripts/build-bpf.sh          rebuild the committed object and its hash
#   scripts/build-bpf.sh --check  compile into a scratch dir (where clang is
#                                 present) and fail if the committed object is
#                                 stale; without clang, check the hash only
#
# Needs clang, llvm-strip and the libbpf headers (Debian: clang llvm
# libbpf-dev); scripts/ci-deps.sh installs them.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=crates/corral-runtime/bpf
src=$dir/kernel_locks.bpf.c
obj=$dir/kernel_locks.bpf.o
hash_file=$dir/kernel_locks.bpf.c.sha256
arch_include=/usr/include/$(uname -m)-linux-gnu

compile() {
    local out=$1
    clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -I"$arch_include" \
        -Wall -Werror -c "$src" -o "$out.full"
    # Drop DWARF, keep .BTF/.BTF.ext (CO-RE needs them): a small object.
    llvm-strip -g "$out.full" -o "$out"
    rm -f "$out.full"
}

source_hash() { sha256sum "$src" | cut -d' ' -f1; }

if [[ ${1:-} == --check ]]; then
    recorded=$(cat "$hash_file")
    if [[ $recorded != "$(source_hash)" ]]; then
        echo "build-bpf: $obj is stale: $src changed; run scripts/build-bpf.sh" >&2
        exit 1
    fi
    if command -v clang >/dev/null 2>&1; then
        scratch=$(mktemp -d)
        trap 'rm -rf "$scratch"' EXIT
        compile "$scratch/check.o"
        echo "build-bpf: $src compiles; committed object is current"
    else
        echo "build-bpf: no clang; source hash matches the committed object"
    fi
    exit 0
fi

compile "$obj"
source_hash >"$hash_file"
echo "build-bpf: wrote $obj ($(stat -c %s "$obj") bytes) and $hash_file"
