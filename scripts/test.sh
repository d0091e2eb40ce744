#!/usr/bin/env bash
# Every test corral has: the workspace's unit, integration and property
# tests, then the loom model checks of the lock algorithms.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo test (workspace)"
cargo test --workspace --all-targets

echo "== loom model checks (corral-locks)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
    cargo test -p corral-locks --release --test loom
