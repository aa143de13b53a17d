#!/usr/bin/env bash
# Full sync between `ethrex node` and go-ethereum v1.17.10 over loopback, both ways:
#   (a) geth (the chain imported with `geth import`) serves; a fresh `ethrex node
#       --sync.target HEAD --peers GETH` syncs to geth's head hash and state root. Chains:
#       geth's devp2p test chain (600 blocks, no BALs needed) and an Amsterdam stress chain
#       (`ethrex fixture stress`), the latter twice: fetching BALs on the wire (eth/71, the
#       parallel path) and with --sync.no-bals (sequential), beside `ethrex import` of the same
#       file with and without its BALs (what BALs on the wire buy, and sync vs import); and
#       the execution-apis RPC test chain (54 blocks: ethash PoW with ommers from genesis,
#       pre-EIP-155 transactions and pre-Byzantium receipts, the merge at block 36 by total
#       difficulty, then Shanghai..BPO2), read in place; its head must be headfcu.json's;
#   (b) our node (the chain imported with `ethrex import`) serves; a fresh geth
#       (`--syncmode full --synctarget OUR_HEAD`, our node added with admin_addPeer) syncs to
#       our head: the stress chain and the execution-apis chain (headers and bodies, ommers
#       included, of every era; geth's full sync executes the blocks, so it asks for no receipts).
#   bench/sync-geth.sh [--quick]   (--quick: an 8-block stress chain and shorter timeouts, for CI;
#   the execution-apis chain is in both modes)
#   bench/sync-geth.sh --rounds N  (the stress chain only: geth serves it, and N rounds each
#   run a fresh sync with wire BALs, then `ethrex import --bal` of the same file; prints each
#   round's sync/import throughput ratio and their median. With --quick: the 8-block chain)
# Env: KEEP=1 keeps the scratch directory; STRESS_DIR=DIR uses an existing stress fixture;
# EXECUTION_APIS_FIXTURES=DIR (default $ROOT/../shared/fixtures/execution-apis: genesis.json,
# chain.rlp, headfcu.json);
# GETH_VERBOSITY (default 3; 4-5 for the downloader's and p2p's detail in geth's logs).
# Ends with `sync-geth: all N syncs reached the head`, or exits non-zero with the logs' tails.
# Disk: each data directory is removed once its row is done (unless KEEP=1), and geth runs
# with --cache.database 5 (pebble preallocates its write-ahead logs at the memtable size: about
# 1.4 GB for a 600-block chain with the default 50%); geth stops only below 256 MB free (by
# default it shuts down below twice its GC cache, 2 GB, which a shared disk can hit).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/bench/oracles.sh"
source "$ROOT/bench/net-common.sh"
ensure_ethrex
PY="python3 $ROOT/bench/sync_geth.py"

QUICK=0
ROUNDS=0
while (($#)); do
    case "$1" in
        --quick) QUICK=1 ;;
        --rounds) ROUNDS="${2:?--rounds N}"; shift ;;
        *) echo "usage: $0 [--quick] [--rounds N]" >&2; exit 2 ;;
    esac
    shift
done
if ((QUICK)); then
    TIMEOUT=60
    STRESS_ARGS=(--blocks 8 --min-txs 20 --max-txs 60 --gas-limit 30000000)
else
    TIMEOUT=300
    STRESS_ARGS=()
fi
# scrap DIR: removes a finished data directory (kept with KEEP=1).
scrap() {
    [ "${KEEP:-0}" = 1 ] || rm -rf "$1"
}
# The execution-apis RPC test chain, read in place; its head hash is headfcu.json's.
EA_DIR="${EXECUTION_APIS_FIXTURES:-$ROOT/../shared/fixtures/execution-apis}"
for f in genesis.json chain.rlp headfcu.json; do
    [ -f "$EA_DIR/$f" ] || { echo "no $EA_DIR/$f (set EXECUTION_APIS_FIXTURES)" >&2; exit 1; }
done
EA_GENESIS="$EA_DIR/genesis.json"
EA_RLP="$EA_DIR/chain.rlp"
EA_HEAD=$($PY fcu-head "$EA_DIR/headfcu.json")
ROWS="$WORK/rows.tsv"
: >"$ROWS"
FAILED=0
TOTAL=0

