#!/usr/bin/env python3
"""The crash loop at scale: `kill -9` ethrex at random moments, then `verify-db` and a resume.

Run through scripts/crash-loop.sh (it builds the binary and the default stress fixture).
Python 3.11 standard library only, plus the repository's hive/engine_runner (Engine API
payloads, JWT, JSON-RPC client).

Three modes, each on every selected backend (mdbx, rocksdb). Each first runs once whole,
unkilled, to learn how long it takes; the kill moments are then drawn (seeded) over that:
a first kill during start-up (genesis load, chain open), then kills alternating between
time kills (at a moment after the child's start, stratified: one in each equal slice of
the run) and block kills (when the child reaches a block, stratified over the chain, plus a
random delay of up to one block's time, so they cover the whole chain even when a loaded
machine runs slower than the calibration run did). Every kill starts from an empty data
directory, so every moment is measured from the start of the work.

import  `ethrex import` of the fixture with its BALs; the last kill lands right after the
        importer logs the fixture's last block (the final commit and persist).
node    `ethrex node --p2p.disabled --persistence-lag 0`, fed the fixture's blocks over the
        Engine API (engine_newPayloadV5, then engine_forkchoiceUpdated to it; a block kill
        counts from forkchoiceUpdated's VALID). The durability claim checked: the durable
        head after the kill is at least the last head that forkchoiceUpdated answered VALID.
sync    a node that has imported the fixture serves it on loopback; a fresh node syncs from
        it (`--sync.target LAST --peers ENODE --nodiscover`) and is killed on the way.

After each kill (and a resume of the same data directory, run to completion):
  - verify-db must say "consistent", its head's state root must be the fixture's state root
    of that block (the durable head is a real prefix of the chain);
  - node: that head >= the last head answered VALID, and the restarted node's
    eth_getBlockByNumber("latest") is that head;
  - the resumed import / node / sync must reach the fixture's last block, hash
    (`lastblockhash`) and state root, and verify-db must then say consistent at that head.
A kill counts as passed only when all of these hold. A kill that lands after the process
finished by itself (the machine was faster than the calibration run) is retried, at most
twice, at the same fraction of the last run's duration; a kill that never lands fails.

Every child is bounded in time (a hung one is killed and counted as a failure) and killed
at exit; the scratch directory is removed unless --keep or a kill failed (then the failing
data directory and logs stay there and the path is printed).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from hive.engine_runner import fixtures, jwt, payload  # noqa: E402
from hive.engine_runner import requests as reqs  # noqa: E402
from hive.engine_runner.node import free_ports, tail  # noqa: E402
from hive.engine_runner.rpc import RPCClient, RPCError, TransportError  # noqa: E402

# ---------------------------------------------------------------- child processes

CHILDREN: Dict[int, subprocess.Popen] = {}


def spawn(cmd: List[str], log_path: str, pipe: bool = False) -> subprocess.Popen:
    """Start one child (stdout+stderr to log_path, or to a pipe); remembered for cleanup."""
    if pipe:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
    else:
        with open(log_path, "ab") as fh:
            fh.write(("$ " + " ".join(cmd) + "\n").encode())
            fh.flush()
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=fh,
                                    stderr=subprocess.STDOUT)
    CHILDREN[proc.pid] = proc
    return proc


def reap(proc: subprocess.Popen, timeout: float) -> Optional[int]:
    """Wait up to `timeout`; a child still running then is killed (returns None: hung)."""
    try:
        code = proc.wait(timeout=max(0.1, timeout))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        code = None
    CHILDREN.pop(proc.pid, None)
    return code


def stop_gracefully(proc: subprocess.Popen, grace: float = 60.0) -> Optional[int]:
    """SIGTERM, then SIGKILL after `grace` seconds (returns None if it had to be killed)."""
    if proc.poll() is None:
        proc.terminate()
    return reap(proc, grace)


def kill_children() -> None:
    for pid, proc in list(CHILDREN.items()):
        if proc.poll() is None:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        CHILDREN.pop(pid, None)


def run(cmd: List[str], timeout: float) -> tuple[Optional[int], str]:
    """Run to completion (bounded); (exit code or None when it hung and was killed, output)."""
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    CHILDREN[proc.pid] = proc
    try:
        out, _ = proc.communicate(timeout=timeout)
        code: Optional[int] = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        code = None
    CHILDREN.pop(proc.pid, None)
    return code, out.decode("utf-8", errors="replace")


class Failure(Exception):
    """One kill's check failed; the message says which."""


# ---------------------------------------------------------------- the fixture

@dataclass
class Fixture:
    dir: str
    genesis: str
    chain: str
    bal: str
    hashes: List[str]  # index = block number (0: genesis)
    roots: List[str]
    calls: List[payload.PayloadCall] = field(default_factory=list)
    fcu_version: int = 0

    @property
    def last(self) -> int:
        return len(self.hashes) - 1

    @property
    def last_hash(self) -> str:
        return self.hashes[-1]


