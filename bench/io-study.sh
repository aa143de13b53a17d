#!/usr/bin/env bash
# Regenerates, on this machine, the tables of the study "Block-level access lists and
# parallel I/O" with the published numbers beside ours: OUT/io-study.md, OUT/io-study.json
# and three SVG plots (bench/io_study.py render). Steps, each timed (OUT/steps.jsonl):
#   fixtures  big-state mix fixture and two sload-random (worst case) fixtures, cached in
#             $IO_STUDY_FIXTURES by their parameters (generated only when missing)
#   (a)       thread sweep, one block at a time: sequential, batched-I/O, parallel-I/O
#   (b)       mega blocks: batched-I/O and parallel-I/O over $IO_STUDY_MEGA_BATCH blocks
#   (c)       batched-I/O vs parallel-I/O by batch size at $IO_STUDY_FOCUS_THREADS threads
#   (d)       worst case (sload-random) per gas limit: sequential on 1 thread, both designs
#             at $IO_STUDY_FOCUS_THREADS threads
# Every import runs cold (--cold) with an emulated read latency. After every bench step,
# all sweep points on one fixture must end in the sequential import's state root, or the
# script stops (exit 1).
#
# Usage: bench/io-study.sh [--quick] [--render-only] [OUT]
#   OUT            default $IO_STUDY_OUT, else ~/.cache/ethrex-io-study/full (quick: .../quick)
#   --quick        smoke version, seconds to about a minute (also IO_STUDY_QUICK=1): tiny
#                  state, 4 blocks, threads 1,4, batches 1,2, worst case at 32/64 Mgas
#   --render-only  rebuild the report from OUT/runs/*.json without running anything
# Knobs (environment; defaults full / quick):
#   IO_STUDY_ACCOUNTS        state accounts of every fixture            2000000 / 1000
#   IO_STUDY_SLOTS           state storage slots of every fixture       20000000 / 10000
#   IO_STUDY_BLOCKS          blocks of the mix fixture (>= largest batch) 100 / 4
#   IO_STUDY_GAS_LIMIT       gas limit of the mix fixture               64000000
#   IO_STUDY_TXS             MIN,MAX transactions per mix block         generator default / 5,20
#   IO_STUDY_SEED            fixture seed                               1
#   IO_STUDY_THREADS         thread counts of sweeps (a) and (b)        1,2,4,8,16,32 / 1,4
#   IO_STUDY_BATCHES         batch sizes of (c)                         1,10,50,100 / 1,2
#   IO_STUDY_MEGA_BATCH      batch size of (b)                          50 / 2
#   IO_STUDY_FOCUS_THREADS   thread count of (c) and (d)                16 / 4
#   IO_STUDY_SLOAD_GAS_LIMITS gas limits of the worst-case fixtures     64000000,640000000 / 32000000,64000000
#   IO_STUDY_SLOAD_BLOCKS    blocks of each worst-case fixture          10 / 2
#   IO_STUDY_LATENCY_US      emulated latency per cold read (µs)        100
#   IO_STUDY_IO_THREADS      I/O threads of the BAL designs             32
#   IO_STUDY_DB              database                                   rocksdb
#   IO_STUDY_SWEEP_MODES     --sweep-modes of (a)                       sequential
#   IO_STUDY_DESIGN_RUN_MODES --sweep-modes of (b)-(d)'s design runs    (none)
#                            (e.g. "parallel" adds the client's default parallel import,
#                            without prefetch, to those tables)
#   IO_STUDY_FIXTURES        fixture cache                              ~/.cache/ethrex-io-study/fixtures
#   IO_STUDY_REGEN=1         regenerate the fixtures even if cached
#   ETHREX                   client binary     default $CARGO_TARGET_DIR/release/ethrex (built if missing)
# The bench's databases go to its temporary directory: set TMPDIR to put them on another disk.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="$ROOT/bench/io_study.py"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
QUICK="${IO_STUDY_QUICK:-0}"
RENDER_ONLY=0
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1 ;;
        --render-only) RENDER_ONLY=1 ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "io-study: unknown option $1" >&2; usage >&2; exit 2 ;;
        *) [ -z "$OUT" ] || { echo "io-study: one OUT directory only" >&2; exit 2; }; OUT="$1" ;;
    esac
    shift
done

if [ "$QUICK" = 1 ]; then
    d_accounts=1000 d_slots=10000 d_blocks=4 d_txs=5,20 d_threads=1,4 d_batches=1,2 d_mega=2
    d_focus=4 d_sload_gas=32000000,64000000 d_sload_blocks=2 d_out=quick
else
    d_accounts=2000000 d_slots=20000000 d_blocks=100 d_txs= d_threads=1,2,4,8,16,32
    d_batches=1,10,50,100 d_mega=50 d_focus=16 d_sload_gas=64000000,640000000 d_sload_blocks=10 d_out=full
