#!/usr/bin/env bash
# The transaction pool under load: `ethrex node` against go-ethereum v1.17.10 on loopback,
# every node fresh, both from one genesis (every fork to Amsterdam at 0, 10,000 funded
# senders and a recipient in the alloc so a transfer costs 21,000 gas). Transactions are
# signed once up front (bench/txpool_load.py prepare; timed apart, in no rate) and sent
# by the same client code to both: JSON-RPC batches of 100 eth_sendRawTransaction over 4
# persistent HTTP connections, each sender's transactions on one connection in order.
#   (1) accepted tx/s of a mixed set (chains, gapped nonces, replacements, duplicates and
#       the refusals: nonce too low, wrong chain id, zero tip, intrinsic gas, gas above
#       the block's, fee cap below tip, insufficient funds, underpriced replacement,
#       garbage), ethrex and geth alternating, median of the runs; ratio ethrex/geth
#       (target 1.5x); and whether both answer each transaction alike (by error class:
#       the message before any ':' or number).
#   (2) a geth feeder holding N transactions (1,000 senders x 4) dials the receiver; the
#       time until the receiver's txpool_status counts N; ethrex and geth as receivers.
#   (3) 200,000 valid transactions (10,000 senders x 20) offered by RPC, for 150 s at most
#       (SLOW printed when a client cannot answer them all in that time): the pool's count
#       (ethrex's cap: 10,000) and the node's resident memory; geth for context.
#   (4) ethrex only, the script as the consensus client: forkchoiceUpdatedV4 -> getPayloadV6
#       -> newPayloadV5 -> forkchoiceUpdatedV4 rounds on blocks of 300 transfers from the
#       pool (2 uncounted warm-up rounds each), unloaded, then while another process
#       hammers eth_sendRawTransaction; newPayload latency p50/p99 of both (target:
#       loaded p50 within 1.2x unloaded).
# Each measurement starts once its nodes are idle (ethrex builds the KZG trusted setup
# on a thread at start-up: a few seconds of one core).
# geth's pool is given a total of 10,000 slots like ours (--txpool.globalslots 8976
# --txpool.globalqueue 1024; its defaults hold 6,144), so the mixed set fits in both.
# Usage: bench/txpool-load.sh [--quick] [--json OUT] [--runs N] [--only engine]
#   full (default): about 12 minutes on 2 cores; --quick: a few hundred transactions, 3
#   rounds, one run, about a minute. One summary line per measurement, then a JSON
#   object with every number (also to OUT). Exits 1 on a functional failure (a node not
#   starting, nothing accepted, a pool over its cap, a peer's transactions not arriving, a
#   payload not VALID), not on a missed target: that prints BELOW TARGET. `--only engine`
#   runs (4) alone (about 2 minutes in full).
# Loopback only, no discovery; bounded in time; every node it starts is stopped at exit.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
QUICK=0
JSON_OUT=""
RUNS=""
ONLY=""
while (($#)); do
    case "$1" in
        --quick) QUICK=1 ;;
        --json) JSON_OUT="$2"; shift ;;
        --runs) RUNS="$2"; shift ;;
        --only) [ "$2" = engine ] || { echo "--only takes: engine" >&2; exit 2; }; ONLY="$2"; shift ;;
        *) echo "usage: $0 [--quick] [--json OUT] [--runs N] [--only engine]" >&2; exit 2 ;;
    esac
    shift
done
source "$ROOT/bench/oracles.sh"
ensure_ethrex
source "$ROOT/bench/net-common.sh"
python3 -c 'import eth_hash, coincurve' 2>/dev/null || python3 -m pip install --quiet 'eth-hash[pycryptodome]' coincurve >&2
PY="python3 $ROOT/bench/txpool_load.py"
RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
if ((QUICK)); then
    SIZES=(--senders 600 --peer-senders 50 --engine-per-block 50 --engine-rounds 3)
    RUNS="${RUNS:-1}"
else
    SIZES=(--senders 10000 --peer-senders 1000 --engine-per-block 300 --engine-rounds 20)
    RUNS="${RUNS:-3}"
fi
T_START=$SECONDS
# The genesis carries the system contracts Amsterdam blocks call, read from a dev node.
DEV_HTTP=$(free_port)
spawn "$WORK/dev.log" "$ETHREX" node --dev --datadir "$WORK/dev" --http.addr 127.0.0.1 --http.port "$DEV_HTTP" \
    --authrpc.port "$(free_port)" --p2p.disabled
DEV_PID=$SPAWNED
wait_rpc "http://127.0.0.1:$DEV_HTTP" "$DEV_PID" 60 || { tail_log "ethrex --dev" "$WORK/dev.log"; exit 1; }
$PY prepare --out "$WORK/sets" "${SIZES[@]}" --results "$RESULTS" --system-code "http://127.0.0.1:$DEV_HTTP"
stop "$DEV_PID"
SETS="$WORK/sets/sets.pickle"
STATUS=0

# failed WHAT: records a functional failure (the summary reports it and exits 1).
failed() {
    echo "!! $1" >&2
    printf '{"kind": "failure", "what": "%s"}\n' "$1" >>"$RESULTS"
    STATUS=1
}

