#!/usr/bin/env bash
# Runs every check and test:
#   0. formatting (`cargo fmt --check`) and lints (`cargo clippy -D warnings`, with the
#      workspace's `missing_docs` and `unreachable_pub`);
#   1. the workspace's unit and integration tests (EF fixtures on all three backends and
#      both execution paths, parallel-vs-sequential differential tests, node/Engine API
#      tests, kill -9 durability tests, trie, storage, workload);
#   2. the EF fixtures through the `ethrex` binary on every backend, both paths;
#   3. the Hive tooling's unit tests and the Docker-free consume-engine run against the node;
#   4. small generated chains through revme and geth (accepted) and mutated blocks (rejected).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"
FIXTURES="${EEST_FIXTURES:-$(pwd)/../shared/fixtures/eest-glamsterdam}"
export EEST_FIXTURES="$FIXTURES"
ETHREX="$CARGO_TARGET_DIR/release/ethrex"

for component in rustfmt clippy; do
    # A toolchain installed without them gets them here (rustup is idempotent).
    cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1 || rustup component add "$component"
done
echo "== cargo fmt --check"
cargo fmt --all --check
echo "== cargo clippy (warnings are errors)"
# The release profile, so that clippy shares build-script outputs with the build below.
cargo clippy --release --workspace --all-targets --locked -- -D warnings

cargo build --release --workspace --locked
cargo test --release --workspace --locked
# The trie hashes changed nodes with the widest Keccak this CPU has (8 lanes with AVX-512,
# 4 with AVX2, else one at a time); run the trie tests on the narrower paths too.
for lanes in 4 1; do
    echo "== trie tests with ETHREX_KECCAK_LANES=$lanes"
    ETHREX_KECCAK_LANES=$lanes cargo test --release --locked -p ethrex-trie
done

echo "== Hive tooling unit tests"
PYTHONDONTWRITEBYTECODE=1 python3 -m unittest discover -s hive -p 'test_*.py'
echo "== consume-engine (Docker-free) against ethrex node"
PYTHONDONTWRITEBYTECODE=1 python3 hive/consume_engine.py --bin "$ETHREX" --db rocksdb "$FIXTURES"

for db in memory mdbx rocksdb; do
    echo "== ethrex ef-test --db $db --mode both --parallel-threshold 0"
    "$ETHREX" ef-test --db "$db" --mode both --parallel-threshold 0 "$FIXTURES"
done

# Our chains against the independent executors (a seconds-long version of the studies that
# bench/verify-fixture.sh and bench/geth-diff.sh run at full size).
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
echo "== a small Amsterdam stress chain through revme 43 and geth (bench/verify-fixture.sh)"
"$ETHREX" fixture stress --out "$SCRATCH/stress" --blocks 3 --min-txs 20 --max-txs 80 --gas-limit 30000000
bench/verify-fixture.sh "$SCRATCH/stress"
echo "== differential test against geth: random chains and mutated blocks (bench/geth-diff.sh)"
bench/geth-diff.sh 3 "$SCRATCH/geth-diff"
