#!/usr/bin/env bash
# Checks a stress fixture with executors that share no code with ours:
#   - revm's own blockchain-test runner (`revme btest`, revm 41.0.0) on the Amsterdam chain
#     (it re-executes every transaction, compares the BAL it builds and the post state);
#   - geth's `evm blocktest` (go-ethereum v1.17.10: full block validation, state roots and
#     receipts) on the Osaka variant of the same workload. geth 1.17.10 follows a later
#     Amsterdam spec, so it can only check the Osaka chain.
# Usage: bench/verify-fixture.sh DIR [OSAKA_DIR]
#   DIR holds stress.blockchain_test.json (Amsterdam). OSAKA_DIR defaults to DIR/osaka and is
#   generated with the same seed and size if missing.
set -euo pipefail
DIR="${1:?usage: bench/verify-fixture.sh DIR [OSAKA_DIR]}"
OSAKA_DIR="${2:-$DIR/osaka}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"
ETHREX="$CARGO_TARGET_DIR/release/ethrex"
export PATH="$HOME/.cargo/bin:$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin:$PATH"

[ -x "$ETHREX" ] || (cd "$ROOT" && cargo build --release --locked -p ethrex)
# revme has no --version flag; cargo's install list says which version is installed.
if ! command -v revme >/dev/null || ! cargo install --list 2>/dev/null | grep -q "^revme v41.0.0:"; then
    echo "installing revme 41.0.0 ..." >&2
    cargo install revme --version 41.0.0 --locked --force >&2
fi
if ! command -v evm >/dev/null || ! evm --version 2>/dev/null | grep -q "1.17.10"; then
    echo "installing geth evm v1.17.10 ..." >&2
    go install github.com/ethereum/go-ethereum/cmd/evm@v1.17.10 >&2
fi

AMS="$DIR/stress.blockchain_test.json"
[ -f "$AMS" ] || { echo "error: $AMS not found (generate it with: ethrex fixture stress --out $DIR)" >&2; exit 2; }
echo "== revme btest $AMS"
revme btest "$AMS" > "$DIR/revme-btest.log" 2>&1 || { tail -40 "$DIR/revme-btest.log"; echo "FAIL: revme btest"; exit 1; }
tail -3 "$DIR/revme-btest.log"

if [ ! -f "$OSAKA_DIR/stress.blockchain_test.json" ]; then
    BLOCKS=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(len(next(iter(d.values()))['blocks']))" "$AMS")
    SEED=$(python3 -c "import json,sys,re; d=json.load(open(sys.argv[1])); m=re.search(r'seed(\d+)', next(iter(d))); print(m.group(1) if m else 1)" "$AMS")
    echo "== generating the Osaka variant ($BLOCKS blocks, seed $SEED) in $OSAKA_DIR"
    "$ETHREX" fixture stress --fork osaka --blocks "$BLOCKS" --seed "$SEED" --out "$OSAKA_DIR"
fi
echo "== evm blocktest $OSAKA_DIR/stress.blockchain_test.json"
evm blocktest "$OSAKA_DIR/stress.blockchain_test.json" > "$OSAKA_DIR/geth-blocktest.log" 2>&1 || { tail -40 "$OSAKA_DIR/geth-blocktest.log"; echo "FAIL: geth evm blocktest"; exit 1; }
grep -q '"pass": *true' "$OSAKA_DIR/geth-blocktest.log" || { tail -40 "$OSAKA_DIR/geth-blocktest.log"; echo "FAIL: geth evm blocktest reported no pass"; exit 1; }
echo "revme btest (Amsterdam) and geth evm blocktest (Osaka): passed"