def with_request_logs(block: dict) -> None:
    """Give a stress block the request logs hive's RequestTracker rebuilds its requests from.

    The stress fixture carries no receipts. Its EIP-7002 / EIP-7251 requests are plain
    calls to the predeploys, so the log each one emitted is rebuilt from the transaction:
    its sender (the fixture's `sender`) followed by its calldata, for every such call that
    changed the predeploy's storage in the block access list (a reverted call leaves no
    request), exactly as the predeploy logs it (the tracker turns a withdrawal request's
    big-endian amount little-endian). build_call checks the result against the header's
    requestsHash, so a wrong rebuild cannot go unnoticed.
    """
    predeploys = {reqs.WITHDRAWAL_REQUEST_PREDEPLOY, reqs.CONSOLIDATION_REQUEST_PREDEPLOY}
    changed: Dict[str, set] = {}
    for account in block.get("blockAccessList") or []:
        address = account["address"].lower()
        if address in predeploys:
            changed[address] = {int(c["blockAccessIndex"], 16)
                                for s in account.get("storageChanges") or []
                                for c in s["slotChanges"]}
    logs = []
    for index, tx in enumerate(block.get("transactions") or []):
        to = (tx.get("to") or "").lower()
        if to in predeploys and index + 1 in changed.get(to, ()):
            data = bytes.fromhex(tx["data"][2:])
            logs.append({"address": to, "topics": [], "data": "0x" + tx["sender"][2:] + data.hex()})
    block["receipts"] = [{"logs": logs}]


def load_fixture(directory: str, engine_calls: bool) -> Fixture:
    paths = {k: os.path.join(directory, f"stress.{k}") for k in
             ("genesis.json", "rlp", "bal.rlp", "blockchain_test.json")}
    for p in paths.values():
        if not os.path.isfile(p):
            raise SystemExit(f"crash-loop: {p} is missing (generate it with `ethrex fixture stress --out {directory}`)")
    with open(paths["blockchain_test.json"]) as fh:
        tests = json.load(fh)
    test = next(iter(tests.values()))
    del tests
    hashes = [test["genesisBlockHeader"]["hash"].lower()]
    roots = [test["genesisBlockHeader"]["stateRoot"].lower()]
    for number, block in enumerate(test["blocks"], start=1):
        header = block["blockHeader"]
        if int(header["number"], 16) != number:
            raise SystemExit(f"crash-loop: fixture block {number} has number {header['number']}")
        hashes.append(header["hash"].lower())
        roots.append(header["stateRoot"].lower())
    if hashes[-1] != test["lastblockhash"].lower():
        raise SystemExit("crash-loop: the fixture's last block is not its lastblockhash")
    fx = Fixture(directory, paths["genesis.json"], paths["rlp"], paths["bal.rlp"], hashes, roots)
    if engine_calls:
        schedule = fixtures.fork_schedule(test["network"])
        tracker = payload.RequestTracker((test.get("config") or {}).get("depositContractAddress"))
        for block in test["blocks"]:
            with_request_logs(block)
            fx.calls.append(payload.build_call(block, schedule, tracker))
        genesis_ts = int(test["genesisBlockHeader"].get("timestamp", "0x0"), 16)
        fx.fcu_version = payload.fcu_version_for(fixtures.fork_at(schedule, genesis_ts))
    return fx


# ---------------------------------------------------------------- verify-db

VERIFY_HEAD = re.compile(r"head block (\d+) state root (0x[0-9a-fA-F]{64}): consistent")


def verify(ethrex: str, datadir: str, db: str, fx: Fixture, timeout: float) -> int:
    """verify-db must accept the datadir; returns its head (-1: no chain yet)."""
    code, out = run([ethrex, "verify-db", "--datadir", datadir, "--db", db], timeout)
    text = out.strip().splitlines()[-1] if out.strip() else "<no output>"
    if code is None:
        raise Failure(f"verify-db hung (killed after {timeout:.0f} s)")
    if code != 0 or "inconsistent" in out or "consistent" not in out:
        raise Failure(f"verify-db exit {code}: {out.strip()[-600:]}")
    if "no chain yet" in out:
        return -1
    m = VERIFY_HEAD.search(out)
    if not m:
        raise Failure(f"verify-db said something unexpected: {text}")
    head, root = int(m.group(1)), m.group(2).lower()
    if head > fx.last:
        raise Failure(f"verify-db head {head} is beyond the fixture's last block {fx.last}")
    if root != fx.roots[head]:
        raise Failure(f"verify-db head {head} has state root {root}, the fixture's block {head} has {fx.roots[head]}")
    return head


def fmt_head(head: int) -> str:
    return "none" if head < 0 else str(head)


# ---------------------------------------------------------------- kill plans

@dataclass
class Kill:
    """When to SIGKILL a child. Time kinds ("open", "start", "time"): `at` seconds after the
    child's start. Block kinds ("block", "final"): `delay` seconds after the child's
    progress reaches `block` (import, sync: the block's "imported block" log line; node:
    forkchoiceUpdated answered VALID for it), so they land at that point of the chain
    however fast the machine is today; the delay (up to one block's time) puts the kill
    anywhere in the work that follows (executing, committing, writing, syncing)."""
    kind: str
    at: float = 0.0
    block: int = 0
    delay: float = 0.0

    @property
    def by_block(self) -> bool:
        return self.kind in ("block", "final")

    def where(self, fired_at: float) -> str:
        if self.by_block:
            return f"at {fired_at:.2f} s (block {self.block} +{self.delay * 1000:.0f} ms)"
        return f"at {fired_at:.2f} s" + (f" ({self.kind})" if self.kind in ("open", "start") else "")

    def retry(self, ratio: float) -> "Kill":
        """The same kill for a retry after it missed (the child finished first): at the same
        fraction of the last run's duration (`ratio` = that run / the calibration run), or
        with a quarter of the delay."""
        if self.by_block:
            return Kill(self.kind, block=self.block, delay=self.delay / 4)
        return Kill(self.kind, at=self.at * ratio * 0.95)


