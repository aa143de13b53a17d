#!/usr/bin/env bash
# Differential test against geth below the merge: N chains across every fork from
# Frontier to Amsterdam, each made by `ethrex fixture forks` with a random seed (proof of
# work with ommers and the DAO fork, the London transition, the merge by total difficulty,
# every timestamp fork to Amsterdam, a reorg across London and one across Amsterdam; the
# fork blocks, timestamps, transactions, ommers and gas limits vary with the seed; see
# docs/forks.md). For each chain, geth 1.17.10 (`geth init` + `geth import` of the segment
# files, which recomputes every root the generator wrote) and `ethrex import` of the same
# files must both end at the generator's head, and eth_getBlockByNumber must be identical
# on both nodes for every block (bench/geth-rpc-blocks.sh).
# A disagreement keeps the chain under OUT/failures/seedS (genesis, segments, logs): a
# ready-made regression case for `ethrex import` and `geth import`.
# Usage: bench/geth-diff-forks.sh N [OUT] [SEED...]   (OUT default out/geth-diff-forks;
#        seeds given are run first, the rest are random)
set -euo pipefail
N="${1:?usage: bench/geth-diff-forks.sh N [OUT] [SEED...]}"
OUT="${2:-out/geth-diff-forks}"
shift $(( $# >= 2 ? 2 : 1 ))
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/bench/oracles.sh"
ensure_ethrex
mkdir -p "$OUT/failures"
: >"$OUT/results.txt"

start=$(date +%s)
for ((i = 1; i <= N; i++)); do
    if (($#)); then
        seed="$1"
        shift
    else
        seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
    fi
    dir="$OUT/seed$seed"
    rm -rf "$dir"
    if ! "$ETHREX" fixture forks --out "$dir" --seed "$seed" >"$dir.gen.log" 2>&1; then
        mkdir -p "$dir" && mv "$dir.gen.log" "$dir/"
        rm -rf "$OUT/failures/seed$seed" && mv "$dir" "$OUT/failures/"
        echo "FAIL $seed this client's generator: $(tail -1 "$OUT/failures/seed$seed/seed$seed.gen.log")" |
            tee -a "$OUT/results.txt"
        continue
    fi
    mv "$dir.gen.log" "$dir/gen.log"
    tail -1 "$dir/gen.log"
    head=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["head"]["hash"])' "$dir/forks.json")
    chains=()
    for f in $(ls "$dir"/forks.*.rlp | sort -t. -k2 -n); do
        chains+=(--chain "$f")
    done
    if "$ROOT/bench/geth-rpc-blocks.sh" --keep "$dir/nodes" --genesis "$dir/forks.genesis.json" \
        "${chains[@]}" --expect-head "$head" >"$dir/compare.log" 2>&1; then
        echo "ok $seed: $(grep -m1 "matches geth" "$dir/compare.log" || tail -1 "$dir/compare.log")" | tee -a "$OUT/results.txt"
        rm -rf "$dir"
    else
        rm -rf "$dir/nodes/geth/data" "$dir/nodes/ours/data"
        rm -rf "$OUT/failures/seed$seed" && mv "$dir" "$OUT/failures/"
        echo "FAIL $seed (see $OUT/failures/seed$seed/compare.log):" | tee -a "$OUT/results.txt"
        grep -E '^!!|differ|error' "$OUT/failures/seed$seed/compare.log" | head -5 || true
    fi
done
agreed=$(grep -c '^ok ' "$OUT/results.txt" || true)
echo "geth-diff-forks: $agreed of $N fork chains identical on geth and ethrex ($(( $(date +%s) - start )) s)"
[ "$agreed" = "$N" ]
