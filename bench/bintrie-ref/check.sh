#!/usr/bin/env bash
# Cross-checks ethrex-bintrie's EIP-7864 roots against geth v1.17.10's trie/bintrie.
#
# Usage: bench/bintrie-ref/check.sh [--quick] [--seed S] [--stress DIR] [STATE.json ...]
#
# Builds the Go reference (bench/bintrie-ref, into $HOME/.cache/bintrie-ref) and the
# `bintrie-roots` bin (release, in $CARGO_TARGET_DIR, default $HOME/.cache/ethrex-target),
# generates random states (seeds S, S+1, S+2, default S=1: 3 states of 10,000 accounts
# with code and storage; --quick: 2 states of 300, a few seconds), adds any STATE.json
# given (see `ethrex_bintrie::StateSpec` for the format), and compares both roots of every
# state at every group depth 1..8 (each built in two commits with a reopen in between).
# --stress DIR (repeatable) adds the state before and after every block of DIR's
# `ethrex fixture stress` chain (DIR/stress.blockchain_test.json, or a fixture file
# given directly): the `stress-states` bin of ethrex-trie-bench imports the chain with
# the client's pipeline and dumps the full flat state after each block, checked against
# the block's MPT state root; each dump is then a fresh build on both sides.
# Prints `bintrie roots: N states x 8 depths agree` and exits 0, or prints the first
# disagreement (state, depth, both roots) and exits 1. Exits 2 when Go is not installed
# ($GO, else `go` on PATH, else /usr/local/go/bin/go).
# Progress and timings go to stderr.
set -euo pipefail

usage() { sed -n '4p' "$0" | sed 's/^# //' >&2; exit 64; }

QUICK=0
SEED=1
FILES=()
STRESS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1 ;;
        --seed) [ $# -ge 2 ] || usage; SEED="$2"; shift ;;
        --stress) [ $# -ge 2 ] || usage
           fixture="$2"; [ -d "$fixture" ] && fixture="$fixture/stress.blockchain_test.json"
           [ -f "$fixture" ] || { echo "check.sh: no stress fixture at $fixture" >&2; exit 64; }
           STRESS+=("$(cd "$(dirname "$fixture")" && pwd)/$(basename "$fixture")"); shift ;;
        -h|--help) usage ;;
        -*) echo "check.sh: unknown option $1" >&2; usage ;;
        *) [ -f "$1" ] || { echo "check.sh: no such state file: $1" >&2; exit 64; }
           FILES+=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")") ;;
    esac
    shift
done
[[ "$SEED" =~ ^[0-9]+$ ]] || { echo "check.sh: --seed takes a number" >&2; exit 64; }

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CACHE="$HOME/.cache/bintrie-ref"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"

# Go: $GO if set, else `go` on PATH, else the default install location.
GO="${GO:-$(command -v go || true)}"
if [ -z "$GO" ] && [ -x /usr/local/go/bin/go ]; then GO=/usr/local/go/bin/go; fi
if [ -z "$GO" ] || ! command -v "$GO" > /dev/null; then
    echo "check.sh: Go not found${GO:+ at $GO}: it builds the geth reference (Go >= 1.25;" \
        "put it on PATH or set GO=/path/to/go)" >&2
    exit 2
fi

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

START="$(now)"
mkdir -p "$CACHE"
echo "building the geth reference..." >&2
(cd "$HERE" && GOFLAGS=-mod=mod "$GO" build -o "$CACHE/bintrie-ref" .)
echo "building bintrie-roots..." >&2
cargo build --quiet --release --manifest-path "$ROOT/Cargo.toml" -p ethrex-bintrie --bin bintrie-roots
REF="$CACHE/bintrie-ref"
OURS="$CARGO_TARGET_DIR/release/bintrie-roots"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

STRESS_FILES=()
if [ ${#STRESS[@]} -gt 0 ]; then
    echo "building stress-states..." >&2
    cargo build --quiet --release --manifest-path "$ROOT/Cargo.toml" -p ethrex-trie-bench --bin stress-states
    for i in "${!STRESS[@]}"; do
        while IFS= read -r file; do STRESS_FILES+=("$file"); done < <(
            "$CARGO_TARGET_DIR/release/stress-states" "${STRESS[$i]}" "$WORK/stress-$i")
    done
fi

if [ "$QUICK" = 1 ]; then STATES=2; ACCOUNTS=300; else STATES=3; ACCOUNTS=10000; fi
STATE_FILES=()
for i in $(seq 0 $((STATES - 1))); do
    seed=$((SEED + i))
    "$OURS" gen --seed "$seed" --accounts "$ACCOUNTS" --out "$WORK/seed-$seed.json"
    STATE_FILES+=("$WORK/seed-$seed.json")
done
STATE_FILES+=("${STRESS_FILES[@]+"${STRESS_FILES[@]}"}" "${FILES[@]+"${FILES[@]}"}")

checked=0
for state in "${STATE_FILES[@]}"; do
    name="$state"
    case "$state" in
        "$WORK"/stress-*) name="stress $(basename "$state" .json)" ;;
        "$WORK"/*) name="$(basename "$state" .json) ($ACCOUNTS accounts)" ;;
    esac
    t0="$(now)"
    "$REF" "$state" > "$WORK/geth.txt" 2> "$WORK/geth.err" & ref_pid=$!
    if ! "$OURS" roots "$state" > "$WORK/ours.txt" 2> "$WORK/ours.err"; then
        wait "$ref_pid" || true
        echo "state $name: bintrie-roots failed: $(cat "$WORK/ours.err")"
        exit 1
    fi
    ours_time="$(since "$t0")"
    if ! wait "$ref_pid"; then
        echo "state $name: the geth reference failed: $(cat "$WORK/geth.err")"
        exit 1
    fi
    both_time="$(since "$t0")"
    for depth in 1 2 3 4 5 6 7 8; do
        ours="$(awk -v d="$depth" '$1 == d { print $2 }' "$WORK/ours.txt")"
        geth="$(awk -v d="$depth" '$1 == d { print $2 }' "$WORK/geth.txt")"
        if [ -z "$ours" ] || [ "$ours" != "$geth" ]; then
            echo "state $name: depth $depth: ethrex ${ours:-<none>} geth ${geth:-<none>}"
            exit 1
        fi
    done
    echo "  $name: agree at depths 1..8 (ethrex $ours_time, both $both_time)" >&2
    checked=$((checked + 1))
done

echo "total $(since "$START")" >&2
echo "bintrie roots: $checked states x 8 depths agree"
