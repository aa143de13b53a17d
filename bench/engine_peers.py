#!/usr/bin/env python3
"""The consensus-client driver of bench/engine-peers.sh: feeds a stress chain (`ethrex
fixture stress --out DIR`) to one execution client through its authenticated Engine API,
block by block, as a consensus client would, and times each block's newPayload.

  engine_peers.py prepare --chain DIR --out PREP [--blocks N]
        reads DIR/stress.blockchain_test.json once (untimed) and writes PREP/calls.jsonl
        (per block: the engine_newPayloadV5 params built by hive/engine_runner/payload.py,
        the header's block hash and state root, gas used, the block's RLP and BAL for
        clients that take them apart), PREP/genesis.json (DIR/stress.genesis.json when
        present, else built from the test by hive/engine_runner/fixtures.build_genesis)
        and PREP/chain.json (what the chain is: blocks, gas, transactions per block).
  engine_peers.py feed --prep PREP --auth URL --jwt FILE --eth URL --client NAME
                       [--pid PID] [--round N] [--style engine|reth|reth-nobal]
                       [--results FILE] [--timeout S]
        one fresh client, already started on the chain's genesis: its genesis hash
        checked against the fixture's, a wait until its process is idle (start-up work),
        forkchoiceUpdatedV4 to the genesis, then for each block newPayload (timed from the
        request's first byte to the answer's last) and forkchoiceUpdatedV4 to it (timed
        apart). Every newPayload must answer VALID with latestValidHash = the block (VALID
        means the client's state root equals the header's); any other answer ends the run
        with the block number and the answer (exit 1). At the end the client's latest
        block must be the chain's head, hash and state root. One JSON line to --results.
  engine_peers.py summary --results FILE --prep PREP [--json OUT] [--commit C]
                          [--clients ethrex,geth] [--quick] [--meta FILE]
        per client and round: p50/p99 newPayload latency, Mgas/s (total gas / sum of
        newPayload latencies); medians over the rounds per client; ethrex/geth ratios;
        printed as Markdown tables, the whole as one JSON object (also to OUT). Exits 1
        if any run failed or a client has no successful run.

Styles: `engine` is engine_newPayloadV5 (ethrex, geth 1.17.10: the BAL in the payload's
blockAccessList field). `reth` / `reth-nobal` are reth's `reth_newPayload` with
{block, bal} / the block alone (see reth_params).

Percentiles are nearest-rank (p99 of 149 blocks is the 148th smallest). Python 3.11
standard library only; the payload plumbing is hive/engine_runner's.
"""
from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import shutil
import statistics
import sys
import time
import urllib.parse
from typing import Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from hive.engine_runner import fixtures, jwt, payload  # noqa: E402
from load import with_request_receipts  # noqa: E402  (scripts/load.py: a stress block's request logs)
from procstat import cpu_ticks  # noqa: E402  (bench/procstat.py: this script's folder is on the path)

GAS_USED = payload.HEADER_FIELDS.index("gasUsed")
GAS_LIMIT = payload.HEADER_FIELDS.index("gasLimit")
STATE_ROOT = payload.HEADER_FIELDS.index("stateRoot")
NUMBER = payload.HEADER_FIELDS.index("number")
# A consensus client's forkchoice: the head, safe = head, finalized two epochs back.
FINALIZED_LAG = 64
STYLES = ("engine", "reth", "reth-nobal")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- numbers


def pct(values: List[float], q: float) -> Optional[float]:
    """Nearest-rank percentile: the ceil(q*n)-th smallest value (None for no values)."""
    v = sorted(values)
    if not v:
        return None
    return v[min(len(v) - 1, max(0, math.ceil(q * len(v)) - 1))]


def mgas_per_s(gas: int, latencies_ms: List[float]) -> Optional[float]:
    """Total gas over the sum of the newPayload latencies, in Mgas/s."""
    total_s = sum(latencies_ms) / 1000.0
    if total_s <= 0:
        return None
    return gas / 1e6 / total_s


