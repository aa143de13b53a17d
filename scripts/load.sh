#!/usr/bin/env bash
# Load on the node (docs/load.md): one fresh `ethrex node` on loopback ports, driven for
# 5 minutes by concurrent Engine API / eth_ clients, invalid and oversized calls, bad JWTs,
# slow clients and garbage peers; checks every answer, the head at the end, RSS and open
# descriptors, and prints p50/p99 per method. Bounded in connections and time; stops the
# node and removes its directory by itself.
#
# Setup as in scripts/main.sh: the default stress fixture (149 blocks, 100M gas) is
# generated into $STRESS_DIR (default out/stress) if missing; the binary is built with
# cargo unless ETHREX names one. Arguments go to scripts/load.py (--seconds N, --quick for
# a ~20 s smoke run, --help).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"
if [ -z "${ETHREX:-}" ]; then
    # Always ask cargo: it rebuilds only what changed, and a stale binary would test old code.
    cargo build --release --locked -p ethrex
    ETHREX="$CARGO_TARGET_DIR/release/ethrex"
fi
OUT="${STRESS_DIR:-out/stress}"
if [ ! -f "$OUT/stress.blockchain_test.json" ]; then
    "$ETHREX" fixture stress --out "$OUT"
fi
exec python3 scripts/load.py --ethrex "$ETHREX" --fixture "$OUT/stress.blockchain_test.json" "$@"
