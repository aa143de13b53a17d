#!/usr/bin/env bash
# `ethrex node --dev --dev.period 1` checked with web3.py (a real client library, from
# PyPI; installed if missing): the standard test mnemonic's 20 accounts are funded, and
# type-2 transfers it signs are mined (bench/dev_web3.py). Loopback only; stops by itself.
# Usage: bench/dev-chain.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"
ETHREX="${ETHREX:-$CARGO_TARGET_DIR/release/ethrex}"
[ -x "$ETHREX" ] || (cd "$ROOT" && cargo build --release --locked -p ethrex)
python3 -c 'import web3' 2>/dev/null || python3 -m pip install --quiet 'web3>=7,<9' >&2
source "$ROOT/bench/net-common.sh"
HTTP=$(free_port)
AUTH=$(free_port)
spawn "$WORK/dev.log" "$ETHREX" node --dev --dev.period 1 --datadir "$WORK/data" \
    --http.addr 127.0.0.1 --http.port "$HTTP" --authrpc.port "$AUTH" --p2p.disabled
DEV_PID=$SPAWNED
URL="http://127.0.0.1:$HTTP"
wait_rpc "$URL" "$DEV_PID" 60 || { tail_log "ethrex node --dev" "$WORK/dev.log"; exit 1; }
if ! timeout 120 python3 "$ROOT/bench/dev_web3.py" "$URL"; then
    tail_log "ethrex node --dev" "$WORK/dev.log" 20
    exit 1
fi
stop "$DEV_PID"