def median(values: List[float]) -> Optional[float]:
    v = [x for x in values if x is not None]
    return statistics.median(v) if v else None


def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    if a is None or b is None or b == 0:
        return None
    return a / b


def r2(x: Optional[float], digits: int = 2) -> Optional[float]:
    return None if x is None else round(x, digits)


# --------------------------------------------------------------------------- answers


def short(value, limit: int = 2000) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def payload_problem(number: int, block_hash: str, reply) -> Optional[str]:
    """None when `reply` (the whole JSON-RPC answer) is VALID for block_hash; else what the
    client answered, with the block number."""
    if not isinstance(reply, dict):
        return f"block {number}: newPayload answered {short(reply)}"
    if reply.get("error") is not None:
        err = reply["error"]
        if isinstance(err, dict):
            return f"block {number}: newPayload answered error {err.get('code')}: {short(str(err.get('message')))}"
        return f"block {number}: newPayload answered error {short(err)}"
    result = reply.get("result")
    if not isinstance(result, dict) or result.get("status") != "VALID":
        return f"block {number}: newPayload answered {short(result)}"
    lvh = (result.get("latestValidHash") or "").lower()
    if lvh != block_hash.lower():
        return f"block {number}: newPayload VALID but latestValidHash {lvh or None}, the block is {block_hash}"
    return None


def fcu_problem(number: int, block_hash: str, reply) -> Optional[str]:
    """None when a forkchoiceUpdated answer (whole JSON-RPC reply) is VALID for the head."""
    if not isinstance(reply, dict):
        return f"head {number}: forkchoiceUpdated answered {short(reply)}"
    if reply.get("error") is not None:
        return f"head {number}: forkchoiceUpdated answered error {short(reply['error'])}"
    ps = (reply.get("result") or {}).get("payloadStatus") or {}
    if ps.get("status") != "VALID":
        return f"head {number}: forkchoiceUpdated answered {short(reply.get('result'))}"
    lvh = (ps.get("latestValidHash") or "").lower()
    if lvh and lvh != block_hash.lower():
        return f"head {number}: forkchoiceUpdated VALID but latestValidHash {lvh}, the head is {block_hash}"
    return None


def forkchoice(hashes: List[str], n: int) -> dict:
    """The forkchoice state a consensus client sends after block n (hashes[0]: genesis)."""
    return {"headBlockHash": hashes[n], "safeBlockHash": hashes[n],
            "finalizedBlockHash": hashes[max(0, n - FINALIZED_LAG)]}


def reth_params(rec: dict, with_bal: bool) -> Tuple[str, list]:
    """reth's `reth_newPayload` (its `crates/rpc/rpc-api/src/reth_engine.rs`, on the auth
    port): `{block, bal}` (the block's RLP and its BAL's RLP) or the block's RLP alone,
    then `wait_for_persistence` and `wait_for_caches`, both false here: reth's defaults
    (true) hold the request until the last block's disk write and cache updates are done,
    which `engine_newPayload` does not, so the latency would not be a validator's."""
    block = rec["block_rlp"]
    if with_bal:
        if not rec.get("bal"):
            raise SystemExit("engine-peers: the chain's payloads carry no blockAccessList for reth_newPayload")
        return "reth_newPayload", [{"block": block, "bal": rec["bal"]}, False, False]
    return "reth_newPayload", [block, False, False]


# --------------------------------------------------------------------------- prepare


def load_test(chain_dir: str) -> Tuple[str, dict]:
    path = os.path.join(chain_dir, "stress.blockchain_test.json")
    if not os.path.exists(path):
        extra = ""
        if os.path.exists(os.path.join(chain_dir, "stress.state.json")):
            extra = " (a chain with a state filler has none: its genesis state is not in a genesis file)"
        raise SystemExit(f"{path}: not found{extra}; make the chain with `ethrex fixture stress --out {chain_dir}`")
    with open(path) as fh:
        data = json.load(fh)
    if len(data) != 1:
        raise SystemExit(f"{path}: expected one test, found {len(data)}")
    return next(iter(data.items()))


