#!/usr/bin/env bash
# Runs every check and test:
#   0. formatting (`cargo fmt --check`) and lints (`cargo clippy -D warnings`, with the
#      workspace's `missing_docs` and `unreachable_pub`);
#   1. the workspace's unit and integration tests (EF fixtures on all three backends and
#      both execution paths, parallel-vs-sequential differential tests, node/Engine API
#      tests, kill -9 durability tests, trie, storage, workload);
#   2. the EF fixtures through the `ethrex` binary on every backend, both paths;
#   3. the Hive tooling's unit tests and the Docker-free consume-engine run against the node;
#   4. small generated chains through revme and geth (accepted) and mutated blocks (rejected);
#      geth's eth protocol suite (devp2p eth-test) against the node, and full sync from geth
#      and by geth over loopback (bench/eth-test.sh, bench/sync-geth.sh);
#   5. seconds-long versions of the studies: the I/O-realistic bench and bench/io-study.sh,
#      the BAL design lab (bal-lab sizes, every design's consumer importing a chain), the
#      storage study (db-bench on both backends, bench/db-study.sh --quick) and the binary
#      trie (roots against geth's bintrie at every group depth, trie-bench).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"
FIXTURES="${EEST_FIXTURES:-$(pwd)/../shared/fixtures/eest-glamsterdam}"
export EEST_FIXTURES="$FIXTURES"
# The execution-apis RPC suite's chain (proof of work to BPO2), read in place.
export EXECUTION_APIS_FIXTURES="${EXECUTION_APIS_FIXTURES:-$(pwd)/../shared/fixtures/execution-apis}"
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
PYTHONDONTWRITEBYTECODE=1 python3 -m unittest discover -s bench -p 'test_geth_rpc_blocks.py'
PYTHONDONTWRITEBYTECODE=1 python3 -m unittest discover -s bench -p 'test_engine_peers.py'
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
echo "== the small stress chain fed to ethrex and geth over the Engine API, every block VALID (bench/engine-peers.sh --quick)"
bench/engine-peers.sh "$SCRATCH/stress" --ethrex "$ETHREX" --geth "$(command -v geth || echo "$(go env GOPATH)/bin/geth")" \
    --json "$SCRATCH/engine-peers.json" --quick
echo "== the many-core model on the small stress chain: a one-core and a two-core run, the model's checks (bench/cores-model.sh --quick)"
bench/cores-model.sh "$SCRATCH/stress" "$SCRATCH/cores-model" --quick
echo "== geth's devp2p test chain (no BALs) imported to the head its headfcu.json names"
bench/eth-test-chain.sh "$SCRATCH/eth-test-chain"
echo "== the execution-apis RPC chain (proof of work, the merge, Shanghai..BPO2) imported by us and geth:"
echo "   eth_getBlockByNumber, receipts, transactions, raw forms and historical state byte for byte for every block (bench/geth-rpc-blocks.sh --more)"
bench/geth-rpc-blocks.sh --more --fixtures "$EXECUTION_APIS_FIXTURES"
echo "== the execution-apis RPC suite under Hive's rpc-compat rules (hive/rpc-compat.sh): no fewer passes than the last count"
EXECUTION_APIS_FIXTURES="$EXECUTION_APIS_FIXTURES" hive/rpc-compat.sh --allow-failures --expect-pass 231
echo "== devp2p eth-test suite (no-txpool subset, quick) against ethrex node"
bench/eth-test.sh --quick
echo "== sync from geth and geth from us (quick)"
bench/sync-geth.sh --quick
echo "== sync with wire BALs against import --bal, alternating (quick: one round of the small chain)"
bench/sync-geth.sh --quick --rounds 1
echo "== discovery (discv4) on loopback: given only geth A, our node finds and dials geth B"
bench/discovery-geth.sh 60
echo "== differential test against geth: random chains and mutated blocks (bench/geth-diff.sh)"
bench/geth-diff.sh 3 "$SCRATCH/geth-diff"
echo "== differential test against geth below the merge: chains from Frontier to Amsterdam with"
echo "   ommers, the DAO fork and reorgs, imported by both, every block compared (bench/geth-diff-forks.sh)"
bench/geth-diff-forks.sh 2 "$SCRATCH/geth-diff-forks"
echo "== ethrex node --dev: web3.py's transfers from the test mnemonic mined (bench/dev-chain.sh)"
bench/dev-chain.sh
echo "== eth_subscribe over WebSocket on ethrex --dev and geth --dev: newHeads, logs, pending (bench/ws-subscriptions.sh)"
bench/ws-subscriptions.sh
echo "== web3.py driving geth --dev and ethrex --dev side by side: deploy, call, estimate, events by filter and"
echo "   subscription, traces (bench/web3-compare.sh)"
bench/web3-compare.sh
# Its helpers' unit tests (after the script, which installs web3.py if missing).
PYTHONDONTWRITEBYTECODE=1 python3 -m unittest discover -s bench -p 'test_web3_compare.py'
echo "== JSON-RPC requests per second against geth on a small stress chain, every answer compared first (bench/rpc-speed.sh --quick)"
bench/rpc-speed.sh --quick
echo "== transactions, blob transactions and a pool-built payload between us and geth (bench/geth-txpool.sh)"
bench/geth-txpool.sh
echo "== the pool under load against geth, a minute-long version (bench/txpool-load.sh --quick)"
bench/txpool-load.sh --quick

