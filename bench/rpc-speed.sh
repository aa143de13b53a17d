#!/usr/bin/env bash
# JSON-RPC requests per second of `ethrex node` against go-ethereum v1.17.10, on the same
# machine and the same chain: the stress chain (`ethrex fixture stress`, Amsterdam, 149
# blocks by default), imported into ethrex (`ethrex import`, RocksDB) and into geth (`geth
# init` + `geth import`, a full node: default path scheme and caches). Four methods, each at
# 1 and at 16 concurrent clients (wrk -t C -c C, keep-alive HTTP/1.1):
#   eth_call                  ERC-20 balanceOf(holder) of the chain's token 0 at latest, the
#                             holder varying (up to 1,000 of its Transfer logs' addresses);
#   eth_getLogs               blocks 0..latest with one address (the token with the most logs
#                             within ethrex's 10,000-log cap; the count is printed);
#   eth_getTransactionReceipt up to 2,000 real transaction hashes, spread over the chain;
#   debug_traceTransaction    callTracer, up to 500 hashes of the blocks whose parent state
#                             geth keeps (a full node: the last 128).
# The request lists are made once from geth (bench/rpc_speed.py prepare) and the same files
# go to both nodes, by wrk (C) with bench/rpc_speed.lua cycling through them. Steps:
#   1. check: geth started alone makes the lists and answers every request of them (all of
#      each list; SAMPLES=K: the first K); ethrex started alone answers the same before any
#      load: byte for byte the same `result` (a difference is reported and fails the run;
#      the load still runs); each start must be at the chain's head, listening on 127.0.0.1
#      only;
#   2. load: ethrex, geth, ethrex, geth ... (one node up at a time: the machine has 2
#      cores), each started fresh and idle (start-up work, geth's indexers, done), then per
#      method a warm-up (sequential requests, 2 s and at least 3 requests: the latency at
#      one client) and one wrk point per concurrency, each once the node is idle again;
#      a point lasts POINT_SECONDS, longer for a slow method (about 10 requests per
#      connection, at most MAX_POINT_SECONDS, 30); wrk's socket errors, non-2xx answers
#      and JSON-RPC error answers (a body without "result") must all be 0;
#   3. the table: medians over the rounds, ratio ethrex / geth (> 1: ethrex faster), the
#      median latency and each node's CPU per request (from /proc over the point).
#      Requests/s sums each connection's completed requests over its own span, first
#      request to last answer (wrk's count over the duration drops the request in flight at
#      the end, one per connection: much of a point when a request takes seconds).
# Usage: bench/rpc-speed.sh [--quick] [--json OUT] [CHAIN_DIR]
#   CHAIN_DIR  a stress fixture (stress.rlp, stress.genesis.json), made there if missing
#              (default: a fresh one in the scratch directory)
#   --quick    a 12-block chain, 1-3 s points, one round (CI; about a minute)
#   --json OUT every point and the table as JSON
# Full mode: 3 rounds of 5-30 s points (ROUNDS, POINT_SECONDS, MAX_POINT_SECONDS override),
# about 11 minutes on 2 cores with the chain given (making it: half a minute more), 1.5 of
# them the check's answers.
# Exits 1 on a difference between the nodes' answers, an error during the load, a node that
# does not start or stop, or a run past TIME_LIMIT; a slower ethrex is reported, not a failure.
# Env: ETHREX (default $CARGO_TARGET_DIR/release/ethrex, built if missing), GETH (default:
# geth v1.17.10 in $(go env GOPATH)/bin or on PATH, installed with `go install` if missing),
# ROUNDS, POINT_SECONDS, SAMPLES (answers compared per method, 0: all), TIME_LIMIT (seconds;
# no new step starts past it: quick 600, full 3600), GETH_VERBOSITY, KEEP=1 (keeps the
# scratch directory).
# Loopback only (no P2P on ethrex, no discovery and no peers on geth); every process it
# starts is stopped at exit (a node gets 60 s to stop cleanly, then SIGKILL).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
QUICK=0
JSON_OUT=""
CHAIN_DIR=""
ARGS_SEEN="$*"
while (($#)); do
    case "$1" in
        --quick) QUICK=1 ;;
        --json) JSON_OUT="${2:?--json needs a file}"; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "usage: $0 [--quick] [--json OUT] [CHAIN_DIR]" >&2; exit 2 ;;
        *) [ -z "$CHAIN_DIR" ] || { echo "one CHAIN_DIR only" >&2; exit 2; }; CHAIN_DIR="$1" ;;
    esac
    shift
