#!/usr/bin/env bash
# The binary-trie group-depth study, once, on this machine: MPT and the EIP-7864 binary
# trie at group depths 1..8, every workload, cold cache, 10 runs (the first a warm-up).
#
# Usage: bench/trie-study.sh [OUT_DIR] [extra `ethrex trie-bench` options...]
#
# Writes OUT_DIR (default docs/trie-study)/trie-study.md (the tables, published figures
# beside ours), trie-study.json and trie-study-<workload>.svg, and prints the run time.
# The databases go to a temporary directory under $TRIE_STUDY_TMP (default /tmp), removed
# afterwards; they need about 9 GB at the default --entries. Drops the page cache
# before every run (as root: the whole machine's, via /proc/sys/vm/drop_caches).
# 8.6 minutes on a 2-core VM at the defaults (prefill 2.3 min); not for CI.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
OUT="${1:-$ROOT/docs/trie-study}"
[ $# -gt 0 ] && shift
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"

cargo build --quiet --release --manifest-path "$ROOT/Cargo.toml" -p ethrex
ETHREX="$CARGO_TARGET_DIR/release/ethrex"

mkdir -p "$OUT"
DBS="$(mktemp -d "${TRIE_STUDY_TMP:-/tmp}/trie-study.XXXXXX")"
trap 'rm -rf "$DBS"' EXIT

start=$(date +%s)
"$ETHREX" trie-bench \
    --scheme mpt,binary --group-depth 1,2,3,4,5,6,7,8 \
    --workload erc20-balanceof,erc20-approve,erc20-mixed,sload-seq,sstore-seq \
    --runs 10 --cold --dir "$DBS" --out "$OUT" "$@" > /dev/null
end=$(date +%s)
echo "trie study: $((end - start)) s; tables in $OUT/trie-study.md"
