#!/usr/bin/env bash
# Installs the Debian packages corral's optional checks use: clang, llvm and
# the libbpf headers to rebuild and check the kernel-lock BPF object. The
# build and the tests need none of them; run as root (CI is).
set -euo pipefail
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "ci-deps: not root or no apt-get; skipping (the tests do not need these)" >&2
    exit 0
fi
if command -v clang >/dev/null 2>&1 && [[ -f /usr/include/bpf/bpf_helpers.h ]]; then
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends clang llvm libbpf-dev