def stratified(rng: random.Random, count: int, start: float, end: float) -> List[float]:
    """One uniform moment in each of `count` equal slices of [start, end)."""
    width = (end - start) / max(1, count)
    return [rng.uniform(start + i * width, start + (i + 1) * width) for i in range(count)]


def plan_kills(rng: random.Random, count: int, last: int, t_start: float, t_end: float,
               block_time: float, first: Optional[str] = None,
               final_tail: Optional[float] = None) -> List[Kill]:
    """`count` kills: optionally a first one during start-up ([0, t_start), kind `first`) and
    a last one right after the last block (`final_tail`: how long the child runs after it);
    the others alternate between time kills stratified over [t_start, t_end) and block
    kills stratified over the chain (each with a delay of up to `block_time`)."""
    head: List[Kill] = []
    tail: List[Kill] = []
    if first is not None and count >= 3:
        head.append(Kill(first, at=rng.uniform(0.0, t_start)))
    if final_tail is not None and count >= 2:
        tail.append(Kill("final", block=last, delay=rng.uniform(0.0, final_tail)))
    middle = count - len(head) - len(tail)
    n_time, n_block = (middle + 1) // 2, middle // 2
    times = stratified(rng, n_time, t_start if head else 0.0, t_end)
    blocks = [min(last, max(1, math.ceil(f * last))) for f in stratified(rng, n_block, 0.0, 1.0)]
    mid: List[Kill] = []
    for i in range(n_time):
        mid.append(Kill("time", at=times[i]))
        if i < n_block:
            mid.append(Kill("block", block=blocks[i], delay=rng.uniform(0.0, block_time)))
    return head + mid + tail


class Progress:
    """The highest block a child has reached, shared between threads."""

    def __init__(self):
        self.block = 0
        self.done = False
        self.cond = threading.Condition()

    def note(self, number: int) -> None:
        with self.cond:
            self.block = max(self.block, number)
            self.cond.notify_all()

    def finish(self) -> None:
        with self.cond:
            self.done = True
            self.cond.notify_all()

    def wait_for(self, number: int, timeout: float) -> bool:
        with self.cond:
            self.cond.wait_for(lambda: self.block >= number or self.done, timeout)
            return self.block >= number


class Killer:
    """SIGKILLs a child when a Kill says so, from its own thread."""

    def __init__(self, kill: Kill, proc: subprocess.Popen, t0: float, progress: Progress):
        self.kill, self.proc, self.t0, self.progress = kill, proc, t0, progress
        self.fired_at = 0.0
        self.progress_at_kill = 0
        self.cancelled = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        if self.kill.by_block:
            while not self.progress.wait_for(self.kill.block, 0.2):
                if self.cancelled.is_set() or self.proc.poll() is not None or self.progress.done:
                    return
            moment = time.monotonic() + self.kill.delay
        else:
            moment = self.t0 + self.kill.at
        if self.cancelled.wait(max(0.0, moment - time.monotonic())):
            return
        if self.proc.poll() is None:
            self.progress_at_kill = self.progress.block
            self.fired_at = time.monotonic() - self.t0
            self.proc.send_signal(signal.SIGKILL)

    def cancel(self) -> None:
        self.cancelled.set()
        self.thread.join(timeout=5)

    def landed(self, code: Optional[int]) -> bool:
        return self.fired_at > 0 and code == -signal.SIGKILL


def follow_log(path: str, proc: subprocess.Popen, progress: Progress) -> threading.Thread:
    """Notes every "imported block number=N" a child writes to its log file."""

    def run():
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            buf = b""
            while True:
                chunk = fh.read()
                if chunk:
                    buf += chunk
                    *lines, buf = buf.split(b"\n")
                    for line in lines:
                        m = IMPORTED.search(line.decode("utf-8", errors="replace"))
                        if m:
                            progress.note(int(m.group(1)))
                elif proc.poll() is not None:
                    progress.finish()
                    return
                else:
                    time.sleep(0.01)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


# ---------------------------------------------------------------- every mode's kills

@dataclass
class Attempt:
    """One run of a child with a kill, as a mode's `once` reports it to kill_loop."""
    killer: Killer
    retry: Optional[float] = None  # the child finished first: that run's time / the calibration's
    detail: str = ""  # what the child had reached when killed (default: its logged block)
    state: Any = None  # the mode's own record of the run, for its `resume`


def calibrate(ctx: "Ctx", mode: str, db: str, datadir: str, log: str, whole: str,
              run: Callable[[], Any], abandon: Callable[[], None] = lambda: None,
              logs: Sequence[str] = ()) -> Any:
    """The mode's one whole, unkilled run: `run()` (a Failure if it did not reach the end),
    then verify-db at the fixture's last block; returns what `run` did, or None on a failure
    (reported; `abandon()` stops what is left and the datadir and logs are kept)."""
    try:
        result = run()
        end = verify(ctx.ethrex, datadir, db, ctx.fx, ctx.args.child_timeout)
        if end != ctx.fx.last:
            raise Failure(f"verify-db head {end} after {whole}")
    except Failure as err:
        abandon()
        print(f"{mode} {db}: calibration failed: {err} (log {log})", flush=True)
        ctx.keep_failure(f"{mode}-{db}-calibration", datadir, [log, *logs])
        return None
    return result


