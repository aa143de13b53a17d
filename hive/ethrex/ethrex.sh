#!/bin/bash
# Entry point of the ethrex Hive client image.
#
# Hive hands the client /genesis.json (geth format) and describes the fork
# schedule in HIVE_* environment variables; mapper.jq merges those into the
# genesis config. The Engine API secret is the one Hive's simulators sign with:
# a mounted /jwt.secret wins, then HIVE_JWT_SECRET, then the well-known secret
# the simulators use ("secretsecretsecretsecretsecretse", hex below).
set -euo pipefail

GENESIS_IN=/genesis.json
GENESIS=/genesis-mapped.json
JWT_FILE=/jwt.secret
HIVE_DEFAULT_JWT=0x7365637265747365637265747365637265747365637265747365637265747365
DATADIR=/data
ETHREX=${ETHREX_BIN:-ethrex}

if [ ! -f "$GENESIS_IN" ]; then
  echo "ethrex.sh: $GENESIS_IN is missing" >&2
  exit 1
fi
jq -f /mapper.jq "$GENESIS_IN" > "$GENESIS"
echo "ethrex.sh: mapped genesis config:"
jq -c .config "$GENESIS"

if [ ! -s "$JWT_FILE" ]; then
  printf '%s' "${HIVE_JWT_SECRET:-$HIVE_DEFAULT_JWT}" > "$JWT_FILE"
fi

# HIVE_LOGLEVEL 0..5 -> RUST_LOG (unless RUST_LOG is already set).
if [ -z "${RUST_LOG:-}" ]; then
  case "${HIVE_LOGLEVEL:-3}" in
    0) RUST_LOG=off ;; 1) RUST_LOG=error ;; 2) RUST_LOG=warn ;;
    3) RUST_LOG=info ;; 4) RUST_LOG=debug ;; *) RUST_LOG=trace ;;
  esac
  export RUST_LOG
fi

# Pre-loaded chains (/chain.rlp, /blocks/) are part of the eth1 role; the node
# has no import command yet, so say so instead of silently ignoring them.
if [ -f /chain.rlp ] || [ -d /blocks ]; then
  echo "ethrex.sh: WARNING: /chain.rlp or /blocks/ given but not imported (unsupported)" >&2
fi

mkdir -p "$DATADIR"
set -x
exec "$ETHREX" node \
  --network "$GENESIS" \
  --datadir "$DATADIR" \
  --authrpc.addr 0.0.0.0 --authrpc.port 8551 --authrpc.jwtsecret "$JWT_FILE" \
  --http.addr 0.0.0.0 --http.port 8545
