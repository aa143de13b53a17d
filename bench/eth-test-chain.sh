#!/usr/bin/env bash
# go-ethereum v1.17.10's devp2p test chain (600 blocks made by geth, Amsterdam from block
# 36, no BALs in the chain file) imported by `ethrex import`: the head must be the block
# the chain's headfcu.json names.
#   bench/eth-test-chain.sh [DATADIR]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/bench/oracles.sh"
ensure_ethrex
DATADIR="${1:-$(mktemp -d)}"
rm -rf "$DATADIR"
want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["params"][0]["headBlockHash"])' \
    "$ETHTEST_CHAIN/headfcu.json")
out=$("$ETHREX" import --network "$ETHTEST_CHAIN/genesis.json" --datadir "$DATADIR" \
    "$ETHTEST_CHAIN/chain.rlp" 2>&1 | tail -1)
echo "$out"
"$ETHREX" verify-db --datadir "$DATADIR"
if [[ "$out" != *"$want"* ]]; then
    echo "eth-test chain: head is not $want" >&2
    exit 1
fi
echo "eth-test chain: imported to its head $want"