def kill_loop(ctx: "Ctx", mode: str, db: str, kills: List[Kill], base: str, datadir: str,
              timeout: float, once: Callable[[Any, Kill], Attempt],
              resume: Callable[[Any, Attempt, int], Optional[str]], finished: str, resumed: str,
              child: Callable[[str], Any] = lambda log: log,
              abandon: Callable[[Any], None] = lambda _child: None, logs: Sequence[str] = (),
              skip: Callable[[], Optional[str]] = lambda: None) -> int:
    """Every kill of one mode and backend; returns how many passed.

    For each kill: `skip()` may say why it cannot run; `child(log)` makes the kill's child
    (default: the log's path, kill<k>.log under `base`); up to 3 times `once(child, kill)`
    runs it from an empty data directory (every moment is measured from the start of the
    work) until the kill lands, retried later when the `finished` finished first; then
    verify-db, `resume(child, attempt, head)` (checks its own claims, runs the rest to the
    end and returns what the kill's line adds about the head), and verify-db at the
    fixture's last block. On a failure `abandon(child)` stops what is left and the datadir
    and logs (`logs` too) are kept.
    """
    fx, args = ctx.fx, ctx.args
    count = len(kills)
    passed = 0
    for k, kill in enumerate(kills, start=1):
        tag = f"kill {k}/{count} {db} {mode}"
        if time.monotonic() > ctx.deadline:
            print(f"{tag}: not run (the overall --timeout ran out)", flush=True)
            continue
        why = skip()
        if why:
            print(f"{tag}: FAILED: {why}", flush=True)
            continue
        log = os.path.join(base, f"kill{k}.log")
        if os.path.exists(log):
            os.remove(log)
        proc = child(log)
        try:
            attempt_kill = kill
            for _ in range(3):
                shutil.rmtree(datadir, ignore_errors=True)
                attempt = once(proc, attempt_kill)
                if attempt.retry is None:
                    break
                attempt_kill = attempt_kill.retry(attempt.retry)
            else:
                raise Failure(f"the kill never landed: the {finished} finished first 3 times")
            head = verify(ctx.ethrex, datadir, db, fx, timeout)
            detail = attempt.detail or f"(logged block {attempt.killer.progress_at_kill})"
            line = f"{tag} {attempt_kill.where(attempt.killer.fired_at)} {detail}: head {fmt_head(head)}"
            line += (resume(proc, attempt, head) or "") + " -> verify consistent"
            end = verify(ctx.ethrex, datadir, db, fx, timeout)
            if end != fx.last:
                raise Failure(f"after {resumed} verify-db's head is {end}, want {fx.last}")
            print(f"{line} -> resumed to {end} ok", flush=True)
            passed += 1
        except Failure as err:
            abandon(proc)
            kept = ctx.keep_failure(f"{mode}-{db}-kill{k}", datadir, [log, *logs])
            print(f"{tag}: FAILED: {err} (seed {args.seed}; datadir and log{'s' if logs else ''} "
                  f"kept in {kept})", flush=True)
    shutil.rmtree(datadir, ignore_errors=True)
    return passed


# ---------------------------------------------------------------- import mode

IMPORTED = re.compile(r"imported block number=(\d+)")
FINAL = re.compile(r"imported (\d+) blocks \((\d+) already present\); head is block (\d+) (0x[0-9a-f]+) \(state root (0x[0-9a-f]+)\)")


@dataclass
class ImportRun:
    code: Optional[int] = None
    killer: Optional[Killer] = None
    t_open: Optional[float] = None
    t_last_block: Optional[float] = None
    t_end: float = 0.0
    final: Optional[re.Match] = None
    tail: List[str] = field(default_factory=list)

    @property
    def killed(self) -> bool:
        return self.killer is not None and self.killer.landed(self.code)


class Ctx:
    def __init__(self, args, fx: Fixture, work: str, rng: random.Random):
        self.args = args
        self.ethrex = args.ethrex
        self.fx = fx
        self.work = work
        self.rng = rng
        self.deadline = time.monotonic() + args.timeout
        self.kept = 0
        self.serve_datadirs: Dict[str, str] = {}  # db -> a datadir holding the whole chain

    def import_cmd(self, datadir: str, db: str) -> List[str]:
        return [self.ethrex, "import", "--network", self.fx.genesis, "--datadir", datadir,
                "--db", db, "--bal", self.fx.bal, self.fx.chain]

    def keep_failure(self, what: str, datadir: str, logs: List[str]) -> str:
        """Keep a failing kill's data directory and logs (the first 3; the rest: logs only)."""
        dest = os.path.join(self.work, f"failed-{what}")
        os.makedirs(dest, exist_ok=True)
        for log in logs:
            if os.path.exists(log):
                shutil.copy(log, dest)
        if os.path.isdir(datadir):
            if self.kept < 3:
                shutil.move(datadir, os.path.join(dest, "datadir"))
            else:
                shutil.rmtree(datadir, ignore_errors=True)
        self.kept += 1
        return dest


def import_once(ctx: Ctx, datadir: str, db: str, log_path: str, timeout: float,
                kill: Optional[Kill] = None) -> ImportRun:
    """One `ethrex import`, run to its end or killed as `kill` says."""
    r = ImportRun()
    progress = Progress()
    t0 = time.monotonic()
    proc = spawn(ctx.import_cmd(datadir, db), log_path, pipe=True)

    def reader():
        with open(log_path, "ab") as fh:
            fh.write(("$ " + " ".join(proc.args) + "\n").encode())
            for raw in proc.stdout:
                now = time.monotonic() - t0
                fh.write(raw)
                line = raw.decode("utf-8", errors="replace")
                r.tail = (r.tail + [line.rstrip()])[-20:]
                if r.t_open is None and "chain opened" in line:
                    r.t_open = now
                m = IMPORTED.search(line)
                if m:
                    if int(m.group(1)) == ctx.fx.last:
                        r.t_last_block = now
                    progress.note(int(m.group(1)))
                m = FINAL.search(line)
                if m:
                    r.final = m
        progress.finish()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    if kill is not None:
        r.killer = Killer(kill, proc, t0, progress)
    r.code = reap(proc, timeout)
    r.t_end = time.monotonic() - t0
    if r.killer:
        r.killer.cancel()
    thread.join(timeout=10)
    return r


