#!/usr/bin/env bash
# Times, in one run, whole processes on the same chains (a warm-up, then RUNS runs each; medians):
#   ours: `ethrex import-bench` (a temporary database, no pause between blocks) of the Amsterdam
#         chain, sequential and parallel, and of the Osaka chain, sequential;
#         `ethrex import` of the Amsterdam chain file with its BALs (--bal, RocksDB), parallel
#         and --single-threaded;
#   revm: `revme btest` on the Amsterdam chain (execution + BAL + post-state check, no trie)
#   geth: `geth init` + `geth import` of the Amsterdam chain file (1.17.10, full validation incl.
#         state roots; --nocompaction, see peers.py); `evm blocktest` on the Osaka chain (ditto)
# and prints Mgas/s with ratios, then the judged ratios of wall times: ethrex import parallel /
# revme btest, and geth init + import / ethrex import parallel. Every `ethrex import` and geth
# run starts from a fresh, empty data directory (made before the clock starts, removed after it
# stops) and must end at the fixture's head (hash and state root), or the bench fails.
# Usage: bench/peers.sh DIR [RUNS]   (DIR as for verify-fixture.sh)
set -euo pipefail
DIR="${1:?usage: bench/peers.sh DIR [RUNS]}"
RUNS="${2:-5}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"
export PATH="$HOME/.cargo/bin:$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin:$PATH"
"$ROOT/bench/verify-fixture.sh" "$DIR" "$DIR/osaka" >/dev/null   # installs the peers (oracles.sh: revme, evm, geth), makes the Osaka chain
exec python3 "$ROOT/bench/peers.py" "$DIR" "$RUNS" "$CARGO_TARGET_DIR/release/ethrex"