# The I/O-realistic bench on a small big-state fixture: cold caches, emulated latency,
# mega blocks of 4, both BAL I/O designs; the bench fails unless every point ends in the
# same state root, and every block is checked against its header on the way.
echo "== import-bench on a small filled state: --cold --batch 1,4 (state roots checked)"
"$ETHREX" fixture stress --out "$SCRATCH/big" --blocks 8 --min-txs 20 --max-txs 60 \
    --gas-limit 30000000 --state-accounts 5000 --state-slots 50000
"$ETHREX" import-bench --fixture "$SCRATCH/big/stress.rlp" --mode all --threads 1,4 \
    --batch 1,4 --bal-design batched-io,parallel-io --cold --read-latency-us 20 --sleep-ms 0 \
    --json "$SCRATCH/big/bench.json"
python3 bench/check_reports.py import-bench "$SCRATCH/big/bench.json"
echo "== bench/io-study.sh --quick (the study's tables, seconds-long version)"
IO_STUDY_FIXTURES="$SCRATCH/io-study-fixtures" bench/io-study.sh --quick "$SCRATCH/io-study"

# The BAL design lab on the small stress chain: every design's size, and every design's
# consumer importing the chain to the sequential import's state root.
echo "== bal-lab sizes and import-bench --bal-design all on the small stress chain"
"$ETHREX" bal-lab sizes --fixture "$SCRATCH/stress/stress.rlp" --json "$SCRATCH/sizes.json" \
    --plot "$SCRATCH/sizes.svg"
"$ETHREX" bal-lab sizes --ef "$FIXTURES" --json "$SCRATCH/ef-sizes.json"
"$ETHREX" import-bench --fixture "$SCRATCH/stress/stress.rlp" --mode sequential --bal-design all \
    --sleep-ms 0 --json "$SCRATCH/designs.json"
python3 bench/check_reports.py bal-designs "$SCRATCH/sizes.json" "$SCRATCH/designs.json" "$SCRATCH/ef-sizes.json"

# The storage study: raw reads on both backends (every value read back is checked against
# the value written, or db-bench fails), then the whole study at toy size.
echo "== db-bench on both backends (seconds-long)"
"$ETHREX" db-bench --db both --entries 50000 --threads 1,4 --seconds 0.3 --cold \
    --json "$SCRATCH/db-bench.json" --plot "$SCRATCH/db-bench.svg"
python3 bench/check_reports.py db-bench "$SCRATCH/db-bench.json"
echo "== bench/db-study.sh --quick"
DB_STUDY_FIXTURES="$SCRATCH/db-study-fixtures" bench/db-study.sh --quick "$SCRATCH/db-study"

# The binary trie: roots against geth v1.17.10's trie/bintrie at every group depth, then
# the group-depth study at toy size.
echo "== bench/bintrie-ref/check.sh (EIP-7864 roots against geth at depths 1-8: 3 random states of"
echo "   10,000 accounts, and the small stress chain's state before and after each block)"
bench/bintrie-ref/check.sh --stress "$SCRATCH/stress"
echo "== trie-bench (seconds-long)"
"$ETHREX" trie-bench --scheme mpt,binary --group-depth 1,2,3,4,5,6,7,8 \
    --workload erc20-balanceof,erc20-approve,erc20-mixed,sload-seq,sstore-seq \
    --entries 2000 --txs 50 --runs 3 --json "$SCRATCH/trie-bench.json"
python3 bench/check_reports.py trie-bench "$SCRATCH/trie-bench.json"