def prepare(a) -> int:
    t0 = time.monotonic()
    name, test = load_test(a.chain)
    all_blocks = test["blocks"]
    blocks = all_blocks[: a.blocks] if a.blocks else all_blocks
    if not blocks:
        raise SystemExit(f"{a.chain}: the chain has no blocks")
    schedule = fixtures.fork_schedule(test["network"])
    tracker = payload.RequestTracker((test.get("config") or {}).get("depositContractAddress"))
    gh = test["genesisBlockHeader"]
    os.makedirs(a.out, exist_ok=True)
    txs, gas_used, gas_limits, methods = [], [], [], set()
    head = None
    with open(os.path.join(a.out, "calls.jsonl"), "w") as out:
        for n, block in enumerate(blocks, start=1):
            try:
                call = payload.build_call(with_request_receipts(block), schedule, tracker)
            except (payload.SkipTest, payload.SkipBlock, ValueError) as err:
                raise SystemExit(f"{a.chain}: block {n} cannot be sent over the Engine API: {err}")
            if call.expect_invalid:
                raise SystemExit(f"{a.chain}: block {n} is an invalid block ({call.expected})")
            header = payload.decode_block(block["rlp"]).header
            number = int.from_bytes(header[NUMBER], "big")
            if number != n:
                raise SystemExit(f"{a.chain}: block {n} has number {number}")
            used = int.from_bytes(header[GAS_USED], "big")
            rec = {
                "number": number,
                "hash": call.block_hash.lower(),
                "state_root": "0x" + header[STATE_ROOT].hex(),
                "gas_used": used,
                "gas_limit": int.from_bytes(header[GAS_LIMIT], "big"),
                "txs": len(call.params[0]["transactions"]),
                "method": call.method,
                "fcu_version": call.fcu_version,
                "params": call.params,
                "block_rlp": block["rlp"],
                "bal": call.params[0].get("blockAccessList"),
            }
            methods.add(call.method)
            txs.append(rec["txs"])
            gas_used.append(used)
            gas_limits.append(rec["gas_limit"])
            head = rec
            out.write(json.dumps(rec, separators=(",", ":")) + "\n")
    genesis_src = os.path.join(a.chain, "stress.genesis.json")
    if os.path.exists(genesis_src):
        shutil.copyfile(genesis_src, os.path.join(a.out, "genesis.json"))
        source = "stress.genesis.json"
    else:
        with open(os.path.join(a.out, "genesis.json"), "w") as fh:
            json.dump(fixtures.build_genesis(test), fh, indent=1)
        source = "built from stress.blockchain_test.json (fixtures.build_genesis)"
    info = {
        "dir": os.path.abspath(a.chain),
        "test": name,
        "network": test["network"],
        "blocks": len(blocks),
        "blocks_in_chain": len(all_blocks),
        "gas": sum(gas_used),
        "txs": sum(txs),
        "txs_per_block": [min(txs), max(txs)],
        "gas_used_per_block": [min(gas_used), max(gas_used)],
        "gas_limit": [min(gas_limits), max(gas_limits)],
        "methods": sorted(methods),
        "genesis_hash": gh["hash"].lower(),
        "genesis": source,
        "head": head["hash"],
        "head_state_root": head["state_root"],
        "prepare_s": round(time.monotonic() - t0, 1),
    }
    with open(os.path.join(a.out, "chain.json"), "w") as fh:
        json.dump(info, fh, indent=1)
    log(f"prepared {info['blocks']} of {len(all_blocks)} blocks, {info['gas'] / 1e6:.1f} Mgas, "
        f"{info['txs']} transactions ({min(txs)}-{max(txs)} a block) in {info['prepare_s']} s; genesis: {source}")
    return 0


# --------------------------------------------------------------------------- transport


class Transport(Exception):
    pass