done
[ -z "$JSON_OUT" ] || JSON_OUT="$(cd "$(dirname "$JSON_OUT")" && pwd)/$(basename "$JSON_OUT")"
# The binary (built if missing) and geth v1.17.10 (installed if missing), found as
# bench/oracles.sh finds them; this bench needs neither revme nor evm.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"
ETHREX="${ETHREX:-$CARGO_TARGET_DIR/release/ethrex}"
[ -x "$ETHREX" ] || (cd "$ROOT" && cargo build --release --locked -p ethrex)
export PATH="$PATH:$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin"
GETH_WANT=v1.17.10
geth_is_wanted() {
    local v
    v="$("$1" --version 2>/dev/null || true)"
    [[ "$v" == *"${GETH_WANT#v}-"* || "$v" == *"${GETH_WANT#v}" ]]
}
if [ -z "${GETH:-}" ]; then
    GOBIN_GETH="$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin/geth"
    if [ -x "$GOBIN_GETH" ] && geth_is_wanted "$GOBIN_GETH"; then
        GETH="$GOBIN_GETH"
    elif command -v geth >/dev/null && geth_is_wanted geth; then
        GETH="$(command -v geth)"
    else
        echo "installing geth $GETH_WANT ..." >&2
        go install "github.com/ethereum/go-ethereum/cmd/geth@$GETH_WANT" >&2
        GETH="$(go env GOPATH)/bin/geth"
    fi
fi
geth_is_wanted "$GETH" || { echo "$GETH is not geth $GETH_WANT: $("$GETH" --version 2>&1 | head -n 1)" >&2; exit 1; }
command -v wrk >/dev/null || { echo "installing wrk ..." >&2; apt-get install -y wrk >&2 ||
    { apt-get update >&2 && apt-get install -y wrk >&2; }; }
python3 -c 'import eth_hash.auto; eth_hash.auto.keccak(b"")' 2>/dev/null ||
    python3 -m pip install --quiet 'eth-hash[pycryptodome]' >&2
source "$ROOT/bench/net-common.sh"
PY="python3 $ROOT/bench/rpc_speed.py"
RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
if ((QUICK)); then
    ROUNDS="${ROUNDS:-1}"
    POINT_SECONDS="${POINT_SECONDS:-1}"
    MAX_POINT_SECONDS=3
    WARMUP_SECONDS=0.5
    STRESS_ARGS=(--blocks 12 --min-txs 30 --max-txs 60 --gas-limit 30000000)
    PREP_ARGS=(--calls 200 --receipts 400 --traces 100)
    SAMPLES="${SAMPLES:-0}"
    TIME_LIMIT="${TIME_LIMIT:-600}"
else
    ROUNDS="${ROUNDS:-3}"
    POINT_SECONDS="${POINT_SECONDS:-5}"
    MAX_POINT_SECONDS="${MAX_POINT_SECONDS:-30}"
    WARMUP_SECONDS=2
    STRESS_ARGS=()
    PREP_ARGS=()
    SAMPLES="${SAMPLES:-0}"
    TIME_LIMIT="${TIME_LIMIT:-3600}"
fi
METHODS=(eth_call eth_getLogs eth_getTransactionReceipt debug_traceTransaction)
CONCS=(1 16)
T_START=$SECONDS
LOADAVG_START="$(cut -d' ' -f1-3 /proc/loadavg)"
STATUS=0

# failed WHAT: a failure, reported in the summary (exit 1).
failed() {
    echo "!! $1" >&2
    python3 -c 'import json, sys; print(json.dumps({"kind": "failure", "what": sys.argv[1]}))' "$1" >>"$RESULTS"
    STATUS=1
}