# start_geth NAME GENESIS: a fresh geth on free loopback ports (HTTP with eth, net, txpool,
# admin; the Engine API with a fresh JWT secret). Sets GETH_PID, GETH_URL, GETH_AUTH_URL,
# GETH_JWT, GETH_LOG.
start_geth() {
    local dir="$WORK/$1" p2p http auth
    mkdir -p "$dir"
    local flags=(--datadir "$dir/data" --cache.database 5 --datadir.minfreedisk 256)
    geth "${flags[@]}" init "$2" >"$dir/init.log" 2>&1 || { tail_log "geth init" "$dir/init.log"; return 1; }
    p2p=$(free_port)
    http=$(free_port)
    auth=$(free_port)
    geth_loopback_config "$dir/geth.toml" "$p2p"
    python3 -c 'import os; print(os.urandom(32).hex())' >"$dir/jwt.hex"
    GETH_LOG="$dir/geth.log"
    spawn "$GETH_LOG" geth --config "$dir/geth.toml" "${flags[@]}" --nodiscover --maxpeers 5 \
        --nat none --ipcdisable --authrpc.addr 127.0.0.1 --authrpc.port "$auth" \
        --authrpc.jwtsecret "$dir/jwt.hex" --http --http.addr 127.0.0.1 --http.port "$http" \
        --http.api eth,net,txpool,admin --txpool.globalslots 8976 --txpool.globalqueue 1024 \
        --verbosity "${GETH_VERBOSITY:-3}"
    GETH_PID=$SPAWNED
    GETH_URL="http://127.0.0.1:$http"
    GETH_AUTH_URL="http://127.0.0.1:$auth"
    GETH_JWT="$dir/jwt.hex"
    wait_rpc "$GETH_URL" "$GETH_PID" 60 || { tail_log "geth $1" "$GETH_LOG"; return 1; }
}

# start_node CLIENT NAME GENESIS: a fresh ethrex or geth; sets NODE_PID NODE_URL NODE_AUTH
# NODE_JWT NODE_LOG.
start_node() {
    if [ "$1" = ethrex ]; then
        start_ethrex "$WORK/$2.log" "$3" "$WORK/$2" --nodiscover
        NODE_PID=$ETHREX_PID NODE_URL=$ETHREX_URL NODE_AUTH=$ETHREX_AUTH_URL NODE_JWT=$ETHREX_JWT
        NODE_LOG="$WORK/$2.log"
        wait_rpc "$NODE_URL" "$NODE_PID" 60 || { tail_log "ethrex $2" "$NODE_LOG"; return 1; }
    else
        start_geth "$2" "$3" || return 1
        NODE_PID=$GETH_PID NODE_URL=$GETH_URL NODE_AUTH=$GETH_AUTH_URL NODE_JWT=$GETH_JWT NODE_LOG=$GETH_LOG
    fi
}

# measure CLIENT NAME GENESIS TIMEOUT SUBCOMMAND [ARGS...]: a fresh node, one measurement,
# the node stopped; its log's end printed when the measurement fails.
measure() {
    local client="$1" name="$2" genesis="$3" limit="$4" cmd="$5"
    shift 5
    if ! start_node "$client" "$name" "$genesis"; then
        failed "$client did not start ($name)"
        return
    fi
    if ! timeout "$limit" $PY "$cmd" --sets "$SETS" --url "$NODE_URL" --auth "$NODE_AUTH" --jwt "$NODE_JWT" \
        --pid "$NODE_PID" --client "$client" --results "$RESULTS" "$@"; then
        failed "$cmd on $client ($name)"
        tail_log "$client $name" "$NODE_LOG" 20
    fi
    grep -iE 'panic|fatal' "$NODE_LOG" | head -5 >&2 || true
    stop "$NODE_PID"
}

LIMIT=$((QUICK ? 60 : 300))
[ "$ONLY" = engine ] && RUNS=0
for run in $(seq "$RUNS"); do
    # (1) alternating which client goes first.
    order=(ethrex geth)
    ((run % 2)) || order=(geth ethrex)
    for client in "${order[@]}"; do
        measure "$client" "accept-$client-$run" "$WORK/sets/genesis.json" "$LIMIT" accept --run "$run"
    done
    # (2) a fresh feeder for each receiver.
    for client in "${order[@]}"; do
        if ! start_geth "feeder-$client-$run" "$WORK/sets/genesis.json"; then
            failed "the geth feeder did not start"
            continue
        fi
        FEEDER_PID=$GETH_PID FEEDER_URL=$GETH_URL FEEDER_AUTH=$GETH_AUTH_URL FEEDER_JWT=$GETH_JWT FEEDER_LOG=$GETH_LOG
        measure "$client" "peer-$client-$run" "$WORK/sets/genesis.json" "$LIMIT" peer --run "$run" \
            --feeder "$FEEDER_URL" --feeder-auth "$FEEDER_AUTH" --feeder-jwt "$FEEDER_JWT" --feeder-pid "$FEEDER_PID" \
            --timeout $((QUICK ? 20 : 60))
        grep -iE 'panic|fatal' "$FEEDER_LOG" | head -5 >&2 || true
        stop "$FEEDER_PID"
    done
done
# (3) once each.
[ "$ONLY" = engine ] || for client in ethrex geth; do
    measure "$client" "memory-$client" "$WORK/sets/genesis.json" "$LIMIT" memory --budget $((QUICK ? 20 : 150))
done
# (4) ethrex only.
measure ethrex engine "$WORK/sets/genesis-engine.json" "$LIMIT" engine
echo "txpool-load: $((SECONDS - T_START)) s in all (${RUNS} run(s) of (1) and (2))"
$PY summary --results "$RESULTS" ${JSON_OUT:+--json "$JSON_OUT"} $( ((QUICK)) && echo --quick) \
    ${ONLY:+--only "$ONLY"} || STATUS=1
exit "$STATUS"