class Http:
    """JSON-RPC over one persistent HTTP/1.1 connection; a fresh JWT for every request
    (made before the clock starts)."""

    def __init__(self, url: str, secret: Optional[bytes], timeout: float):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port or 80
        self.path = u.path or "/"
        self.secret = secret
        self.timeout = timeout
        self.conn: Optional[http.client.HTTPConnection] = None
        self.ids = 0
        self.reconnects = 0

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def body(self, method: str, params: list) -> bytes:
        self.ids += 1
        return json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params},
                          separators=(",", ":")).encode()

    def post(self, body: bytes) -> Tuple[float, dict]:
        """(seconds from the request's first byte to the answer's last, the decoded reply).
        One retry when a kept-alive connection turns out closed before any answer."""
        headers = {"Content-Type": "application/json"}
        if self.secret is not None:
            headers["Authorization"] = "Bearer " + jwt.make_token(self.secret)
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
                self.conn.connect()
            try:
                t0 = time.perf_counter()
                self.conn.request("POST", self.path, body, headers)
                resp = self.conn.getresponse()
                raw = resp.read()
                took = time.perf_counter() - t0
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as err:
                self.close()
                if attempt:
                    raise Transport(f"connection lost: {err}") from None
                self.reconnects += 1
                continue
            except (OSError, http.client.HTTPException) as err:  # a timeout included: no retry
                self.close()
                raise Transport(f"{type(err).__name__}: {err}") from None
            if resp.will_close:
                self.close()
            if resp.status in (401, 403):
                raise Transport(f"HTTP {resp.status}: the client refused our JWT ({raw[:200]!r})")
            try:
                reply = json.loads(raw)
            except ValueError:
                raise Transport(f"HTTP {resp.status}, not JSON: {raw[:300]!r}") from None
            return took, reply
        raise AssertionError("unreachable")

    def call(self, method: str, params: list):
        _, reply = self.post(self.body(method, params))
        if not isinstance(reply, dict) or reply.get("error") is not None or "result" not in reply:
            raise Transport(f"{method}: {short(reply)}")
        return reply["result"]


# --------------------------------------------------------------------------- feed


def wait_idle(pid: Optional[int], limit: float = 30.0) -> float:
    """Until the process uses under a tenth of a core in two half-second windows running
    (start-up work done, e.g. ethrex's KZG setup); bounded by `limit`. Seconds waited."""
    if not pid:
        return 0.0
    hz = os.sysconf("SC_CLK_TCK")
    t0 = time.monotonic()
    quiet, last = 0, cpu_ticks(pid)
    while time.monotonic() - t0 < limit and quiet < 2:
        time.sleep(0.5)
        now = cpu_ticks(pid)
        if now is None or last is None:
            break
        quiet = 0 if now - last > 0.05 * hz else quiet + 1
        last = now
    return round(time.monotonic() - t0, 1)


def peak_rss_mb(pid: Optional[int]) -> Optional[int]:
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024)
    except (OSError, TypeError, ValueError):
        pass
    return None


