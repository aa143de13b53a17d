#!/usr/bin/env bash
# Our node's eth_getBlockByNumber against go-ethereum v1.17.10's, on the execution-apis RPC
# test chain (what Hive's rpc-compat simulator loads: proof-of-work from genesis, the merge
# at block 36, then Shanghai .. BPO2 by timestamp; 54 blocks). Both nodes import the same
# chain.rlp into a fresh data directory (`geth init` + `geth import --gcmode archive`, as
# Hive's geth does; `ethrex import`), then serve HTTP on 127.0.0.1 (no P2P beyond loopback,
# no discovery). Each gets headfcu.json's engine_forkchoiceUpdatedV3 (head = safe =
# finalized = block 54), as Hive sends before its tests. Then, for every block 0..54 and
# the tags earliest, latest, safe and finalized, the `result` of eth_getBlockByNumber with
# full=false and full=true is compared (bench/geth_rpc_blocks.py): byte for byte; a
# key-order-only difference and a value difference are reported apart (the fields, both
# values), and both fail; a whitespace/escape-only difference is a note.
#   bench/geth-rpc-blocks.sh [--keep DIR] [--fixtures DIR] [--ignore-order]
#                            [--genesis FILE --chain FILE... [--expect-head HASH]]
#     --keep DIR       keep data directories, logs and every answer (DIR/answers) in DIR
#                      (created; must be empty)
#     --fixtures DIR   the execution-apis tests folder (genesis.json, chain.rlp,
#                      headfcu.json); default $EXECUTION_APIS_FIXTURES or
#                      ../shared/fixtures/execution-apis beside the clone. Read in place.
#     --ignore-order   key-order-only differences are reported but do not fail
#     --more           also compare, per block, its receipts (eth_getBlockReceipts), raw
#                      block/header/receipts (debug_getRaw*), transaction counts, each
#                      transaction by hash and index with its receipt and raw form, and the
#                      balance, nonce and code of every account it touched after it and
#                      after its parent (historical state)
#     --genesis FILE, --chain FILE (repeatable)
#                      another chain instead: both import the chain files in order (a file
#                      may start a side branch: each block becomes the head, as in geth's
#                      `import`); no forkchoiceUpdated is sent; blocks 0..geth's head and
#                      the tags earliest and latest are compared
#     --expect-head HASH  also fail unless both heads are HASH
# Env: ETHREX (binary; default $CARGO_TARGET_DIR/release/ethrex, built if missing), GETH
# (default: geth on PATH / in $(go env GOPATH)/bin, installed with `go install` if missing
# or not v1.17.10), GETH_VERBOSITY (default 3).
# If `ethrex import` fails, the node still serves what it imported and the comparison runs
# (the blocks it lacks show as differences): the run fails either way.
# Ends with `geth-rpc-blocks: eth_getBlockByNumber matches geth ...`, or exits non-zero
# with the differences per block (and the logs' tails when a node fails).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
KEEP_DIR=""
FIXTURES="${EXECUTION_APIS_FIXTURES:-$ROOT/../shared/fixtures/execution-apis}"
CMP_ARGS=()
GENESIS=""
CHAINS=()
EXPECT_HEAD=""
while (($#)); do
    case "$1" in
        --keep) KEEP_DIR="${2:?--keep needs a directory}"; shift 2 ;;
        --fixtures) FIXTURES="${2:?--fixtures needs a directory}"; shift 2 ;;
        --genesis) GENESIS="${2:?--genesis needs a file}"; shift 2 ;;
        --chain) CHAINS+=("${2:?--chain needs a file}"); shift 2 ;;
        --expect-head) EXPECT_HEAD="${2:?--expect-head needs a hash}"; shift 2 ;;
        --ignore-order) CMP_ARGS+=(--ignore-order); shift ;;
        --more) CMP_ARGS+=(--more); shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