def check_import_end(ctx: Ctx, r: ImportRun, what: str) -> None:
    fx = ctx.fx
    if r.code is None:
        raise Failure(f"{what} hung (killed after {r.t_end:.0f} s)")
    if r.code != 0:
        raise Failure(f"{what} exited with {r.code}: " + " | ".join(r.tail[-5:]))
    m = r.final
    if not m:
        raise Failure(f"{what}: no final line: " + " | ".join(r.tail[-3:]))
    head, hash_, root = int(m.group(3)), m.group(4).lower(), m.group(5).lower()
    if (head, hash_, root) != (fx.last, fx.last_hash, fx.roots[-1]):
        raise Failure(f"{what} ended at block {head} {hash_} (state root {root}), "
                      f"want {fx.last} {fx.last_hash} ({fx.roots[-1]})")


def import_mode(ctx: Ctx, db: str, count: int) -> tuple[int, int]:
    fx, args = ctx.fx, ctx.args
    base = os.path.join(ctx.work, f"import-{db}")
    os.makedirs(base, exist_ok=True)
    datadir = os.path.join(base, "data")
    # Calibration: one whole import, timed.
    log = os.path.join(base, "calibration.log")

    def whole() -> ImportRun:
        r = import_once(ctx, datadir, db, log, args.child_timeout)
        check_import_end(ctx, r, "the calibration import")
        return r

    cal = calibrate(ctx, "import", db, datadir, log, "a whole import", whole)
    if cal is None:
        return 0, count
    t_open = cal.t_open or 0.0
    t_last = cal.t_last_block or cal.t_end
    print(f"import {db}: a whole import takes {cal.t_end:.2f} s (chain opened at {t_open:.2f} s, "
          f"block {fx.last} logged at {t_last:.2f} s); {count} kills", flush=True)
    if db in args.sync_dbs:
        ctx.serve_datadirs[db] = datadir + ".serve"  # the sync mode's serving node
        shutil.move(datadir, ctx.serve_datadirs[db])
    shutil.rmtree(datadir, ignore_errors=True)
    kills = plan_kills(ctx.rng, count, fx.last, t_open, cal.t_end,
                       block_time=(t_last - t_open) / fx.last, first="open",
                       final_tail=max(0.0, cal.t_end - t_last))
    timeout = max(args.child_timeout, 10 * cal.t_end)

    def once(log: str, kill: Kill) -> Attempt:
        r = import_once(ctx, datadir, db, log, timeout, kill)
        if r.killed:
            return Attempt(r.killer)
        check_import_end(ctx, r, "the import")  # raises if it failed by itself
        return Attempt(r.killer, retry=r.t_end / cal.t_end)

    def resume(log: str, _attempt: Attempt, head: int) -> None:
        r = import_once(ctx, datadir, db, log, timeout)
        check_import_end(ctx, r, "the resumed import")
        present = int(r.final.group(2))
        if present != max(head, 0):
            raise Failure(f"the resumed import found {present} blocks already present, "
                          f"verify-db's head was {fmt_head(head)}")

    passed = kill_loop(ctx, "import", db, kills, base, datadir, timeout, once, resume,
                       finished="import", resumed="the resume")
    return passed, count


# ---------------------------------------------------------------- node mode

class NodeProc:
    """One `ethrex node` on free loopback ports (new ones every start)."""

    def __init__(self, ctx: Ctx, datadir: str, db: str, log_path: str, extra: List[str]):
        self.ctx, self.datadir, self.db, self.log_path, self.extra = ctx, datadir, db, log_path, extra
        self.secret = jwt.new_secret()
        self.jwt_path = os.path.join(os.path.dirname(datadir), f"jwt-{os.path.basename(datadir)}.hex")
        with open(self.jwt_path, "w") as fh:
            fh.write(jwt.secret_to_hex(self.secret))
        self.proc: Optional[subprocess.Popen] = None
        self.t0 = 0.0

    def start(self) -> None:
        auth, http = free_ports(2)
        cmd = [self.ctx.ethrex, "node", "--network", self.ctx.fx.genesis, "--datadir", self.datadir,
               "--db", self.db, "--authrpc.addr", "127.0.0.1", "--authrpc.port", str(auth),
               "--authrpc.jwtsecret", self.jwt_path, "--http.addr", "127.0.0.1",
               "--http.port", str(http)] + self.extra
        self.engine = RPCClient(f"http://127.0.0.1:{auth}", self.secret, self.ctx.args.rpc_timeout)
        self.eth = RPCClient(f"http://127.0.0.1:{http}", None, self.ctx.args.rpc_timeout)
        self.t0 = time.monotonic()
        self.proc = spawn(cmd, self.log_path)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace: float = 60.0) -> None:
        """Stop (SIGTERM) a node that is still running; Failure if it will not stop."""
        if self.alive() and stop_gracefully(self.proc, grace) is None:
            raise Failure(f"the node did not stop within {grace:.0f} s of SIGTERM")

    def abandon(self) -> None:
        """Stop a node a failure left running (SIGTERM, SIGKILL after 10 s)."""
        if self.alive():
            stop_gracefully(self.proc, 10)

    def wait_ready(self, timeout: float) -> bool:
        """Until both ports answer (True), or the node exits (False); Failure on timeout."""
        deadline = time.monotonic() + timeout
        eth_ok = False
        while True:
            if not self.alive():
                return False
            try:
                if not eth_ok:
                    self.eth.call("eth_blockNumber", [], timeout=2)
                    eth_ok = True
                try:
                    self.engine.call("engine_exchangeCapabilities", [[]], timeout=2)
                except RPCError:
                    pass
                return True
            except TransportError:
                pass
            if time.monotonic() > deadline:
                raise Failure(f"the node did not answer within {timeout:.0f} s")
            time.sleep(0.05)

    def head(self) -> tuple[int, str]:
        block = self.eth.call("eth_getBlockByNumber", ["latest", False])
        return int(block["number"], 16), block["hash"].lower()


