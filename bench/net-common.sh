# Sourced by the network scripts (bench/eth-test.sh, bench/sync-geth.sh): loopback helpers.
# Every process started through `spawn` is killed (by its pid) at exit, and the scratch
# directory $WORK (mktemp) is removed unless KEEP=1.

WORK="$(mktemp -d "${TMPDIR:-/tmp}/ethrex-net.XXXXXX")"
PIDS=()
net_cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        # Bounded wait, then SIGKILL.
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
    if [ "${KEEP:-0}" = 1 ]; then
        echo "kept $WORK" >&2
    else
        rm -rf "$WORK"
    fi
}
trap net_cleanup EXIT
trap 'exit 130' INT TERM

# spawn LOG CMD...: runs CMD in the background with stdout+stderr to LOG; sets SPAWNED.
spawn() {
    local log="$1"
    shift
    "$@" >"$log" 2>&1 &
    SPAWNED=$!
    PIDS+=("$SPAWNED")
}

# stop PID: kills one process we started and waits for it (bounded).
stop() {
    kill "$1" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
    kill -9 "$1" 2>/dev/null || true
}

# A TCP port free on 127.0.0.1 right now (the OS picks it).
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_ethrex LOG GENESIS DATADIR [ARGS...]: `ethrex node` on free 127.0.0.1 ports (Engine
# API with a fresh JWT secret in LOG's directory, HTTP, RLPx and discovery), ARGS appended;
# output to LOG. Sets ETHREX_PID, ETHREX_URL (HTTP API), ETHREX_AUTH_URL and ETHREX_JWT
# (the secret's file).
start_ethrex() {
    local log="$1" genesis="$2" datadir="$3" http auth p2p
    shift 3
    ETHREX_JWT="${log%.log}.jwt.hex"
    python3 -c 'import os; print(os.urandom(32).hex())' >"$ETHREX_JWT"
    http=$(free_port)
    auth=$(free_port)
    p2p=$(free_port)
    spawn "$log" "$ETHREX" node --network "$genesis" --datadir "$datadir" --db rocksdb \
        --authrpc.port "$auth" --authrpc.jwtsecret "$ETHREX_JWT" \
        --http.addr 127.0.0.1 --http.port "$http" --p2p.addr 127.0.0.1 --p2p.port "$p2p" "$@"
    ETHREX_PID=$SPAWNED
    ETHREX_URL="http://127.0.0.1:$http"
    ETHREX_AUTH_URL="http://127.0.0.1:$auth"
}

# rpc URL METHOD [PARAMS_JSON]: prints the JSON result (exit 1 on an error or no answer).
rpc() {
    python3 - "$1" "$2" "${3:-[]}" <<'EOF'
import json, sys, urllib.request
url, method, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, timeout=5) as r:
        answer = json.load(r)
except Exception as e:
    print(e, file=sys.stderr)
    sys.exit(1)
if "error" in answer:
    print(answer["error"], file=sys.stderr)
    sys.exit(1)
print(json.dumps(answer["result"]))
EOF
}

# wait_rpc URL PID SECONDS: until URL answers eth_blockNumber (fails if PID dies or time's up).
wait_rpc() {
    local deadline=$((SECONDS + $3))
    while ((SECONDS < deadline)); do
        kill -0 "$2" 2>/dev/null || return 1
        rpc "$1" eth_blockNumber >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    return 1
}

# head URL: prints "NUMBER HASH STATEROOT" of the node's latest block.
head_of() {
    rpc "$1" eth_getBlockByNumber '["latest", false]' 2>/dev/null | python3 -c '
import json, sys
b = json.load(sys.stdin)
print(int(b["number"], 16), b["hash"], b["stateRoot"])'
}

# peak_rss_mb PID: the process's peak resident set (VmHWM) in MB.
peak_rss_mb() {
    awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo "?"
}

# cpu_secs PID: the process's CPU time so far (user + system, all threads), in seconds.
cpu_secs() {
    awk -v tck="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / tck }' \
        "/proc/$1/stat" 2>/dev/null || echo "?"
}

# tail_log TITLE FILE [LINES]: prints the end of a log, labelled.
tail_log() {
    echo "---- $1 (last ${3:-30} lines of $2)" >&2
    tail -n "${3:-30}" "$2" >&2 || true
}

# geth_loopback_config FILE PORT: a geth config file whose P2P listener is on 127.0.0.1:PORT
# (no flag sets its address) with every discovery off and no bootstrap nodes.
geth_loopback_config() {
    cat >"$1" <<EOF
[Node.P2P]
ListenAddr = "127.0.0.1:$2"
NoDiscovery = true
DiscoveryV4 = false
DiscoveryV5 = false
BootstrapNodes = []
BootstrapNodesV5 = []
EOF
}