# start_geth NAME GENESIS [CHAIN.rlp] [geth flags...]: geth init (and import) in $WORK/NAME,
# then geth serving on 127.0.0.1 only (P2P listener from a config file, no discovery, no
# NAT, no IPC; HTTP and authrpc on loopback, free ports), with a known node key.
# Sets GETH_PID, GETH_URL, GETH_ENODE, GETH_LOG.
start_geth() {
    local name="$1" genesis="$2" chain="${3:-}"
    shift 3 || shift $#
    local dir="$WORK/$name"
    mkdir -p "$dir"
    geth --datadir "$dir/data" --cache.database 5 init "$genesis" >"$dir/init.log" 2>&1 ||
        { tail_log "geth init" "$dir/init.log"; return 1; }
    if [ -n "$chain" ]; then
        geth --datadir "$dir/data" --cache.database 5 import "$chain" >"$dir/import.log" 2>&1 ||
            { tail_log "geth import" "$dir/import.log"; return 1; }
    fi
    local p2p http auth
    p2p=$(free_port)
    http=$(free_port)
    auth=$(free_port)
    geth_loopback_config "$dir/geth.toml" "$p2p"
    python3 -c 'import os; print(os.urandom(32).hex())' >"$dir/nodekey"
    GETH_ENODE=$(devp2p key to-enode --ip 127.0.0.1 --tcp "$p2p" --udp 0 "$dir/nodekey")
    GETH_ENODE="${GETH_ENODE%%\?*}"
    GETH_LOG="$dir/geth.log"
    GETH_STARTED=$EPOCHREALTIME
    spawn "$GETH_LOG" geth --config "$dir/geth.toml" --datadir "$dir/data" --nodekey "$dir/nodekey" \
        --nodiscover --nat none --ipcdisable --maxpeers 5 --cache.database 5 --datadir.minfreedisk 256 \
        --authrpc.addr 127.0.0.1 --authrpc.port "$auth" \
        --http --http.addr 127.0.0.1 --http.port "$http" --http.api eth,admin,net \
        --verbosity "${GETH_VERBOSITY:-3}" "$@"
    GETH_PID=$SPAWNED
    GETH_URL="http://127.0.0.1:$http"
    wait_rpc "$GETH_URL" "$GETH_PID" 60 || { tail_log "geth ($name)" "$GETH_LOG"; return 1; }
    # The enode geth itself reports must be the one derived from the key.
    local reported
    reported=$(rpc "$GETH_URL" admin_nodeInfo | python3 -c 'import json,sys; print(json.load(sys.stdin)["enode"])')
    if [ "${reported%%\?*}" != "$GETH_ENODE" ]; then
        echo "geth reports $reported, expected $GETH_ENODE" >&2
        return 1
    fi
}

# row DIRECTION CHAIN BLOCKS WALL SYNC_SECS MGAS BPS PARALLEL RSS STATUS
row() {
    local IFS=$'\t'
    echo "$*" >>"$ROWS"
}