def wait_exit(proc: subprocess.Popen, seconds: float) -> bool:
    try:
        proc.wait(timeout=seconds)
        return True
    except subprocess.TimeoutExpired:
        return False


@dataclass
class Feed:
    sent: int = 0  # highest block whose newPayload was sent (or the node's head at start)
    valid: int = -1  # highest block that forkchoiceUpdated answered VALID (-1: none yet)
    t_ready: float = 0.0
    t_done: float = 0.0
    progress: Progress = field(default_factory=Progress)


def feed(ctx: Ctx, node: NodeProc, start: int, state: Feed, deadline: float) -> bool:
    """Blocks start..last over the Engine API; True when done, False when the node died."""
    fx = ctx.fx
    for number in range(start, fx.last + 1):
        call = fx.calls[number - 1]
        if time.monotonic() > deadline:
            raise Failure(f"feeding timed out at block {number}")
        try:
            state.sent = number
            reply = node.engine.call(call.method, call.params)
            status = (reply or {}).get("status")
            if status != "VALID":
                raise Failure(f"newPayload of block {number}: {status}: {str(reply)[:300]}")
            fc = {"headBlockHash": call.block_hash, "safeBlockHash": call.block_hash,
                  "finalizedBlockHash": fx.hashes[0]}
            reply = node.engine.call(f"engine_forkchoiceUpdatedV{call.fcu_version}", [fc, None])
            status = ((reply or {}).get("payloadStatus") or {}).get("status")
            if status != "VALID":
                raise Failure(f"forkchoiceUpdated to block {number}: {status}: {str(reply)[:300]}")
            state.valid = number
            state.progress.note(number)
        except (TransportError, RPCError) as err:
            if wait_exit(node.proc, 5):
                return False  # the node died (killed): the caller looks at why
            raise Failure(f"block {number}: {err}")
    state.t_done = time.monotonic() - node.t0
    return True


def node_run(ctx: Ctx, node: NodeProc, kill: Optional[Kill], timeout: float) -> tuple[Feed, Optional[Killer]]:
    """Start the node and feed it from its head to the end; `kill` kills it on the way."""
    state = Feed()
    node.start()
    killer = Killer(kill, node.proc, node.t0, state.progress) if kill is not None else None
    deadline = time.monotonic() + timeout
    try:
        if node.wait_ready(timeout):
            state.t_ready = time.monotonic() - node.t0
            try:
                head, _ = node.head()
            except (TransportError, RPCError) as err:
                if not wait_exit(node.proc, 5):
                    raise Failure(f"eth_getBlockByNumber(latest): {err}")
            else:
                # The head a node serves is no durability claim (a fresh node serves its
                # genesis before writing it): only forkchoiceUpdated's VALID is.
                state.sent = head
                if feed(ctx, node, head + 1, state, deadline) and kill is not None and kill.by_block:
                    wait_exit(node.proc, kill.delay + 1)  # a kill due after the last block
    finally:
        state.progress.finish()
        if killer:
            killer.cancel()
    return state, killer


def node_check_restart(ctx: Ctx, node: NodeProc, durable: int, timeout: float) -> None:
    """Restart on the same datadir: head must be the durable head; feed to the end."""
    fx = ctx.fx
    state = Feed()
    node.start()
    if not node.wait_ready(timeout):
        raise Failure(f"the restarted node exited with {node.proc.returncode}: {tail(node.log_path, 5)}")
    number, hash_ = node.head()
    want = max(durable, 0)
    if number != want or hash_ != fx.hashes[want]:
        raise Failure(f"the restarted node's head is {number} {hash_}, verify-db's was {fmt_head(durable)}")
    if not feed(ctx, node, number + 1, state, time.monotonic() + timeout):
        raise Failure(f"the restarted node exited with {node.proc.returncode} while fed")
    number, hash_ = node.head()
    if (number, hash_) != (fx.last, fx.last_hash):
        raise Failure(f"after feeding every block the head is {number} {hash_}, want {fx.last} {fx.last_hash}")
    node.stop()


