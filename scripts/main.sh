#!/usr/bin/env bash
# The main job: generate the default stress fixture (149 blocks, 100M gas limit, 200-500
# transactions per block) if it is not there yet, then import it in every mode
# (sequential, sequential-pooled, parallel, ceiling) on RocksDB and print the table.
# Extra arguments go to `ethrex import-bench` (e.g. --db mdbx, --threads 1).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"
ETHREX="$CARGO_TARGET_DIR/release/ethrex"
OUT="${STRESS_DIR:-out/stress}"
# Always ask cargo: it rebuilds only what changed, and a stale binary would bench old code.
cargo build --release --locked -p ethrex
if [ ! -f "$OUT/stress.rlp" ]; then
    "$ETHREX" fixture stress --out "$OUT"
fi
"$ETHREX" import-bench --fixture "$OUT/stress.rlp" --mode all \
    --json "$OUT/bench.json" --plot "$OUT/bench.svg" "$@"
echo "report: $OUT/bench.json, plot: $OUT/bench.svg"