# sync_ours LABEL CHAIN GENESIS WANT_HASH WANT_ROOT BLOCKS GAS [node flags...]: a fresh
# `ethrex node` syncing from geth ($GETH_ENODE) to WANT_HASH; one table row.
sync_ours() {
    local label="$1" chain="$2" genesis="$3" want_hash="$4" want_root="$5" blocks="$6" gas="$7"
    shift 7
    local dir="$WORK/ours-$chain-${label//[^a-zA-Z0-9]/_}"
    mkdir -p "$dir"
    local log="$dir/node.log"
    TOTAL=$((TOTAL + 1))
    local start=$EPOCHREALTIME geth_cpu0
    geth_cpu0=$(cpu_secs "$GETH_PID")
    start_ethrex "$log" "$genesis" "$dir/data" --nodiscover --peers "$GETH_ENODE" \
        --sync.target "$want_hash" "$@"
    local pid=$ETHREX_PID url=$ETHREX_URL got="" wall
    # Wait on the node's log, not its RPC: each RPC poll starts two Python processes,
    # about a quarter of a core at 5 polls a second, which the sync would lose on two
    # cores (and a grep of the log every 0.1 s was 1-1.5% of a profile): one tail follows
    # the log (inotify) until the line comes, the node ends or time is up. The head is
    # then asked once the sync says it is there (or stopped).
    # (A process substitution: the pipeline would wait for tail, which lasts as the node.)
    grep -q -m1 "sync reached its target\|sync failed\|sync stopped at an invalid block" \
        < <(timeout "$TIMEOUT" tail -n +1 --pid="$pid" -F "$log" 2>/dev/null) || true
    wall=$(python3 -c "import sys; print(f'{$EPOCHREALTIME - $start:.1f}')")
    for _ in $(seq 20); do
        got=$(head_of "$url" 2>/dev/null || true)
        [ "$got" = "$blocks $want_hash $want_root" ] && break
        sleep 0.2
    done
    local rss fields cpu
    rss=$(peak_rss_mb "$pid")
    # Both peers share the machine's cores: what serving cost geth is CPU the import lacked.
    cpu="CPU s: ethrex $(cpu_secs "$pid"), geth serving $(python3 -c "print(f'{$(cpu_secs "$GETH_PID") - $geth_cpu0:.2f}')")"
    fields=$($PY sync-fields "$log")
    stop "$pid"
    scrap "$dir/data"
    local secs mgas bps par
    secs=$(sed -n 's/.*\bsecs=\([^ ]*\).*/\1/p' <<<"$fields")
    mgas=$(sed -n 's/.*\bmgas_per_s=\([^ ]*\).*/\1/p' <<<"$fields")
    bps=$(sed -n 's/.*\bblocks_per_s=\([^ ]*\).*/\1/p' <<<"$fields")
    par=$(sed -n 's/.*\bparallel_with_wire_bal=\([^ ]*\).*/\1/p' <<<"$fields")
    local status=ok
    if [ "$got" != "$blocks $want_hash $want_root" ]; then
        status="FAILED"
        FAILED=$((FAILED + 1))
        echo "!! geth -> ethrex ($chain, $label): head is '${got:-no answer}', want '$blocks $want_hash $want_root'" >&2
        tail_log "ethrex node ($chain, $label)" "$log" 40
        tail_log "geth (serving $chain)" "$GETH_LOG" 40
    fi
    echo "geth -> ethrex $chain $label: $status in ${wall}s; $cpu; $fields"
    row "geth -> ethrex" "$chain ($label)" "$blocks" "$wall" "${secs:--}" "${mgas:--}" "${bps:--}" \
        "${par:--}" "$rss" "$status"
}

# stress_fixture: STRESS_GENESIS, STRESS_RLP and STRESS_BAL of $STRESS_DIR, or of a stress
# fixture made now.
stress_fixture() {
    local sdir="${STRESS_DIR:-}"
    if [ -z "$sdir" ]; then
        sdir="$WORK/stress"
        echo "== ethrex fixture stress ${STRESS_ARGS[*]}"
        "$ETHREX" fixture stress --out "$sdir" "${STRESS_ARGS[@]}"
    fi
    STRESS_GENESIS="$sdir/stress.genesis.json"
    STRESS_RLP="$sdir/stress.rlp"
    STRESS_BAL="$sdir/stress.bal.rlp"
}