def read_calls(prep: str) -> List[dict]:
    with open(os.path.join(prep, "calls.jsonl")) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def feed(a) -> int:
    with open(os.path.join(a.prep, "chain.json")) as fh:
        chain = json.load(fh)
    calls = read_calls(a.prep)
    secret = bytes.fromhex(open(a.jwt).read().strip().removeprefix("0x"))
    engine = Http(a.auth, secret, a.timeout)
    eth = Http(a.eth, None, 30)
    hashes = [chain["genesis_hash"]] + [c["hash"] for c in calls]
    # Every request body encoded before anything is timed.
    bodies = []
    for c in calls:
        if a.style == "engine":
            method, params = c["method"], c["params"]
        else:
            method, params = reth_params(c, with_bal=a.style == "reth")
        bodies.append(engine.body(method, params))
    fcus = [engine.body(f"engine_forkchoiceUpdatedV{c['fcu_version']}", [forkchoice(hashes, n), None])
            for n, c in enumerate(calls, start=1)]
    rec = {"kind": "run", "client": a.client, "style": a.style, "round": a.round, "ok": False,
           "loadavg_before": [round(x, 2) for x in os.getloadavg()]}

    def fail(msg: str, number: Optional[int] = None) -> int:
        rec.update(error=msg, block=number, loadavg_after=[round(x, 2) for x in os.getloadavg()])
        emit(a, rec)
        print(f"engine-peers: {a.client} (round {a.round}): {msg}", file=sys.stderr)
        return 1

    try:
        got = (eth.call("eth_getBlockByNumber", ["0x0", False]) or {}).get("hash", "").lower()
    except Transport as err:
        return fail(f"eth_getBlockByNumber(0): {err}")
    if got != chain["genesis_hash"]:
        return fail(f"the client's genesis is {got}, the chain's {chain['genesis_hash']}")
    rec["idle_wait_s"] = wait_idle(a.pid)
    genesis_version = calls[0]["fcu_version"]
    try:
        _, reply = engine.post(engine.body(f"engine_forkchoiceUpdatedV{genesis_version}",
                                           [forkchoice(hashes, 0), None]))
    except Transport as err:
        return fail(f"forkchoiceUpdated to the genesis: {err}", 0)
    problem = fcu_problem(0, hashes[0], reply)
    if problem:
        return fail(problem, 0)
    latencies, fcu_ms, gas = [], [], []
    server_ms = []  # reth_newPayload's own measure of its execution (latency_us)
    started = time.monotonic()
    for n, c in enumerate(calls, start=1):
        try:
            took, reply = engine.post(bodies[n - 1])
        except Transport as err:
            return fail(f"block {n}: newPayload got no answer: {err}", n)
        problem = payload_problem(n, c["hash"], reply)
        if problem:
            return fail(problem, n)
        latencies.append(took * 1000)
        server = (reply.get("result") or {}).get("latency_us")
        if isinstance(server, int):
            server_ms.append(server / 1000)
        gas.append(c["gas_used"])
        try:
            took, reply = engine.post(fcus[n - 1])
        except Transport as err:
            return fail(f"head {n}: forkchoiceUpdated got no answer: {err}", n)
        problem = fcu_problem(n, c["hash"], reply)
        if problem:
            return fail(problem, n)
        fcu_ms.append(took * 1000)
        if a.progress and n % a.progress == 0:
            log(f"{a.client}: block {n}/{len(calls)}, last newPayload {latencies[-1]:.1f} ms")
    wall = time.monotonic() - started
    # The head the client reports: the chain's last block, hash and state root.
    deadline = time.monotonic() + 10
    while True:
        try:
            latest = eth.call("eth_getBlockByNumber", ["latest", False]) or {}
        except Transport as err:
            return fail(f"eth_getBlockByNumber(latest) after the feed: {err}", len(calls))
        if (latest.get("hash") or "").lower() == chain["head"] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if (latest.get("hash") or "").lower() != chain["head"] or \
            (latest.get("stateRoot") or "").lower() != chain["head_state_root"]:
        return fail(f"after the feed the client's latest block is {latest.get('number')} {latest.get('hash')} "
                    f"(state root {latest.get('stateRoot')}), the chain's head is {chain['head']} "
                    f"(state root {chain['head_state_root']})", len(calls))
    engine.close()
    eth.close()
    rec.update(
        ok=True, blocks=len(latencies), gas=sum(gas),
        p50_ms=r2(pct(latencies, 0.5)), p99_ms=r2(pct(latencies, 0.99)),
        mean_ms=r2(statistics.fmean(latencies)), max_ms=r2(max(latencies)),
        mgas_s=r2(mgas_per_s(sum(gas), latencies), 1),
        fcu_p50_ms=r2(pct(fcu_ms, 0.5)), wall_s=round(wall, 2),
        newpayload_ms=[round(x, 2) for x in latencies],
        reconnects=engine.reconnects, peak_rss_mb=peak_rss_mb(a.pid),
        loadavg_after=[round(x, 2) for x in os.getloadavg()],
    )
    if len(server_ms) == len(latencies):
        rec.update(server_p50_ms=r2(pct(server_ms, 0.5)), server_p99_ms=r2(pct(server_ms, 0.99)))
    emit(a, rec)
    log(f"{a.client} round {a.round}: {rec['blocks']} blocks VALID, newPayload p50 {rec['p50_ms']} ms, "
        f"p99 {rec['p99_ms']} ms, {rec['mgas_s']} Mgas/s (feed {rec['wall_s']} s)")
    return 0