def node_mode(ctx: Ctx, db: str, count: int) -> tuple[int, int]:
    fx, args = ctx.fx, ctx.args
    base = os.path.join(ctx.work, f"node-{db}")
    os.makedirs(base, exist_ok=True)
    datadir = os.path.join(base, "data")
    extra = ["--p2p.disabled", "--persistence-lag", "0"]
    log = os.path.join(base, "calibration.log")
    node = NodeProc(ctx, datadir, db, log, extra)

    def whole() -> Feed:
        state, _ = node_run(ctx, node, None, args.child_timeout * 4)
        if state.valid != fx.last:
            raise Failure(f"the node exited ({node.proc.returncode}) at block {state.valid}")
        node.stop()
        return state

    cal = calibrate(ctx, "node", db, datadir, log, "the whole feed", whole, node.abandon)
    if cal is None:
        return 0, count
    total = cal.t_done
    print(f"node {db}: a whole feed takes {total:.2f} s from the node's start (it answers at "
          f"{cal.t_ready:.2f} s); {count} kills", flush=True)
    shutil.rmtree(datadir, ignore_errors=True)
    kills = plan_kills(ctx.rng, count, fx.last, cal.t_ready, total,
                       block_time=(total - cal.t_ready) / fx.last, first="start")
    timeout = max(args.child_timeout, 10 * total)

    def once(node: NodeProc, kill: Kill) -> Attempt:
        state, killer = node_run(ctx, node, kill, timeout)
        code = reap(node.proc, 30) if killer.fired_at else None
        if killer.landed(code):
            return Attempt(killer, detail=f"(block {state.sent} sent, {fmt_head(state.valid)} VALID)",
                           state=state)
        node.stop()  # fed to the end before the kill: retry
        return Attempt(killer, retry=(state.t_done or total) / total)

    def resume(node: NodeProc, attempt: Attempt, head: int) -> str:
        state = attempt.state
        if head < state.valid:
            raise Failure(f"lost a VALID head: forkchoiceUpdated answered VALID for block "
                          f"{state.valid}, the durable head after the kill is {fmt_head(head)}")
        if head > max(state.sent, 0):
            raise Failure(f"the durable head {head} is beyond the last block sent ({state.sent})")
        node_check_restart(ctx, node, head, timeout)
        return f" >= {fmt_head(state.valid)}"

    passed = kill_loop(ctx, "node", db, kills, base, datadir, timeout, once, resume,
                       finished="feed", resumed="the resumed feed",
                       child=lambda log: NodeProc(ctx, datadir, db, log, extra),
                       abandon=NodeProc.abandon)
    return passed, count


# ---------------------------------------------------------------- sync mode

def wait_synced(ctx: Ctx, node: NodeProc, deadline: float) -> bool:
    """Until the node's head is the fixture's last block (True) or it exits (False)."""
    fx = ctx.fx
    if not node.wait_ready(max(1.0, deadline - time.monotonic())):
        return False
    while True:
        if not node.alive():
            return False
        try:
            if node.head() == (fx.last, fx.last_hash):
                return True
        except (TransportError, RPCError):
            pass
        if time.monotonic() > deadline:
            raise Failure(f"the sync did not reach block {fx.last} in time")
        time.sleep(0.05)


def sync_run(ctx: Ctx, node: NodeProc, kill: Optional[Kill], timeout: float) -> tuple[Optional[float], Progress, Optional[Killer]]:
    """Start the syncing node; (seconds to reach the target or None, progress, killer)."""
    progress = Progress()
    node.start()
    follower = follow_log(node.log_path, node.proc, progress)
    killer = Killer(kill, node.proc, node.t0, progress) if kill is not None else None
    t_synced = None
    try:
        if wait_synced(ctx, node, time.monotonic() + timeout):
            t_synced = time.monotonic() - node.t0
            if kill is not None and kill.by_block:
                wait_exit(node.proc, kill.delay + 1)  # a kill due after the last block
    finally:
        if killer:
            killer.cancel()
    if not node.alive():
        follower.join(timeout=5)
    return t_synced, progress, killer


def sync_mode(ctx: Ctx, db: str, count: int) -> tuple[int, int]:
    fx, args = ctx.fx, ctx.args
    base = os.path.join(ctx.work, f"sync-{db}")
    os.makedirs(base, exist_ok=True)
    serve_dir = ctx.serve_datadirs.get(db) or os.path.join(base, "serve")
    serve_log = os.path.join(base, "serve.log")
    server = NodeProc(ctx, serve_dir, db, serve_log, ["--p2p.addr", "127.0.0.1", "--p2p.port", "0", "--nodiscover"])
    try:
        if not os.path.isdir(serve_dir):
            r = import_once(ctx, serve_dir, db, os.path.join(base, "serve-import.log"), args.child_timeout)
            check_import_end(ctx, r, "the serving node's import")
        server.start()
        if not server.wait_ready(args.child_timeout):
            raise Failure(f"the serving node exited with {server.proc.returncode}")
        if server.head() != (fx.last, fx.last_hash):
            raise Failure(f"the serving node's head is {server.head()}")
        enode = server.eth.call("admin_nodeInfo", [])["enode"]
    except (Failure, TransportError, RPCError) as err:
        print(f"sync {db}: the serving node failed: {err} (log {serve_log})", flush=True)
        server.abandon()
        shutil.rmtree(serve_dir, ignore_errors=True)
        return 0, count
    extra = ["--p2p.addr", "127.0.0.1", "--p2p.port", "0", "--nodiscover", "--peers", enode,
             "--sync.target", fx.last_hash]
    datadir = os.path.join(base, "data")
    try:
        log = os.path.join(base, "calibration.log")
        node = NodeProc(ctx, datadir, db, log, extra)

        def whole() -> float:
            t_synced, _, _ = sync_run(ctx, node, None, args.child_timeout * 4)
            if t_synced is None:
                raise Failure(f"the syncing node exited with {node.proc.returncode}")
            node.stop()
            return t_synced

        total = calibrate(ctx, "sync", db, datadir, log, "the whole sync", whole, node.abandon,
                          logs=[serve_log])
        if total is None:
            return 0, count
        print(f"sync {db}: a whole sync takes {total:.2f} s from the node's start; {count} kills "
              f"(serving node: {enode.split('@')[-1]})", flush=True)
        shutil.rmtree(datadir, ignore_errors=True)
        kills = plan_kills(ctx.rng, count, fx.last, 0.0, total, block_time=total / fx.last)
        timeout = max(args.child_timeout, 10 * total)

        def once(node: NodeProc, kill: Kill) -> Attempt:
            t_synced, _, killer = sync_run(ctx, node, kill, timeout)
            code = reap(node.proc, 30) if killer.fired_at else None
            if killer.landed(code):
                return Attempt(killer)
            node.stop()  # synced before the kill: retry
            return Attempt(killer, retry=(t_synced or total) / total)

        def resume(node: NodeProc, _attempt: Attempt, _head: int) -> None:
            t_synced, _, _ = sync_run(ctx, node, None, timeout)
            if t_synced is None:
                raise Failure(f"the restarted node exited with {node.proc.returncode}")
            node.stop()

        def server_gone() -> Optional[str]:
            if not server.alive():
                return f"the serving node exited ({server.proc.returncode}); log {serve_log}"
            return None

        passed = kill_loop(ctx, "sync", db, kills, base, datadir, timeout, once, resume,
                           finished="sync", resumed="the resumed sync",
                           child=lambda log: NodeProc(ctx, datadir, db, log, extra),
                           abandon=NodeProc.abandon, logs=[serve_log], skip=server_gone)
        return passed, count
    finally:
        if server.alive():
            stop_gracefully(server.proc, 30)
        shutil.rmtree(serve_dir, ignore_errors=True)