# import_stress MODE (bal | plain): `ethrex import` of the stress chain file into a fresh
# datadir $WORK/import-data-MODE, with its BALs or without; must end at geth's head. Sets
# IMPORT_RATE[MODE] (Mgas/s) and adds a table row.
declare -A IMPORT_RATE
import_stress() {
    local mode="$1" log="$WORK/import-$1.log" args=() start wall iblocks igas isecs ibps label
    [ "$mode" = bal ] && args=(--bal "$STRESS_BAL")
    rm -rf "$WORK/import-data-$mode"
    start=$EPOCHREALTIME
    "$ETHREX" import --network "$STRESS_GENESIS" --datadir "$WORK/import-data-$mode" "${args[@]}" \
        "$STRESS_RLP" >"$log" 2>&1 || { tail_log "ethrex import" "$log"; exit 1; }
    wall=$(python3 -c "print(f'{$EPOCHREALTIME - $start:.1f}')")
    read -r iblocks igas isecs < <($PY import-stats "$log")
    IMPORT_RATE[$mode]=$(python3 -c "print(f'{$igas / $isecs / 1e6:.1f}')")
    ibps=$(python3 -c "print(f'{$iblocks / $isecs:.1f}')")
    tail -1 "$log"
    grep -q "$STRESS_HEAD (state root $STRESS_ROOT)" "$log" ||
        { echo "ethrex import ($mode) did not end at geth's head" >&2; exit 1; }
    label="import --bal"
    [ "$mode" = plain ] && label="import, no BALs"
    row "ethrex import" "stress ($label)" "$iblocks" "$wall" "$isecs" \
        "${IMPORT_RATE[$mode]}" "$ibps" "-" "-" "ok"
}

# ---- --rounds N: sync with wire BALs against import --bal, alternating, on one geth
if ((ROUNDS)); then
    stress_fixture
    echo "== geth serving the stress chain"
    start_geth geth-stress "$STRESS_GENESIS" "$STRESS_RLP"
    read -r STRESS_BLOCKS STRESS_HEAD STRESS_ROOT < <(head_of "$GETH_URL")
    gas=$($PY gas "$GETH_URL" "$STRESS_BLOCKS")
    ratios=()
    for round in $(seq "$ROUNDS"); do
        sync_ours "wire BALs, round $round" stress "$STRESS_GENESIS" "$STRESS_HEAD" "$STRESS_ROOT" \
            "$STRESS_BLOCKS" "$gas"
        sync_rate=$(tail -1 "$ROWS" | cut -f6 | python3 -c "import sys; v = sys.stdin.read().strip(); print(v if v == '-' else f'{float(v):.1f}')")
        import_stress bal
        scrap "$WORK/import-data-bal"
        [ "$sync_rate" = - ] && continue
        ratio=$(python3 -c "print(f'{100 * $sync_rate / ${IMPORT_RATE[bal]}:.1f}')")
        ratios+=("$ratio")
        echo "round $round: sync $sync_rate Mgas/s, import --bal ${IMPORT_RATE[bal]} Mgas/s: sync/import $ratio%"
    done
    if ((FAILED)); then
        echo "sync-geth: $FAILED of $TOTAL syncs did not reach the head"
        exit 1
    fi
    echo "sync-geth: sync/import over $ROUNDS rounds: ${ratios[*]} (%); median $(
        python3 -c 'import statistics, sys; print(statistics.median(map(float, sys.argv[1:])))' "${ratios[@]}")%"
    exit 0
fi

# ---- (a) geth serves, we sync
declare -A GAS
for chain in eth-test execution-apis stress; do
    if [ "$chain" = eth-test ]; then
        genesis="$ETHTEST_CHAIN/genesis.json"
        rlp="$ETHTEST_CHAIN/chain.rlp"
    elif [ "$chain" = execution-apis ]; then
        genesis="$EA_GENESIS"
        rlp="$EA_RLP"
    else
        stress_fixture
        genesis="$STRESS_GENESIS"
        rlp="$STRESS_RLP"
    fi
    echo "== geth serving the $chain chain"
    start_geth "geth-$chain" "$genesis" "$rlp"
    read -r blocks hash root < <(head_of "$GETH_URL")
    gas=$($PY gas "$GETH_URL" "$blocks")
    GAS[$chain]=$gas
    echo "geth head: block $blocks $hash (state root $root), $((gas / 1000000)) Mgas; $GETH_ENODE"
    if [ "$chain" = stress ]; then
        STRESS_HEAD="$hash"
        STRESS_ROOT="$root"
        STRESS_BLOCKS="$blocks"
        sync_ours "wire BALs" "$chain" "$genesis" "$hash" "$root" "$blocks" "$gas"
        sync_ours "--sync.no-bals" "$chain" "$genesis" "$hash" "$root" "$blocks" "$gas" --sync.no-bals
    elif [ "$chain" = execution-apis ]; then
        if [ "$hash" != "$EA_HEAD" ]; then
            echo "geth imported the execution-apis chain to $hash, headfcu.json says $EA_HEAD" >&2
            tail_log "geth import" "$WORK/geth-$chain/import.log"
            exit 1
        fi
        EA_ROOT="$root"
        EA_BLOCKS="$blocks"
        sync_ours "PoW to BPO2" "$chain" "$genesis" "$hash" "$root" "$blocks" "$gas"
    else
        sync_ours "wire BALs" "$chain" "$genesis" "$hash" "$root" "$blocks" "$gas"
    fi
    stop "$GETH_PID"
    scrap "$WORK/geth-$chain/data"
