#!/usr/bin/env bash
# Runs every test: the workspace's unit and integration tests (including the EF fixtures
# on all three database backends), then the EF fixtures through the `ethrex` binary.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"
FIXTURES="${EEST_FIXTURES:-$(pwd)/../shared/fixtures/eest}"
export EEST_FIXTURES="$FIXTURES"

cargo build --release --workspace --locked
cargo test --release --workspace --locked
for db in memory mdbx rocksdb; do
    echo "== ethrex ef-test --db $db --mode both --parallel-threshold 0"
    "$CARGO_TARGET_DIR/release/ethrex" ef-test --db "$db" --mode both --parallel-threshold 0 "$FIXTURES"
done
