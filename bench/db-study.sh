#!/usr/bin/env bash
# The storage study, MDBX against RocksDB, rerun on this machine with the published figures
# beside ours: OUT/db-study.md (+ db-study.json, db-bench.svg). Steps, each logged in OUT/runs:
#   (1) raw reads      ethrex db-bench --db both --cold: IOPS, latency and CPU per thread count
#                      (cold data, index read back), then MDBX with its index cold too
#   (2) execution      the I/O-realistic import bench on a big cold state, on each backend,
#                      emulated read latency off and on: sequential, and parallel I/O at each
#                      thread count, per block and in mega blocks; MDBX twice, with its index
#                      (branch pages) read back after each page-cache drop like RocksDB's
#                      stays in memory, and with it cold too (--cold-index)
#   (3) main job       import-bench --mode all on the default stress fixture, on each backend
#                      (warm state, 100 ms between blocks): parallel / sequential, and the
#                      background write per block
#   (4) write cost     MDBX's background write per block by write mode and page size, beside
#                      RocksDB's (import-bench --mode sequential on the same fixture)
# Every execution run must end in the same state root on both backends, or the script stops.
# Disk: every point of a run holds a copy of the genesis database at once (RocksDB: hard
# links; MDBX: a compacting copy, about 8 GB at 2M accounts and 20M slots), so an MDBX run
# of P points needs P times that free; fewer threads or batch sizes, or
# DB_STUDY_SWEEP_MODES='', need less.
#
# Usage: bench/db-study.sh [--quick] [OUT]
#   OUT      default ~/.cache/ethrex-db-study/full (quick: .../quick)
#   --quick  smoke version (two to three minutes): small databases and fixtures, short points
# Knobs (environment; defaults full / quick):
#   DB_STUDY_ENTRIES      db-bench entries per database          20000000 / 200000
#   DB_STUDY_SECONDS      db-bench seconds per point             5 / 0.5
#   DB_STUDY_READ_THREADS db-bench thread counts                 1,2,4,8,16,32 / 1,4
#   DB_STUDY_ACCOUNTS     state accounts of the execution fixture 2000000 / 1000
#   DB_STUDY_SLOTS        state slots of the execution fixture    20000000 / 10000
#   DB_STUDY_BLOCKS       blocks of the execution fixture         40 / 4
#   DB_STUDY_THREADS      execution threads swept                 16 / 2
#   DB_STUDY_MEGA         mega-block size                         10 / 2
#   DB_STUDY_IO_THREADS   I/O threads of parallel I/O             16 / 4
#   DB_STUDY_LATENCY_US   emulated latency of the second pass     100
#   DB_STUDY_MAIN_FIXTURE chain of (3) and (4)                    out/stress/stress.rlp / a 3-block one
#   DB_STUDY_SWEEP_MODES  --sweep-modes of (2) (empty: parallel I/O only)  (empty) / sequential
#   DB_STUDY_WRITE_CONFIGS MDBX write settings of (4), WRITE_MAP:PAGE_SIZE
#                                   1:4096 0:4096 / 1:4096 0:4096 1:16384 0:16384
# The full defaults fit this machine's 60 GB of free disk (two MDBX points per run) and
# take about 15 minutes once the fixture and genesis databases are cached (about 25 more
# the first time).
#   DB_STUDY_STEPS        which steps run                         reads,exec,main,write
#   DB_STUDY_FIXTURES     fixture and database cache              ~/.cache/ethrex-db-study/fixtures
#   ETHREX                client binary   default $CARGO_TARGET_DIR/release/ethrex (built if missing)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="$ROOT/bench/db_study.py"
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
QUICK=0
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1 ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "db-study: unknown option $1" >&2; usage >&2; exit 2 ;;
        *) [ -z "$OUT" ] || { echo "db-study: one OUT directory only" >&2; exit 2; }; OUT="$1" ;;
    esac
    shift
