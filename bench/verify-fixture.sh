#!/usr/bin/env bash
# Checks a stress fixture with two executors that share no code with ours, both on the
# Amsterdam chain itself (glamsterdam-devnet-8 rules):
#   - revm's own blockchain-test runner (`revme btest`, revm 43.0.3): re-executes every
#     transaction, compares the BAL it builds and the post state;
#   - geth's `evm blocktest` (go-ethereum v1.17.10): full block validation, state roots,
#     receipts and BALs.
# With OSAKA_DIR it also checks the Osaka variant of the same workload with geth (generated
# with the same seed and size if missing).
# Usage: bench/verify-fixture.sh DIR [OSAKA_DIR]
#   DIR holds stress.blockchain_test.json (generate it with: ethrex fixture stress --out DIR).
set -euo pipefail
DIR="${1:?usage: bench/verify-fixture.sh DIR [OSAKA_DIR]}"
OSAKA_DIR="${2:-}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/bench/oracles.sh"   # revme, evm; $ETHREX and ensure_ethrex

AMS="$DIR/stress.blockchain_test.json"
[ -f "$AMS" ] || { echo "error: $AMS not found (generate it with: ethrex fixture stress --out $DIR)" >&2; exit 2; }

echo "== revme btest $AMS"
revme btest "$AMS" > "$DIR/revme-btest.log" 2>&1 || { tail -40 "$DIR/revme-btest.log"; echo "FAIL: revme btest"; exit 1; }
tail -3 "$DIR/revme-btest.log"

geth_blocktest() {
    local file="$1" log="$2"
    evm blocktest "$file" > "$log" 2>&1 || { tail -40 "$log"; echo "FAIL: geth evm blocktest $file"; exit 1; }
    # Every test must report a pass, and none a failure.
    if grep -q '"pass": *false' "$log" || ! grep -q '"pass": *true' "$log"; then
        tail -40 "$log"; echo "FAIL: geth evm blocktest $file"; exit 1
    fi
}
echo "== evm blocktest $AMS"
geth_blocktest "$AMS" "$DIR/geth-blocktest.log"

if [ -n "$OSAKA_DIR" ]; then
    ensure_ethrex
    if [ ! -f "$OSAKA_DIR/stress.blockchain_test.json" ]; then
        BLOCKS=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(len(next(iter(d.values()))['blocks']))" "$AMS")
        SEED=$(python3 -c "import json,sys,re; d=json.load(open(sys.argv[1])); m=re.search(r'seed(\d+)', next(iter(d))); print(m.group(1) if m else 1)" "$AMS")
        echo "== generating the Osaka variant ($BLOCKS blocks, seed $SEED) in $OSAKA_DIR"
        "$ETHREX" fixture stress --fork osaka --blocks "$BLOCKS" --seed "$SEED" --out "$OSAKA_DIR"
    fi
    echo "== evm blocktest $OSAKA_DIR/stress.blockchain_test.json"
    geth_blocktest "$OSAKA_DIR/stress.blockchain_test.json" "$OSAKA_DIR/geth-blocktest.log"
    echo "revme btest and geth evm blocktest (Amsterdam), geth evm blocktest (Osaka): passed"
else
    echo "revme btest and geth evm blocktest (Amsterdam): passed"
fi
