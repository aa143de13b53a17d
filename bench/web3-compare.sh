#!/usr/bin/env bash
# web3.py (a real client library, from PyPI; installed if missing) driving `geth --dev`
# (go-ethereum 1.17.10) and `ethrex node --dev` side by side, as a dapp or a wallet would:
# a Solidity contract compiled at run time by solc-js (npm, pinned, cached outside the
# repository in ~/.cache/ethrex-solc) is deployed, called (a revert's reason included),
# its gas estimated, signed transactions sent and waited for, its events read by filter,
# eth_getLogs and WebSocket subscription, its transactions traced (call tracer, struct
# logger); what both nodes must agree on is compared, the rest checked on each node for
# its own consistency (bench/web3_compare.py says what and why). Two pairs, each geth
# beside a fresh ethrex: `geth --dev` as it is (its dev chain ends at Bogota without
# Amsterdam, so only the gas both forks price alike is compared) and `geth --dev
# --override.amsterdam 0` (Amsterdam like ethrex's: every gas figure compared).
# Loopback only, no peers; stops by itself (about a minute).
# Usage: bench/web3-compare.sh    ETHREX=path overrides the binary; geth on PATH or in
# ~/go/bin (installed with go install if neither is 1.17.10). One line per node and
# pair, then `web3-compare: N checks identical, M differ; K own checks failed`; exit 1
# unless M and K are 0.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"
ETHREX="${ETHREX:-$CARGO_TARGET_DIR/release/ethrex}"
[ -x "$ETHREX" ] || (cd "$ROOT" && cargo build --release --locked -p ethrex)
GETH_VERSION=v1.17.10
export PATH="$PATH:$HOME/go/bin"
GETH=""
for candidate in "$(command -v geth || true)" "$HOME/go/bin/geth"; do
    if [ -x "$candidate" ] && "$candidate" version 2>/dev/null | grep -q "^Version: ${GETH_VERSION#v}"; then
        GETH="$candidate"
        break
    fi
done
if [ -z "$GETH" ]; then
    echo "installing geth $GETH_VERSION ..." >&2
    go install "github.com/ethereum/go-ethereum/cmd/geth@$GETH_VERSION" >&2
    GETH="$(go env GOPATH)/bin/geth"
fi
python3 -c 'import web3, websockets' 2>/dev/null || python3 -m pip install --quiet 'web3>=7,<9' websockets >&2
SOLC_VERSION=0.8.28
SOLC_DIR="$HOME/.cache/ethrex-solc"
# solc-js, the pinned version (the contract's pragma names it too), once, outside the clone.
SOLC_PKG="$SOLC_DIR/node_modules/solc/package.json"
if ! node -e "process.exit(require('$SOLC_PKG').version === '$SOLC_VERSION' ? 0 : 1)" 2>/dev/null; then
    echo "installing solc-js $SOLC_VERSION into $SOLC_DIR ..." >&2
    mkdir -p "$SOLC_DIR"
    (cd "$SOLC_DIR" && timeout 300 npm install --prefix "$SOLC_DIR" --no-audit --no-fund --silent \
        "solc@$SOLC_VERSION" >&2)
fi
source "$ROOT/bench/net-common.sh"

# Two pairs at once, each node on its own free loopback ports: `geth --dev` as it is (its
# dev chain's last fork is not Amsterdam) and `geth --dev --override.amsterdam 0` (the
# same fork as ethrex's, so every gas figure is compared), each beside a fresh ethrex.
start_ethrex_dev() {  # start_ethrex_dev NAME: sets URLS (HTTP,WS); the node joins NAMES, NODE_PIDS
    local http auth ws
    http=$(free_port); auth=$(free_port); ws=$(free_port)
    spawn "$WORK/$1.log" "$ETHREX" node --dev --dev.period 1 --datadir "$WORK/$1" \
        --http.addr 127.0.0.1 --http.port "$http" --authrpc.addr 127.0.0.1 --authrpc.port "$auth" \
        --p2p.disabled --ws --ws.addr 127.0.0.1 --ws.port "$ws"
    URLS="http://127.0.0.1:$http,ws://127.0.0.1:$ws"
    NAMES+=("$1"); NODE_PIDS+=("$SPAWNED"); NODE_HTTP+=("http://127.0.0.1:$http")
}
start_geth_dev() {  # start_geth_dev NAME [GETH_ARGS...]: the same for geth --dev
    local name="$1" http auth ws
    shift
    http=$(free_port); auth=$(free_port); ws=$(free_port)
    spawn "$WORK/$name.log" "$GETH" --dev --dev.period 1 "$@" --datadir "$WORK/$name" --port 0 \
        --nodiscover --maxpeers 0 --ipcdisable --http --http.addr 127.0.0.1 --http.port "$http" \
        --http.api eth,net,web3,debug --authrpc.addr 127.0.0.1 --authrpc.port "$auth" \
        --ws --ws.addr 127.0.0.1 --ws.port "$ws" --ws.api eth,net,web3
    URLS="http://127.0.0.1:$http,ws://127.0.0.1:$ws"
    NAMES+=("$name"); NODE_PIDS+=("$SPAWNED"); NODE_HTTP+=("http://127.0.0.1:$http")
}
# geth's startup banner lists its chain's forks; those at @0 since Shanghai, in order.
forks_at_genesis() {
    sed -n 's/.* - \([A-Za-z0-9]*\): *@0\( .*\)\{0,1\}$/\1/p' "$WORK/$1.log" | paste -sd, -
}
NAMES=(); NODE_PIDS=(); NODE_HTTP=()
start_geth_dev geth-dev; GETH_DEV=$URLS
start_ethrex_dev ethrex-1; ETHREX_1=$URLS
start_geth_dev geth-amsterdam --override.amsterdam 0; GETH_AMS=$URLS
start_ethrex_dev ethrex-2; ETHREX_2=$URLS
for i in "${!NAMES[@]}"; do
    wait_rpc "${NODE_HTTP[$i]}" "${NODE_PIDS[$i]}" 60 || { tail_log "${NAMES[$i]}" "$WORK/${NAMES[$i]}.log"; exit 1; }
done
DEV_FORKS=$(forks_at_genesis geth-dev); AMS_FORKS=$(forks_at_genesis geth-amsterdam)
echo "web3-compare: forks at 0 since Shanghai: geth --dev ${DEV_FORKS:-unknown};" \
    "with --override.amsterdam 0 ${AMS_FORKS:-unknown}; ethrex --dev Amsterdam"
STATUS=0
timeout 150 python3 "$ROOT/bench/web3_compare.py" "$SOLC_DIR" \
    "geth-dev" "${DEV_FORKS:-unknown}" "$GETH_DEV" "$ETHREX_1" \
    "geth-amsterdam" "${AMS_FORKS:-unknown}" "$GETH_AMS" "$ETHREX_2" || STATUS=1
for i in "${!NAMES[@]}"; do
    ((STATUS == 0)) || tail_log "${NAMES[$i]}" "$WORK/${NAMES[$i]}.log" 10
done
kill "${NODE_PIDS[@]}" 2>/dev/null || true  # all four stop at once
for i in "${!NAMES[@]}"; do
    stop "${NODE_PIDS[$i]}"
    rc=0
    wait "${NODE_PIDS[$i]}" 2>/dev/null || rc=$?
    # Not part of the comparison, but worth seeing: a node that did not stop cleanly.
    ((rc == 0)) || echo "web3-compare: ${NAMES[$i]} exited with status $rc when stopped (KEEP=1 keeps its log)" >&2
done
exit "$STATUS"
