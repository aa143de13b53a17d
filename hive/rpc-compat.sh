#!/usr/bin/env bash
# Run the execution-apis JSON-RPC compatibility tests (Hive's ethereum/rpc-compat)
# against a local ethrex build, without Docker. See hive/rpc_compat.py.
#   ETHREX                   ethrex binary (default: $CARGO_TARGET_DIR/release/ethrex,
#                            CARGO_TARGET_DIR defaulting to ~/.cache/ethrex-target)
#   EXECUTION_APIS_FIXTURES  the tests folder (default: <repo>/../shared/fixtures/execution-apis)
# Other arguments go to rpc_compat.py (e.g. -k eth_getBlock, --allow-failures, --expect-pass N).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
bin="${ETHREX:-${CARGO_TARGET_DIR:-$HOME/.cache/ethrex-target}/release/ethrex}"
fixtures="${EXECUTION_APIS_FIXTURES:-$repo/../shared/fixtures/execution-apis}"
exec python3 "$here/rpc_compat.py" --bin "$bin" --fixtures "$fixtures" "$@"
