#!/usr/bin/env bash
# Debian packages corral's tests use, installed where missing (run as root;
# CI is):
#   required: a C compiler and static libc for tests/c and the fixtures,
#             the real multithreaded programs
#             of tests/real-programs.sh, and those `corral bench apps` runs
#             (sysbench, stress-ng, pigz, git, rocksdb's db_bench), and tmux,
#             in which the corral top test drives the live view;
#   optional: clang, llvm and libbpf headers, so the tests can check that the
#             committed BPF object matches its source (skipped without them);
#             perf (linux-perf), whose uprobe count the lock profile's
#             contended count is checked against (skipped without it).
set -euo pipefail
need=()
command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)
# A static libc: run_cli.rs builds a static program (no preload loads into it).
command -v cc >/dev/null 2>&1 && [[ ! -f $(cc -print-file-name=libc.a) ]] && need+=(libc6-dev)
command -v xz >/dev/null 2>&1 || need+=(xz-utils)
command -v zstd >/dev/null 2>&1 || need+=(zstd)
command -v pigz >/dev/null 2>&1 || need+=(pigz)
command -v pbzip2 >/dev/null 2>&1 || need+=(pbzip2)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v sysbench >/dev/null 2>&1 || need+=(sysbench)
command -v stress-ng >/dev/null 2>&1 || need+=(stress-ng)
command -v git >/dev/null 2>&1 || need+=(git)
command -v db_bench >/dev/null 2>&1 || need+=(rocksdb-tools)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
optional=()
command -v clang >/dev/null 2>&1 || optional+=(clang llvm)
[[ -f /usr/include/bpf/bpf_helpers.h ]] || optional+=(libbpf-dev)
command -v perf >/dev/null 2>&1 || optional+=(linux-perf)
if [[ ${#need[@]} -eq 0 && ${#optional[@]} -eq 0 ]]; then
    exit 0
fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    if [[ ${#need[@]} -gt 0 ]]; then
        echo "ci-deps: missing ${need[*]}; not root or no apt-get to install them" >&2
        exit 1
    fi
    echo "ci-deps: skipping optional ${optional[*]} (not root or no apt-get)" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
if [[ ${#need[@]} -gt 0 ]]; then
    apt-get install -y -q --no-install-recommends "${need[@]}"
fi
if [[ ${#optional[@]} -gt 0 ]]; then
    apt-get install -y -q --no-install-recommends "${optional[@]}" ||
        echo "ci-deps: optional ${optional[*]} not installed; the BPF object and perf count checks are skipped" >&2
fi
