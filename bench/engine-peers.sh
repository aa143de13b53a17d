#!/usr/bin/env bash
# newPayload timing, ethrex against its peers, as a consensus client sees it: each client
# starts fresh on loopback (its own datadir initialised with the chain's genesis), gets the
# chain's blocks one at a time through its authenticated Engine API (engine_newPayloadV5
# with the block's BAL in the payload's blockAccessList field, then forkchoiceUpdatedV4 to
# it), and is stopped. Per block: newPayload latency (request to VALID); per run: p50, p99
# and Mgas/s = total gas / sum of the newPayload latencies. Every block must be answered
# VALID with latestValidHash = the block (the client's state root equals the header's);
# any other answer fails that run with the block number and the answer (exit 1). The
# driving is bench/engine_peers.py (see its docstring).
#
# Usage: bench/engine-peers.sh CHAIN_DIR --ethrex BIN --geth BIN [--reth BIN] --json OUT
#                              [--rounds N] [--quick]
#   CHAIN_DIR  as `ethrex fixture stress --out CHAIN_DIR` writes it (stress.blockchain_test.json,
#              stress.genesis.json; a chain with a state filler has no blockchain test and
#              cannot be fed). Chains: the default stress chain; mainnet-sized blocks
#              (--gas-limit 60000000 --min-txs 150 --max-txs 400); 300M-gas blocks
#              (--gas-limit 300000000).
#   --rounds N alternate the clients N times (ethrex, geth, [reth, reth-engine],
#              ethrex, geth, ...), each run on a fresh datadir; medians per client, ratios
#              ethrex/geth printed as tables (default 1).
#   --quick    the first 5 blocks, one round (for CI: about a minute, mostly client start-up).
#   --reth BIN a reth built by bench/build-reth.sh (docs/peers.md), run twice a round:
#              `reth` fed by reth_newPayload {block, bal}, `reth-engine` by
#              engine_newPayloadV5 as ethrex and geth are (a validator's path). Not without
#              the BAL: reth builds the payload from the block and the BAL it is given, and
#              an Amsterdam block's header commits to its BAL (block hash mismatch).
# Env: KEEP=1 keeps the scratch directory (logs, datadirs); GETH_VERBOSITY (default 3).
# Loopback only (no discovery, P2P on 127.0.0.1); every process it starts is stopped at exit
# (bench/net-common.sh); every wait is bounded.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
usage() {
    echo "usage: $0 CHAIN_DIR --ethrex BIN --geth BIN [--reth BIN] --json OUT [--rounds N] [--quick]" >&2
}
CHAIN_DIR="" ETHREX_BIN="" GETH_BIN="" RETH_BIN="" JSON_OUT="" ROUNDS=1 QUICK=0
while (($#)); do
    case "$1" in
        --ethrex) ETHREX_BIN="${2:?}"; shift ;;
        --geth) GETH_BIN="${2:?}"; shift ;;
        --reth) RETH_BIN="${2:?}"; shift ;;
        --json) JSON_OUT="${2:?}"; shift ;;
        --rounds) ROUNDS="${2:?}"; shift ;;
        --quick) QUICK=1 ;;
        -h | --help) usage; exit 0 ;;
        -*) echo "unknown option $1" >&2; usage; exit 2 ;;
        *) [ -z "$CHAIN_DIR" ] || { usage; exit 2; }; CHAIN_DIR="$1" ;;
    esac
    shift
done
[ -n "$CHAIN_DIR" ] && [ -n "$ETHREX_BIN" ] && [ -n "$GETH_BIN" ] && [ -n "$JSON_OUT" ] || { usage; exit 2; }
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "--rounds takes a positive number" >&2; exit 2; }
for bin in "$ETHREX_BIN" "$GETH_BIN" ${RETH_BIN:+"$RETH_BIN"}; do
    [ -x "$bin" ] || { echo "engine-peers: $bin is not an executable" >&2; exit 2; }
done
[ -d "$CHAIN_DIR" ] || { echo "engine-peers: no directory $CHAIN_DIR" >&2; exit 2; }
ETHREX="$(cd "$(dirname "$ETHREX_BIN")" && pwd)/$(basename "$ETHREX_BIN")"   # start_ethrex's binary
GETH="$GETH_BIN"
RETH="$RETH_BIN"
source "$ROOT/bench/net-common.sh"
PY="python3 $ROOT/bench/engine_peers.py"
PREP="$WORK/prep"
RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
T_START=$SECONDS
if ((QUICK)); then
    ROUNDS=1
    $PY prepare --chain "$CHAIN_DIR" --out "$PREP" --blocks 5
    FEED_LIMIT=120