def emit(a, rec: dict) -> None:
    if a.results:
        with open(a.results, "a") as fh:
            fh.write(json.dumps(rec) + "\n")


# --------------------------------------------------------------------------- summary


def summarize(records: List[dict], clients: List[str]) -> dict:
    """Per client: its successful runs, the medians over them; ratios ethrex/geth."""
    out: Dict[str, dict] = {}
    for client in clients:
        runs = [r for r in records if r.get("kind") == "run" and r["client"] == client]
        ok = [r for r in runs if r.get("ok")]
        failed = [r for r in runs if not r.get("ok")]
        entry: dict = {}
        if ok:
            entry = {
                "p50_ms": r2(median([r["p50_ms"] for r in ok])),
                "p99_ms": r2(median([r["p99_ms"] for r in ok])),
                "mgas_s": r2(median([r["mgas_s"] for r in ok]), 1),
                "blocks": ok[0]["blocks"],
                "gas": ok[0]["gas"],
                "fcu_p50_ms": r2(median([r.get("fcu_p50_ms") for r in ok])),
                "peak_rss_mb": max((r.get("peak_rss_mb") or 0) for r in ok) or None,
                "runs": len(ok),
            }
        entry["rounds"] = [
            {k: r.get(k) for k in ("round", "ok", "p50_ms", "p99_ms", "mean_ms", "max_ms", "mgas_s", "wall_s",
                                   "fcu_p50_ms", "server_p50_ms", "server_p99_ms", "peak_rss_mb", "idle_wait_s", "loadavg_before", "loadavg_after",
                                   "error", "block", "newpayload_ms") if r.get(k) is not None}
            for r in runs
        ]
        if failed:
            entry["failures"] = [f"round {r.get('round')}: {r.get('error')}" for r in failed]
        notes = [r for r in records if r.get("kind") == "note" and r.get("client") == client]
        if notes:
            entry["status"] = "; ".join(n["text"] for n in notes)
        if not runs and not notes:
            entry["status"] = "not run"
        out[client] = entry
    return out


def ratios(clients: Dict[str, dict], ours: str = "ethrex", theirs: str = "geth") -> dict:
    a, b = clients.get(ours) or {}, clients.get(theirs) or {}
    return {
        "p50": r2(ratio(a.get("p50_ms"), b.get("p50_ms")), 3),
        "p99": r2(ratio(a.get("p99_ms"), b.get("p99_ms")), 3),
        "mgas_s": r2(ratio(a.get("mgas_s"), b.get("mgas_s")), 3),
    }


def fmt(x, digits: int = 2) -> str:
    if x is None:
        return "-"
    return f"{x:.{digits}f}"