done

# ---- ethrex import of the same stress chain file, with and without its BALs
IMPORT_DIR="$WORK/ours-import"
for mode in bal plain; do
    import_stress "$mode"
done
# Our serving node for (b): the chain imported from the plain file (no BALs given).
mv "$WORK/import-data-plain" "$IMPORT_DIR"
scrap "$WORK/import-data-bal"

# ---- (b) we serve, geth syncs
# geth_syncs CHAIN DATADIR GENESIS WANT_HASH WANT_ROOT BLOCKS GAS: `ethrex node` serving the
# chain imported in DATADIR; a fresh geth (full sync, --synctarget WANT_HASH, our node added
# with admin_addPeer) syncs to WANT_HASH; one table row.
geth_syncs() {
    local chain="$1" datadir="$2" genesis="$3" want_hash="$4" want_root="$5" blocks="$6" gas="$7"
    echo "== ethrex node serving the $chain chain; a fresh geth syncs from it"
    local serve_log="$WORK/serve-$chain.log"
    start_ethrex "$serve_log" "$genesis" "$datadir" --nodiscover
    local serve_pid=$ETHREX_PID serve_url=$ETHREX_URL
    wait_rpc "$serve_url" "$serve_pid" 60 || { tail_log "ethrex node (serving $chain)" "$serve_log"; exit 1; }
    local our_enode
    our_enode=$(rpc "$serve_url" admin_nodeInfo | python3 -c 'import json,sys; print(json.load(sys.stdin)["enode"])')
    echo "ours: $our_enode, head $(head_of "$serve_url")"
    TOTAL=$((TOTAL + 1))
    start_geth "geth-sync-$chain" "$genesis" "" --syncmode full --synctarget "$want_hash"
    local start=$GETH_STARTED
    rpc "$GETH_URL" admin_addPeer "[\"$our_enode\"]" >/dev/null
    local deadline=$((SECONDS + TIMEOUT)) got="" wall rss gsecs status=ok
    while ((SECONDS < deadline)) && kill -0 "$GETH_PID" 2>/dev/null; do
        got=$(head_of "$GETH_URL" 2>/dev/null || true)
        [ "$got" = "$blocks $want_hash $want_root" ] && break
        sleep 0.2
    done
    wall=$(python3 -c "print(f'{$EPOCHREALTIME - $start:.1f}')")
    rss=$(peak_rss_mb "$GETH_PID")
    if [ "$got" != "$blocks $want_hash $want_root" ]; then
        status=FAILED
        FAILED=$((FAILED + 1))
        echo "!! ethrex -> geth ($chain): geth's head is '${got:-no answer}', want '$blocks $want_hash $want_root'" >&2
        tail_log "geth (syncing $chain)" "$GETH_LOG" 40
        tail_log "ethrex node (serving $chain)" "$serve_log" 40
    fi
    # geth's own sync time: from the target header fetched from us to its last imported segment.
    gsecs=$($PY geth-sync-secs "$GETH_LOG")
    echo "ethrex -> geth $chain: $status in ${wall}s (from geth's start, init excluded); geth's sync ${gsecs}s"
    row "ethrex -> geth" "$chain (geth full sync)" "$blocks" "$wall" "$gsecs" \
        "$(python3 -c "import sys; s = sys.argv[1]; print($gas / float(s) / 1e6 if s != '-' else s)" "$gsecs")" \
        "$(python3 -c "import sys; s = sys.argv[1]; print($blocks / float(s) if s != '-' else s)" "$gsecs")" \
        "-" "$rss" "$status"
    stop "$GETH_PID"
    stop "$serve_pid"
    scrap "$WORK/geth-sync-$chain/data"
    scrap "$datadir"
}
geth_syncs stress "$IMPORT_DIR" "$STRESS_GENESIS" "$STRESS_HEAD" "$STRESS_ROOT" "$STRESS_BLOCKS" \
    "${GAS[stress]}"

