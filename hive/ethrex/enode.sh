#!/bin/bash
# Hive calls /hive-bin/enode.sh to learn the client's devp2p enode URL.
# ethrex reports it through admin_nodeInfo on the local HTTP JSON-RPC port;
# until the node has devp2p this prints an error and exits non-zero, which
# only matters to simulators that connect peers (not consume-engine).
set -euo pipefail
reply=$(curl -sf -X POST -H 'Content-Type: application/json' \
  --data '{"jsonrpc":"2.0","id":1,"method":"admin_nodeInfo","params":[]}' \
  http://127.0.0.1:8545) || { echo "enode.sh: no answer from 127.0.0.1:8545" >&2; exit 1; }
enode=$(printf '%s' "$reply" | jq -r '.result.enode // empty')
if [ -z "$enode" ]; then
  echo "enode.sh: admin_nodeInfo returned no enode: $reply" >&2
  exit 1
fi
echo "$enode"