done
if [ "$QUICK" = 1 ]; then
    d_entries=200000 d_seconds=0.5 d_rthreads=1,4 d_accounts=1000 d_slots=10000 d_blocks=4
    d_threads=2 d_mega=2 d_io=4 d_out=quick
else
    d_entries=20000000 d_seconds=5 d_rthreads=1,2,4,8,16,32 d_accounts=2000000 d_slots=20000000
    d_blocks=40 d_threads=16 d_mega=10 d_io=16 d_out=full
fi
ENTRIES="${DB_STUDY_ENTRIES:-$d_entries}"
SECONDS_PER_POINT="${DB_STUDY_SECONDS:-$d_seconds}"
READ_THREADS="${DB_STUDY_READ_THREADS:-$d_rthreads}"
ACCOUNTS="${DB_STUDY_ACCOUNTS:-$d_accounts}"
SLOTS="${DB_STUDY_SLOTS:-$d_slots}"
BLOCKS="${DB_STUDY_BLOCKS:-$d_blocks}"
THREADS="${DB_STUDY_THREADS:-$d_threads}"
MEGA="${DB_STUDY_MEGA:-$d_mega}"
IO_THREADS="${DB_STUDY_IO_THREADS:-$d_io}"
LATENCY="${DB_STUDY_LATENCY_US:-100}"
if [ "$QUICK" = 1 ]; then d_sweep=sequential d_writes="1:4096 0:4096 1:16384 0:16384"; else d_sweep= d_writes="1:4096 0:4096"; fi
SWEEP_MODES="${DB_STUDY_SWEEP_MODES-$d_sweep}"
WRITE_CONFIGS="${DB_STUDY_WRITE_CONFIGS:-$d_writes}"
STEPS=",${DB_STUDY_STEPS:-reads,exec,main,write},"
FIXTURES="${DB_STUDY_FIXTURES:-$HOME/.cache/ethrex-db-study/fixtures}"
OUT="${OUT:-$HOME/.cache/ethrex-db-study/$d_out}"

die() { echo "db-study: error: $*" >&2; exit 1; }
for v in READ_THREADS THREADS; do [[ "${!v}" =~ ^[0-9]+(,[0-9]+)*$ ]] || die "$v must be a list of numbers (got '${!v}')"; done
for v in ENTRIES ACCOUNTS SLOTS BLOCKS MEGA IO_THREADS LATENCY; do
    [[ "${!v}" =~ ^[0-9]+$ ]] || die "$v must be a number (got '${!v}')"
done
[ "$BLOCKS" -ge "$MEGA" ] || die "DB_STUDY_BLOCKS=$BLOCKS is smaller than the mega block ($MEGA)"

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"
ETHREX="${ETHREX:-$CARGO_TARGET_DIR/release/ethrex}"
[ -x "$ETHREX" ] || (cd "$ROOT" && cargo build --release --locked -p ethrex)
"$ETHREX" db-bench --help >/dev/null 2>&1 || die "'$ETHREX' has no db-bench (rebuild: cargo build --release -p ethrex)"