# ---------------------------------------------------------------- main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ethrex", required=True, help="the ethrex binary")
    ap.add_argument("--fixture", required=True, help="directory with stress.{rlp,bal.rlp,genesis.json,blockchain_test.json}")
    ap.add_argument("--kills", type=int, default=20, help="kills per backend during `ethrex import` (default 20)")
    ap.add_argument("--node-kills", type=int, default=10, help="kills per backend of a node fed over the Engine API (default 10)")
    ap.add_argument("--sync-kills", type=int, default=None, help="kills per backend of a node syncing from a peer (default: --node-kills)")
    ap.add_argument("--db", choices=["mdbx", "rocksdb", "both"], default="both")
    ap.add_argument("--modes", default="import,node,sync", help="comma-separated subset of import,node,sync")
    ap.add_argument("--seed", type=int, default=None, help="the kill moments' seed (default: random, printed)")
    ap.add_argument("--quick", action="store_true", help="2 kills per mode and backend (a smoke run)")
    ap.add_argument("--timeout", type=float, default=4 * 3600, help="overall budget in seconds (default 4 h)")
    ap.add_argument("--child-timeout", type=float, default=300, help="floor of every child's time limit (s)")
    ap.add_argument("--rpc-timeout", type=float, default=60, help="one JSON-RPC call (s)")
    ap.add_argument("--work", default=None, help="scratch directory (default: a new one under $TMPDIR)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = ap.parse_args()
    if args.quick:
        args.kills = args.node_kills = 2
        args.sync_kills = 2 if args.sync_kills is None else args.sync_kills
    if args.sync_kills is None:
        args.sync_kills = args.node_kills
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 2**31)
    modes = [m for m in args.modes.split(",") if m]
    if any(m not in ("import", "node", "sync") for m in modes):
        ap.error("--modes takes import, node and sync")
    dbs = ["mdbx", "rocksdb"] if args.db == "both" else [args.db]
    args.sync_dbs = dbs if "sync" in modes else []
    rng = random.Random(args.seed)

    started = time.monotonic()
    code, version = run([args.ethrex, "--version"], 30)
    print(f"crash-loop: seed {args.seed} (--seed {args.seed} repeats the kill moments), "
          f"{version.strip()} ({args.ethrex}), fixture {args.fixture}", flush=True)
    fx = load_fixture(args.fixture, engine_calls="node" in modes)
    print(f"crash-loop: fixture of {fx.last} blocks, last {fx.last_hash} (state root {fx.roots[-1]}); "
          f"fixture loaded in {time.monotonic() - started:.1f} s", flush=True)

    work = args.work or tempfile.mkdtemp(prefix="crash-loop.", dir=os.environ.get("TMPDIR", "/tmp"))
    os.makedirs(work, exist_ok=True)
    ctx = Ctx(args, fx, work, rng)

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    results: List[tuple[str, int, int]] = []
    interrupted = False
    try:
        # Each (mode, db) draws from its own generator: a subset of modes or backends with
        # the same seed gets the same moments.
        for mode in ("import", "node", "sync"):
            if mode not in modes:
                continue
            for db in dbs:
                ctx.rng = random.Random(f"{args.seed}-{mode}-{db}")
                count = {"import": args.kills, "node": args.node_kills, "sync": args.sync_kills}[mode]
                fn = {"import": import_mode, "node": node_mode, "sync": sync_mode}[mode]
                passed, total = fn(ctx, db, count)
                results.append((f"{mode} {db}", passed, total))
    except KeyboardInterrupt:
        interrupted = True
        print("crash-loop: interrupted", flush=True)
    finally:
        kill_children()
        failed = interrupted or any(p != t for _, p, t in results)
        if args.keep or failed:
            print(f"crash-loop: scratch directory kept: {work}", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    minutes = (time.monotonic() - started) / 60
    summary = ", ".join(f"{name} {p}/{t}" for name, p, t in results)
    print(f"crash-loop: {summary}", flush=True)
    print(f"crash-loop: {minutes:.1f} min, seed {args.seed}", flush=True)
    return 1 if failed or not results else 0


if __name__ == "__main__":
    sys.exit(main())