else
    $PY prepare --chain "$CHAIN_DIR" --out "$PREP"
    FEED_LIMIT=3600
fi
GENESIS="$PREP/genesis.json"
STATUS=0

# note CLIENT TEXT: a line the summary shows for a client that did not run (or not fully).
note() {
    python3 -c 'import json, sys; print(json.dumps({"kind": "note", "client": sys.argv[1], "text": sys.argv[2]}))' \
        "$1" "$2" >>"$RESULTS"
}

# new_jwt FILE: a fresh 32-byte Engine API secret, hex.
new_jwt() {
    python3 -c 'import os; print(os.urandom(32).hex())' >"$1"
}

# start_geth NAME: `geth init` of the genesis into a fresh datadir, then geth on free
# loopback ports: the Engine API (JWT) and HTTP eth; full sync mode (in snap mode geth only
# queues a payload it is handed on an empty database); no peers, no discovery. Sets NODE_PID,
# NODE_AUTH, NODE_URL, NODE_JWT, NODE_LOG, NODE_DIR.
start_geth() {
    local dir="$WORK/$1" p2p http auth
    mkdir -p "$dir"
    "$GETH" --datadir "$dir/data" init "$GENESIS" >"$dir/init.log" 2>&1 ||
        { tail_log "geth init" "$dir/init.log"; return 1; }
    p2p=$(free_port)
    http=$(free_port)
    auth=$(free_port)
    geth_loopback_config "$dir/geth.toml" "$p2p"
    new_jwt "$dir/jwt.hex"
    NODE_LOG="$dir/geth.log"
    spawn "$NODE_LOG" "$GETH" --config "$dir/geth.toml" --datadir "$dir/data" --syncmode full \
        --nodiscover --maxpeers 0 --nat none --ipcdisable --datadir.minfreedisk 256 \
        --authrpc.addr 127.0.0.1 --authrpc.port "$auth" --authrpc.jwtsecret "$dir/jwt.hex" \
        --http --http.addr 127.0.0.1 --http.port "$http" --http.api eth,net \
        --verbosity "${GETH_VERBOSITY:-3}"
    NODE_PID=$SPAWNED NODE_URL="http://127.0.0.1:$http" NODE_AUTH="http://127.0.0.1:$auth"
    NODE_JWT="$dir/jwt.hex" NODE_DIR="$dir"
    wait_rpc "$NODE_URL" "$NODE_PID" 60 || { tail_log "geth ($1)" "$NODE_LOG"; return 1; }
}

# start_ethrex_node NAME: `ethrex node --network GENESIS` on a fresh datadir (RocksDB), free
# loopback ports, no discovery (bench/net-common.sh's start_ethrex). Sets NODE_*.
start_ethrex_node() {
    local dir="$WORK/$1"
    mkdir -p "$dir"
    start_ethrex "$dir/ethrex.log" "$GENESIS" "$dir/data" --nodiscover
    NODE_PID=$ETHREX_PID NODE_URL=$ETHREX_URL NODE_AUTH=$ETHREX_AUTH_URL NODE_JWT=$ETHREX_JWT
    NODE_LOG="$dir/ethrex.log" NODE_DIR="$dir"
    wait_rpc "$NODE_URL" "$NODE_PID" 60 || { tail_log "ethrex ($1)" "$NODE_LOG"; return 1; }
}

# ---------------------------------------------------------------------------------------
# start_reth NAME: reth (bench/build-reth.sh) on a fresh datadir, the genesis in geth's
# format as the others take it. Loopback only: P2P on 127.0.0.1 with discovery off. Sets
# NODE_* like the others; on failure prints the command and the log's end.
start_reth() {
    local dir="$WORK/$1" p2p http auth
    mkdir -p "$dir"
    p2p=$(free_port)
    http=$(free_port)
    auth=$(free_port)
    new_jwt "$dir/jwt.hex"
    NODE_LOG="$dir/reth.log"
    local cmd=("$RETH" node --chain "$GENESIS" --datadir "$dir/data"
        --authrpc.addr 127.0.0.1 --authrpc.port "$auth" --authrpc.jwtsecret "$dir/jwt.hex"
        --http --http.addr 127.0.0.1 --http.port "$http" --http.api eth,net
        --addr 127.0.0.1 --port "$p2p" --disable-discovery)
    spawn "$NODE_LOG" "${cmd[@]}"
    NODE_PID=$SPAWNED NODE_URL="http://127.0.0.1:$http" NODE_AUTH="http://127.0.0.1:$auth"
    NODE_JWT="$dir/jwt.hex" NODE_DIR="$dir"
    if ! wait_rpc "$NODE_URL" "$NODE_PID" 120; then
        echo "engine-peers: reth did not start; command:" >&2
        echo "  ${cmd[*]}" >&2
        tail_log "reth ($1)" "$NODE_LOG"
        return 1
    fi
}
# ---------------------------------------------------------------------------------------