mkdir -p "$OUT/runs" "$FIXTURES"
OUT="$(cd "$OUT" && pwd)"
rm -f "$OUT"/runs/*
start=$(date +%s)
# run NAME COMMAND...: runs it with its output in runs/NAME.log, timed into runs/steps.tsv.
run() {
    local name="$1" t0
    shift
    echo "== $name: $*"
    t0=$(date +%s)
    "$@" > "$OUT/runs/$name.log" 2>&1 || { tail -30 "$OUT/runs/$name.log"; die "$name failed (log: $OUT/runs/$name.log)"; }
    printf '%s\t%s\n' "$name" "$(( $(date +%s) - t0 ))" >> "$OUT/runs/steps.tsv"
}

step() { [[ "$STEPS" == *",$1,"* ]]; }
# (1) raw reads; the loaded databases are kept in the cache and reused by later runs.
step reads && run db-bench "$ETHREX" db-bench --db both --cold --entries "$ENTRIES" --threads "$READ_THREADS" \
    --seconds "$SECONDS_PER_POINT" --datadir "$FIXTURES/db-bench" \
    --json "$OUT/runs/db-bench.json" --plot "$OUT/db-bench.svg"
step reads && run db-bench-coldindex "$ETHREX" db-bench --db mdbx --cold --cold-index --entries "$ENTRIES" \
    --threads "$READ_THREADS" --seconds "$SECONDS_PER_POINT" --datadir "$FIXTURES/db-bench" \
    --json "$OUT/runs/db-bench-coldindex.json"

# (2) execution on a big cold state.
if step exec; then
MIX="$FIXTURES/mix-a$ACCOUNTS-s$SLOTS-b$BLOCKS-g32000000"
if [ ! -f "$MIX/.complete" ]; then
    rm -rf "$MIX"
    run fixture "$ETHREX" fixture stress --out "$MIX" --blocks "$BLOCKS" --gas-limit 32000000 \
        --state-accounts "$ACCOUNTS" --state-slots "$SLOTS" --workload mix --seed 1
    touch "$MIX/.complete"
fi
# The filled genesis database of each backend is built by its first bench and kept beside
# the fixture; one without its marker is what an interrupted build left, and starts over.
for db in rocksdb mdbx; do
    [ -f "$MIX/genesis-db-$db.complete" ] || rm -rf "$MIX/genesis-db-$db"
done
for latency in 0 "$LATENCY"; do
    for variant in rocksdb mdbx mdbx-coldindex; do
        db="${variant%-coldindex}" index=()
        [ "$variant" = "$db" ] || index=(--cold-index)
        run "exec-$variant-lat$latency" "$ETHREX" import-bench --fixture "$MIX/stress.rlp" --db "$db" \
            --genesis-db "$MIX/genesis-db-$db" --mode none --cold "${index[@]}" --read-latency-us "$latency" \
            --io-threads "$IO_THREADS" --sleep-ms 0 --sweep-modes "$SWEEP_MODES" --bal-design parallel-io \
            --threads "$THREADS" --batch "1,$MEGA" --json "$OUT/runs/exec-$variant-lat$latency.json"
        touch "$MIX/genesis-db-$db.complete"
    done
done
fi

# (3) and (4): the main job's chain on each backend, then MDBX's write settings.
MAIN="${DB_STUDY_MAIN_FIXTURE:-}"
if [ -z "$MAIN" ]; then
    if [ "$QUICK" = 1 ]; then
        MAIN="$FIXTURES/main-quick/stress.rlp"
        [ -f "$MAIN" ] || run main-fixture "$ETHREX" fixture stress --out "$FIXTURES/main-quick" \
            --blocks 3 --min-txs 20 --max-txs 80 --gas-limit 30000000
    else
        MAIN="$ROOT/out/stress/stress.rlp"
        [ -f "$MAIN" ] || run main-fixture "$ETHREX" fixture stress --out "$ROOT/out/stress"
    fi
fi
for db in rocksdb mdbx; do
    step main || break
    run "main-$db" "$ETHREX" import-bench --fixture "$MAIN" --db "$db" --mode all \
        --json "$OUT/runs/main-$db.json"
done
for config in $WRITE_CONFIGS; do
    step write || break
    write_map="${config%%:*}" page="${config#*:}"
    run "write-mdbx-wm$write_map-p$page" env ETHREX_MDBX_WRITE_MAP="$write_map" ETHREX_MDBX_PAGE_SIZE="$page" \
        "$ETHREX" import-bench --fixture "$MAIN" --db mdbx --mode sequential \
        --json "$OUT/runs/write-mdbx-wm$write_map-p$page.json"
done
step write && run write-rocksdb "$ETHREX" import-bench --fixture "$MAIN" --db rocksdb --mode sequential \
    --json "$OUT/runs/write-rocksdb.json"

python3 "$PY" "$OUT" --repo "$ROOT" --seconds "$(( $(date +%s) - start ))"
echo "db-study: done in $(( $(date +%s) - start )) s; report: $OUT/db-study.md"
