#!/usr/bin/env python3
"""Load on the node: a bounded, loopback-only soak of `ethrex node` (see docs/load.md).

One fresh node on free 127.0.0.1 ports, driven for `--seconds` by concurrent clients:

- the valid feed: engine_newPayload + engine_forkchoiceUpdated for the fixture's blocks in
  order, then re-sends of known payloads and of the head's forkchoice; every answer VALID
  with the right latestValidHash;
- eth_* / net_ / web3_ readers on the HTTP port (and some on the Engine API port), every
  answer checked against the fixture: block hashes, parent links, transaction hashes,
  balances / nonces / code / storage (from the genesis allocation and the blocks' access
  lists), the head within what the feed had confirmed;
- invalid calls: payloads with a wrong block hash, a wrong state root (hash recomputed),
  a child of such a block, forkchoice to an invalid or unknown head, wrong versions and
  params, unknown methods, garbage JSON, oversized bodies, bad JWTs, other HTTP verbs;
- slow clients: waves of idle sockets, half-sent headers, half-sent bodies and clients
  that never read their answer, on both RPC ports;
- garbage peers: connections to the RLPx port sending random bytes or a truncated
  handshake, opened and closed repeatedly;
- hostile RPC: requests past the node's limits (oversized batches, huge log ranges, the
  filter table filled), calls of code that loops forever, deep struct-logger traces of the
  heaviest blocks, bad block tags and params; each must get the expected error or a
  correct bounded answer within its bound, while the feed and the readers keep theirs.

The node's RSS and open descriptors are sampled every second. At the end the head must be
the fixture's last block, every valid call answered correctly, every invalid call
refused, the sockets back near their baseline and RSS below the limit; the script prints
p50/p99 per method and one summary line, and exits non-zero otherwise. Everything is
bounded (connection counts, call rates, the run time); the node is always stopped and
its directory removed.

Python 3.11 standard library only; the Engine API plumbing (payloads from a
blockchain_test, JWTs, starting the node) is hive/engine_runner's.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from hive.engine_runner import fixtures, jwt, node, payload, rlp  # noqa: E402
from hive.engine_runner.keccak import keccak256  # noqa: E402
from hive.engine_runner.rpc import AuthError, RPCError, TransportError  # noqa: E402

WITHDRAWAL_PREDEPLOY = "0x00000961ef480eb55e80d19ad83579a64c007002"
CONSOLIDATION_PREDEPLOY = "0x0000bbddc7ce488642fb579f8b00f3a590007251"
STATE_ROOT = payload.HEADER_FIELDS.index("stateRoot")
PARENT_HASH = payload.HEADER_FIELDS.index("parentHash")
MB = 1024 * 1024


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def rand_hash(rng: random.Random) -> str:
    return "0x" + rng.randbytes(32).hex()


# Runtime code that never stops by itself: JUMPDEST PUSH1 0 JUMP (12 gas a round), so it
# runs until its gas (or the node's EVM time limit) runs out.
LOOP_CODE = "0x5b600056"


def loop_call(rng: random.Random) -> Tuple[dict, dict]:
    """A call to a fresh address, and the state override giving it the endless code."""
    to = "0x" + rng.randbytes(20).hex()
    return {"from": "0x" + rng.randbytes(20).hex(), "to": to}, {to: {"code": LOOP_CODE}}


def short(value, limit: int = 200) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def rpc_error(reply) -> Optional[Tuple[int, str]]:
    """(code, message) if `reply` is one JSON-RPC error object, else None."""
    if isinstance(reply, dict) and isinstance(reply.get("error"), dict) and "result" not in reply:
        return reply["error"].get("code"), str(reply["error"].get("message", ""))
    return None


# The struct logger's size budget (docs/rpc.md, "Limits").
TOO_LARGE = "trace larger than 128 MiB"


def expect_error(codes: Tuple[int, ...], *messages: str):
    """A hostile check: one JSON-RPC error, its code in `codes`, its message containing
    one of `messages` (any message if none given). A request that reads state while
    blocks are imported keeps reading its block (docs/rpc.md: the view follows the head),
    so `the head moved ...; retry` is a failure like any other unexpected answer."""
    def check(reply):
        err = rpc_error(reply)
        if err is None:
            return f"expected error {'/'.join(map(str, codes))} {' or '.join(map(repr, messages))}, got {short(reply)}", ""
        code, message = err
        if code not in codes or (messages and not any(m in message for m in messages)):
            return (f"error {code} {message[:200]!r}, expected code {'/'.join(map(str, codes))}"
                    f"{' with ' + ' or '.join(map(repr, messages)) if messages else ''}"), ""
        return "", f"error {code} " + next((m for m in messages if m in message), message[:48])
    return check


# --------------------------------------------------------------------------- fixture


def with_request_receipts(block: dict) -> dict:
    """The block with `receipts` whose logs carry its EIP-7002/7251 requests.

    The stress fixture has no receipts, and payload.build_call needs the block's execution
    requests. Its request transactions always succeed (the generator pays 1000 wei, over
    the fee), so each one logs sender || calldata, as the predeploy does (the tracker turns
    a withdrawal request's big-endian amount little-endian). build_call checks the result
    against the header's requestsHash, so a wrong guess cannot go unnoticed.
    """
    if "receipts" in block:
        return block
    logs = []
    for tx in block.get("transactions") or []:
        to = (tx.get("to") or "").lower()
        if to not in (WITHDRAWAL_PREDEPLOY, CONSOLIDATION_PREDEPLOY):
            continue
        data = bytes.fromhex(tx["data"][2:])
        logs.append({"address": to, "data": "0x" + tx["sender"][2:] + data.hex(), "topics": []})
    return dict(block, receipts=[{"logs": logs}])


class Chain:
    """What the clients send and check, taken from a blockchain_test fixture."""

    def __init__(self, path: str, max_blocks: Optional[int], rng: random.Random):
        started = time.monotonic()
        with open(path) as fh:
            data = json.load(fh)
        if len(data) != 1:
            raise SystemExit(f"{path}: expected one test, found {len(data)}")
        test = next(iter(data.values()))
        del data
        blocks = test["blocks"][: max_blocks or None]
        self.genesis = fixtures.build_genesis(test)
        self.chain_id = int(str((test.get("config") or {}).get("chainid", "0x1")), 16)
        schedule = fixtures.fork_schedule(test["network"])
        tracker = payload.RequestTracker((test.get("config") or {}).get("depositContractAddress"))
        self.calls: List[payload.PayloadCall] = []
        for block in blocks:
            try:
                self.calls.append(payload.build_call(with_request_receipts(block), schedule, tracker))
            except (payload.SkipTest, payload.SkipBlock, ValueError) as err:
                raise SystemExit(f"{path}: block {len(self.calls) + 1} cannot be sent: {err}")
            if self.calls[-1].expect_invalid:
                raise SystemExit(f"{path}: block {len(self.calls)} is an invalid block; a load fixture must be valid")
        gh = test["genesisBlockHeader"]
        self.genesis_fcu = payload.fcu_version_for(fixtures.fork_at(schedule, int(gh.get("timestamp", "0x0"), 16)))
        self.hashes = [gh["hash"].lower()] + [c.block_hash.lower() for c in self.calls]
        self.last = len(self.calls)
        self.index = {h: n for n, h in enumerate(self.hashes)}
        self.tx_hashes = [[]] + [[tx["hash"].lower() for tx in b.get("transactions") or []] for b in blocks]
        self.headers = [None] + [payload.decode_block(b["rlp"]).header for b in blocks]
        # The heaviest blocks (by gas used) and transactions (by gas limit: the fixture has
        # no receipts), for the hostile client's deep traces.
        gas_used = payload.HEADER_FIELDS.index("gasUsed")
        by_gas = sorted(range(1, len(self.headers)),
                        key=lambda n: -int.from_bytes(self.headers[n][gas_used], "big"))
        self.heavy_blocks = sorted(by_gas[:8])
        txs = [(int(str(tx.get("gasLimit") or tx.get("gas") or "0x0"), 16), n, tx["hash"].lower())
               for n, b in enumerate(blocks, start=1) for tx in b.get("transactions") or []]
        txs.sort(key=lambda t: (-t[0], t[1]))
        self.heavy_txs = [(n, h, g) for g, n, h in txs[:16]]
        # Params pre-encoded once: the feed re-sends them many times.
        self.params_json = [None] + [json.dumps(c.params, separators=(",", ":")) for c in self.calls]

        pre = {a.lower(): acc for a, acc in test["pre"].items()}
        if any("blockAccessList" not in b for b in blocks):
            raise SystemExit(f"{path}: the load check needs every block's blockAccessList (an Amsterdam fixture)")
        # What the blocks change, from their access lists: anything else keeps its genesis value.
        touched, code_changed, slots_changed = set(), set(), set()
        for b in blocks:
            for entry in b["blockAccessList"]:
                a = entry["address"].lower()
                if entry.get("balanceChanges") or entry.get("nonceChanges"):
                    touched.add(a)
                if entry.get("codeChanges"):
                    code_changed.add(a)
                for change in entry.get("storageChanges") or []:
                    slots_changed.add((a, int(change["slot"], 16)))
        untouched = sorted(a for a in pre if a not in touched)
        chosen = sorted(touched)
        rng.shuffle(untouched)
        rng.shuffle(chosen)
        self.tracked = chosen[:128]
        # Constant over the whole chain: balances / nonces of accounts no block changes,
        # code no block changes, storage slots no block writes.
        fixed = untouched[:64]
        self.fixed_balance = {a: int(pre[a].get("balance", "0x0"), 16) for a in fixed}
        self.fixed_nonce = {a: int(pre[a].get("nonce", "0x0"), 16) for a in fixed}
        contracts = sorted(a for a in pre if len(pre[a].get("code", "0x")) > 2 and a not in code_changed)
        rng.shuffle(contracts)
        self.fixed_code = {a: pre[a].get("code", "0x").lower() for a in contracts[:32]}
        self.fixed_storage = []
        for a in contracts:
            for slot, value in (pre[a].get("storage") or {}).items():
                if (a, int(slot, 16)) not in slots_changed and len(self.fixed_storage) < 64:
                    self.fixed_storage.append((a, hex(int(slot, 16)), int(value, 16)))
        if not self.fixed_balance or not self.fixed_code:
            raise SystemExit(f"{path}: no account or contract the chain leaves alone to check")
        # Per tracked account, its balance / nonce after each block that changed it.
        self.history: Dict[str, Dict[str, List[Tuple[int, int]]]] = {}
        wanted = set(self.tracked)
        for a in self.tracked:
            acc = pre.get(a, {})
            self.history[a] = {
                "balance": [(0, int(acc.get("balance", "0x0"), 16))],
                "nonce": [(0, int(acc.get("nonce", "0x0"), 16))],
            }
        for number, b in enumerate(blocks, start=1):
            for entry in b["blockAccessList"]:
                a = entry["address"].lower()
                if a not in wanted:
                    continue
                for kind, key, field in (("balance", "balanceChanges", "postBalance"), ("nonce", "nonceChanges", "postNonce")):
                    changes = entry.get(key) or []
                    if changes:
                        last = max(changes, key=lambda c: int(c["blockAccessIndex"], 16))
                        self.history[a][kind].append((number, int(last[field], 16)))
        # With the whole chain, the fixture's postState must agree with the histories.
        self.post = None
        if self.last == len(test["blocks"]) and test.get("postState"):
            post = {a.lower(): acc for a, acc in test["postState"].items()}
            self.post = {a: post.get(a) for a in self.tracked}
            for a in self.tracked:
                acc = self.post[a] or {}
                if int(acc.get("balance", "0x0"), 16) != self.value_at(a, "balance", self.last):
                    raise SystemExit(f"fixture: {a}'s balance history disagrees with postState")
        self.seconds = time.monotonic() - started

    def value_at(self, account: str, kind: str, number: int) -> int:
        value = 0
        for n, v in self.history[account][kind]:
            if n > number:
                break
            value = v
        return value

    def values_between(self, account: str, kind: str, low: int, high: int) -> set:
        return {self.value_at(account, kind, n) for n in range(low, high + 1)}


# --------------------------------------------------------------------------- HTTP


class Http:
    """JSON-RPC over one HTTP/1.1 connection (kept alive, or fresh per call).

    A reused keep-alive connection the server closed while idle is retried once on a
    new connection (counted in `reconnects`), as every HTTP client does; nothing else
    is retried.
    """

    ids = itertools.count(1)

    def __init__(self, port: int, secret: Optional[bytes] = None, timeout: float = 30.0, keepalive: bool = True):
        self.port = port
        self.secret = secret
        self.timeout = timeout
        self.keepalive = keepalive
        self.conn: Optional[http.client.HTTPConnection] = None
        self.used = False
        self.reconnects = 0

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def post(self, body: bytes, headers: Optional[dict] = None, auth: bool = True, method: str = "POST") -> Tuple[int, bytes]:
        """(HTTP status, body). OSError / HTTPException when there is no answer."""
        hdrs = {"Content-Type": "application/json"}
        if self.secret is not None and auth:
            hdrs["Authorization"] = "Bearer " + jwt.make_token(self.secret)
        if headers:
            hdrs.update(headers)
        if not self.keepalive:
            hdrs["Connection"] = "close"
        for attempt in range(2):
            fresh = self.conn is None
            if fresh:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            try:
                self.conn.request(method, "/", body=body, headers=hdrs)
                resp = self.conn.getresponse()
                data = resp.read()
                status = resp.status
                if not self.keepalive or resp.will_close:
                    self.close()
                return status, data
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as err:
                self.close()
                if fresh or attempt:
                    raise err
                self.reconnects += 1
            except BaseException:
                self.close()
                raise
        raise AssertionError("unreachable")

    def call(self, method: str, params) -> object:
        body = json.dumps({"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}).encode()
        return self.call_raw(method, body)

    def call_raw(self, method: str, body: bytes) -> object:
        try:
            status, raw = self.post(body)
        except (OSError, http.client.HTTPException) as err:
            raise TransportError(f"{method}: {type(err).__name__}: {err}") from None
        try:
            reply = json.loads(raw)
        except ValueError:
            kind = AuthError if status in (401, 403) else TransportError
            raise kind(f"{method}: HTTP {status}: {raw[:200]!r}") from None
        if isinstance(reply, dict) and isinstance(reply.get("error"), dict):
            e = reply["error"]
            raise RPCError(e.get("code", 0), str(e.get("message", "")), e.get("data"))
        if status != 200 or not isinstance(reply, dict) or "result" not in reply:
            raise TransportError(f"{method}: HTTP {status}: {raw[:200]!r}")
        return reply["result"]


def raw_post(port: int, body: bytes, headers: str, timeout: float) -> Tuple[Optional[int], int]:
    """POST a large body over a plain socket: (HTTP status or None, body bytes sent).

    A server refusing a body may answer and close before it is all sent (the write then
    fails); http.client would lose the answer, this keeps what can be read.
    """
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sent = 0
    try:
        try:
            s.sendall((f"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{headers}"
                       f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode())
            view = memoryview(body)
            while sent < len(body):
                sent += s.send(view[sent: sent + MB])
        except (BrokenPipeError, ConnectionResetError):
            pass
        data = b""
        try:
            while b"\r\n" not in data and len(data) < 4096:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
        status = int(data.split()[1]) if data.startswith(b"HTTP/1.") and len(data.split()) > 1 else None
        return status, sent
    finally:
        s.close()


# --------------------------------------------------------------------------- stats


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.lat: Dict[str, List[float]] = defaultdict(list)
        self.calls: Dict[str, int] = defaultdict(int)
        self.errors: Dict[str, int] = defaultdict(int)
        self.kind: Dict[str, str] = {}
        self.failures: List[str] = []
        self.failure_count = 0
        self.notes: Dict[str, int] = defaultdict(int)
        self.outcomes: Dict[Tuple[str, str], int] = defaultdict(int)

    def record(self, label: str, kind: str, seconds: float, ok: bool, why: str = "") -> None:
        with self.lock:
            self.kind[label] = kind
            self.calls[label] += 1
            self.lat[label].append(seconds)
            if not ok:
                self.errors[label] += 1
                self.failure_count += 1
                if len(self.failures) < 40:
                    self.failures.append(f"{label}: {why}")

    def fail(self, why: str) -> None:
        with self.lock:
            self.failure_count += 1
            if len(self.failures) < 40:
                self.failures.append(why)

    def note(self, what: str, count: int = 1) -> None:
        with self.lock:
            self.notes[what] += count

    def outcome(self, label: str, cls: str) -> None:
        """How an expected hostile answer looked (its outcome class)."""
        with self.lock:
            self.outcomes[(label, cls)] += 1

    def totals(self, kind: str) -> Tuple[int, int]:
        with self.lock:
            labels = [l for l, k in self.kind.items() if k == kind]
            return sum(self.calls[l] for l in labels), sum(self.errors[l] for l in labels)


def pct(values: List[float], p: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(p / 100.0 * len(s) + 0.5)) - 1))]


# --------------------------------------------------------------------------- node


class LoadNode(node.Node):
    """hive's Node with the RLPx port on a known loopback port (the garbage peers' target)."""

    def __init__(self, *args, p2p_port: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.p2p_port = p2p_port

    def command(self) -> List[str]:
        cmd = super().command()
        cmd[cmd.index("--p2p.port") + 1] = str(self.p2p_port)
        return cmd + ["--p2p.addr", "127.0.0.1"]


def proc_sample(pid: int) -> Optional[Tuple[float, int, int, int]]:
    """(RSS MB, open fds, of which sockets, threads) of a process, None if it is gone."""
    try:
        rss_kb = threads = 0
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    rss_kb = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        fds = sockets = 0
        for name in os.listdir(f"/proc/{pid}/fd"):
            fds += 1
            try:
                if os.readlink(f"/proc/{pid}/fd/{name}").startswith("socket:"):
                    sockets += 1
            except OSError:
                pass
        return rss_kb / 1024.0, fds, sockets, threads
    except (OSError, ValueError):
        return None


# --------------------------------------------------------------------------- the run


class Load:
    def __init__(self, args, chain: Chain, n: LoadNode):
        self.args = args
        self.chain = chain
        self.node = n
        self.stats = Stats()
        self.stop = threading.Event()
        self.lock = threading.Lock()
        # The feed's progress: the highest block sent with newPayload, the highest head
        # sent with forkchoiceUpdated, and the highest head answered VALID.
        self.np_sent = 0
        self.fcu_sent = 0
        self.head_ok = 0
        self.feed_done_at: Optional[float] = None
        self.invalid_hashes: List[Tuple[str, int]] = []  # (hash of an INVALID block, its number)
        self.samples: List[Tuple[float, float, int, int, int]] = []
        self.baseline: Optional[Tuple[float, int, int, int]] = None
        self.slow_stats = defaultdict(int)
        self.peer_stats = defaultdict(int)
        self.node_died = False
        self.t0 = 0.0
        self.deadline = 0.0

    # ---- shared helpers

    def range_now(self) -> int:
        with self.lock:
            return self.head_ok

    def range_high(self) -> int:
        """The highest head the node may show: the node makes a payload that extends its head
        the head at newPayload, before the forkchoiceUpdated naming it (docs/load.md), so
        this is the highest block sent with newPayload."""
        with self.lock:
            return max(self.np_sent, self.fcu_sent)

    def note_ahead(self, number: int) -> None:
        """Count answers whose head is past every forkchoiceUpdated sent so far."""
        with self.lock:
            ahead = number > self.fcu_sent
        if ahead:
            self.stats.note("eth answers with a head past the forkchoice head (newPayload moved it)")

    def timed(self, label: str, kind: str, fn, check) -> None:
        """Run fn(), then check(result) -> '' if right, else why; exceptions are failures."""
        start = time.monotonic()
        try:
            result = fn()
            elapsed = time.monotonic() - start
            why = check(result)
        except (RPCError, TransportError) as err:
            elapsed = time.monotonic() - start
            why = f"{type(err).__name__}: {str(err)[:300]}"
        self.stats.record(label, kind, elapsed, not why, why)

    def running(self) -> bool:
        return not self.stop.is_set() and time.monotonic() < self.deadline

    # ---- the valid feed

    def np_body(self, n: int) -> bytes:
        c = self.chain.calls[n - 1]
        return (
            '{"jsonrpc":"2.0","id":%d,"method":"%s","params":%s}' % (next(Http.ids), c.method, self.chain.params_json[n])
        ).encode()

    def send_payload(self, client: Http, n: int) -> bool:
        c = self.chain.calls[n - 1]
        want = self.chain.hashes[n]

        def check(r):
            if not isinstance(r, dict) or r.get("status") != "VALID":
                return f"block {n}: expected VALID, got {str(r)[:300]}"
            if (r.get("latestValidHash") or "").lower() != want:
                return f"block {n}: latestValidHash {r.get('latestValidHash')} != {want}"
            return ""

        before = self.stats.failure_count
        self.timed(c.method, "valid", lambda: client.call_raw(c.method, self.np_body(n)), check)
        return self.stats.failure_count == before

    def send_fcu(self, client: Http, n: int) -> bool:
        version = self.chain.calls[n - 1].fcu_version if n else self.chain.genesis_fcu
        want = self.chain.hashes[n]
        state = {"headBlockHash": want, "safeBlockHash": want, "finalizedBlockHash": self.chain.hashes[0]}
        method = f"engine_forkchoiceUpdatedV{version}"

        def check(r):
            ps = (r or {}).get("payloadStatus") or {}
            if ps.get("status") != "VALID":
                return f"head {n}: expected VALID, got {str(r)[:300]}"
            if (ps.get("latestValidHash") or "").lower() != want:
                return f"head {n}: latestValidHash {ps.get('latestValidHash')} != {want}"
            if r.get("payloadId") is not None:
                return f"head {n}: payloadId {r.get('payloadId')} without attributes"
            return ""

        with self.lock:
            self.fcu_sent = max(self.fcu_sent, n)
        before = self.stats.failure_count
        self.timed(method, "valid", lambda: client.call(method, [state, None]), check)
        ok = self.stats.failure_count == before
        if ok:
            with self.lock:
                self.head_ok = max(self.head_ok, n)
        return ok

    def feed(self) -> None:
        rng = random.Random(self.args.seed + 1)
        client = Http(self.node.auth_port, self.node.secret, self.args.rpc_timeout)
        n = 1
        while self.running() and n <= self.chain.last:
            if self.args.bad_every and n % self.args.bad_every == 0:
                self.bad_on_head(client, n, rng)
            with self.lock:
                self.np_sent = n
            self.send_payload(client, n)
            self.send_fcu(client, n)
            # Now and then, inside the feed (no other thread moves the head): a forkchoice
            # whose safe block is not on the head's chain must be refused with -38002
            # and leave the head where it is.
            if n % 10 == 0:
                self.fcu_bad_safe(client, n, rng)
            n += 1
        if n > self.chain.last:
            self.feed_done_at = time.monotonic()
            log(f"feed: all {self.chain.last} blocks VALID at +{self.feed_done_at - self.t0:.0f} s; re-sending known payloads")
        # After the end: known payloads again (VALID again) and the head's forkchoice.
        while self.running() and n > self.chain.last:
            k = rng.randint(1, self.chain.last)
            self.send_payload(client, k)
            self.send_fcu(client, self.chain.last)
            if rng.random() < 0.05:
                self.fcu_bad_safe(client, self.chain.last, rng)
            time.sleep(self.args.resend_pause)
        client.close()
        self.stats.note("feed reconnects", client.reconnects)

    def bad_on_head(self, client: Http, n: int, rng: random.Random) -> None:
        """Block n with a wrong state root (hash recomputed) on the head n-1: the node must
        execute it and answer INVALID with latestValidHash n-1; then its child is INVALID
        without execution, and forkchoice to it INVALID. Sent by the feed, so the head is
        known to be n-1."""
        c = self.chain
        root = rng.randbytes(32)
        params, bad = self.crafted(n, lambda h: h.__setitem__(STATE_ROOT, root))
        r = self.np_invalid(client, "invalid:newPayload(wrong stateRoot on the head)", c.calls[n - 1].method, params,
                            ("INVALID",), lvh=c.hashes[n - 1])
        if not r or r.get("status") != "INVALID":
            return
        self.stats.note("wrong stateRoot: " + str(r.get("validationError") or "")[:40])
        with self.lock:
            self.invalid_hashes.append((bad, n))
        if n < c.last:
            child, _ = self.crafted(n + 1, lambda h: h.__setitem__(PARENT_HASH, bytes.fromhex(bad[2:])))
            self.np_invalid(client, "invalid:newPayload(child of invalid)", c.calls[n].method, child,
                            ("INVALID",), lvh=c.hashes[n - 1])
        self.fcu_invalid_head(client, bad, n)

    def fcu_bad_safe(self, client: Http, n: int, rng: random.Random) -> None:
        version = self.chain.calls[n - 1].fcu_version
        head = self.chain.hashes[n]
        state = {"headBlockHash": head, "safeBlockHash": rand_hash(rng), "finalizedBlockHash": self.chain.hashes[0]}

        def fn():
            try:
                r = client.call(f"engine_forkchoiceUpdatedV{version}", [state, None])
                return ("result", r)
            except RPCError as err:
                return ("error", err.code)

        def check(r):
            if r != ("error", -38002):
                return f"safe block not on the chain: expected error -38002, got {r}"
            return ""

        self.timed("invalid:fcu-safe-off-chain", "invalid", fn, check)

    # ---- eth readers

    def reader(self, port: int, secret: Optional[bytes], keepalive: bool, seed: int, suffix: str) -> None:
        rng = random.Random(seed)
        client = Http(port, secret, self.args.rpc_timeout, keepalive=keepalive)
        c = self.chain
        queries = [
            (5, self.q_block_number), (10, self.q_block_by_number), (3, self.q_block_full),
            (3, self.q_latest), (6, self.q_block_by_hash), (2, self.q_unknown_block),
            (6, self.q_fixed_balance), (6, self.q_tracked), (2, self.q_code),
            (2, self.q_storage), (2, self.q_constants),
        ]
        weights = [w for w, _ in queries]
        while self.running():
            q = rng.choices(queries, weights)[0][1]
            q(client, rng, suffix)
            if self.args.pause:
                time.sleep(rng.uniform(0, self.args.pause))
        client.close()
        self.stats.note("reader reconnects", client.reconnects)
        del c

    def q_block_number(self, client, rng, sfx):
        low = self.range_now()

        def check(r):
            got = int(r, 16)
            high = self.range_high()
            self.note_ahead(got)
            return "" if low <= got <= high else f"{got} outside [{low}, {high}]"

        self.timed("eth_blockNumber" + sfx, "valid", lambda: client.call("eth_blockNumber", []), check)

    def check_block(self, r, n: int, full: bool, may_be_null: bool) -> str:
        c = self.chain
        if r is None:
            return "" if may_be_null else f"block {n}: null, but head {self.range_now()} is past it"
        if int(r.get("number", "0x0"), 16) != n:
            return f"block {n}: number {r.get('number')}"
        if (r.get("hash") or "").lower() != c.hashes[n]:
            return f"block {n}: hash {r.get('hash')} != {c.hashes[n]}"
        if n and (r.get("parentHash") or "").lower() != c.hashes[n - 1]:
            return f"block {n}: parentHash {r.get('parentHash')}"
        txs = r.get("transactions") or []
        got = [(t.get("hash") if full else t) or "" for t in txs]
        if [h.lower() for h in got] != c.tx_hashes[n]:
            return f"block {n}: {len(got)} transaction hashes, expected {len(c.tx_hashes[n])} (or different)"
        return ""

    def q_block_by_number(self, client, rng, sfx):
        n = rng.randint(0, self.chain.last)
        low = self.range_now()
        self.timed("eth_getBlockByNumber" + sfx, "valid",
                   lambda: client.call("eth_getBlockByNumber", [hex(n), False]),
                   lambda r: self.check_block(r, n, False, n > low))

    def q_block_full(self, client, rng, sfx):
        n = rng.randint(1, self.chain.last)
        low = self.range_now()
        by_hash = rng.random() < 0.5
        method = "eth_getBlockByHash" if by_hash else "eth_getBlockByNumber"
        arg = self.chain.hashes[n] if by_hash else hex(n)
        self.timed(method + "(full)" + sfx, "valid", lambda: client.call(method, [arg, True]),
                   lambda r: self.check_block(r, n, True, n > low))

    def q_latest(self, client, rng, sfx):
        low = self.range_now()
        tag = rng.choice(["latest", "earliest", "pending"])

        def check(r):
            if not isinstance(r, dict):
                return f"{tag}: {str(r)[:200]}"
            n = int(r.get("number", "0x0"), 16)
            if tag == "earliest":
                return self.check_block(r, 0, False, False) if n == 0 else f"earliest: number {n}"
            high = self.range_high()
            self.note_ahead(n)
            if not low <= n <= high:
                return f"{tag}: number {n} outside [{low}, {high}]"
            return self.check_block(r, n, False, False)

        self.timed(f"eth_getBlockByNumber({tag})" + sfx, "valid",
                   lambda: client.call("eth_getBlockByNumber", [tag, False]), check)

    def q_block_by_hash(self, client, rng, sfx):
        n = rng.randint(0, self.chain.last)
        low = self.range_now()
        self.timed("eth_getBlockByHash" + sfx, "valid",
                   lambda: client.call("eth_getBlockByHash", [self.chain.hashes[n], False]),
                   lambda r: self.check_block(r, n, False, n > low))

    def q_unknown_block(self, client, rng, sfx):
        with self.lock:
            bad = [h for h, _ in self.invalid_hashes[-16:]]
        if bad and rng.random() < 0.5:
            h, label = rng.choice(bad), "eth_getBlockByHash(invalid block)"
        else:
            h, label = rand_hash(rng), "eth_getBlockByHash(unknown)"
        n = self.chain.last + rng.randint(1, 1000)
        if rng.random() < 0.5:
            self.timed(label + sfx, "valid", lambda: client.call("eth_getBlockByHash", [h, False]),
                       lambda r: "" if r is None else f"{h}: expected null, got block {str(r)[:120]}")
        else:
            self.timed("eth_getBlockByNumber(past head)" + sfx, "valid",
                       lambda: client.call("eth_getBlockByNumber", [hex(n), False]),
                       lambda r: "" if r is None else f"{n}: expected null, got {str(r)[:120]}")

    def q_fixed_balance(self, client, rng, sfx):
        a = rng.choice(list(self.chain.fixed_balance))
        if rng.random() < 0.5:
            want = self.chain.fixed_balance[a]
            self.timed("eth_getBalance" + sfx, "valid", lambda: client.call("eth_getBalance", [a, "latest"]),
                       lambda r: "" if int(r, 16) == want else f"{a}: {r} != {hex(want)}")
        else:
            want = self.chain.fixed_nonce[a]
            self.timed("eth_getTransactionCount" + sfx, "valid",
                       lambda: client.call("eth_getTransactionCount", [a, "latest"]),
                       lambda r: "" if int(r, 16) == want else f"{a}: nonce {r} != {hex(want)}")

    def q_tracked(self, client, rng, sfx):
        """An account the chain changes: the answer must be its value at some block the
        head was at during the call."""
        a = rng.choice(self.chain.tracked)
        kind = rng.choice(["balance", "nonce"])
        method = "eth_getBalance" if kind == "balance" else "eth_getTransactionCount"
        low = self.range_now()

        def check(r):
            allowed = self.chain.values_between(a, kind, low, self.range_high())
            return "" if int(r, 16) in allowed else f"{a} {kind} {r} is no value it had between heads {low} and {self.range_high()}"

        self.timed(method + "(changing)" + sfx, "valid", lambda: client.call(method, [a, "latest"]), check)

    def q_code(self, client, rng, sfx):
        a = rng.choice(list(self.chain.fixed_code))
        want = self.chain.fixed_code[a]
        self.timed("eth_getCode" + sfx, "valid", lambda: client.call("eth_getCode", [a, "latest"]),
                   lambda r: "" if (r or "").lower() == want else f"{a}: code differs ({len(r or '')} hex chars, expected {len(want)})")

    def q_storage(self, client, rng, sfx):
        if not self.chain.fixed_storage:
            return self.q_code(client, rng, sfx)
        a, slot, want = rng.choice(self.chain.fixed_storage)
        self.timed("eth_getStorageAt" + sfx, "valid", lambda: client.call("eth_getStorageAt", [a, slot, "latest"]),
                   lambda r: "" if int(r, 16) == want else f"{a}[{slot}]: {r} != {hex(want)}")

    def q_constants(self, client, rng, sfx):
        which = rng.choice(["chainId", "syncing", "net", "web3"])
        cid = self.chain.chain_id
        if which == "chainId":
            self.timed("eth_chainId" + sfx, "valid", lambda: client.call("eth_chainId", []),
                       lambda r: "" if int(r, 16) == cid else f"{r} != {hex(cid)}")
        elif which == "syncing":
            self.timed("eth_syncing" + sfx, "valid", lambda: client.call("eth_syncing", []),
                       lambda r: "" if r is False else f"expected false, got {r}")
        elif which == "net":
            self.timed("net_version" + sfx, "valid", lambda: client.call("net_version", []),
                       lambda r: "" if r == str(cid) else f"{r} != {cid}")
        else:
            self.timed("web3_clientVersion" + sfx, "valid", lambda: client.call("web3_clientVersion", []),
                       lambda r: "" if isinstance(r, str) and r.startswith("ethrex/") else f"{r!r}")

    # ---- invalid Engine API calls

    def crafted(self, n: int, header_edit) -> Tuple[list, str]:
        """Block n's params with its header edited and the block hash recomputed."""
        h = list(self.chain.headers[n])
        header_edit(h)
        new_hash = "0x" + keccak256(rlp.encode(h)).hex()
        params = json.loads(self.chain.params_json[n])
        p0 = params[0]
        p0["stateRoot"] = "0x" + h[STATE_ROOT].hex()
        p0["parentHash"] = "0x" + h[PARENT_HASH].hex()
        p0["blockHash"] = new_hash
        return params, new_hash

    def np_invalid(self, client: Http, label: str, method: str, params: list, allowed: Tuple[str, ...],
                   lvh: Optional[str] = None, error_ok: bool = False) -> Optional[dict]:
        out = {}

        def fn():
            try:
                out["r"] = client.call(method, params)
                return out["r"]
            except RPCError as err:
                out["err"] = err.code
                return {"error": err.code}

        def check(r):
            if "err" in out:
                return "" if error_ok else f"JSON-RPC error {out['err']}, expected status {'/'.join(allowed)}"
            status = (r or {}).get("status")
            if status not in allowed:
                return f"status {status}, expected {'/'.join(allowed)}: {str(r)[:300]}"
            if lvh is not None and (r.get("latestValidHash") or "").lower() != lvh:
                return f"latestValidHash {r.get('latestValidHash')}, expected the last valid ancestor {lvh}"
            return ""

        self.timed(label, "invalid", fn, check)
        return out.get("r")

    def invalid_engine(self) -> None:
        rng = random.Random(self.args.seed + 2)
        client = Http(self.node.auth_port, self.node.secret, self.args.rpc_timeout)
        c = self.chain
        while self.running():
            with self.lock:
                known = self.np_sent  # blocks up to here were sent; their parents are known
            step = rng.randrange(9)
            n = rng.randint(1, max(1, min(known, c.last)))
            if step == 0:
                # A wrong block hash: refused before execution.
                params = json.loads(c.params_json[n])
                params[0]["blockHash"] = rand_hash(rng)
                self.np_invalid(client, "invalid:newPayload(wrong blockHash)", c.calls[n - 1].method, params,
                                ("INVALID", "INVALID_BLOCK_HASH"))
            elif step == 1:
                # A wrong state root (hash recomputed) on a parent that is not the head: a
                # side-chain block the node may keep unexecuted (ACCEPTED, bounded cache)
                # or execute (INVALID); never VALID.
                root = rng.randbytes(32)
                params, _ = self.crafted(n, lambda h: h.__setitem__(STATE_ROOT, root))
                self.np_invalid(client, "invalid:newPayload(wrong stateRoot, side chain)", c.calls[n - 1].method,
                                params, ("ACCEPTED", "INVALID"))
            elif step == 2:
                # An unknown parent: SYNCING (kept in the bounded pending cache).
                parent = rng.randbytes(32)
                params, _ = self.crafted(n, lambda h: h.__setitem__(PARENT_HASH, parent))
                self.np_invalid(client, "invalid:newPayload(unknown parent)", c.calls[n - 1].method, params,
                                ("SYNCING",))
            elif step == 3:
                with self.lock:
                    bad = list(self.invalid_hashes[-8:])
                if not bad:
                    continue
                bad_hash, bn = rng.choice(bad)
                if bn < c.last and rng.random() < 0.5:
                    # A child of a known-invalid block: INVALID without execution.
                    params, _ = self.crafted(bn + 1, lambda h: h.__setitem__(PARENT_HASH, bytes.fromhex(bad_hash[2:])))
                    self.np_invalid(client, "invalid:newPayload(child of invalid)", c.calls[bn].method, params,
                                    ("INVALID",), lvh=c.hashes[bn - 1])
                else:
                    self.fcu_invalid_head(client, bad_hash, bn)
            elif step == 4:
                # The payload under an older method version: unsupported fork.
                method = "engine_newPayloadV4" if c.calls[n - 1].method == "engine_newPayloadV5" else "engine_newPayloadV3"
                params = json.loads(c.params_json[n])
                self.expect_error(client, "invalid:newPayload(wrong version)", method, params[: 4 if method.endswith("V4") else 3])
            elif step == 5:
                bad_params = rng.choice([[], ["0x"], [{}], [None, None, None, None], [{"blockHash": 5}], "x"])
                self.expect_error(client, "invalid:newPayload(bad params)", c.calls[n - 1].method, bad_params)
            elif step == 6:
                # A block that is not even a block: a huge bogus transaction or extraData.
                params = json.loads(c.params_json[n])
                if rng.random() < 0.5:
                    params[0]["extraData"] = "0x" + "ab" * rng.randint(33, 4096)
                else:
                    params[0]["transactions"] = ["0x02" + rng.randbytes(rng.randint(1, 2048)).hex()]
                self.np_invalid(client, "invalid:newPayload(garbage block)", c.calls[n - 1].method, params,
                                ("INVALID", "INVALID_BLOCK_HASH"), error_ok=True)
            elif step == 7:
                self.expect_error(client, "invalid:engine(unknown method)", "engine_newPayloadV9", [])
            else:
                self.timed("engine_exchangeCapabilities", "valid",
                           lambda: client.call("engine_exchangeCapabilities", [["engine_newPayloadV5"]]),
                           lambda r: "" if isinstance(r, list) and "engine_newPayloadV5" in r else f"{r}")
            time.sleep(self.args.pause)
        client.close()

    def fcu_invalid_head(self, client: Http, bad_hash: str, bn: int) -> None:
        version = self.chain.calls[bn - 1].fcu_version
        state = {"headBlockHash": bad_hash, "safeBlockHash": bad_hash, "finalizedBlockHash": self.chain.hashes[0]}

        def check(r):
            status = ((r or {}).get("payloadStatus") or {}).get("status")
            return "" if status == "INVALID" else f"head {bad_hash}: expected INVALID, got {str(r)[:300]}"

        self.timed("invalid:forkchoiceUpdated(invalid head)", "invalid",
                   lambda: client.call(f"engine_forkchoiceUpdatedV{version}", [state, None]), check)

    def expect_error(self, client: Http, label: str, method: str, params, codes: Optional[Tuple[int, ...]] = None) -> None:
        def fn():
            try:
                return ("result", client.call(method, params))
            except RPCError as err:
                return ("error", err.code)

        def check(r):
            if r[0] != "error":
                return f"expected a JSON-RPC error, got result {str(r[1])[:200]}"
            if codes and r[1] not in codes:
                return f"error code {r[1]}, expected one of {codes}"
            self.stats.note(f"{label} error code {r[1]}")
            return ""

        self.timed(label, "invalid", fn, check)

    # ---- invalid JSON, bad JWTs, other verbs

    def refused(self, label: str, client: Http, body: bytes, headers=None, auth=True, want=None, verb="POST") -> None:
        """The request must get an HTTP error status or a JSON-RPC error (never a result).
        `want`: the exact HTTP status required."""
        def fn():
            try:
                return client.post(body, headers=headers, auth=auth, method=verb)
            except (OSError, http.client.HTTPException) as err:
                return (None, f"{type(err).__name__}".encode())

        def check(r):
            status, raw = r
            if want is not None:
                return "" if status == want else f"HTTP {status}, expected {want}: {raw[:120]!r}"
            if status is None:
                return f"no answer ({raw.decode()})"
            if status >= 400:
                self.stats.note(f"{label}: HTTP {status}")
                return ""
            try:
                reply = json.loads(raw)
            except ValueError:
                return f"HTTP {status} with a non-JSON body {raw[:120]!r}"
            replies = reply if isinstance(reply, list) else [reply]
            if replies and all(isinstance(x, dict) and x.get("error") is not None and "result" not in x for x in replies):
                self.stats.note(f"{label}: code {replies[0]['error'].get('code')}")
                return ""
            return f"HTTP {status} with a result: {raw[:200]!r}"

        self.timed(label, "invalid", fn, check)

    def invalid_misc(self) -> None:
        rng = random.Random(self.args.seed + 3)
        auth = Http(self.node.auth_port, self.node.secret, self.args.rpc_timeout)
        pub = Http(self.node.http_port, None, self.args.rpc_timeout)
        wrong = jwt.new_secret()
        while self.running():
            step = rng.randrange(12)
            target = rng.choice([("auth", auth), ("http", pub)])
            name, client = target
            if step == 0:
                body = rng.choice([
                    b'{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"',
                    b"{" * 1000, b"[]", b"null", b"\x00\xff" * 64, rng.randbytes(rng.randint(1, 4096)),
                    b'{"jsonrpc":"2.0","id":1,"method":5,"params":[]}',
                ])
                self.refused(f"invalid:garbage JSON@{name}", client, body)
            elif step == 1:
                self.refused(f"invalid:unknown method@{name}", client,
                             b'{"jsonrpc":"2.0","id":1,"method":"eth_doesNotExist","params":[]}')
            elif step == 2:
                method, params = rng.choice([
                    ("eth_getBlockByNumber", ["0xzz", False]), ("eth_getBalance", ["0x12", "latest"]),
                    ("eth_getBlockByHash", ["0x1234", False]), ("eth_getStorageAt", [None]),
                    ("eth_getBlockByNumber", {"a": 1}),
                ])
                body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
                self.refused(f"invalid:wrong params@{name}", client, body)
            elif step in (3, 4, 5):
                # Bad JWTs on the Engine API port: always 401.
                now = int(time.time())
                kind = rng.choice(["wrong secret", "expired iat", "future iat", "no header", "garbage token", "alg none"])
                headers, use_auth = None, False
                if kind == "wrong secret":
                    headers = {"Authorization": "Bearer " + jwt.make_token(wrong)}
                elif kind == "expired iat":
                    headers = {"Authorization": "Bearer " + jwt.make_token(self.node.secret, now - 120)}
                elif kind == "future iat":
                    headers = {"Authorization": "Bearer " + jwt.make_token(self.node.secret, now + 120)}
                elif kind == "garbage token":
                    headers = {"Authorization": "Bearer " + rng.randbytes(40).hex()}
                elif kind == "alg none":
                    token = jwt.b64url(b'{"alg":"none","typ":"JWT"}') + "." + jwt.b64url(b'{"iat":%d}' % now) + "."
                    headers = {"Authorization": "Bearer " + token}
                body = b'{"jsonrpc":"2.0","id":1,"method":"engine_exchangeCapabilities","params":[[]]}'
                self.refused(f"invalid:bad JWT ({kind})", auth, body, headers=headers, auth=use_auth, want=401)
            elif step == 6:
                verb = rng.choice(["GET", "PUT", "DELETE"])
                self.refused(f"invalid:HTTP {verb}@{name}", client, b"", verb=verb)
            elif step == 7:
                self.refused(f"invalid:wrong content type@{name}", client,
                             b'{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
                             headers={"Content-Type": "text/plain"})
            elif step == 8:
                self.batch(client, name)
            else:
                self.refused(f"invalid:no method@{name}", client, b'{"jsonrpc":"2.0","id":1,"params":[]}')
            time.sleep(self.args.pause)
        auth.close()
        pub.close()

    def batch(self, client: Http, name: str) -> None:
        """A batch of two valid calls and an unknown method: each answered in its own right."""
        body = json.dumps([
            {"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []},
            {"jsonrpc": "2.0", "id": 2, "method": "eth_nope", "params": []},
            {"jsonrpc": "2.0", "id": 3, "method": "eth_getBlockByNumber", "params": ["0x0", False]},
        ]).encode()

        def fn():
            status, raw = client.post(body)
            return status, raw

        def check(r):
            status, raw = r
            try:
                replies = {x.get("id"): x for x in json.loads(raw)}
            except (ValueError, AttributeError, TypeError):
                return f"HTTP {status}: not a batch answer {raw[:200]!r}"
            one, two, three = replies.get(1) or {}, replies.get(2) or {}, replies.get(3) or {}
            if int(one.get("result") or "0x0", 16) != self.chain.chain_id:
                return f"eth_chainId in a batch: {one}"
            if two.get("error") is None:
                return f"eth_nope in a batch: {two}"
            if ((three.get("result") or {}).get("hash") or "").lower() != self.chain.hashes[0]:
                return f"genesis in a batch: {str(three)[:200]}"
            return ""

        def fn_safe():
            try:
                return fn()
            except (OSError, http.client.HTTPException) as err:
                raise TransportError(f"batch: {err}") from None

        self.timed(f"batch (2 valid + 1 unknown)@{name}", "valid", fn_safe, check)

    # ---- hostile RPC: requests that try to hold or break the node

    def hostile(self, index: int) -> None:
        """Requests past the node's limits (docs/rpc.md, "Limits") and calls that would run
        forever, in a loop on the HTTP port (a share on the Engine API port, which serves
        the same methods behind the JWT). Each must get the expected error, or a correct
        bounded answer, within its bound, on a connection of its own (so a dropped
        connection is never retried away). Once per port, the filter table is filled to
        its limit and emptied again. Paced to be busy --hostile-duty of the time."""
        args = self.args
        rng = random.Random(args.seed + 200 + index)
        clients = {
            "": Http(self.node.http_port, None, args.hostile_timeout, keepalive=False),
            "@auth": Http(self.node.auth_port, self.node.secret, args.hostile_timeout, keepalive=False),
        }
        steps = [
            (3, self.h_batch), (3, self.h_logs), (8, self.h_loop), (2, self.h_deep_trace),
            (4, self.h_block_tags), (5, self.h_bad_params),
        ]
        # Deep traces take seconds of a core (on two, the import's) and mostly end `head
        # moved` while blocks are imported: only once the feed is done (its re-sends and
        # forkchoices go on beside them).
        importing = [w if f != self.h_deep_trace else 0 for w, f in steps]
        steady = [w for w, _ in steps]
        # The flood costs the node seconds of a core (each install looks at every filter):
        # after the feed, if 15 s remain (in a --quick run, often not).
        flood_at = self.t0 + args.seconds * 0.3
        # The filter tables are per port and shared: one thread fills them.
        flooded = set() if index == 0 else {"", "@auth"}
        while self.running():
            sfx = "@auth" if rng.random() < args.hostile_auth_share else ""
            client = clients[sfx]
            started = time.monotonic()
            if sfx not in flooded and self.feed_done_at and time.monotonic() >= flood_at \
                    and time.monotonic() + 15 < self.deadline:
                flooded.add(sfx)
                self.h_filter_flood(client, sfx)
            else:
                rng.choices(steps, steady if self.feed_done_at else importing)[0][1](client, rng, sfx)
            # Busy at most --hostile-duty of the time: most of these requests keep a core
            # busy for as long as they take, and the import must keep the rest.
            took = time.monotonic() - started
            self.stop.wait(max(rng.uniform(0, args.pause), took * (1 - args.hostile_duty) / args.hostile_duty))
        for client in clients.values():
            client.close()

    def h_request(self, client: Http, label: str, request, check, bound: float = 30.0) -> Optional[object]:
        """One hostile request (a call or a batch): `check(reply)` -> (why, outcome class),
        why '' when the answer is the expected one. Also a failure: no answer within the
        client's wait, a dropped connection, an HTTP status other than 200, a body that is
        not JSON, an expected answer slower than `bound` s. Returns the reply if it was
        the expected one."""
        body = request if isinstance(request, bytes) else json.dumps(request).encode()
        start = time.monotonic()
        why, cls, reply = "", "", None
        try:
            status, raw = client.post(body)
        except TimeoutError:
            why = f"no answer within the client's wait of {client.timeout:.0f} s"
        except (OSError, http.client.HTTPException) as err:
            why = f"connection dropped: {type(err).__name__}: {err}"
        elapsed = time.monotonic() - start
        if not why:
            if status != 200:
                why = f"HTTP {status}{' (server error)' if status >= 500 else ''}: {raw[:200]!r}"
            else:
                try:
                    reply = json.loads(raw)
                except ValueError:
                    why = f"HTTP 200 with a body that is not JSON: {raw[:200]!r}"
                else:
                    try:
                        why, cls = check(reply)
                    except (AttributeError, KeyError, TypeError, ValueError, IndexError) as err:
                        why = f"answer of the wrong shape ({type(err).__name__}: {err}): {short(reply)}"
            del raw
        if not why and elapsed > bound:
            why = f"answered ({cls}) after {elapsed:.1f} s, over the bound of {bound:.0f} s"
        self.stats.record(label, "hostile", elapsed, not why, why)
        if why:
            return None
        self.stats.outcome(label, cls)
        return reply

    def h_call(self, client: Http, label: str, method: str, params, check, bound: float = 30.0):
        return self.h_request(client, label, {"jsonrpc": "2.0", "id": next(Http.ids), "method": method, "params": params},
                              check, bound)

    def h_batch(self, client: Http, rng: random.Random, sfx: str) -> None:
        """1,001 calls in a batch: one error (-32010), none of them run (so 1,001 endless
        calls are refused at once); exactly 1,000: 1,000 answers."""
        cid = self.chain.chain_id
        kind = rng.randrange(4)
        if kind == 3:
            # Within the limit, each call endless: each answered `out of gas` (the batch
            # limit bounds the calls, not their work: ~0.1 s of EVM each).
            calls = []
            for i in range(1, 21):
                call, over = loop_call(rng)
                calls.append({"jsonrpc": "2.0", "id": i, "method": "eth_call", "params": [call, "latest", over]})
            check_each = expect_error((-32000,), "out of gas", "execution aborted (timeout = 5s)")

            def check(reply):
                if not isinstance(reply, list) or sorted(r["id"] for r in reply) != list(range(1, 21)):
                    return f"a batch of 20: expected 20 answers, got {short(reply)}", ""
                for r in reply:
                    why, _ = check_each(r)
                    if why:
                        return f"a batch of 20 endless calls: {why}", ""
                return "", "20 errors out of gas"

            self.h_request(client, "hostile:batch of 20 endless eth_call" + sfx, calls, check)
            return
        if kind == 0:
            calls = [{"jsonrpc": "2.0", "id": i, "method": "eth_chainId", "params": []} for i in range(1, 1001)]

            def check(reply):
                if not isinstance(reply, list) or len(reply) != 1000:
                    return f"a batch of 1,000: expected 1,000 answers, got {short(reply)}", ""
                ids = sorted(r["id"] for r in reply if int(r.get("result") or "0x0", 16) == cid)
                if ids != list(range(1, 1001)):
                    return f"a batch of 1,000: {len(ids)} right answers, e.g. {short(reply[:3])}", ""
                return "", "1,000 answers"

            self.h_request(client, "hostile:batch of 1,000 eth_chainId" + sfx, calls, check)
            return
        if kind == 1:
            label = "hostile:batch of 1,001 eth_chainId"
            calls = [{"jsonrpc": "2.0", "id": i, "method": "eth_chainId", "params": []} for i in range(1, 1002)]
        else:
            label = "hostile:batch of 1,001 endless eth_call"
            calls = []
            for i in range(1, 1002):
                call, over = loop_call(rng)
                calls.append({"jsonrpc": "2.0", "id": i, "method": "eth_call", "params": [call, "latest", over]})

        def check_big(reply):
            if not isinstance(reply, dict) or "result" in reply:
                return f"expected one error object, got {short(reply)}", ""
            code = (reply.get("error") or {}).get("code")
            if code != -32010 or reply.get("id") is not None:
                return f"expected error -32010 with id null, got {short(reply)}", ""
            return "", "error -32010"

        self.h_request(client, label + sfx, calls, check_big, bound=10.0)

    def h_logs(self, client: Http, rng: random.Random, sfx: str) -> None:
        c = self.chain
        head = self.range_now()
        kind = rng.randrange(6)
        past_head = "block range extends beyond current head block"
        if kind == 0:
            filt = {"fromBlock": "0x0", "toBlock": hex(c.last + rng.randint(10 ** 6, 10 ** 12))}
            label, check = "hostile:eth_getLogs(0 to far past the head)", expect_error((-32602,), past_head)
        elif kind == 1:
            # Over 100,000 blocks: on a chain this short such a range also passes the head,
            # and geth's range-past-head error is checked first (eth/logs.rs).
            low = rng.randint(0, head)
            filt = {"fromBlock": hex(low), "toBlock": hex(low + 100_000 + rng.randint(0, 10 ** 6))}
            label, check = "hostile:eth_getLogs(over 100,000 blocks)", expect_error((-32602, -32005), past_head, "exceeds the limit")
        elif kind == 2 and head >= 1:
            filt = {"fromBlock": hex(head), "toBlock": "0x0"}
            label, check = "hostile:eth_getLogs(reversed range)", expect_error((-32602,), "invalid block range params")
        elif kind == 3:
            filt = {"blockHash": rand_hash(rng)}
            label, check = "hostile:eth_getLogs(unknown blockHash)", expect_error((-32000,), "unknown block")
        else:
            filt = {"fromBlock": "earliest", "toBlock": "latest"}
            label = "hostile:eth_getLogs(whole chain, no filter)"

            def check(reply):
                err = rpc_error(reply)
                if err is not None:
                    if err[0] == -32005 and "more than 10000 results" in err[1]:
                        return "", "error -32005 more than 10000 results"
                    return f"expected logs or -32005, got error {err}", ""
                logs = reply["result"]
                if not isinstance(logs, list) or len(logs) > 10_000:
                    return f"expected at most 10,000 logs, got {short(logs)}", ""
                if not logs:
                    return "", "result (no logs)"
                high, last = self.range_high(), -1
                for i in sorted({0, len(logs) - 1} | set(rng.sample(range(len(logs)), min(64, len(logs))))):
                    n = int(logs[i]["blockNumber"], 16)
                    if n < last or n > high or c.hashes[n] != logs[i]["blockHash"].lower():
                        return f"log {i}: block {n} {logs[i].get('blockHash')} (head at most {high})", ""
                    last = n
                return "", "result"

        self.h_call(client, label + sfx, "eth_getLogs", [filt], check, bound=60.0)

    def h_loop(self, client: Http, rng: random.Random, sfx: str) -> None:
        """Calls whose code loops until its gas or time runs out (JUMPDEST PUSH1 0 JUMP)."""
        call, over = loop_call(rng)
        kind = rng.randrange(10)
        timeout = "execution aborted (timeout = 5s)"
        if kind in (0, 1):
            if kind == 1:
                call["gas"] = hex(10 ** 12)  # far over the gas cap: clamped to it
            self.h_call(client, f"hostile:eth_call(endless{', huge gas' if kind else ''})" + sfx, "eth_call",
                        [call, "latest", over], expect_error((-32000,), "out of gas", timeout))
        elif kind == 2:
            self.h_call(client, "hostile:eth_estimateGas(endless)" + sfx, "eth_estimateGas", [call, "latest", over],
                        expect_error((-32000,), "gas required exceeds allowance", timeout))
        elif kind == 3:
            # No state overrides in eth_createAccessList: a creation whose init code loops.
            create = {"from": call["from"], "data": LOOP_CODE}
            self.h_call(client, "hostile:eth_createAccessList(endless creation)" + sfx, "eth_createAccessList",
                        [create, "latest"], expect_error((-32000,), "gas required exceeds allowance", timeout))
        elif kind == 4:
            create = {"from": call["from"], "data": LOOP_CODE, "gas": hex(50_000_000)}

            def check(reply):
                err = rpc_error(reply)
                if err is not None:
                    return expect_error((-32000,), timeout, "did not settle")(reply)
                r = reply["result"]
                if not isinstance(r.get("accessList"), list) or not str(r.get("error", "")).startswith("out of gas"):
                    return f"expected an access list with error 'out of gas', got {short(r)}", ""
                return "", "result, error out of gas"

            self.h_call(client, "hostile:eth_createAccessList(endless creation, 50M gas)" + sfx, "eth_createAccessList",
                        [create, "latest"], check)
        elif kind in (5, 6):
            opts = {"tracer": "callTracer", "stateOverrides": over}

            def check(reply):
                err = rpc_error(reply)
                if err is not None:
                    return expect_error((-32000,), "execution timeout")(reply)
                frame = reply["result"]
                if frame.get("to", "").lower() != call["to"] or not str(frame.get("error", "")).startswith("out of gas"):
                    return f"expected a call frame to {call['to']} with error 'out of gas', got {short(frame)}", ""
                return "", "result, top frame out of gas"

            self.h_call(client, "hostile:debug_traceCall(endless, callTracer)" + sfx, "debug_traceCall",
                        [call, "latest", opts], check)
        elif kind == 7:
            if rng.random() < 0.5:
                opts = {"timeout": "10ms", "stateOverrides": over}
                self.h_call(client, "hostile:debug_traceCall(endless, struct logger, 10ms)" + sfx, "debug_traceCall",
                            [call, "latest", opts], expect_error((-32000,), "execution timeout"))
                return
            # The struct logger over the endless code with 1M gas (~260k steps, a 24 MB
            # answer): every gas unit used, failed. With the whole cap (50M) it records
            # ~3 GB of steps before its 5 s timeout, so that one is --hostile-unbounded's.
            unbounded = self.args.hostile_unbounded and rng.random() < 0.5
            gas = 50_000_000 if unbounded else 1 << 20
            if not unbounded:
                call["gas"] = hex(gas)

            def check(reply):
                err = rpc_error(reply)
                if err is not None:
                    return expect_error((-32000, -32008), "execution timeout", TOO_LARGE, "Response is too big")(reply)
                r = reply["result"]
                if r.get("failed") is not True or r.get("gas") != gas or not r.get("structLogs"):
                    return f"expected a failed trace using {gas} gas, got {short(r)}", ""
                return "", "result, failed (out of gas)"

            self.h_call(client, f"hostile:debug_traceCall(endless, struct logger, {'50M' if unbounded else '1M'} gas)" + sfx,
                        "debug_traceCall", [call, "latest", {"stateOverrides": over}], check,
                        bound=self.args.hostile_timeout)
        elif kind == 8:
            tracer = rng.choice(["noopTracer", "4byteTracer"])
            opts = {"tracer": tracer, "stateOverrides": over}

            def check(reply):
                err = rpc_error(reply)
                if err is not None:
                    return expect_error((-32000,), "execution timeout")(reply)
                return ("", "result {}") if reply["result"] == {} else (f"expected {{}}, got {short(reply)}", "")

            self.h_call(client, f"hostile:debug_traceCall(endless, {tracer})" + sfx, "debug_traceCall",
                        [call, "latest", opts], check)
        else:
            # One endless call with the whole cap, or five with 10M each (the cap in all).
            many = rng.random() < 0.5
            calls = [dict(call, gas=hex(10_000_000)) for _ in range(5)] if many else [call]
            blocks = [{"stateOverrides": over, "calls": calls}]

            def check(reply):
                err = rpc_error(reply)
                if err is not None:
                    return expect_error((-32603,), timeout)(reply)
                result = reply["result"]
                if not isinstance(result, list) or len(result) != 1 or len(result[0]["calls"]) != len(calls):
                    return f"expected 1 block of {len(calls)} calls, got {short(result)}", ""
                for r in result[0]["calls"]:
                    e = r.get("error") or {}
                    if r.get("status") != "0x0" or e.get("code") != -32015 or not str(e.get("message")).startswith("out of gas"):
                        return f"expected each call failed with -32015 out of gas, got {short(r)}", ""
                return "", "result, calls out of gas (-32015)"

            self.h_call(client, f"hostile:eth_simulateV1(endless x{len(calls)})" + sfx, "eth_simulateV1",
                        [{"blockStateCalls": blocks}, "latest"], check)

    def h_deep_trace(self, client: Http, rng: random.Random, sfx: str) -> None:
        """The struct logger (the default, the most expensive tracer) over the chain's
        heaviest transactions and blocks: a trace, `execution timeout` (per transaction),
        or the response limit's error; never a hang or a dropped connection."""
        c = self.chain
        head = self.range_now()
        txs = [(n, h) for n, h, _ in c.heavy_txs if n <= head]
        blocks = [n for n in c.heavy_blocks if n <= head]
        memory = rng.random() < 0.5
        opts = {"enableMemory": True} if memory else {}
        what = "struct logger" + (", memory" if memory else "")
        too_big = "Response is too big"
        if txs and rng.random() < 0.6:
            n, h = rng.choice(txs)

            def check(reply):
                err = rpc_error(reply)
                if err is not None:
                    return expect_error((-32000, -32008), "execution timeout", TOO_LARGE, too_big)(reply)
                r = reply["result"]
                if not isinstance(r.get("structLogs"), list) or not isinstance(r.get("gas"), int) or "failed" not in r:
                    return f"not a struct log trace: {short(r)}", ""
                return "", "result"

            self.h_call(client, f"hostile:debug_traceTransaction(heavy, {what})" + sfx, "debug_traceTransaction",
                        [h, opts], check, bound=self.args.hostile_timeout)
        elif blocks:
            n = rng.choice(blocks)

            def check(reply):
                err = rpc_error(reply)
                if err is not None:
                    return expect_error((-32000, -32008), TOO_LARGE, too_big)(reply)
                entries = reply["result"]
                if not isinstance(entries, list) or [e.get("txHash", "").lower() for e in entries] != c.tx_hashes[n]:
                    return f"block {n}: expected one entry per transaction ({len(c.tx_hashes[n])}), got {short(entries)}", ""
                timeouts = 0
                for e in entries:
                    if "result" in e and isinstance(e["result"].get("structLogs"), list):
                        continue
                    if e.get("error") == "execution timeout":
                        timeouts += 1
                        continue
                    return f"block {n}: entry {short(e)}", ""
                self.stats.note(f"hostile deep block traces: transactions timed out", timeouts)
                return "", "result" if not timeouts else "result with execution timeout entries"

            self.h_call(client, f"hostile:debug_traceBlockByNumber(heavy, {what})" + sfx, "debug_traceBlockByNumber",
                        [hex(n), opts], check, bound=self.args.hostile_timeout)

    def h_block_tags(self, client: Http, rng: random.Random, sfx: str) -> None:
        c = self.chain
        a = rng.choice(list(c.fixed_balance))
        past = hex(c.last + rng.randint(1000, 10 ** 9))
        unknown = {"blockHash": rand_hash(rng)}
        not_found = expect_error((-32000,), "header not found")
        bad = expect_error((-32602,))
        cases = [
            ("eth_getBalance(pending-ish)", "eth_getBalance", [a, "pending-ish"], bad),
            ("eth_getBalance(0xzz)", "eth_getBalance", [a, "0xzz"], bad),
            ("eth_getBlockByNumber(pending-ish)", "eth_getBlockByNumber", ["pending-ish", False], bad),
            ("eth_call(0xzz)", "eth_call", [{"to": a}, "0xzz"], bad),
            ("eth_getBalance(past the head)", "eth_getBalance", [a, past], not_found),
            ("eth_getCode(past the head)", "eth_getCode", [a, past], not_found),
            ("eth_call(past the head)", "eth_call", [{"to": a}, past], not_found),
            ("eth_feeHistory(past the head)", "eth_feeHistory", ["0x4", past, []], not_found),
            ("debug_traceBlockByNumber(past the head)", "debug_traceBlockByNumber", [past],
             expect_error((-32000,), "not found")),
            ("eth_getBalance(unknown blockHash)", "eth_getBalance", [a, unknown], not_found),
            ("eth_getTransactionCount(unknown blockHash)", "eth_getTransactionCount", [a, unknown], not_found),
            ("eth_call(unknown blockHash)", "eth_call", [{"to": a}, unknown], not_found),
            ("eth_getBalance(unknown blockHash, requireCanonical)", "eth_getBalance",
             [a, dict(unknown, requireCanonical=True)], expect_error((-32602,), "not currently canonical")),
            ("eth_getBlockByNumber(blockHash object)", "eth_getBlockByNumber", [unknown, False], bad),
        ]
        label, method, params, check = rng.choice(cases)
        self.h_call(client, "hostile:" + label + sfx, method, params, check)

    def h_bad_params(self, client: Http, rng: random.Random, sfx: str) -> None:
        c = self.chain
        a = rng.choice(list(c.fixed_balance))
        unknown_id = "0x" + (rng.randbytes(8)[0] | 0x80).to_bytes(1, "big").hex() + rng.randbytes(7).hex()
        bad = expect_error((-32602,))
        kind = rng.randrange(15)
        if kind == 0:
            method = "eth_" + rng.choice(["doesNotExist", "sign", "signTransaction", "mining", "hashrate", "submitWork"])
            self.h_call(client, "hostile:unknown eth_ method" + sfx, method, [], expect_error((-32601,)))
        elif kind == 1:
            # Not served (engine_newPayloadV1: no pre-Shanghai payloads, on either port).
            method = rng.choice(["debug_setHead", "admin_stopRPC", "miner_start", "personal_unlockAccount", "engine_newPayloadV1"])
            self.h_call(client, "hostile:unknown method" + sfx, method, ["0x0"], expect_error((-32601,)))
        elif kind == 2:
            self.h_call(client, "hostile:eth_getProof(33-byte slot)" + sfx, "eth_getProof",
                        [a, ["0x" + "11" * 33], "latest"], expect_error((-32602,), "storage key too long"))
        elif kind == 3:
            self.h_call(client, "hostile:eth_getProof(1,025 slots)" + sfx, "eth_getProof",
                        [a, [hex(i) for i in range(1025)], "latest"], expect_error((-32602,), "too many slots"))
        elif kind == 4:
            self.h_call(client, "hostile:eth_getStorageValues(1,025 slots)" + sfx, "eth_getStorageValues",
                        [{a: ["0x" + "00" * 31 + "%02x" % (i % 256) for i in range(1025)]}, "latest"],
                        expect_error((-32602,), "too many slots"))
        elif kind == 5:
            percentiles = rng.choice([[50, 10], [10, 90, 50], [101], [-1]])
            self.h_call(client, "hostile:eth_feeHistory(bad percentiles)" + sfx, "eth_feeHistory",
                        ["0x5", "latest", percentiles], expect_error((-32602,), "invalid reward percentile"))
        elif kind == 6:
            low = self.range_now()

            def check(reply):
                r = reply["result"]
                oldest, ratios = int(r["oldestBlock"], 16), r["gasUsedRatio"]
                newest = oldest + len(ratios) - 1
                if oldest != 0 or not low <= newest <= self.range_high() or len(ratios) > 1024:
                    return f"{len(ratios)} blocks from {oldest} (head between {low} and {self.range_high()})", ""
                if len(r["baseFeePerGas"]) != len(ratios) + 1 or len(r["reward"]) != len(ratios) \
                        or any(len(x) != 3 for x in r["reward"]):
                    return f"fee history of the wrong shape: {short(r)}", ""
                return "", "result (bounded)"

            self.h_call(client, "hostile:eth_feeHistory(2^40 blocks)" + sfx, "eth_feeHistory",
                        [hex(1 << 40), "latest", [10, 50, 90]], check)
        elif kind == 7:
            filt = rng.choice([{"address": "0x1234"}, {"address": ["0x" + "ab" * 21]}, {"topics": [[], [], [], [], []]},
                               {"topics": ["0x12"]}, {"fromBlock": "0xzz"}])
            self.h_call(client, "hostile:eth_newFilter(bad filter)" + sfx, "eth_newFilter", [filt], bad)
        elif kind == 8:
            method = rng.choice(["eth_getFilterChanges", "eth_getFilterLogs"])
            self.h_call(client, f"hostile:{method}(unknown id)" + sfx, method, [unknown_id],
                        expect_error((-32000,), "filter not found"))
        elif kind == 9:
            self.h_call(client, "hostile:eth_uninstallFilter(unknown id)" + sfx, "eth_uninstallFilter", [unknown_id],
                        lambda r: ("", "result false") if r.get("result") is False else (f"expected false: {short(r)}", ""))
        elif kind == 10:
            check = expect_error((-32601,), "notifications not supported")

            self.h_call(client, "hostile:eth_subscribe over HTTP" + sfx, "eth_subscribe",
                        [rng.choice(["newHeads", "logs", "newPendingTransactions", "syncing"])], check)
        elif kind == 11:
            self.h_pending_filter(client, rng, sfx)
        elif kind == 12:
            # (Extra params after the block are ignored, not refused as geth does: not sent.)
            params = rng.choice([[{"to": a}], ["0x12", "latest"], ["0x" + "ab" * 21, "latest"], [a, 7]])
            self.h_call(client, "hostile:eth_getBalance(wrong params)" + sfx, "eth_getBalance", params, bad)
        elif kind == 13:
            self.h_call(client, "hostile:eth_getBlockByNumber(params an object)" + sfx, "eth_getBlockByNumber",
                        {"block": "latest"}, bad)
        else:
            self.h_call(client, "hostile:debug_traceTransaction(unknown tx)" + sfx, "debug_traceTransaction",
                        [rand_hash(rng)], expect_error((-32000,), "transaction not found"))

    def h_pending_filter(self, client: Http, rng: random.Random, sfx: str) -> None:
        """eth_newPendingTransactionFilter: an id; polled: the hashes admitted since (none
        here: nobody sends transactions), with `true` the transactions; uninstalled: true."""
        full = rng.random() < 0.5
        reply = self.h_call(client, "hostile:eth_newPendingTransactionFilter" + sfx, "eth_newPendingTransactionFilter",
                            [True] if full else [],
                            lambda r: ("", "result id") if int(r["result"], 16) > 0 else (f"not an id: {short(r)}", ""))
        if reply is None:
            return
        fid = reply["result"]
        self.h_call(client, "hostile:eth_getFilterChanges(pending filter)" + sfx, "eth_getFilterChanges", [fid],
                    lambda r: ("", "result []") if r.get("result") == [] else (f"expected [] (no transactions sent): {short(r)}", ""))
        self.h_call(client, "hostile:eth_uninstallFilter(pending filter)" + sfx, "eth_uninstallFilter", [fid],
                    lambda r: ("", "result true") if r.get("result") is True else (f"expected true: {short(r)}", ""))

    def h_filter_flood(self, client: Http, sfx: str) -> None:
        """10,000 block filters (the limit) in batches of 1,000; one more: -32005; then
        every one uninstalled (true)."""
        ids: List[str] = []

        def installed(reply):
            if not isinstance(reply, list) or len(reply) != 1000:
                return f"expected 1,000 answers, got {short(reply)}", ""
            got = [r["result"] for r in reply if isinstance(r.get("result"), str)]
            if len(got) != 1000:
                return f"{1000 - len(got)} of 1,000 filters not installed (under the limit of 10,000): " \
                       f"{short([r for r in reply if 'result' not in r][:2])}", ""
            ids.extend(got)
            return "", "1,000 filter ids"

        for _ in range(10):
            if not self.running():
                break
            calls = [{"jsonrpc": "2.0", "id": i, "method": "eth_newBlockFilter", "params": []} for i in range(1000)]
            if self.h_request(client, "hostile:filters: 1,000 eth_newBlockFilter" + sfx, calls, installed) is None:
                break
        if len(ids) == 10_000:
            self.h_call(client, "hostile:filters: the 10,001st" + sfx, "eth_newBlockFilter", [],
                        expect_error((-32005,), "too many filters"))
        for start in range(0, len(ids), 1000):
            chunk = ids[start:start + 1000]
            calls = [{"jsonrpc": "2.0", "id": i, "method": "eth_uninstallFilter", "params": [f]} for i, f in enumerate(chunk)]
            self.h_request(client, "hostile:filters: uninstall 1,000" + sfx, calls,
                           lambda r: ("", "1,000 true") if isinstance(r, list) and len(r) == len(chunk)
                           and all(x.get("result") is True for x in r) else (f"expected all true: {short(r)}", ""))

    # ---- oversized bodies

    def oversize(self) -> None:
        rng = random.Random(self.args.seed + 4)
        auth = Http(self.node.auth_port, self.node.secret, 120.0)
        pub = Http(self.node.http_port, None, 120.0)
        huge_left = self.args.huge
        c = self.chain
        while self.running():
            step = rng.randrange(4)
            if step == 0:
                # Over the public port's limit (10 MiB).
                body = rng.randbytes(rng.randint(11, 24) * MB)
                self.refused_big("invalid:oversized body (11-24 MB)@http", self.node.http_port, body, "")
            elif step == 1:
                # Within the Engine API's transport limit, but a payload no block can be.
                n = rng.randint(1, c.last)
                params = json.loads(c.params_json[n])
                params[0]["extraData"] = "0x" + "00" * (rng.randint(10, 12) * MB)
                self.np_invalid(auth, "invalid:newPayload(20+ MB extraData)", c.calls[n - 1].method, params,
                                ("INVALID", "INVALID_BLOCK_HASH"), error_ok=True)
            elif step == 2:
                body = b'{"jsonrpc":"2.0","id":1,"method":"engine_exchangeCapabilities","params":["' + b"a" * (24 * MB) + b'"]}'
                self.refused_big("invalid:bad JWT + 24 MB body", self.node.auth_port, body,
                                 "Authorization: Bearer " + jwt.make_token(jwt.new_secret()) + "\r\n", want=401)
            elif huge_left > 0:
                # Over the Engine API's 128 MiB limit, with a valid JWT.
                huge_left -= 1
                body = b"[" + b" " * (130 * MB) + b"]"
                self.refused_big("invalid:oversized body (130 MB)@auth", self.node.auth_port, body,
                                 "Authorization: Bearer " + jwt.make_token(self.node.secret) + "\r\n")
                del body
            self.stop.wait(self.args.oversize_interval)
        auth.close()
        pub.close()

    def refused_big(self, label: str, port: int, body: bytes, headers: str, want: Optional[int] = None) -> None:
        """Refused: an HTTP error status (`want` if given), or the connection closed before
        the whole body was taken. Never a 2xx."""
        def fn():
            try:
                return raw_post(port, body, headers, 120.0)
            except OSError as err:
                raise TransportError(f"{label}: {err}") from None

        def check(r):
            status, sent = r
            if status is None:
                if sent < len(body):
                    self.stats.note(f"{label}: closed after {sent // MB} of {len(body) // MB} MB")
                    return ""
                return "the whole body was read and no answer came"
            if want is not None and status != want:
                return f"HTTP {status}, expected {want}"
            if status < 400:
                return f"HTTP {status}: the body was accepted"
            self.stats.note(f"{label}: HTTP {status}")
            return ""

        self.timed(label, "invalid", fn, check)

    # ---- slow clients

    def slow_clients(self) -> None:
        rng = random.Random(self.args.seed + 5)
        per = self.args.slow
        ports = [("auth", self.node.auth_port, self.node.secret), ("http", self.node.http_port, None)]
        margin = min(15.0, self.args.seconds / 5)
        while self.running() and time.monotonic() + self.args.slow_hold + margin < self.deadline:
            socks = []  # (kind, port name, socket)
            for name, port, secret in ports:
                for kind, count in (("idle", per["idle"]), ("half-header", per["half-header"]),
                                    ("half-body", per["half-body"]), ("no-read", per["no-read"])):
                    for _ in range(count):
                        try:
                            s = socket.create_connection(("127.0.0.1", port), timeout=5)
                        except OSError as err:
                            self.slow_stats[f"connect failed ({kind}@{name}): {type(err).__name__}"] += 1
                            continue
                        try:
                            self.slow_send(s, kind, secret, rng)
                        except OSError:
                            self.slow_stats[f"{kind}@{name}: send failed"] += 1
                        s.setblocking(False)
                        socks.append((kind, name, s))
            self.slow_stats["sockets opened"] += len(socks)
            self.slow_stats["max at once"] = max(self.slow_stats["max at once"], len(socks))
            self.stop.wait(min(self.args.slow_hold, max(0.0, self.deadline - time.monotonic())))
            for kind, name, s in socks:
                try:
                    data = s.recv(65536)
                    self.slow_stats[f"{kind}@{name}: " + ("closed by the node" if not data else "answered by the node")] += 1
                except BlockingIOError:
                    self.slow_stats[f"{kind}@{name}: still open after {self.args.slow_hold:.0f} s"] += 1
                except OSError:
                    self.slow_stats[f"{kind}@{name}: reset by the node"] += 1
                s.close()
            self.stop.wait(self.args.slow_pause)

    def slow_send(self, s: socket.socket, kind: str, secret: Optional[bytes], rng: random.Random) -> None:
        auth = f"Authorization: Bearer {jwt.make_token(secret)}\r\n" if secret else ""
        if kind == "half-header":
            s.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: applic")
        elif kind == "half-body":
            s.sendall((f"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{auth}"
                       f"Content-Length: 100000\r\n\r\n").encode() + b'{"jsonrpc":"2.0","id":1,"method":"eth_')
        elif kind == "no-read":
            # A complete request for a large answer, never read.
            n = rng.randint(1, self.chain.last)
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_getBlockByNumber", "params": [hex(n), True]}).encode()
            s.sendall((f"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{auth}"
                       f"Content-Length: {len(body)}\r\n\r\n").encode() + body)

    # ---- garbage peers

    def garbage_peers(self) -> None:
        rng = random.Random(self.args.seed + 6)
        held: List[Tuple[float, float, str, socket.socket]] = []  # (close at, opened at, kind, socket)
        opened = 0
        while self.running() and opened < self.args.peers_total:
            now = time.monotonic()
            keep = []
            for until, since, kind, s in held:
                if until <= now:
                    self.peer_outcome(kind, s, now - since)
                else:
                    keep.append((until, since, kind, s))
            held = keep
            if len(held) < self.args.peers_concurrent:
                kind = rng.choice(["random bytes", "truncated handshake", "connect-close", "fake auth", "garbage stream"])
                try:
                    s = socket.create_connection(("127.0.0.1", self.node.p2p_port), timeout=5)
                    opened += 1
                    self.peer_stats["connections"] += 1
                    if kind == "random bytes":
                        s.sendall(rng.randbytes(rng.randint(1, 4096)))
                    elif kind == "truncated handshake":
                        # EIP-8 auth: a 2-byte size, then only part of the ciphertext.
                        size = rng.randint(300, 700)
                        s.sendall(size.to_bytes(2, "big") + rng.randbytes(rng.randint(0, size // 2)))
                    elif kind == "fake auth":
                        s.sendall(rng.randbytes(307))  # pre-EIP-8 length, random content
                    elif kind == "garbage stream":
                        s.sendall(rng.randbytes(256 * 1024))
                    if kind in ("connect-close", "random bytes"):
                        s.close()
                        self.peer_stats[f"{kind}: closed by us"] += 1
                    else:
                        s.setblocking(False)
                        held.append((now + rng.uniform(2, self.args.peer_hold), now, kind, s))
                except OSError as err:
                    self.peer_stats[f"{kind}: {type(err).__name__}"] += 1
            self.stop.wait(self.args.peer_interval)
        for _, since, kind, s in held:
            self.peer_outcome(kind, s, time.monotonic() - since)

    def peer_outcome(self, kind: str, s: socket.socket, held: float) -> None:
        """How a held garbage peer ended. One the node still keeps after --peer-bound
        seconds fails the run: a peer that never completes its handshake must be dropped
        (the node's handshake timeout is 10 s)."""
        try:
            data = s.recv(65536)
            self.peer_stats[f"{kind}: " + ("closed by the node" if not data else "node sent bytes")] += 1
        except BlockingIOError:
            if held >= self.args.peer_bound:
                self.peer_stats[f"{kind}: still open after {self.args.peer_bound:.0f} s"] += 1
                self.stats.fail(f"garbage peer ({kind}) still connected after {held:.0f} s")
            else:
                self.peer_stats[f"{kind}: still open when we closed (< {self.args.peer_bound:.0f} s)"] += 1
        except OSError:
            self.peer_stats[f"{kind}: reset by the node"] += 1
        s.close()

    # ---- monitor

    def monitor(self) -> None:
        pid = self.node.proc.pid
        while not self.stop.is_set():
            if self.node.proc.poll() is not None:
                self.node_died = True
                self.stats.fail(f"node exited with code {self.node.proc.returncode} during the run")
                self.stop.set()
                return
            s = proc_sample(pid)
            if s is not None:
                self.samples.append((time.monotonic() - self.t0,) + s)
            self.stop.wait(1.0)

    # ---- orchestration

    def guarded(self, target, *args):
        """A client thread: any exception in it fails the run (and stops it)."""
        def body():
            try:
                target(*args)
            except Exception as err:  # noqa: BLE001 - a client bug must not pass silently
                self.stats.fail(f"client thread {threading.current_thread().name} crashed: {err!r}")
                self.stop.set()
        return body

    def run(self) -> int:
        args, c = self.args, self.chain
        pid = self.node.proc.pid
        self.baseline = proc_sample(pid)
        self.t0 = time.monotonic()
        self.deadline = self.t0 + args.seconds
        def thread(name, target, *targs):
            return threading.Thread(target=self.guarded(target, *targs), name=name, daemon=True)

        workers = [thread("monitor", self.monitor), thread("feed", self.feed)]
        for i in range(args.readers):
            keepalive = i % 3 != 2  # every third reader opens a connection per call
            workers.append(thread(f"reader{i}", self.reader, self.node.http_port, None, keepalive, args.seed + 100 + i, ""))
        workers.append(thread("reader-auth", self.reader, self.node.auth_port, self.node.secret, True, args.seed + 99, "@auth"))
        for target in (self.invalid_engine, self.invalid_misc, self.oversize, self.slow_clients, self.garbage_peers):
            workers.append(thread(target.__name__, target))
        for i in range(args.hostile):
            workers.append(thread(f"hostile{i}", self.hostile, i))
        log(f"load: {args.seconds} s on node pid {pid} (auth {self.node.auth_port}, http {self.node.http_port}, "
            f"p2p {self.node.p2p_port}); baseline RSS {self.baseline[0]:.0f} MB, {self.baseline[1]} fds "
            f"({self.baseline[2]} sockets), {len(workers)} client threads")
        for w in workers:
            w.start()
        last_report = self.t0
        while time.monotonic() < self.deadline and not self.stop.is_set():
            time.sleep(0.5)
            if time.monotonic() - last_report >= 30:
                last_report = time.monotonic()
                s = self.samples[-1] if self.samples else None
                valid, bad = self.stats.totals("valid")
                inv, _ = self.stats.totals("invalid")
                hostile, _ = self.stats.totals("hostile")
                log(f"+{last_report - self.t0:.0f} s: head {self.range_now()}/{c.last}, {valid} valid calls "
                    f"({self.stats.failure_count} failures), {inv} invalid, {hostile} hostile, "
                    + (f"RSS {s[1]:.0f} MB, {s[2]} fds ({s[3]} sockets)" if s else ""))
        self.stop.set()
        self.join(workers)
        return self.finish()

    def join(self, workers) -> None:
        limit = time.monotonic() + max(self.args.rpc_timeout, self.args.hostile_timeout) + 30
        for w in workers:
            w.join(max(0.1, limit - time.monotonic()))
        stuck = [w.name for w in workers if w.is_alive()]
        if stuck:
            self.stats.fail(f"client threads still waiting for the node after the run: {stuck}")

    def finish(self) -> int:
        args, c = self.args, self.chain
        elapsed = time.monotonic() - self.t0
        problems: List[str] = []
        head_desc = "?"
        alive = self.node.running()
        if alive:
            # Final state, quiet: the head, the tracked accounts at the head.
            client = Http(self.node.http_port, None, args.rpc_timeout)
            try:
                number = int(client.call("eth_blockNumber", []), 16)
                latest = client.call("eth_getBlockByNumber", ["latest", False]) or {}
                got = (latest.get("hash") or "").lower()
                head_desc = f"{number} {got[:12]}…"
                if number != c.last or got != c.hashes[c.last]:
                    problems.append(f"head {number} {got}, expected {c.last} {c.hashes[c.last]}")
                wrong = 0
                for a in c.tracked:
                    bal = int(client.call("eth_getBalance", [a, "latest"]), 16)
                    nonce = int(client.call("eth_getTransactionCount", [a, "latest"]), 16)
                    if bal != c.value_at(a, "balance", c.last) or nonce != c.value_at(a, "nonce", c.last):
                        wrong += 1
                    if c.post is not None and c.post[a] is not None:
                        acc = c.post[a]
                        code = client.call("eth_getCode", [a, "latest"]).lower()
                        if code != (acc.get("code") or "0x").lower():
                            wrong += 1
                        for slot, value in list((acc.get("storage") or {}).items())[:4]:
                            if int(client.call("eth_getStorageAt", [a, hex(int(slot, 16)), "latest"]), 16) != int(value, 16):
                                wrong += 1
                if wrong:
                    problems.append(f"{wrong} account fields of the {len(c.tracked)} tracked accounts differ from the fixture at the head")
            except (RPCError, TransportError, ValueError, TypeError) as err:
                problems.append(f"final checks failed: {err}")
            client.close()
            # Descriptors after every client closed: sockets back near the baseline.
            settle = time.monotonic() + 20
            s = proc_sample(self.node.proc.pid)
            while s and s[2] > self.baseline[2] + args.fd_slack and time.monotonic() < settle:
                time.sleep(0.5)
                s = proc_sample(self.node.proc.pid)
            end_sample = s
        else:
            problems.append(f"node not running at the end (exit code {self.node.proc.returncode})")
            end_sample = None

        valid, valid_bad = self.stats.totals("valid")
        invalid, invalid_bad = self.stats.totals("invalid")
        hostile, hostile_bad = self.stats.totals("hostile")
        rss = [x[1] for x in self.samples] or [0.0]
        fds = [x[2] for x in self.samples] or [0]
        socks = [x[3] for x in self.samples] or [0]
        base = self.baseline
        fd_bound = base[1] + self.args.slow_total + self.args.peers_concurrent + 64 + self.args.file_slack
        if max(rss) > args.rss_limit:
            problems.append(f"RSS max {max(rss):.0f} MB over the limit {args.rss_limit} MB")
        if max(fds) > fd_bound:
            problems.append(f"fds max {max(fds)} over the bound {fd_bound}")
        if end_sample is not None and end_sample[2] > base[2] + args.fd_slack:
            problems.append(f"{end_sample[2]} sockets open after every client closed (baseline {base[2]}, slack {args.fd_slack})")
        growth = self.rss_growth()
        if growth is not None and growth > args.rss_growth:
            problems.append(f"RSS grew {growth:.0f} MB over the second half of the steady state (limit {args.rss_growth} MB)")
        if self.feed_done_at is None:
            problems.append(f"the feed did not reach block {c.last} in {args.seconds} s (head {self.range_now()})")
        if self.stats.failure_count:
            problems.append(f"{self.stats.failure_count} wrong answers or failed calls")

        self.report(elapsed, rss, fds, socks, end_sample, fd_bound, growth)
        ok = not problems
        if problems:
            print("\nFAILED:")
            for p in problems:
                print(f"  - {p}")
            for f in self.stats.failures:
                print(f"  * {f}")
        status = "ok" if ok else "FAILED"
        print(f"\nload: {elapsed:.0f} s, {valid} valid calls {'all correct' if not valid_bad else f'({valid_bad} wrong)'}, "
              f"{invalid - invalid_bad} invalid calls refused{'' if not invalid_bad else f' ({invalid_bad} not)'}, "
              f"{hostile - hostile_bad} hostile requests answered as expected{'' if not hostile_bad else f' ({hostile_bad} not)'}, "
              f"RSS max {max(rss):.0f} MB, fds max {max(fds)}, head {head_desc} {status}")
        return 0 if ok else 1

    def rss_growth(self) -> Optional[float]:
        """RSS growth (MB) between the medians of the 2nd and 4th quarters of the time after
        the feed finished (None when that is under 60 s)."""
        if self.feed_done_at is None:
            return None
        start = self.feed_done_at - self.t0
        steady = [(t, r) for t, r, *_ in self.samples if t >= start]
        if not steady or steady[-1][0] - start < 60:
            return None
        span = steady[-1][0] - start
        q2 = sorted(r for t, r in steady if start + span / 4 <= t < start + span / 2)
        q4 = sorted(r for t, r in steady if t >= start + 3 * span / 4)
        if not q2 or not q4:
            return None
        return q4[len(q4) // 2] - q2[len(q2) // 2]

    def report(self, elapsed, rss, fds, socks, end_sample, fd_bound, growth) -> None:
        st = self.stats
        print(f"\n{'method':52} {'kind':7} {'calls':>7} {'errors':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
        order = {"valid": 0, "invalid": 1, "hostile": 2}
        for label in sorted(st.calls, key=lambda l: (order.get(st.kind[l], 3), l)):
            lat = st.lat[label]
            print(f"{label:52} {st.kind[label]:7} {st.calls[label]:7} {st.errors[label]:6} "
                  f"{pct(lat, 50) * 1000:8.1f} {pct(lat, 99) * 1000:8.1f} {max(lat) * 1000:8.1f}")
        base = self.baseline
        end = end_sample or (0, 0, 0, 0)
        print(f"\nnode: RSS start {base[0]:.0f} / max {max(rss):.0f} / end {self.samples[-1][1] if self.samples else 0:.0f} MB "
              f"(limit {self.args.rss_limit}); steady-state growth "
              f"{'n/a' if growth is None else f'{growth:.0f} MB'} (limit {self.args.rss_growth}); "
              f"fds start {base[1]} / max {max(fds)} / end {end[1]} (bound {fd_bound}); sockets start {base[2]} / "
              f"max {max(socks)} / end {end[2]} (end bound {base[2] + self.args.fd_slack}); threads start {base[3]} / "
              f"max {max((x[4] for x in self.samples), default=0)}")
        if self.feed_done_at is not None:
            print(f"feed: {self.chain.last} blocks VALID by +{self.feed_done_at - self.t0:.1f} s")
        print("slow clients: " + ", ".join(f"{k} {v}" for k, v in sorted(self.slow_stats.items())))
        print("garbage peers: " + ", ".join(f"{k} {v}" for k, v in sorted(self.peer_stats.items())))
        if st.notes:
            print("how the node refused / answered:")
            for k, v in sorted(st.notes.items()):
                print(f"  {k}: {v}")
        if st.outcomes:
            classes = defaultdict(int)
            for (_, cls), v in st.outcomes.items():
                classes[cls] += v
            total, bad = st.totals("hostile")
            print(f"hostile requests: {total} ({bad} unexpected answers); expected answers by outcome: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(classes.items(), key=lambda kv: -kv[1])))
            for (label, cls), v in sorted(st.outcomes.items()):
                print(f"  {label}: {cls}: {v}")


# --------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ethrex", required=True, help="the ethrex binary")
    ap.add_argument("--fixture", required=True, help="a blockchain_test JSON (e.g. stress.blockchain_test.json)")
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--quick", action="store_true", help="a ~20 s smoke run: 20 s, 40 blocks, fewer slow clients")
    ap.add_argument("--blocks", type=int, default=0, help="feed only the first N blocks (default: all)")
    ap.add_argument("--db", default="rocksdb")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--readers", type=int, default=3, help="eth reader threads on the HTTP port")
    ap.add_argument("--pause", type=float, default=0.002, help="pause between a thread's calls (s)")
    ap.add_argument("--resend-pause", type=float, default=0.01, help="pause between re-sends after the feed (s)")
    ap.add_argument("--rpc-timeout", type=float, default=30.0)
    ap.add_argument("--bad-every", type=int, default=5, help="the feed sends a wrong-state-root block on the head before every Nth block")
    ap.add_argument("--slow", type=int, default=25, help="slow sockets of each kind per port per wave (4 kinds, 2 ports)")
    ap.add_argument("--slow-hold", type=float, default=40.0)
    ap.add_argument("--slow-pause", type=float, default=10.0)
    ap.add_argument("--peers-total", type=int, default=1500, help="most garbage-peer connections in the run")
    ap.add_argument("--peers-concurrent", type=int, default=16)
    ap.add_argument("--peer-interval", type=float, default=0.2)
    ap.add_argument("--peer-hold", type=float, default=25.0, help="most seconds a garbage peer is held open")
    ap.add_argument("--peer-bound", type=float, default=15.0,
                    help="a garbage peer the node still keeps after this many s fails the run (its handshake timeout is 10 s)")
    ap.add_argument("--huge", type=int, default=3, help="130 MB bodies to the Engine API port in the run")
    ap.add_argument("--oversize-interval", type=float, default=5.0)
    ap.add_argument("--rss-limit", type=float, default=3072, help="MB, the most RSS allowed at any sample")
    ap.add_argument("--rss-growth", type=float, default=256, help="MB, steady-state growth limit")
    ap.add_argument("--fd-slack", type=int, default=16, help="sockets over the baseline allowed at the end")
    ap.add_argument("--file-slack", type=int, default=1024, help="non-socket fds (database files) over the baseline")
    ap.add_argument("--hostile", type=int, default=1,
                    help="hostile RPC threads (limits, endless calls, deep traces, bad params; 0: none)")
    ap.add_argument("--hostile-auth-share", type=float, default=0.25,
                    help="share of the hostile requests sent to the Engine API port")
    ap.add_argument("--hostile-timeout", type=float, default=60.0, help="the hostile client's wait per request (s)")
    ap.add_argument("--hostile-duty", type=float, default=0.5,
                    help="the share of the time a hostile thread has a request open (it waits after each one)")
    ap.add_argument("--hostile-unbounded", action="store_true",
                    help="also the struct logger over endless code with the whole gas cap (~3 GB of RSS per request)")
    ap.add_argument("--keep-logs", help="copy the node's log here")
    args = ap.parse_args()
    if not 0 < args.hostile_duty <= 1:
        ap.error("--hostile-duty must be in (0, 1]")
    if args.quick:
        args.seconds = min(args.seconds, 20)
        args.blocks = args.blocks or 40
        args.slow, args.slow_hold, args.slow_pause = 5, 5.0, 2.0
        args.peers_total, args.peer_hold, args.huge = 100, 4.0, 1
        args.oversize_interval = 3.0
    per = max(0, args.slow)
    args.slow = {"idle": per, "half-header": per, "half-body": per, "no-read": max(1, per // 5) if per else 0}
    args.slow_total = 2 * sum(args.slow.values())
    rng = random.Random(args.seed)

    log(f"fixture: {args.fixture}")
    chain = Chain(args.fixture, args.blocks or None, rng)
    log(f"fixture: {chain.last} blocks to {chain.hashes[-1][:14]}… ready in {chain.seconds:.1f} s "
        f"({len(chain.tracked)} changing accounts tracked; {len(chain.fixed_balance)} constant accounts, "
        f"{len(chain.fixed_code)} codes, {len(chain.fixed_storage)} slots)")

    workdir = tempfile.mkdtemp(prefix="ethrex-load-")
    n: Optional[LoadNode] = None
    code = 1

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    # A last guard: whatever hangs, the run ends (and the node is stopped) by this time.
    signal.signal(signal.SIGALRM, on_signal)
    signal.alarm(int(args.seconds) + 600)
    try:
        deadline = time.monotonic() + 120
        for attempt in range(2):
            p2p = node.free_ports(1)[0]
            nodedir = os.path.join(workdir, f"try{attempt}")
            os.makedirs(nodedir)
            n = LoadNode(args.ethrex, nodedir, chain.genesis, db=args.db, p2p_port=p2p)
            try:
                n.start(deadline, args.rpc_timeout)
                break
            except node.NodeStartError as err:
                n.stop()
                text = n.log_tail()
                if attempt == 0 and any(m in text.lower() for m in ("address already in use", "addrinuse", "os error 98")):
                    continue
                print(text, file=sys.stderr)
                raise SystemExit(f"node did not start: {err}")
        log(f"node up in {120 - (deadline - time.monotonic()):.1f} s")
        # Genesis must match, and forkchoice to it must be VALID, before any load.
        eth = Http(n.http_port)
        got = (eth.call("eth_getBlockByNumber", ["0x0", False]) or {}).get("hash", "").lower()
        if got != chain.hashes[0]:
            raise SystemExit(f"genesis hash {got} != fixture {chain.hashes[0]}")
        eth.close()
        load = Load(args, chain, n)
        engine = Http(n.auth_port, n.secret, args.rpc_timeout)
        if not load.send_fcu(engine, 0):
            raise SystemExit(f"forkchoiceUpdated to genesis not VALID: {load.stats.failures}")
        engine.close()
        load.stats = Stats()
        code = load.run()
        if code and n.proc is not None:
            print("--- node log tail ---\n" + n.log_tail(30) + "\n---", file=sys.stderr)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        code = 130
    finally:
        if n is not None:
            exit_code = n.stop()
            log(f"node stopped (exit code {exit_code})")
            if args.keep_logs and os.path.exists(n.log_path):
                os.makedirs(args.keep_logs, exist_ok=True)
                shutil.copyfile(n.log_path, os.path.join(args.keep_logs, "node.log"))
        shutil.rmtree(workdir, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
