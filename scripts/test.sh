#!/usr/bin/env bash
# Every test corral has: the workspace's unit, integration and property
# tests; the loom model checks of the lock algorithms; the C programs and
# real Debian programs under the preload; the fault tests. scripts/ci-deps.sh, run first,
# installs what those need (as root; CI is).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== Debian packages the tests use (installed if missing)"
bash scripts/ci-deps.sh

echo "== cargo test (workspace)"
# The CLI's run tests load libcorral_shim.so and libcorral_preload.so from
# beside the test's `corral`; no crate depends on the cdylibs, so `cargo
# test` alone does not build them.
cargo build -q -p corral-preload -p corral-shim
cargo test --workspace --all-targets

echo "== loom model checks (corral-locks)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
    cargo test -p corral-locks --release --test loom

echo "== C programs with and without libcorral_preload.so"
cargo build --release -q -p corral -p corral-preload -p corral-shim
tests/run-c-tests.sh

echo "== real programs under corral run"
tests/real-programs.sh

echo "== fault tests (tests/faults) under corral run"
tests/run-fault-tests.sh

echo "suites: 5 passed, 0 failed"