# out_of_time: true (and reported once) when the run is past TIME_LIMIT: no new step starts.
OUT_OF_TIME=0
out_of_time() {
    ((OUT_OF_TIME)) && return 0
    ((SECONDS - T_START > TIME_LIMIT)) || return 1
    OUT_OF_TIME=1
    failed "past TIME_LIMIT ($TIME_LIMIT s): the remaining steps were skipped"
    return 0
}

ETHREX_VERSION="$("$ETHREX" --version | head -n 1)"
ETHREX_MTIME="$(stat -c %y "$ETHREX" | cut -d. -f1)"
GETH_VERSION="$("$GETH" --version | awk '{print $3}')"
COMMIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
# Uncommitted changes to the sources: the binary may or may not hold them.
TREE=clean
[ -z "$(git -C "$ROOT" status --porcelain -- crates bin cmd Cargo.toml Cargo.lock 2>/dev/null)" ] || TREE=dirty
echo "== rpc-speed ($( ((QUICK)) && echo quick || echo full)): ethrex $ETHREX_VERSION ($ETHREX, built $ETHREX_MTIME), geth $GETH_VERSION, commit $COMMIT (sources $TREE)"

# ---- the chain
if [ -z "$CHAIN_DIR" ]; then
    CHAIN_DIR="$WORK/chain"
fi
mkdir -p "$CHAIN_DIR"
CHAIN_DIR="$(cd "$CHAIN_DIR" && pwd)"
GENESIS="$CHAIN_DIR/stress.genesis.json"
RLP="$CHAIN_DIR/stress.rlp"
if [ ! -s "$RLP" ] || [ ! -s "$GENESIS" ]; then
    t0=$SECONDS
    "$ETHREX" fixture stress --out "$CHAIN_DIR" "${STRESS_ARGS[@]}" >"$WORK/fixture.log" 2>&1 ||
        { tail_log "ethrex fixture stress" "$WORK/fixture.log"; exit 1; }
    echo "chain: ethrex fixture stress ${STRESS_ARGS[*]} -> $CHAIN_DIR ($((SECONDS - t0)) s)"
else
    echo "chain: $CHAIN_DIR (existing)"
fi

# ---- imports: both at once (set-up, not measured); geth a full node with its defaults.
EDATA="$WORK/ethrex-data"
GDIR="$WORK/geth"
mkdir -p "$GDIR"
GFLAGS=(--datadir "$GDIR/data" --datadir.minfreedisk 256)
t0=$SECONDS
spawn "$WORK/ethrex-import.log" timeout 900 "$ETHREX" import --network "$GENESIS" --datadir "$EDATA" --db rocksdb "$RLP"
IMPORT_PID=$SPAWNED
timeout 120 "$GETH" "${GFLAGS[@]}" init "$GENESIS" >"$GDIR/init.log" 2>&1 ||
    { tail_log "geth init" "$GDIR/init.log"; exit 1; }
timeout 900 "$GETH" "${GFLAGS[@]}" import "$RLP" >"$GDIR/import.log" 2>&1 ||
    { tail_log "geth import" "$GDIR/import.log"; exit 1; }
echo "geth init + import: $((SECONDS - t0)) s: $(grep -o 'Imported new chain segment.*' "$GDIR/import.log" | tail -n 1 | cut -c1-110)"
wait "$IMPORT_PID" || { tail_log "ethrex import" "$WORK/ethrex-import.log"; exit 1; }
echo "ethrex import: $(tail -n 1 "$WORK/ethrex-import.log")"

# stop_node_pid CLIENT PID: SIGTERM, then up to 60 s for a clean stop (geth writes its
# state journal at shutdown: a killed geth would start on older state), then SIGKILL.
stop_node_pid() {
    local i
    kill "$2" 2>/dev/null || { forget_pid "$2"; return 0; }
    for i in $(seq 600); do
        kill -0 "$2" 2>/dev/null || { wait "$2" 2>/dev/null || true; forget_pid "$2"; return 0; }
        sleep 0.1
    done
    kill -9 "$2" 2>/dev/null || true
    wait "$2" 2>/dev/null || true
    failed "$1 did not stop within 60 s of SIGTERM (killed)"
    forget_pid "$2"
}