def tables(result: dict, clients: List[str]) -> str:
    chain = result["chain"]
    lines = [
        f"chain: {chain['blocks']} blocks (of {chain['blocks_in_chain']}), {chain['gas'] / 1e6:.1f} Mgas, "
        f"{chain['txs_per_block'][0]}-{chain['txs_per_block'][1]} transactions and "
        f"{chain['gas_used_per_block'][0] / 1e6:.1f}-{chain['gas_used_per_block'][1] / 1e6:.1f} Mgas a block "
        f"(gas limit {chain['gas_limit'][1] / 1e6:.0f}M); commit {result.get('commit')}",
        "",
        "| client | round | newPayload p50 ms | p99 ms | mean ms | max ms | Mgas/s | fcu p50 ms | feed s | load avg (1 min) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for client in clients:
        for r in result["clients"][client].get("rounds", []):
            if r.get("ok"):
                lines.append(
                    f"| {client} | {r['round']} | {fmt(r['p50_ms'])} | {fmt(r['p99_ms'])} | {fmt(r.get('mean_ms'))} | "
                    f"{fmt(r.get('max_ms'))} | {fmt(r['mgas_s'], 1)} | {fmt(r.get('fcu_p50_ms'))} | "
                    f"{fmt(r.get('wall_s'), 1)} | {fmt((r.get('loadavg_before') or [None])[0])} |")
            else:
                lines.append(f"| {client} | {r.get('round')} | FAILED: {short(str(r.get('error')), 300)} | | | | | | | |")
    lines += ["", "| client | runs | newPayload p50 ms | p99 ms | Mgas/s | peak RSS MB |", "|---|---|---|---|---|---|"]
    for client in clients:
        c = result["clients"][client]
        if c.get("runs"):
            lines.append(f"| {client} | {c['runs']} | {fmt(c['p50_ms'])} | {fmt(c['p99_ms'])} | "
                         f"{fmt(c['mgas_s'], 1)} | {c.get('peak_rss_mb') or '-'} |")
        else:
            lines.append(f"| {client} | 0 | {c.get('status') or 'no successful run'} | | | |")
    r = result.get("ratios") or {}
    if any(v is not None for v in r.values()):
        lines += ["", "| ethrex / geth | newPayload p50 | p99 | Mgas/s |", "|---|---|---|---|",
                  f"| ratio | {fmt(r.get('p50'), 3)}x | {fmt(r.get('p99'), 3)}x | {fmt(r.get('mgas_s'), 3)}x |",
                  "", "(latency ratios below 1 and a Mgas/s ratio above 1: ethrex faster)"]
    return "\n".join(lines)


def summary(a) -> int:
    with open(os.path.join(a.prep, "chain.json")) as fh:
        chain = json.load(fh)
    records = []
    if os.path.exists(a.results):
        with open(a.results) as fh:
            records = [json.loads(line) for line in fh if line.strip()]
    clients = [c for c in a.clients.split(",") if c]
    per_client = summarize(records, clients)
    result = {"clients": per_client, "ratios": ratios(per_client), "chain": chain, "commit": a.commit,
              "rounds": a.rounds, "quick": a.quick}
    if a.meta and os.path.exists(a.meta):
        with open(a.meta) as fh:
            result.update(json.load(fh))
    print(tables(result, clients))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(result, fh, indent=1)
            fh.write("\n")
    status = 0
    for client in clients:
        c = per_client[client]
        if c.get("failures"):
            status = 1
        if client in ("ethrex", "geth") and not c.get("runs"):
            status = 1
        if client not in ("ethrex", "geth") and c.get("status", "").startswith("FAILED"):
            status = 1
    return status


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--chain", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--blocks", type=int, default=0, help="only the first N blocks (0: all)")
    f = sub.add_parser("feed")
    f.add_argument("--prep", required=True)
    f.add_argument("--auth", required=True)
    f.add_argument("--jwt", required=True)
    f.add_argument("--eth", required=True)
    f.add_argument("--client", required=True)
    f.add_argument("--pid", type=int)
    f.add_argument("--round", type=int, default=1)
    f.add_argument("--style", choices=STYLES, default="engine")
    f.add_argument("--results")
    f.add_argument("--timeout", type=float, default=300.0, help="seconds one Engine API call may take")
    f.add_argument("--progress", type=int, default=0, help="a log line every N blocks")
    s = sub.add_parser("summary")
    s.add_argument("--results", required=True)
    s.add_argument("--prep", required=True)
    s.add_argument("--json")
    s.add_argument("--commit")
    s.add_argument("--clients", default="ethrex,geth")
    s.add_argument("--rounds", type=int, default=1)
    s.add_argument("--quick", action="store_true")
    s.add_argument("--meta", help="a JSON object merged into the result (versions, date, machine)")
    a = ap.parse_args()
    return {"prepare": prepare, "feed": feed, "summary": summary}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
