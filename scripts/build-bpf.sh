#!/usr/bin/env bash
# Rebuilds corral's BPF objects (the kernel-lock source and the on-CPU
# table) from their C sources, and records each source's SHA-256 beside it
# so a test can tell when an object is stale.
#
#   scripts/build-bpf.sh          rebuild the committed object and its hash
#   scripts/build-bpf.sh --check  compile into a scratch dir (where clang is
#                                 present) and fail if a committed object is
#                                 stale; without clang, check the hashes only
#
# Needs clang, llvm-strip and the libbpf headers (Debian: clang llvm
# libbpf-dev); scripts/ci-deps.sh installs them.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=crates/corral-runtime/bpf
arch_include=/usr/include/$(uname -m)-linux-gnu

compile() {
    local src=$1 out=$2
    clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -I"$arch_include" \
        -Wall -Werror -c "$src" -o "$out.full"
    # Drop DWARF, keep .BTF/.BTF.ext (CO-RE needs them): a small object.
    llvm-strip -g "$out.full" -o "$out"
    rm -f "$out.full"
}

for name in kernel_locks oncpu; do
    src=$dir/$name.bpf.c
    obj=$dir/$name.bpf.o
    hash_file=$dir/$name.bpf.c.sha256
    hash=$(sha256sum "$src" | cut -d' ' -f1)
    if [[ ${1:-} == --check ]]; then
        if [[ $(cat "$hash_file") != "$hash" ]]; then
            echo "build-bpf: $obj is stale: $src changed; run scripts/build-bpf.sh" >&2
            exit 1
        fi
        if command -v clang >/dev/null 2>&1; then
            scratch=$(mktemp -d)
            compile "$src" "$scratch/check.o"
            rm -rf "$scratch"
            echo "build-bpf: $src compiles; committed object is current"
        else
            echo "build-bpf: no clang; source hash of $src matches its object"
        fi
        continue
    fi
    compile "$src" "$obj"
    echo "$hash" >"$hash_file"
    echo "build-bpf: wrote $obj ($(stat -c %s "$obj") bytes) and $hash_file"
done