if [ -n "$GENESIS" ] || ((${#CHAINS[@]})); then
    [ -n "$GENESIS" ] && ((${#CHAINS[@]})) || { echo "--genesis and --chain go together" >&2; exit 2; }
    HEADFCU=""
    for f in "$GENESIS" "${CHAINS[@]}"; do
        [ -r "$f" ] || { echo "missing $f" >&2; exit 2; }
    done
else
    GENESIS="$FIXTURES/genesis.json"
    CHAINS=("$FIXTURES/chain.rlp")
    HEADFCU="$FIXTURES/headfcu.json"
    for f in "$GENESIS" "${CHAINS[@]}" "$HEADFCU"; do
        [ -r "$f" ] || { echo "missing $f (--fixtures DIR)" >&2; exit 2; }
    done
fi
if [ -n "$KEEP_DIR" ]; then
    mkdir -p "$KEEP_DIR"
    [ -z "$(ls -A "$KEEP_DIR")" ] || { echo "--keep $KEEP_DIR: not empty" >&2; exit 2; }
    KEEP_DIR="$(cd "$KEEP_DIR" && pwd)"
fi

# The binary (built if missing) and the pinned oracles, as every bench script finds them.
source "$ROOT/bench/oracles.sh"
ensure_ethrex
GETH="${GETH:-geth}"

# Loopback helpers; every process spawned is killed at exit, $WORK removed unless kept.
source "$ROOT/bench/net-common.sh"
if [ -n "$KEEP_DIR" ]; then
    rmdir "$WORK"
    WORK="$KEEP_DIR"
    KEEP=1
fi
PY="python3 $ROOT/bench/geth_rpc_blocks.py"
mkdir -p "$WORK/geth" "$WORK/ours" "$WORK/answers"

# ---- geth: init, import (archive, as Hive), serve on loopback
echo "== geth $("$GETH" --version | awk '{print $3}'): init + import ${CHAINS[*]}"
GDIR="$WORK/geth"
GFLAGS=(--datadir "$GDIR/data" --cache.database 5 --datadir.minfreedisk 256)
timeout 120 "$GETH" "${GFLAGS[@]}" init "$GENESIS" >"$GDIR/init.log" 2>&1 ||
    { tail_log "geth init" "$GDIR/init.log"; exit 1; }
timeout 300 "$GETH" "${GFLAGS[@]}" --gcmode archive import "${CHAINS[@]}" >"$GDIR/import.log" 2>&1 ||
    { tail_log "geth import" "$GDIR/import.log"; exit 1; }
G_P2P=$(free_port)
G_HTTP=$(free_port)
G_AUTH=$(free_port)
geth_loopback_config "$GDIR/geth.toml" "$G_P2P"
python3 -c 'import os; print(os.urandom(32).hex())' >"$GDIR/jwt.hex"
spawn "$GDIR/geth.log" "$GETH" --config "$GDIR/geth.toml" "${GFLAGS[@]}" \
    --syncmode full --gcmode archive --nodiscover --maxpeers 0 --nat none --ipcdisable \
    --authrpc.addr 127.0.0.1 --authrpc.port "$G_AUTH" --authrpc.jwtsecret "$GDIR/jwt.hex" \
    --http --http.addr 127.0.0.1 --http.port "$G_HTTP" --http.api eth,net,web3,debug \
    --verbosity "${GETH_VERBOSITY:-3}"
GETH_PID=$SPAWNED
GETH_URL="http://127.0.0.1:$G_HTTP"
GETH_AUTH_URL="http://127.0.0.1:$G_AUTH"

# ---- ours: import, serve on loopback (no P2P)
echo "== ethrex import ${CHAINS[*]}"
ODIR="$WORK/ours"
IMPORT_OK=1
timeout 600 "$ETHREX" import --network "$GENESIS" --datadir "$ODIR/data" --db rocksdb "${CHAINS[@]}" \
    >"$ODIR/import.log" 2>&1 || IMPORT_OK=0
if ((IMPORT_OK)); then
    tail -n 1 "$ODIR/import.log"
else
    echo "!! ethrex import failed; comparing what it imported" >&2
    tail_log "ethrex import" "$ODIR/import.log" 15
fi
start_ethrex "$ODIR/node.log" "$GENESIS" "$ODIR/data" --p2p.disabled
OURS_PID=$ETHREX_PID
OURS_URL=$ETHREX_URL

wait_rpc "$GETH_URL" "$GETH_PID" 60 || { tail_log "geth" "$GDIR/geth.log"; exit 1; }
wait_rpc "$OURS_URL" "$OURS_PID" 60 || { tail_log "ethrex node" "$ODIR/node.log"; exit 1; }

# ---- heads after import, then headfcu.json (as Hive) to both
echo "after import: geth: $($PY tags "$GETH_URL") | ours: $($PY tags "$OURS_URL")"
# fcu NAME AUTH_URL JWT: sends headfcu.json, prints the answer; fails unless VALID.
fcu() {
    local out ok=0
    out=$($PY fcu "$2" "$3" "$HEADFCU" 2>&1) || ok=1
    echo "headfcu.json -> $1: $out"
    return $ok
}
FCU_OK=1
TAGS=earliest,latest
if [ -n "$HEADFCU" ]; then
    fcu geth "$GETH_AUTH_URL" "$GDIR/jwt.hex" || echo "!! geth did not answer VALID to headfcu.json" >&2
    fcu ours "$ETHREX_AUTH_URL" "$ETHREX_JWT" || FCU_OK=0
    echo "after headfcu: geth: $($PY tags "$GETH_URL") | ours: $($PY tags "$OURS_URL")"
    TAGS=earliest,latest,safe,finalized
fi

# ---- the comparison: every block up to geth's head
STATUS=0
read -r LAST GETH_HEAD _ < <(head_of "$GETH_URL")
read -r _ OURS_HEAD _ < <(head_of "$OURS_URL")
if [ -n "$EXPECT_HEAD" ]; then
    for side in "geth $GETH_HEAD" "ours $OURS_HEAD"; do
        [ "${side#* }" = "$EXPECT_HEAD" ] ||
            { echo "!! ${side% *}'s head is ${side#* }, expected $EXPECT_HEAD" >&2; STATUS=1; }
    done
fi
timeout 900 $PY compare --ours "$OURS_URL" --geth "$GETH_URL" --first 0 --last "$LAST" \
    --tags "$TAGS" --save "$WORK/answers" "${CMP_ARGS[@]}" || STATUS=1
for pid in "$GETH_PID" "$OURS_PID"; do
    kill -0 "$pid" 2>/dev/null || { echo "!! a node exited during the comparison" >&2; STATUS=1; }
done
if ((STATUS)); then
    tail_log "geth" "$GDIR/geth.log" 10
    tail_log "ethrex node" "$ODIR/node.log" 10
fi
((IMPORT_OK)) || { echo "geth-rpc-blocks: ethrex import failed (see above)" >&2; STATUS=1; }
((FCU_OK)) || { echo "geth-rpc-blocks: our node did not answer VALID to headfcu.json" >&2; STATUS=1; }
((STATUS)) || echo "geth-rpc-blocks: blocks 0..$LAST identical on both nodes (head $GETH_HEAD)"
stop "$OURS_PID"
stop "$GETH_PID"
exit "$STATUS"
