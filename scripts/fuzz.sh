#!/usr/bin/env bash
# Coverage-guided fuzzing of the decoders that face untrusted bytes (cargo-fuzz, libFuzzer).
#
#   scripts/fuzz.sh [--minutes N] [--jobs J] [TARGET...]
#
# Runs each target (all of fuzz/fuzz_targets/ by default) for N minutes (default 10),
# J targets at a time (default 1; each run is one libFuzzer process on one core),
# starting from the committed seeds (fuzz/corpus/<target>/) and regressions
# (fuzz/regressions/<target>/). New inputs the fuzzer keeps go to fuzz/work/<target>/
# (git-ignored), never into the committed seeds; crashes go to fuzz/artifacts/<target>/.
#
# Limits per target: -timeout=10 (seconds per input: slower is a hang), -rss_limit_mb=2048
# (the whole process) and -malloc_limit_mb=2048 (any single allocation).
#
# Ends with the line
#   fuzz: T targets, I inputs, C crashes, H hangs
# (I: executed inputs from libFuzzer's final stats; C: crash-*, oom-* and leak-* files this
# run wrote; H: timeout-* files this run wrote) and exits non-zero when C + H > 0. Every
# crash or hang is also copied to fuzz/regressions/<target>/, which the stable test replays.
#
# Environment: FUZZ_SANITIZER (default `none`: the code under test is safe Rust and an
# uninstrumented build runs several times faster; `address` for ASan), CARGO_TARGET_DIR
# (default $HOME/.cache/ethrex-fuzz-target). Needs the nightly toolchain (`cargo +nightly`).
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=10
jobs=1
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --minutes) minutes="$2"; shift 2 ;;
        --minutes=*) minutes="${1#--minutes=}"; shift ;;
        --jobs) jobs="$2"; shift 2 ;;
        --jobs=*) jobs="${1#--jobs=}"; shift ;;
        -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done
case "$minutes" in ''|*[!0-9]*) echo "fuzz.sh: --minutes takes a whole number" >&2; exit 2 ;; esac
case "$jobs" in ''|0|*[!0-9]*) echo "fuzz.sh: --jobs takes a positive whole number" >&2; exit 2 ;; esac
if [ ${#targets[@]} -eq 0 ]; then
    for f in fuzz/fuzz_targets/*.rs; do targets+=("$(basename "$f" .rs)"); done
fi
for t in "${targets[@]}"; do
    [ -f "fuzz/fuzz_targets/$t.rs" ] || { echo "fuzz.sh: no target $t" >&2; exit 2; }
done

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-fuzz-target}"
sanitizer="${FUZZ_SANITIZER:-none}"
build=(--sanitizer "$sanitizer" --debug-assertions)
seconds=$((minutes * 60))

mkdir -p fuzz/work/logs
# Build every target before any run, so parallel runs do not race on the build.
(cd fuzz && for t in "${targets[@]}"; do cargo +nightly fuzz build "${build[@]}" "$t" || exit 1; done)

# Runs one target; writes "inputs crashes hangs status" to fuzz/work/logs/<target>.result.
run_target() {
    local t="$1"
    local work="fuzz/work/$t" artifacts="fuzz/artifacts/$t" log="fuzz/work/logs/$t.log"
    mkdir -p "$work" "$artifacts" "fuzz/corpus/$t"
    local corpora=("$work" "fuzz/corpus/$t")
    [ -d "fuzz/regressions/$t" ] && corpora+=("fuzz/regressions/$t")
    local marker status=0 inputs found crashes hangs
    marker="$(mktemp)"
    # The first corpus directory is where libFuzzer writes new inputs.
    (cd fuzz && cargo +nightly fuzz run "${build[@]}" "$t" "${corpora[@]/#fuzz\//}" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
        -print_final_stats=1) >"$log" 2>&1 || status=$?
    inputs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)"
    if [ -z "$inputs" ]; then
        # No final stats (the run stopped on a crash): the last status line's count.
        inputs="$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#' || true)"
    fi
    found="$(find "$artifacts" -newer "$marker" -type f \( -name 'crash-*' -o -name 'oom-*' -o -name 'leak-*' -o -name 'timeout-*' \))"
    rm -f "$marker"
    crashes="$(printf '%s\n' "$found" | grep -c -E '/(crash|oom|leak)-' || true)"
    hangs="$(printf '%s\n' "$found" | grep -c '/timeout-' || true)"
    echo "${inputs:-0} $crashes $hangs $status" >"fuzz/work/logs/$t.result"
    echo "fuzz: $t: ${inputs:-0} inputs, $crashes crashes, $hangs hangs (log: $log)"
    # Every finding becomes a regression input: the stable corpus test
    # (testing/fuzz-logic/tests/corpus.rs) replays fuzz/regressions/<target>/ and fails
    # until the bug is fixed. Minimize it first if you like: cargo +nightly fuzz tmin.
    local f
    for f in $found; do
        mkdir -p "fuzz/regressions/$t"
        cp "$f" "fuzz/regressions/$t/"
        echo "  $f -> fuzz/regressions/$t/$(basename "$f")"
    done
    return 0
}

running=0
for t in "${targets[@]}"; do
    rm -f "fuzz/work/logs/$t.result"
    run_target "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n || true
        running=$((running - 1))
    fi
done
wait

total_inputs=0
total_crashes=0
total_hangs=0
for t in "${targets[@]}"; do
    read -r inputs crashes hangs status <"fuzz/work/logs/$t.result"
    if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ] && [ "$hangs" -eq 0 ]; then
        echo "fuzz.sh: $t failed to run (exit $status); see fuzz/work/logs/$t.log" >&2
        tail -20 "fuzz/work/logs/$t.log" >&2
        exit 1
    fi
    total_inputs=$((total_inputs + inputs))
    total_crashes=$((total_crashes + crashes))
    total_hangs=$((total_hangs + hangs))
done

echo "fuzz: ${#targets[@]} targets, $total_inputs inputs, $total_crashes crashes, $total_hangs hangs"
[ $((total_crashes + total_hangs)) -eq 0 ]
