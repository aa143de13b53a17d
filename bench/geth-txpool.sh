#!/usr/bin/env bash
# Transactions between `ethrex node` and go-ethereum v1.17.10 as peers on loopback: both
# start from one genesis (every fork to Amsterdam at 0, four funded accounts), geth dials
# us, both get a forkchoiceUpdated naming the genesis; then a transfer sent to our
# eth_sendRawTransaction must appear in geth's txpool_content, and one sent to geth's must
# appear in ours; a blob transaction each way, whose blob both nodes' engine_getBlobsV2
# return alike; then a payload ethrex builds from its pool carries all four and is VALID
# on geth (bench/geth_txpool.py; transactions signed with eth_account, blobs proved with
# the ckzg bindings, both installed with web3.py if missing). Loopback only, no
# discovery; stops by itself.
# Usage: bench/geth-txpool.sh      Ends with `geth-txpool: every check passed (...)`.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/bench/oracles.sh"
ensure_ethrex
source "$ROOT/bench/net-common.sh"
python3 -c 'import eth_account' 2>/dev/null || python3 -m pip install --quiet 'web3>=7,<9' >&2
PY="python3 $ROOT/bench/geth_txpool.py"
GENESIS="$WORK/genesis.json"
# The system contracts (EIP-2935, 4788, 7002, 7251, ...) as the client's generator writes them.
"$ETHREX" fixture stress --out "$WORK/system" --blocks 1 --min-txs 1 --max-txs 1 >/dev/null
$PY genesis "$GENESIS" "$WORK/system/stress.genesis.json"
rm -rf "$WORK/system"

# geth: init, then serve on loopback with txpool and admin over HTTP.
GDIR="$WORK/geth"
mkdir -p "$GDIR"
GFLAGS=(--datadir "$GDIR/data" --cache.database 5 --datadir.minfreedisk 256)
geth "${GFLAGS[@]}" init "$GENESIS" >"$GDIR/init.log" 2>&1 || { tail_log "geth init" "$GDIR/init.log"; exit 1; }
G_P2P=$(free_port)
G_HTTP=$(free_port)
G_AUTH=$(free_port)
geth_loopback_config "$GDIR/geth.toml" "$G_P2P"
python3 -c 'import os; print(os.urandom(32).hex())' >"$GDIR/jwt.hex"
spawn "$GDIR/geth.log" geth --config "$GDIR/geth.toml" "${GFLAGS[@]}" --nodiscover --maxpeers 5 \
    --nat none --ipcdisable --authrpc.addr 127.0.0.1 --authrpc.port "$G_AUTH" \
    --authrpc.jwtsecret "$GDIR/jwt.hex" --http --http.addr 127.0.0.1 --http.port "$G_HTTP" \
    --http.api eth,net,txpool,admin --verbosity "${GETH_VERBOSITY:-3}"
GETH_PID=$SPAWNED
GETH_URL="http://127.0.0.1:$G_HTTP"

# ours, on the same genesis.
start_ethrex "$WORK/ours.log" "$GENESIS" "$WORK/ours" --nodiscover
wait_rpc "$GETH_URL" "$GETH_PID" 60 || { tail_log "geth" "$GDIR/geth.log"; exit 1; }
wait_rpc "$ETHREX_URL" "$ETHREX_PID" 60 || { tail_log "ethrex node" "$WORK/ours.log"; exit 1; }
OUR_ENODE=$(rpc "$ETHREX_URL" admin_nodeInfo | python3 -c 'import json,sys; print(json.load(sys.stdin)["enode"])')
rpc "$GETH_URL" admin_addPeer "[\"$OUR_ENODE\"]" >/dev/null
deadline=$((SECONDS + 30))
until rpc "$GETH_URL" admin_peers | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin) else 1)'; do
    ((SECONDS < deadline)) || { echo "geth did not connect to us" >&2; tail_log "geth" "$GDIR/geth.log"; tail_log "ethrex" "$WORK/ours.log"; exit 1; }
    sleep 0.2
done
STATUS=0
# c-kzg's trusted setup (the crate the node builds with ships it) for the blob transactions.
SETUP=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/c-kzg-2.*/src/trusted_setup.txt 2>/dev/null | head -1)
[ -n "$SETUP" ] || { echo "geth-txpool: c-kzg's trusted_setup.txt not found (cargo fetch)" >&2; exit 1; }
timeout 120 $PY run --ours "$ETHREX_URL" --ours-auth "$ETHREX_AUTH_URL" --ours-jwt "$ETHREX_JWT" \
    --geth "$GETH_URL" --geth-auth "http://127.0.0.1:$G_AUTH" --geth-jwt "$GDIR/jwt.hex" \
    --trusted-setup "$SETUP" || STATUS=1
if ((STATUS)); then
    tail_log "geth" "$GDIR/geth.log" 20
    tail_log "ethrex node" "$WORK/ours.log" 20
fi
stop "$ETHREX_PID"
stop "$GETH_PID"
exit "$STATUS"