# forget_pid PID: out of net-common's list, so that the exit's cleanup does not signal
# another process that got the number since.
forget_pid() {
    local keep=() p
    for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
    PIDS=("${keep[@]}")
}

# listening_off_loopback PID: prints the sockets PID listens on that are not on loopback.
listening_off_loopback() {
    command -v ss >/dev/null || return 0
    ss -H -ltnup 2>/dev/null | grep "pid=$1," | awk '{print $1, $5}' |
        grep -vE ' (127\.[0-9.]+|\[::1\]|\[::ffff:127\.[0-9.]+\]):[0-9]+$' || true
}

# start_node CLIENT TAG: a node on the imported chain, on free loopback ports, idle when
# this returns; fails (the node stopped) when it does not answer, is not at the chain's
# head (HEAD, once known) or listens off loopback. Sets NODE_PID, NODE_URL, NODE_LOG.
start_node() {
    local client="$1" tag="$2" head off
    NODE_LOG="$WORK/$client-$tag.log"
    if [ "$client" = ethrex ]; then
        start_ethrex "$NODE_LOG" "$GENESIS" "$EDATA" --p2p.disabled --authrpc.addr 127.0.0.1
        NODE_PID=$ETHREX_PID NODE_URL=$ETHREX_URL
    else
        local p2p http auth
        p2p=$(free_port)
        http=$(free_port)
        auth=$(free_port)
        geth_loopback_config "$GDIR/geth.toml" "$p2p"
        [ -f "$GDIR/jwt.hex" ] || python3 -c 'import os; print(os.urandom(32).hex())' >"$GDIR/jwt.hex"
        spawn "$NODE_LOG" "$GETH" --config "$GDIR/geth.toml" "${GFLAGS[@]}" --syncmode full \
            --nodiscover --maxpeers 0 --nat none --ipcdisable \
            --authrpc.addr 127.0.0.1 --authrpc.port "$auth" --authrpc.jwtsecret "$GDIR/jwt.hex" \
            --http --http.addr 127.0.0.1 --http.port "$http" --http.api eth,debug \
            --verbosity "${GETH_VERBOSITY:-3}"
        NODE_PID=$SPAWNED
        NODE_URL="http://127.0.0.1:$http"
    fi
    if ! wait_rpc "$NODE_URL" "$NODE_PID" 90; then
        tail_log "$client ($tag)" "$NODE_LOG"
        stop_node_pid "$client" "$NODE_PID"
        return 1
    fi
    head="$(rpc "$NODE_URL" eth_blockNumber 2>/dev/null | tr -d '"' || true)"
    if [ -n "${HEAD:-}" ] && [ "$((head))" != "$HEAD" ]; then
        echo "!! $client ($tag) is at block $((head)), not the chain's head $HEAD" >&2
        tail_log "$client ($tag)" "$NODE_LOG" 10
        stop_node_pid "$client" "$NODE_PID"
        return 1
    fi
    off="$(listening_off_loopback "$NODE_PID")"
    if [ -n "$off" ]; then
        echo "!! $client ($tag) listens off loopback: $off" >&2
        stop_node_pid "$client" "$NODE_PID"
        return 1
    fi
    $PY settle --pid "$NODE_PID" --limit 60 | sed "s/^/$client ($tag): /"
}

# stop_node CLIENT: stops the node, reporting a panic or fatal line of its log.
stop_node() {
    grep -iE 'panic|fatal' "$NODE_LOG" | head -5 >&2 || true
    kill -0 "$NODE_PID" 2>/dev/null || failed "$1 exited on its own (see $NODE_LOG)"
    stop_node_pid "$1" "$NODE_PID"
}

