#!/usr/bin/env bash
# go-ethereum v1.17.10's eth protocol test suite (`devp2p rlpx eth-test`, Hive's devp2p
# simulator without Docker) against `ethrex node`: the devp2p test chain is imported with
# `ethrex import`, the node serves it on loopback (--nodiscover, free ports, its own JWT),
# and the suite runs (all of it, or a subset with --quick).
#   bench/eth-test.sh [--quick]     (--quick: a smaller subset, for CI)
# Prints the suite's report and `eth-test: X/Y passed`; exits non-zero if any test failed.
# The three eth/72 tests (BlobTxAvailabilityFailure, GetCells, BlobTxWithInvalidCells) pass
# by skipping: the node negotiates eth/71 and each logs "node negotiated eth/71, eth/72
# required", as in the suite's own eth/71 run.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/bench/oracles.sh"
source "$ROOT/bench/net-common.sh"
ensure_ethrex

QUICK=0
[ "${1:-}" = --quick ] && QUICK=1

# Test names are matched by devp2p as a Go regexp against the bare name ("Status", not
# "eth/Status"); anchored so that e.g. Status does not also select another test.
if ((QUICK)); then
    TESTS="Status|GetBlockHeaders|GetBlockBodies|GetReceipts|GetBlockAccessLists|BlockRangeUpdateInvalid"
    TESTS+="|Transaction|NewPooledTxs|TestBlobTxWithMismatchedSidecar"
else
    TESTS=".*"
fi
RUN="^(${ETH_TEST_RUN:-$TESTS})\$"

DATA="$WORK/data"
"$ETHREX" import --network "$ETHTEST_CHAIN/genesis.json" --datadir "$DATA" \
    "$ETHTEST_CHAIN/chain.rlp" >"$WORK/import.log" 2>&1 || { tail_log "ethrex import" "$WORK/import.log"; exit 1; }
tail -1 "$WORK/import.log"

LOG="$WORK/node.log"
start_ethrex "$LOG" "$ETHTEST_CHAIN/genesis.json" "$DATA" --nodiscover
NODE=$ETHREX_PID
URL=$ETHREX_URL
if ! wait_rpc "$URL" "$NODE" 60; then
    tail_log "ethrex node" "$LOG"
    echo "eth-test: the node did not answer on $URL" >&2
    exit 1
fi
ENODE=$(rpc "$URL" admin_nodeInfo | python3 -c 'import json,sys; print(json.load(sys.stdin)["enode"])')
echo "node: $ENODE (head $(head_of "$URL"))"

REPORT="$WORK/eth-test.out"
set +e
timeout 600 devp2p rlpx eth-test --chain "$ETHTEST_CHAIN" --node "$ENODE" \
    --engineapi "$ETHREX_AUTH_URL" --jwtsecret "0x$(cat "$ETHREX_JWT")" --run "$RUN" >"$REPORT" 2>&1
rc=$?
set -e
# One line per test (the report's indented lines are the tests' descriptions and logs;
# with a failure, the whole report is printed).
grep -E '^-- (OK|FAIL)|tests passed' "$REPORT" || true
# The suite's summary line: "X/Y tests passed."
summary=$(grep -Eo '^[0-9]+/[0-9]+ tests passed' "$REPORT" | tail -1 || true)
if [ -z "$summary" ]; then
    tail_log "ethrex node" "$LOG"
    echo "eth-test: the suite printed no summary (exit $rc)"
    exit 1
fi
echo "eth-test: ${summary% tests passed} passed"
passed=${summary%%/*}
total=${summary#*/}
total=${total%% *}
if ((rc != 0 || passed != total)); then
    echo "---- the suite's report" >&2
    cat "$REPORT" >&2
    tail_log "ethrex node" "$LOG" 40
    exit 1
fi
