#!/usr/bin/env bash
# Debian packages the runtime's tests use: a C compiler for tests/c and the
# real multithreaded programs of tests/real-programs.sh. Run as root (CI is).
set -euo pipefail
need=()
command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v xz >/dev/null 2>&1 || need+=(xz-utils)
command -v zstd >/dev/null 2>&1 || need+=(zstd)
command -v pigz >/dev/null 2>&1 || need+=(pigz)
command -v pbzip2 >/dev/null 2>&1 || need+=(pbzip2)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [[ ${#need[@]} -eq 0 ]]; then
    exit 0
fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "tests/ci-deps.sh: missing ${need[*]}; not root or no apt-get" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${need[@]}"