# ---- 1. the request lists (from geth) and geth's answers to their first requests
REQS="$WORK/requests"
echo "== geth: the requests and its answers"
start_node geth check || { failed "geth did not start"; exit 1; }
$PY prepare --url "$NODE_URL" --genesis "$GENESIS" --out "$REQS" "${PREP_ARGS[@]}" ||
    { tail_log geth "$NODE_LOG" 10; failed "prepare on geth"; exit 1; }
HEAD="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["head"])' "$REQS/meta.json")"
$PY answers --url "$NODE_URL" --dir "$REQS" --out "$WORK/answers-geth.json" --samples "$SAMPLES" ||
    failed "geth answered a check request with an error or null"
stop_node geth

# ---- ethrex's answers to the same requests, compared with geth's before any load
echo "== ethrex: its answers"
IDENTICAL="?"
if start_node ethrex check; then
    $PY answers --url "$NODE_URL" --dir "$REQS" --out "$WORK/answers-ethrex.json" --samples "$SAMPLES" ||
        failed "ethrex answered a check request with an error or null"
    stop_node ethrex
    IDENTICAL=yes
    $PY compare --geth "$WORK/answers-geth.json" --ethrex "$WORK/answers-ethrex.json" ||
        { IDENTICAL=no; failed "ethrex's answers differ from geth's (above)"; }
else
    failed "ethrex did not start (check)"
fi

# ---- 2. load, alternating, each node started fresh
T_LOAD=$SECONDS
for round in $(seq "$ROUNDS"); do
    out_of_time && break
    for client in ethrex geth; do
        out_of_time && break
        echo "== round $round/$ROUNDS: $client"
        if ! start_node "$client" "r$round"; then
            failed "$client did not start (round $round)"
            continue
        fi
        for m in "${METHODS[@]}"; do
            out_of_time && break
            $PY warmup --url "$NODE_URL" --dir "$REQS" --method "$m" --seconds "$WARMUP_SECONDS" \
                --client "$client" --round "$round" --results "$RESULTS" ||
                failed "$client $m warm-up (round $round)"
            for c in "${CONCS[@]}"; do
                $PY load --url "$NODE_URL" --dir "$REQS" --method "$m" --conc "$c" --seconds "$POINT_SECONDS" \
                    --max-seconds "$MAX_POINT_SECONDS" --client "$client" --round "$round" --pid "$NODE_PID" --results "$RESULTS" ||
                    failed "$client $m c=$c (round $round)"
            done
        done
        stop_node "$client"
    done
done
LOAD_S=$((SECONDS - T_LOAD))
[ "$(stat -c %y "$ETHREX" | cut -d. -f1)" = "$ETHREX_MTIME" ] ||
    echo "!! $ETHREX was rebuilt during the run (built $ETHREX_MTIME at the start); the load used the binary of each start" >&2

# ---- 3. the table
TOTAL_S=$((SECONDS - T_START))
echo "rpc-speed: $TOTAL_S s in all (load $LOAD_S s: $ROUNDS round(s), ${POINT_SECONDS} s points); answers identical: $IDENTICAL"
$PY summary --results "$RESULTS" --meta "$REQS/meta.json" ${JSON_OUT:+--json "$JSON_OUT"} \
    --info "mode=$( ((QUICK)) && echo quick || echo full)" "args=$ARGS_SEEN" "commit=$COMMIT" \
    "ethrex_version=$ETHREX_VERSION" "ethrex_binary=$ETHREX" "ethrex_mtime=$ETHREX_MTIME" \
    "geth_version=$GETH_VERSION" "sources=$TREE" "samples=$SAMPLES" "time_limit=$TIME_LIMIT" "chain=$CHAIN_DIR" "rounds=$ROUNDS" "point_seconds=$POINT_SECONDS" \
    "max_point_seconds=$MAX_POINT_SECONDS" "warmup_seconds=$WARMUP_SECONDS" "identical=$IDENTICAL" "total_seconds=$TOTAL_S" "load_seconds=$LOAD_S" \
    "loadavg_start=$LOADAVG_START" "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" "nproc=$(nproc)" "wrk=$(wrk -v 2>&1 | head -n 1 | awk '{print $2}')" || STATUS=1
exit "$STATUS"
