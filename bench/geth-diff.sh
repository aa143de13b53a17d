#!/usr/bin/env bash
# Differential test against geth: generates N small random Amsterdam chains with the
# client's own block builder (random seed, gas limit and block size per chain: every
# transaction type (legacy, 2930, 1559, 4844, 7702), deployments through CREATE and
# CREATE2, self-destructs, EIP-7702 delegations, withdrawals, EIP-7002/7251 requests and
# the system calls that dequeue them, blocks filled up to their gas limit), and per chain a few mutated blocks (one header, transaction-list or BAL field
# changed, the block re-sealed). Requires:
#   - geth `evm blocktest` (v1.17.10) to accept every chain, and
#   - every mutated block to be rejected by this client (checked while generating) and by
#     geth (`evm blocktest` on the mutations file, where each block expects an exception).
# Any disagreement keeps the chain's directory under OUT/failures/ (a ready-made
# regression fixture: `ethrex ef-test` and `evm blocktest` read it as it is).
# Usage: bench/geth-diff.sh N [OUT] [MUTATIONS_PER_CHAIN]     (OUT default out/geth-diff)
set -euo pipefail
N="${1:?usage: bench/geth-diff.sh N [OUT] [MUTATIONS_PER_CHAIN]}"
OUT="${2:-out/geth-diff}"
MUTATIONS="${3:-6}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/bench/oracles.sh"   # revme, evm; $ETHREX and ensure_ethrex
ensure_ethrex
mkdir -p "$OUT/failures"
rm -f "$OUT/results.txt"

# One chain: prints "ok SEED MUTATIONS" or "FAIL SEED reason".
one_chain() {
    local i="$1" seed dir gas txs blocks
    seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
    dir="$OUT/chain-$i-seed$seed"
    # Gas limits from tight (blocks end at the limit) to roomy; block sizes to match.
    gas=$(( (seed % 4 + 1) * 8000000 ))
    txs=$(( 20 + seed % 180 ))
    blocks=$(( 2 + seed % 3 ))
    if ! "$ETHREX" fixture stress --out "$dir" --blocks "$blocks" --gas-limit "$gas" \
        --min-txs 5 --max-txs "$txs" --seed "$seed" --mutations "$MUTATIONS" > "$dir.gen.log" 2>&1; then
        mv "$dir" "$dir.gen.log" "$OUT/failures/" 2>/dev/null || true
        echo "FAIL $seed this client: $(tail -1 "$OUT/failures/$(basename "$dir").gen.log")"
        return
    fi
    if ! evm blocktest "$dir/stress.blockchain_test.json" > "$dir/geth-chain.log" 2>&1 \
        || grep -q '"pass": *false' "$dir/geth-chain.log"; then
        mv "$dir" "$OUT/failures/"
        echo "FAIL $seed geth rejected the chain (see failures/$(basename "$dir")/geth-chain.log)"
        return
    fi
    # One test: the chain with every mutated block just before the valid block it was made
    # from; geth passes it only if it rejects each mutated block and imports the rest.
    if ! evm blocktest "$dir/stress.mutations.json" > "$dir/geth-mutations.log" 2>&1 \
        || grep -q '"pass": *false' "$dir/geth-mutations.log" \
        || ! grep -q '"pass": *true' "$dir/geth-mutations.log"; then
        mv "$dir" "$dir.gen.log" "$OUT/failures/"
        echo "FAIL $seed geth disagrees on a mutated block (see failures/$(basename "$dir")/geth-mutations.log)"
        return
    fi
    rm -rf "$dir" "$dir.gen.log"
    echo "ok $seed $MUTATIONS"
}
export -f one_chain
export OUT ETHREX MUTATIONS

start=$(date +%s)
# Two chains at a time: generation is mostly single-threaded.
seq 1 "$N" | xargs -P "${JOBS:-2}" -I{} bash -c 'one_chain {}' | tee "$OUT/results.txt"
agreed=$(grep -c '^ok ' "$OUT/results.txt" || true)
failed=$(grep -c '^FAIL ' "$OUT/results.txt" || true)
mutations=$(( agreed * MUTATIONS ))
echo "$agreed of $N chains agreed, $mutations mutated blocks rejected by both, $failed disagreements ($(( $(date +%s) - start )) s)"
echo "geth-diff: $agreed passed, $(( N - agreed )) failed"
[ "$failed" = 0 ] && [ "$agreed" = "$N" ]
