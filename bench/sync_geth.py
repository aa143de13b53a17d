"""Helpers for bench/sync-geth.sh: chain gas over JSON-RPC, log parsing, a fixture's head hash."""
import json
import re
import sys
import urllib.request
from datetime import datetime


def rpc(url, method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)["result"]


def chain_gas(url, head):
    """Total gas used by blocks 1..head, read from a node's JSON-RPC."""
    return sum(int(rpc(url, "eth_getBlockByNumber", [hex(n), False])["gasUsed"], 16)
               for n in range(1, head + 1))


def sync_fields(log):
    """The key=value fields of the node's `sync reached its target` line (empty if absent)."""
    for line in reversed(open(log, errors="replace").read().splitlines()):
        if "sync reached its target" in line:
            # tracing's plain format: key=value, ANSI colour codes stripped first.
            line = re.sub(r"\x1b\[[0-9;]*m", "", line)
            return dict(re.findall(r"(\w+)=(\S+)", line))
    return {}


def import_stats(log):
    """(blocks, gas, seconds) of an `ethrex import` log: from `chain opened` to the last
    imported block (the genesis load before it is not counted)."""
    start = end = None
    gas = blocks = 0

    def stamp(line):
        return datetime.fromisoformat(line.split()[0].replace("Z", "+00:00"))

    for line in open(log, errors="replace"):
        line = re.sub(r"\x1b\[[0-9;]*m", "", line)
        if "chain opened" in line:
            start = stamp(line)
        elif "imported block" in line:
            end = stamp(line)
            blocks += 1
            gas += int(re.search(r"\bgas=(\d+)", line).group(1))
    return blocks, gas, (end - start).total_seconds()


def geth_sync_secs(log):
    """Seconds from geth's `Beacon syncing with hash as target` (the target header fetched)
    to its last `Imported new chain segment` ("-" if either is missing)."""
    start = end = None
    for line in open(log, errors="replace"):
        m = re.match(r"\w+ \[\d\d-\d\d\|(\d\d):(\d\d):(\d\d\.\d+)\]", line)
        if not m:
            continue
        t = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
        if "Beacon syncing with hash as target" in line and start is None:
            start = t
        elif "Imported new chain segment" in line:
            end = t
    if start is None or end is None:
        return "-"
    return f"{(end - start) % 86400:.3f}"


def fcu_head(path):
    """The head block hash of an engine_forkchoiceUpdated request saved as JSON (the
    execution-apis fixtures' headfcu.json)."""
    return json.load(open(path))["params"][0]["headBlockHash"]


def main():
    cmd = sys.argv[1]
    if cmd == "gas":
        print(chain_gas(sys.argv[2], int(sys.argv[3])))
    elif cmd == "sync-fields":
        print(" ".join(f"{k}={v}" for k, v in sync_fields(sys.argv[2]).items()))
    elif cmd == "geth-sync-secs":
        print(geth_sync_secs(sys.argv[2]))
    elif cmd == "import-stats":
        print(*import_stats(sys.argv[2]))
    elif cmd == "fcu-head":
        print(fcu_head(sys.argv[2]))
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