# The execution-apis chain imported with `ethrex import` (it must end at geth's head and state
# root), then served.
EA_IMPORT_DIR="$WORK/ours-import-execution-apis"
log="$WORK/import-execution-apis.log"
"$ETHREX" import --network "$EA_GENESIS" --datadir "$EA_IMPORT_DIR" "$EA_RLP" >"$log" 2>&1 ||
    { tail_log "ethrex import (execution-apis)" "$log"; exit 1; }
tail -1 "$log"
grep -q "block $EA_BLOCKS $EA_HEAD (state root $EA_ROOT)" "$log" ||
    { echo "ethrex import (execution-apis) did not end at geth's head" >&2; exit 1; }
geth_syncs execution-apis "$EA_IMPORT_DIR" "$EA_GENESIS" "$EA_HEAD" "$EA_ROOT" "$EA_BLOCKS" \
    "${GAS[execution-apis]}"

# ---- the table
echo
python3 - "$ROWS" "${IMPORT_RATE[bal]}" "${IMPORT_RATE[plain]}" <<'EOF'
import sys
def num(c, digits):
    try:
        return f"{float(c):.{digits}f}"
    except ValueError:
        return c
rows = []
for line in open(sys.argv[1]):
    r = line.rstrip("\n").split("\t")
    r[3], r[4], r[5], r[6] = num(r[3], 1), num(r[4], 2), num(r[5], 1), num(r[6], 1)
    rows.append(r)
imp = {"bal": float(sys.argv[2]), "plain": float(sys.argv[3])}
head = ["direction", "chain", "blocks", "wall s", "sync s", "Mgas/s", "blocks/s",
        "parallel (wire BAL)", "peak RSS MB", "status"]
widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
fmt = lambda r: "  ".join(str(c).ljust(w) if i < 2 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
print(fmt(head))
for r in rows:
    print(fmt(r))
print("wall s: from the syncing node's start to its head = the source's head (hash and state root);")
print("sync s, Mgas/s, blocks/s, parallel: from our sync's final log line (its clock starts at")
print("  `sync started`, so headers are in it); the geth row: from geth logging the target header")
print("  it fetched from us to its last imported segment; ethrex import: from `chain opened` to")
print("  the last block (genesis load excluded). The eth-test chain's blocks hold 0-1 transactions:")
print("  below the parallel threshold, so they run sequentially even with their wire BAL.")
print("  The execution-apis chain (PoW with ommers, the merge by total difficulty, Shanghai..BPO2)")
print("  predates BALs: its blocks run sequentially.")
print()
def rate(label):
    for r in rows:
        if r[0] == "geth -> ethrex" and r[1] == label and r[5] != "-":
            return float(r[5])
    return None
bal, nobal = rate("stress (wire BALs)"), rate("stress (--sync.no-bals)")
print("what BALs on the wire buy (stress chain, geth -> ethrex):")
print(f"  {'':<16}{'sync Mgas/s':>12}{'import Mgas/s':>15}{'sync/import':>13}")
for name, s, i in (("with BALs", bal, imp["bal"]), ("without BALs", nobal, imp["plain"])):
    ratio = f"{100 * s / i:.0f}%" if s and i else "-"
    print(f"  {name:<16}{num(s, 1) if s is not None else '-':>12}{i:>15}{ratio:>13}")
if bal and nobal:
    print(f"  BALs on the wire: sync {bal / nobal:.2f}x the throughput without them")
EOF
echo
if ((FAILED)); then
    echo "sync-geth: $FAILED of $TOTAL syncs did not reach the head"
    exit 1
fi
echo "sync-geth: all $TOTAL syncs reached the head"