fi
ACCOUNTS="${IO_STUDY_ACCOUNTS:-$d_accounts}"
SLOTS="${IO_STUDY_SLOTS:-$d_slots}"
BLOCKS="${IO_STUDY_BLOCKS:-$d_blocks}"
GAS_LIMIT="${IO_STUDY_GAS_LIMIT:-64000000}"
TXS="${IO_STUDY_TXS-$d_txs}"
SEED="${IO_STUDY_SEED:-1}"
THREADS="${IO_STUDY_THREADS:-$d_threads}"
BATCHES="${IO_STUDY_BATCHES:-$d_batches}"
MEGA="${IO_STUDY_MEGA_BATCH:-$d_mega}"
FOCUS="${IO_STUDY_FOCUS_THREADS:-$d_focus}"
SLOAD_GAS="${IO_STUDY_SLOAD_GAS_LIMITS:-$d_sload_gas}"
SLOAD_BLOCKS="${IO_STUDY_SLOAD_BLOCKS:-$d_sload_blocks}"
LATENCY="${IO_STUDY_LATENCY_US:-100}"
IO_THREADS="${IO_STUDY_IO_THREADS:-32}"
DB="${IO_STUDY_DB:-rocksdb}"
SWEEP_MODES="${IO_STUDY_SWEEP_MODES:-sequential}"
DESIGN_RUN_MODES="${IO_STUDY_DESIGN_RUN_MODES-}"
DESIGNS=batched-io,parallel-io
OUT="${OUT:-${IO_STUDY_OUT:-$HOME/.cache/ethrex-io-study/$d_out}}"
FIXTURES="${IO_STUDY_FIXTURES:-$HOME/.cache/ethrex-io-study/fixtures}"

die() { echo "io-study: error: $*" >&2; exit 1; }
is_list() { [[ "$1" =~ ^[0-9]+(,[0-9]+)*$ ]]; }
for v in THREADS BATCHES SLOAD_GAS; do is_list "${!v}" || die "$v must be a comma-separated list of numbers (got '${!v}')"; done
for v in ACCOUNTS SLOTS BLOCKS GAS_LIMIT SEED MEGA FOCUS SLOAD_BLOCKS LATENCY IO_THREADS; do
    [[ "${!v}" =~ ^[0-9]+$ ]] || die "$v must be a number (got '${!v}')"
done
[ -z "$TXS" ] || [[ "$TXS" =~ ^[0-9]+,[0-9]+$ ]] || die "IO_STUDY_TXS must be MIN,MAX (got '$TXS')"
largest=$(tr , '\n' <<<"$BATCHES,$MEGA" | sort -n | tail -1)
[ "$BLOCKS" -ge "$largest" ] || die "IO_STUDY_BLOCKS=$BLOCKS is smaller than the largest batch ($largest)"

mkdir -p "$OUT" "$FIXTURES"
OUT="$(cd "$OUT" && pwd)"
FIXTURES="$(cd "$FIXTURES" && pwd)"
RUNS="$OUT/runs"
MANIFEST="$OUT/steps.jsonl"
PARAMS_FILE="$OUT/params.txt"   # what the report states; --render-only reads it back

