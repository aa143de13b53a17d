#!/usr/bin/env bash
# The main job. Until `import-bench` lands: every EF fixture through both execution paths.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"
FIXTURES="${EEST_FIXTURES:-$(pwd)/../shared/fixtures/eest}"
"$CARGO_TARGET_DIR/release/ethrex" ef-test --mode both --parallel-threshold 0 --db rocksdb "$FIXTURES"
