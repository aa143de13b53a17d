#!/usr/bin/env bash
# Times, in one run, whole processes on the same chains (several runs each, medians):
#   ours: import of the Amsterdam chain, sequential and parallel; import of the Osaka chain
#   revm: `revme btest` on the Amsterdam chain (execution + BAL + post-state check, no trie)
#   geth: `evm blocktest` on the Osaka chain (full validation incl. state roots)
# and prints Mgas/s with ratios. Usage: bench/peers.sh DIR [RUNS]   (DIR as for verify-fixture.sh)
set -euo pipefail
DIR="${1:?usage: bench/peers.sh DIR [RUNS]}"
RUNS="${2:-5}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}"
export PATH="$HOME/.cargo/bin:$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin:$PATH"
"$ROOT/bench/verify-fixture.sh" "$DIR" "$DIR/osaka" >/dev/null   # installs the peers, makes the Osaka chain
exec python3 "$ROOT/bench/peers.py" "$DIR" "$RUNS" "$CARGO_TARGET_DIR/release/ethrex"
