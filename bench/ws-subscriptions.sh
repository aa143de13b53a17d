#!/usr/bin/env bash
# eth_subscribe over WebSocket on `ethrex node --dev --ws` and on `geth --dev --ws`
# (go-ethereum 1.17.10), the same checks against each (bench/ws_subscriptions.py):
# newHeads, logs and newPendingTransactions notifications for a transaction sent over the
# socket, each equal to what the node itself answers for that block, log and transaction,
# in geth's header form. Loopback only, no peers; stops by itself.
# Usage: bench/ws-subscriptions.sh        Ends with one line per client.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"
ETHREX="${ETHREX:-$CARGO_TARGET_DIR/release/ethrex}"
[ -x "$ETHREX" ] || (cd "$ROOT" && cargo build --release --locked -p ethrex)
python3 -c 'import web3, websockets' 2>/dev/null || python3 -m pip install --quiet 'web3>=7,<9' websockets >&2
source "$ROOT/bench/net-common.sh"

HTTP=$(free_port); AUTH=$(free_port); WS=$(free_port)
spawn "$WORK/ethrex.log" "$ETHREX" node --dev --dev.period 1 --datadir "$WORK/ethrex" \
    --http.addr 127.0.0.1 --http.port "$HTTP" --authrpc.port "$AUTH" --p2p.disabled \
    --ws --ws.addr 127.0.0.1 --ws.port "$WS"
PID=$SPAWNED
wait_rpc "http://127.0.0.1:$HTTP" "$PID" 60 || { tail_log "ethrex node --dev" "$WORK/ethrex.log"; exit 1; }
timeout 90 python3 "$ROOT/bench/ws_subscriptions.py" "ws://127.0.0.1:$WS" ethrex \
    || { tail_log "ethrex node --dev" "$WORK/ethrex.log" 20; exit 1; }
stop "$PID"

if ! command -v geth >/dev/null; then
    echo "ws-subscriptions: geth not on PATH, the reference run is skipped" >&2
    exit 0
fi
GHTTP=$(free_port); GAUTH=$(free_port); GWS=$(free_port)
spawn "$WORK/geth.log" geth --dev --dev.period 1 --datadir "$WORK/geth" --port 0 --nodiscover \
    --http --http.addr 127.0.0.1 --http.port "$GHTTP" --authrpc.port "$GAUTH" \
    --ws --ws.addr 127.0.0.1 --ws.port "$GWS" --ws.api eth,net,web3
GPID=$SPAWNED
wait_rpc "http://127.0.0.1:$GHTTP" "$GPID" 60 || { tail_log "geth --dev" "$WORK/geth.log"; exit 1; }
timeout 90 python3 "$ROOT/bench/ws_subscriptions.py" "ws://127.0.0.1:$GWS" geth \
    || { tail_log "geth --dev" "$WORK/geth.log" 20; exit 1; }
stop "$GPID"