render() {
    local jsons=("$RUNS"/*.json)
    [ -e "${jsons[0]}" ] || die "no bench runs in $RUNS"
    python3 "$PY" render --out "$OUT" --manifest "$MANIFEST" --machine "$OUT/machine.json" \
        --params-file "$PARAMS_FILE" "${jsons[@]}"
}
if [ "$RENDER_ONLY" = 1 ]; then
    render
    exit 0
fi

# The client binary, as bench/oracles.sh names and builds it (that script also installs
# revme and geth, which this study does not need).
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"
ETHREX="${ETHREX:-$CARGO_TARGET_DIR/release/ethrex}"
ensure_ethrex() {
    [ -x "$ETHREX" ] || (cd "$ROOT" && cargo build --release --locked -p ethrex)
}
ensure_ethrex
# A binary built before the study's flags existed fails here, not hours into the study.
require_flags() {
    local help
    help="$("$ETHREX" "$@" --help 2>&1)" || die "'$ETHREX $*' --help failed"
    for flag in "${FLAGS[@]}"; do
        grep -qE -- "(^|[[:space:],])$flag([[:space:]=,]|\$)" <<<"$help" || die "'$ETHREX $*' has no $flag (rebuild: cargo build --release -p ethrex)"
    done
}
FLAGS=(--state-accounts --state-slots --workload); require_flags fixture stress
FLAGS=(--sweep-modes --bal-design --batch --cold --read-latency-us --io-threads --json); require_flags import-bench

rm -rf "$RUNS"
mkdir -p "$RUNS"
: > "$MANIFEST"
cat > "$PARAMS_FILE" <<EOF
quick=$QUICK
accounts=$ACCOUNTS
slots=$SLOTS
blocks=$BLOCKS
gas_limit=$GAS_LIMIT
txs=${TXS:-default}
seed=$SEED
threads=$THREADS
batches=$BATCHES
mega_batch=$MEGA
focus_threads=$FOCUS
sload_gas_limits=$SLOAD_GAS
sload_blocks=$SLOAD_BLOCKS
read_latency_us=$LATENCY
io_threads=$IO_THREADS
db=$DB
sweep_modes=$SWEEP_MODES
design_run_modes=$DESIGN_RUN_MODES
EOF
python3 "$PY" machine --out "$OUT/machine.json" --ethrex "$ETHREX" --repo "$ROOT" \
    --path "${TMPDIR:-/tmp}" --path "$FIXTURES"
start=$(date +%s)

step() { # NAME TABLE JSON COMMAND...
    local name="$1" table="$2" json="$3"
    shift 3
    python3 "$PY" step --manifest "$MANIFEST" --name "$name" --table "$table" --json "$json" \
        --log "$RUNS/$name.log" -- "$@"
}

# fixture NAME ARGS...: generates $FIXTURES/NAME with `fixture stress ARGS` unless a
# complete copy is cached (the name carries every parameter); prints nothing.
fixture() {
    local name="$1" dir="$FIXTURES/$1"
    shift
    local cmd=("$ETHREX" fixture stress --out "$dir" "$@")
    if [ "${IO_STUDY_REGEN:-0}" != 1 ] && [ -f "$dir/.complete" ] && [ -f "$dir/stress.rlp" ]; then
        python3 "$PY" step --manifest "$MANIFEST" --name "fixture-$name" --table fixtures --cached \
            --note "$dir" -- "${cmd[@]}"
        return
    fi
    rm -rf "$dir"
    step "fixture-$name" fixtures "" "${cmd[@]}"
    [ -f "$dir/stress.rlp" ] || die "fixture stress wrote no $dir/stress.rlp"
    touch "$dir/.complete"
}
# The parameters the report states for a fixture, beside it (read by io_study.py).
fixture_meta() { # DIR WORKLOAD GAS_LIMIT BLOCKS
    python3 -c 'import json,sys; d,w,g,b,a,s,seed=sys.argv[1:]; json.dump({"workload":w,"gas_limit":int(g),"blocks":int(b),"accounts":int(a),"slots":int(s),"seed":int(seed)},open(d+"/io-study.fixture.json","w"))' \
        "$1" "$2" "$3" "$4" "$ACCOUNTS" "$SLOTS" "$SEED"
}

STATE=(--state-accounts "$ACCOUNTS" --state-slots "$SLOTS" --seed "$SEED")
TX_ARGS=()
[ -z "$TXS" ] || TX_ARGS=(--min-txs "${TXS%,*}" --max-txs "${TXS#*,}")
MIX="mix-a$ACCOUNTS-s$SLOTS-b$BLOCKS-g$GAS_LIMIT-seed$SEED-tx${TXS/,/-}"
fixture "$MIX" --blocks "$BLOCKS" --gas-limit "$GAS_LIMIT" "${STATE[@]}" --workload mix "${TX_ARGS[@]}"
fixture_meta "$FIXTURES/$MIX" mix "$GAS_LIMIT" "$BLOCKS"
SLOAD=()
for gas in ${SLOAD_GAS//,/ }; do
    name="sload-random-a$ACCOUNTS-s$SLOTS-b$SLOAD_BLOCKS-g$gas-seed$SEED"
    fixture "$name" --blocks "$SLOAD_BLOCKS" --gas-limit "$gas" "${STATE[@]}" --workload sload-random
    fixture_meta "$FIXTURES/$name" sload-random "$gas" "$SLOAD_BLOCKS"
    SLOAD+=("$gas:$name")
done

BENCH=(import-bench --mode none --cold --read-latency-us "$LATENCY" --io-threads "$IO_THREADS"
       --sleep-ms 0 --db "$DB")
# bench NAME TABLE FIXTURE ARGS...: one import-bench sweep, then the state-root check over
# every run so far.
bench() {
    local name="$1" table="$2" fx="$3"
    shift 3
    # The filled genesis database is built on the fixture's first bench and kept beside it.
    step "$name" "$table" "$RUNS/$name.json" "$ETHREX" "${BENCH[@]}" --fixture "$FIXTURES/$fx/stress.rlp" \
        --genesis-db "$FIXTURES/$fx/genesis-db-$DB" "$@" --json "$RUNS/$name.json"
    python3 "$PY" check "$RUNS"/*.json
}

bench a-threads threads "$MIX" --sweep-modes "$SWEEP_MODES" --bal-design "$DESIGNS" \
    --threads "$THREADS" --batch 1
bench b-mega mega "$MIX" --sweep-modes "$DESIGN_RUN_MODES" --bal-design "$DESIGNS" \
    --threads "$THREADS" --batch "$MEGA"
bench c-batches batches "$MIX" --sweep-modes "$DESIGN_RUN_MODES" --bal-design "$DESIGNS" \
    --threads "$FOCUS" --batch "$BATCHES"
for entry in "${SLOAD[@]}"; do
    gas="${entry%%:*}" name="${entry#*:}"
    bench "d-sload-$gas-sequential" worst "$name" --sweep-modes sequential --threads 1 --batch 1
    bench "d-sload-$gas-designs" worst "$name" --sweep-modes "$DESIGN_RUN_MODES" --bal-design "$DESIGNS" \
        --threads "$FOCUS" --batch 1
done

render
echo "io-study: done in $(( $(date +%s) - start )) s; report: $OUT/io-study.md"