# run CLIENT ROUND [STYLE]: a fresh node, the chain fed, the node stopped, its datadir removed.
run() {
    local client="$1" round="$2" style="${3:-engine}" name="$1-$2" starter
    case "$client" in
        ethrex) starter=start_ethrex_node ;;
        geth) starter=start_geth ;;
        reth | reth-engine) starter=start_reth ;;
    esac
    echo "== $client, round $round ($(uptime | sed 's/.*load average/load average/'))" >&2
    ps -eo pid,pcpu,etime,comm --sort=-pcpu | sed -n '2,4p' | sed 's/^/   busiest: /' >&2
    if ! $starter "$name"; then
        if [[ "$client" == reth* ]]; then
            note "$client" "FAILED to start: see start_reth in bench/engine-peers.sh"
        else
            note "$client" "FAILED to start (round $round)"
        fi
        STATUS=1
        [ -n "${NODE_PID:-}" ] && stop "$NODE_PID"
        return 1
    fi
    if ! timeout "$FEED_LIMIT" $PY feed --prep "$PREP" --auth "$NODE_AUTH" --jwt "$NODE_JWT" --eth "$NODE_URL" \
        --client "$client" --pid "$NODE_PID" --round "$round" --style "$style" --results "$RESULTS" \
        --progress $((QUICK ? 0 : 50)); then
        STATUS=1
        grep -q "\"client\": \"$client\", \"style\": \"$style\", \"round\": $round," "$RESULTS" ||
            note "$client" "FAILED: round $round's feed ended without a result (timeout $FEED_LIMIT s?)"
        echo "---- $client ($name): last 25 lines of $NODE_LOG, cut at 300 characters" >&2
        tail -n 25 "$NODE_LOG" | cut -c1-300 >&2 || true
    fi
    grep -iE 'panic|fatal' "$NODE_LOG" | head -5 >&2 || true
    stop "$NODE_PID"
    NODE_PID=""
    [ "${KEEP:-0}" = 1 ] || rm -rf "$NODE_DIR/data"
}

CLIENTS=(ethrex geth)
if [ -n "$RETH" ]; then
    CLIENTS+=(reth reth-engine)
else
    note reth "not run: no --reth BIN (build it with bench/build-reth.sh)"
fi
RETH_BROKEN=0
for round in $(seq "$ROUNDS"); do
    for client in "${CLIENTS[@]}"; do
        case "$client" in
            reth) ((RETH_BROKEN)) || run reth "$round" reth || RETH_BROKEN=1 ;;
            reth-engine) ((RETH_BROKEN)) || run reth-engine "$round" engine || RETH_BROKEN=1 ;;
            *) run "$client" "$round" || true ;;
        esac
    done
done
ELAPSED=$((SECONDS - T_START))
COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
python3 - "$WORK/meta.json" "$ELAPSED" "$ETHREX" "$GETH" "$RETH" <<'EOF'
import json, os, subprocess, sys, time
out, elapsed, ethrex, geth, reth = sys.argv[1:]
def first_line(cmd):
    try:
        text = subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip()
        return text.splitlines()[0] if text else None
    except (OSError, subprocess.SubprocessError):
        return None
versions = {"ethrex": first_line([ethrex, "--version"]),
            "geth": next((l for l in (subprocess.run([geth, "version"], capture_output=True, text=True,
                          timeout=20).stdout.splitlines()) if l.startswith("Version")), None)}
if reth:
    versions["reth"] = first_line([reth, "--version"])
meta = {"versions": versions, "seconds": int(elapsed), "date": time.strftime("%Y-%m-%d"),
        "machine": {"cpus": os.cpu_count(), "loadavg_end": [round(x, 2) for x in os.getloadavg()]}}
json.dump(meta, open(out, "w"))
EOF
SUMMARY_CLIENTS=ethrex,geth,reth
[ -n "$RETH" ] && SUMMARY_CLIENTS=ethrex,geth,reth,reth-engine
$PY summary --results "$RESULTS" --prep "$PREP" --json "$JSON_OUT" --commit "$COMMIT" \
    --clients "$SUMMARY_CLIENTS" --rounds "$ROUNDS" $( ((QUICK)) && echo --quick) --meta "$WORK/meta.json" || STATUS=1
echo "engine-peers: $ELAPSED s in all ($ROUNDS round(s)); $JSON_OUT"
exit "$STATUS"
