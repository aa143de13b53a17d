#!/usr/bin/env bash
# Discovery on loopback against go-ethereum 1.17.10: two geth nodes, A and B (B knows A
# as its bootnode), and `ethrex node` given only A's enode as a bootnode. Passes when our
# node has dialed B, which it was never told about, within the time limit.
#   bench/discovery-geth.sh [SECONDS]   (default 60)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/bench/oracles.sh"
ensure_ethrex
LIMIT="${1:-60}"
WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rpc() { # URL METHOD [PARAMS]
    curl -s -m 5 -X POST -H 'content-type: application/json' \
        -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$2\",\"params\":${3:-[]}}" "$1"
}
wait_rpc() { # URL
    for _ in $(seq 1 50); do rpc "$1" web3_clientVersion >/dev/null 2>&1 && return 0; sleep 0.2; done
    echo "no answer from $1" >&2; return 1
}
GENESIS="$ETHTEST_CHAIN/genesis.json"
start_geth() { # NAME BOOTNODES -> sets HTTP_URL
    local name=$1 port http auth
    port=$(free_port); http=$(free_port); auth=$(free_port)
    geth --datadir "$WORK/$name" init "$GENESIS" >"$WORK/$name.init.log" 2>&1
    # ListenAddr in the config keeps both TCP and UDP on loopback (--port binds every interface).
    printf '[Node.P2P]\nListenAddr = "127.0.0.1:%s"\n' "$port" >"$WORK/$name.toml"
    geth --datadir "$WORK/$name" --config "$WORK/$name.toml" --nat none --netrestrict 127.0.0.0/8 \
        --discovery.dns "" --bootnodes "$2" --ipcdisable --authrpc.addr 127.0.0.1 \
        --authrpc.port "$auth" --http --http.addr 127.0.0.1 --http.port "$http" --http.api admin \
        >"$WORK/$name.log" 2>&1 &
    PIDS+=($!)
    HTTP_URL="http://127.0.0.1:$http"
    wait_rpc "$HTTP_URL"
}
enode_of() { rpc "$1" admin_nodeInfo | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["enode"])'; }

start_geth a ""; A_URL=$HTTP_URL; A=$(enode_of "$A_URL")
start_geth b "$A"; B_URL=$HTTP_URL; B=$(enode_of "$B_URL")
B_ID=$(echo "$B" | sed 's|enode://\([0-9a-f]*\)@.*|\1|')
P2P=$(free_port); HTTP=$(free_port); AUTH=$(free_port)
"$ETHREX" node --network "$GENESIS" --datadir "$WORK/ethrex" --authrpc.port "$AUTH" \
    --http.addr 127.0.0.1 --http.port "$HTTP" --p2p.addr 127.0.0.1 --p2p.port "$P2P" \
    --bootnodes "$A" >"$WORK/ethrex.log" 2>&1 &
PIDS+=($!)
OURS="http://127.0.0.1:$HTTP"
wait_rpc "$OURS"
SECONDS=0
while :; do
    # B among our peers, dialed by us (not B dialing in).
    if rpc "$OURS" admin_peers | python3 -c '
import json, sys
peers = json.load(sys.stdin)["result"]
sys.exit(0 if any(p["enode"].startswith("enode://" + sys.argv[1]) and not p["network"]["inbound"] for p in peers) else 1)
' "$B_ID"; then
        echo "discovery: found geth B (never named to us) via geth A within $((SECONDS + 1)) s"
        exit 0
    fi
    if (( SECONDS > LIMIT )); then
        echo "discovery: geth B not found within $LIMIT s" >&2
        tail -20 "$WORK/ethrex.log" >&2
        exit 1
    fi
    sleep 1
done
