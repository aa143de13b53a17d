#!/usr/bin/env bash
# The crash loop at scale (outside CI; CI keeps bin/ethrex/tests/crash.rs): kill -9 ethrex at
# random moments spread over a whole `ethrex import` of the default stress fixture (20 per
# backend), of a node fed the same chain over the Engine API (10 per backend) and of a node
# syncing it from a peer on loopback (10 per backend); after each kill `verify-db` must say
# consistent (and, for the node, keep every head answered VALID), and a resume of the same
# data directory must reach the fixture's last block. See docs/crash-loop.md.
#   scripts/crash-loop.sh [--kills N] [--node-kills N] [--sync-kills N] [--db mdbx|rocksdb|both]
#                         [--modes import,node,sync] [--seed S] [--quick] [--keep] ...
# --quick: 2 kills per mode and backend on a small 16-block fixture (about a minute), unless
# STRESS_DIR names a fixture. Env: ETHREX=path uses that binary instead of building it;
# STRESS_DIR=DIR the fixture (default out/stress, generated if missing); TMPDIR the scratch.
# Ends with `crash-loop: import mdbx 20/20, import rocksdb 20/20, node mdbx 10/10, ...` and
# exits non-zero unless every kill passed.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"
if [ -z "${ETHREX:-}" ]; then
    ETHREX="$CARGO_TARGET_DIR/release/ethrex"
    # Always ask cargo: it rebuilds only what changed, and a stale binary would test old code.
    cargo build --release --locked -p ethrex
fi
QUICK=0
for arg in "$@"; do
    [ "$arg" = --quick ] && QUICK=1
done
if [ -n "${STRESS_DIR:-}" ] || [ "$QUICK" = 0 ]; then
    OUT="${STRESS_DIR:-out/stress}"
    if [ ! -f "$OUT/stress.rlp" ] || [ ! -f "$OUT/stress.blockchain_test.json" ]; then
        "$ETHREX" fixture stress --out "$OUT"
    fi
else
    SMALL="$(mktemp -d "${TMPDIR:-/tmp}/crash-loop-fixture.XXXXXX")"
    trap 'rm -rf "$SMALL"' EXIT
    "$ETHREX" fixture stress --out "$SMALL" --blocks 16 --min-txs 40 --max-txs 80 --seed 7 >/dev/null
    OUT="$SMALL"
fi
python3 scripts/crash_loop.py --ethrex "$ETHREX" --fixture "$OUT" "$@"
