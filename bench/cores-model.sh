#!/usr/bin/env bash
# What more cores would buy the parallel path: `ethrex cores-model` on this machine's runs.
# Alternating rounds of `ethrex import-bench --mode parallel --parallel-threshold 0` (every
# block on the parallel path), each round one run pinned to one core (`taskset -c 0`,
# --threads 1) and one on two cores (--threads 2). The one-core runs of the odd rounds are
# the model (each block's pieces from the run with its median time); the one-core runs of
# the even rounds (held out) and every two-core run are the checks, one per core count on
# each block's median over its runs: within the tolerance (10%) at the median and the mean
# block time, or the script fails. The predictions at 1-64 cores go to OUT_DIR/model.json
# and stdout.
#
# Usage: bench/cores-model.sh CHAIN_DIR OUT_DIR [--rounds N] [--quick]
#   CHAIN_DIR  as `ethrex fixture stress --out CHAIN_DIR` writes it (stress.rlp and its BAL and
#              genesis files beside it).
#   --rounds N rounds of a one- and a two-core run (default 4; at least 2 for a held-out
#              one-core check).
#   --quick    one round on the chain as given (for CI, seconds on a small chain), no pause
#              between blocks, the two-core check only, printed but not enforced (a few
#              small blocks are too few to judge a model by).
# Env: ETHREX (default: the release build in CARGO_TARGET_DIR).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
usage() { echo "usage: $0 CHAIN_DIR OUT_DIR [--rounds N] [--quick]" >&2; }
CHAIN_DIR="${1:-}" OUT="${2:-}"
[ -n "$CHAIN_DIR" ] && [ -n "$OUT" ] || { usage; exit 2; }
shift 2
ROUNDS=4 QUICK=0
while (($#)); do
    case "$1" in
        --rounds) ROUNDS="${2:?}"; shift ;;
        --quick) QUICK=1 ;;
        *) usage; exit 2 ;;
    esac
    shift
done
ETHREX="${ETHREX:-${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}/release/ethrex}"
[ -x "$ETHREX" ] || { echo "no ethrex binary at $ETHREX (build it or set ETHREX)" >&2; exit 1; }
[ -f "$CHAIN_DIR/stress.rlp" ] || { echo "no $CHAIN_DIR/stress.rlp" >&2; exit 1; }
command -v taskset >/dev/null || { echo "taskset (util-linux) is needed to pin a run to one core" >&2; exit 1; }
(( $(nproc) >= 2 )) || { echo "the two-core check needs two cores; this machine has $(nproc)" >&2; exit 1; }
SLEEP=100 TOLERANCE=0.10
if ((QUICK)); then ROUNDS=1 SLEEP=0 TOLERANCE=1000; fi
mkdir -p "$OUT"
# One genesis database for every run (built by the first, checked by the others).
GENESIS_DB="$OUT/genesis-db"
rm -rf "$GENESIS_DB"
bench() { # bench THREADS JSON [taskset...]
    local threads="$1" json="$2"
    shift 2
    "$@" "$ETHREX" import-bench --fixture "$CHAIN_DIR/stress.rlp" --mode parallel \
        --threads "$threads" --parallel-threshold 0 --sleep-ms "$SLEEP" \
        --genesis-db "$GENESIS_DB" --json "$json" >"$json.log" 2>&1 ||
        { echo "import-bench failed (threads $threads):" >&2; tail -20 "$json.log" >&2; exit 1; }
}
((ROUNDS >= 1)) || { echo "--rounds must be at least 1" >&2; exit 2; }
PROFILES=() CHECKS=()
for ((r = 1; r <= ROUNDS; r++)); do
    echo "round $r: one core, then two"
    bench 1 "$OUT/one-$r.json" taskset -c 0
    bench 2 "$OUT/two-$r.json"
    if ((r % 2)); then PROFILES+=(--profile "$OUT/one-$r.json"); else CHECKS+=(--check "$OUT/one-$r.json"); fi
    CHECKS+=(--check "$OUT/two-$r.json")
done
rm -rf "$GENESIS_DB"
"$ETHREX" cores-model "${PROFILES[@]}" "${CHECKS[@]}" --tolerance "$TOLERANCE" \
    --json "$OUT/model.json"
