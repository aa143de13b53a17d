"""Run one blockchain test against a fresh node, the way Hive's consume-engine does.

Sequence (mirrors the simulator):
1. write genesis.json + JWT secret, start `ethrex node`, wait until it answers;
2. eth_getBlockByNumber("0x0").hash must equal genesisBlockHeader.hash;
3. forkchoiceUpdated to the genesis hash, retried until VALID (bounded);
4. per block: engine_newPayloadVn; VALID expected unless the block carries
   expectException / validationError, then INVALID with a validationError that
   maps to one of the fixture's exceptions (see exceptions.py); a JSON-RPC error
   passes only where the fixture names that errorCode; after each VALID payload,
   forkchoiceUpdated to it must be VALID;
5. eth_getBlockByNumber("latest").hash must equal the fixture's lastblockhash;
6. stop the node, always.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import List, Optional

from . import exceptions, fixtures, payload
from .node import Node, NodeStartError
from .rpc import RPCError, TransportError

PASS, FAIL, SKIP = "pass", "fail", "skip"


@dataclass
class Options:
    binary: str
    db: Optional[str] = None
    timeout: float = 120.0  # whole-test budget, node start included
    rpc_timeout: float = 30.0  # one JSON-RPC call
    keep_logs: Optional[str] = None
    verbose: bool = False
    extra_args: List[str] = field(default_factory=list)


@dataclass
class Result:
    name: str
    status: str
    reason: str = ""
    start_failure: bool = False
    notes: List[str] = field(default_factory=list)  # printed with -v
    # Blocks that were not sent (and why that still counts as the expected
    # rejection); always printed.
    unsent: List[str] = field(default_factory=list)
    seconds: float = 0.0


class TestFailure(Exception):
    pass


class NodeDidNotStart(TestFailure):
    """Separate type so the CLI can stop after repeated start failures."""


class Budget:
    """A per-test deadline; every wait in the runner is cut to what is left."""

    def __init__(self, seconds: float):
        self.deadline = time.monotonic() + seconds

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def check(self, what: str) -> None:
        if self.left() <= 0:
            raise TestFailure(f"test timeout while {what}")


def _safe_name(name: str) -> str:
    """File name for a test's log: the part after '::', sanitized, unique via a short digest."""
    short = re.sub(r"[^A-Za-z0-9._-]+", "_", name.split("::")[-1]).strip("_")[:150]
    return f"{short}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def _short(text, limit: int = 300) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Session:
    def __init__(self, node: Node, opts: Options, budget: Budget):
        self.node = node
        self.opts = opts
        self.budget = budget

    def engine(self, method: str, params: list):
        self.budget.check(f"calling {method}")
        timeout = max(1.0, min(self.opts.rpc_timeout, self.budget.left()))
        return self.node.engine.call(method, params, timeout=timeout)

    def eth(self, method: str, params: list):
        self.budget.check(f"calling {method}")
        timeout = max(1.0, min(self.opts.rpc_timeout, self.budget.left()))
        return self.node.eth.call(method, params, timeout=timeout)

    def forkchoice(self, version: int, head: str, finalized: str) -> dict:
        state = {"headBlockHash": head, "safeBlockHash": head, "finalizedBlockHash": finalized}
        return self.engine(f"engine_forkchoiceUpdatedV{version}", [state, None])

    def fcu_genesis(self, version: int, genesis_hash: str, attempts: int = 20) -> None:
        last = None
        for attempt in range(attempts):
            try:
                reply = self.forkchoice(version, genesis_hash, genesis_hash)
                status = (reply or {}).get("payloadStatus", {}).get("status")
                if status == "VALID":
                    return
                last = f"status {status}: {_short(reply)}"
            except (RPCError, TransportError) as err:
                last = str(err)
            if self.budget.left() <= 0.5:
                break
            time.sleep(min(0.25 * (attempt + 1), 1.0, max(0.0, self.budget.left() - 0.5)))
        raise TestFailure(
            f"engine_forkchoiceUpdatedV{version} to genesis {genesis_hash} never VALID "
            f"(last: {_short(last)})"
        )

    def check_head(self, expected: str) -> None:
        """The node's head (eth_getBlockByNumber("latest")) must be the fixture's lastblockhash."""
        try:
            head = self.eth("eth_getBlockByNumber", ["latest", False]) or {}
        except (RPCError, TransportError) as err:
            raise TestFailure(f"eth_getBlockByNumber(latest) failed: {err}") from None
        got = head.get("hash") if isinstance(head, dict) else None
        if not got or got.lower() != expected.lower():
            raise TestFailure(
                f"final head {got} (number {head.get('number') if isinstance(head, dict) else None}) "
                f"!= lastblockhash {expected}"
            )

    def check_genesis(self, expected: str, attempts: int = 5) -> None:
        got, error = None, None
        for attempt in range(attempts):  # bounded: a node may still be loading genesis
            try:
                got = (self.eth("eth_getBlockByNumber", ["0x0", False]) or {}).get("hash")
                error = None
            except (RPCError, TransportError) as err:
                error = err
            if got or self.budget.left() < 1:
                break
            time.sleep(0.2 * (attempt + 1))
        if error is not None:
            raise TestFailure(f"eth_getBlockByNumber(0x0) failed: {error}")
        if not got or got.lower() != expected.lower():
            raise TestFailure(f"genesis hash mismatch: node {got}, fixture {expected}")

    def send(self, index: int, call: payload.PayloadCall, genesis_hash: str) -> None:
        label = f"block {index + 1} ({call.method}, {call.block_hash[:18]}..)"
        try:
            reply = self.engine(call.method, call.params)
        except RPCError as err:
            # Hive's rule: a JSON-RPC error is an answer only where the fixture
            # names that errorCode; an invalid block is otherwise answered INVALID.
            if call.error_code is not None:
                if err.code != call.error_code:
                    raise TestFailure(
                        f"{label}: expected error code {call.error_code}, got {err.code} ({err.message})"
                    ) from None
                return
            if call.expect_invalid:
                raise TestFailure(
                    f"{label}: expected INVALID ({call.expected}), got JSON-RPC error "
                    f"{err.code} ({err.message}); the fixture names no errorCode"
                ) from None
            raise TestFailure(f"{label}: expected VALID, got {err}") from None
        except TransportError as err:
            raise TestFailure(f"{label}: no answer: {err}") from None

        if call.error_code is not None:
            raise TestFailure(
                f"{label}: expected JSON-RPC error {call.error_code}, got {_short(reply)}"
            )
        status = (reply or {}).get("status")
        if call.expect_invalid:
            if status != "INVALID":
                raise TestFailure(
                    f"{label}: expected INVALID ({call.expected}), got {status}: {_short(reply)}"
                )
            validation_error = reply.get("validationError")
            if not validation_error:
                raise TestFailure(f"{label}: INVALID but validationError is null ({call.expected})")
            matches, names = exceptions.verdict_matches(validation_error, call.expected)
            if not matches:
                what = ", ".join(sorted(names)) if names else "no known exception"
                raise TestFailure(
                    f"{label}: INVALID for the wrong reason: validationError "
                    f"{_short(validation_error)!r} maps to {what}; the fixture expects {call.expected}"
                )
            return
        if status != "VALID":
            raise TestFailure(f"{label}: expected VALID, got {status}: {_short(reply)}")

        try:
            fcu = self.forkchoice(call.fcu_version, call.block_hash, genesis_hash)
        except (RPCError, TransportError) as err:
            raise TestFailure(f"{label}: engine_forkchoiceUpdatedV{call.fcu_version} failed: {err}") from None
        fcu_status = (fcu or {}).get("payloadStatus", {}).get("status")
        if fcu_status != "VALID":
            raise TestFailure(
                f"{label}: engine_forkchoiceUpdatedV{call.fcu_version} -> {fcu_status}: {_short(fcu)}"
            )


def _plan(test: fixtures.Test):
    """(genesis hash, fcu version for genesis, list of calls or SkipBlock notes)."""
    data = test.data
    network = data.get("network") or (data.get("config") or {}).get("network", "")
    schedule = fixtures.fork_schedule(network)
    genesis_hash = data["genesisBlockHeader"]["hash"]
    genesis_ts = int(data["genesisBlockHeader"].get("timestamp", "0x0"), 16)
    steps: list = []
    if test.is_engine:
        try:
            steps = payload.engine_calls(data)
        except (ValueError, KeyError, TypeError, IndexError) as err:
            raise TestFailure(f"malformed engineNewPayloads entry: {err!r}") from None
        fcu_version = next(
            (c.fcu_version for c in steps if c.fcu_version),
            payload.fcu_version_for(fixtures.fork_at(schedule, genesis_ts)),
        )
        for c in steps:
            if not c.fcu_version:
                c.fcu_version = fcu_version
    else:
        fcu_version = payload.fcu_version_for(fixtures.fork_at(schedule, genesis_ts))
        deposit_contract = (data.get("config") or {}).get("depositContractAddress")
        tracker = payload.RequestTracker(deposit_contract)
        for index, block in enumerate(data["blocks"]):
            try:
                steps.append(payload.build_call(block, schedule, tracker))
            except payload.SkipBlock as skip:
                steps.append(_judge_unsendable(index, block, skip))
            except payload.SkipTest:
                raise
            except (ValueError, KeyError) as err:
                raise TestFailure(f"cannot build payload: {err}") from None
    return genesis_hash, fcu_version, steps


def _judge_unsendable(index: int, block: dict, skip: "payload.SkipBlock") -> "payload.SkipBlock":
    """An expected-invalid block that cannot be sent: is that its expected rejection?

    A part that does not decode proves only a malformed block (exceptions.py,
    decode-class names). A block that decodes but has no ExecutionPayload form
    (uncles, PoW fields) cannot reach the node, so only a format exception is
    settled by that; any other rule it breaks cannot be checked here.
    """
    expected = block.get("expectException") or ""
    if skip.what is not None and exceptions.decode_failure_satisfies(skip.what, expected):
        return skip
    if skip.what is None:
        if "BlockException.INCORRECT_BLOCK_FORMAT" in exceptions.alternatives(expected):
            return skip
        raise payload.SkipTest(
            f"block {index + 1} cannot be sent over the Engine API: {skip}; its expected "
            f"exception {expected} cannot be checked through it"
        )
    raise TestFailure(
        f"block {index + 1}: {skip}, but the fixture expects {expected}, which a decode "
        f"failure does not satisfy"
    )


def run_test(test: fixtures.Test, opts: Options) -> Result:
    started = time.monotonic()
    result = Result(name=test.name, status=PASS)
    try:
        if test.error:
            result.status, result.reason = FAIL, f"{test.path}: {test.error}"
            return result
        if test.skip:
            result.status, result.reason = SKIP, test.skip
            return result
        try:
            genesis = fixtures.build_genesis(test.data)
            genesis_hash, fcu_version, steps = _plan(test)
        except fixtures.UnsupportedNetwork as err:
            result.status, result.reason = SKIP, str(err)
            return result
        except payload.SkipTest as err:
            result.status, result.reason = SKIP, str(err)
            return result
        except TestFailure as err:
            result.status, result.reason = FAIL, str(err)
            return result
        except (KeyError, ValueError, TypeError) as err:
            result.status, result.reason = FAIL, f"cannot read fixture: {err!r}"
            return result
        _run_on_node(test, opts, genesis, genesis_hash, fcu_version, steps, result)
        return result
    finally:
        result.seconds = time.monotonic() - started


def _run_on_node(test, opts, genesis, genesis_hash, fcu_version, steps, result) -> None:
    last_block_hash = test.data.get("lastblockhash")
    if not last_block_hash:
        result.status, result.reason = FAIL, "malformed fixture: no lastblockhash"
        return
    workdir = tempfile.mkdtemp(prefix="ethrex-hive-")
    budget = Budget(opts.timeout)
    node = None
    log_printed = False
    try:
        for attempt in range(2):
            node = Node(opts.binary, workdir if attempt == 0 else tempfile.mkdtemp(dir=workdir),
                        genesis, db=opts.db, extra_args=opts.extra_args)
            try:
                node.start(budget.deadline, opts.rpc_timeout)
                break
            except NodeStartError as err:
                node.stop()
                log = node.log_tail()
                port_clash = any(m in log.lower() for m in ("address already in use", "addrinuse", "os error 98"))
                if attempt == 0 and port_clash and budget.left() > 5:
                    continue  # lost the race for a free port; pick new ones once
                print(f"--- node log tail ({test.name}) ---\n{log}\n---", file=sys.stderr)
                log_printed = True
                last_lines = " | ".join([l for l in log.splitlines() if l.strip()][-5:])
                raise NodeDidNotStart(f"node did not start: {err}: {_short(last_lines, 600)}") from None

        session = _Session(node, opts, budget)
        # The genesis hash is checked first: when it differs, forkchoice to the
        # fixture's genesis could only ever answer SYNCING, a less useful failure.
        session.check_genesis(genesis_hash)
        session.fcu_genesis(fcu_version, genesis_hash)
        for index, step in enumerate(steps):
            if isinstance(step, payload.SkipBlock):
                expected = test.data["blocks"][index].get("expectException")
                result.unsent.append(f"block {index + 1} not sent: {step}; counts as the expected {expected}")
                continue
            result.notes.extend(f"block {index + 1}: {n}" for n in step.notes)
            session.send(index, step, genesis_hash)
            if not node.running():
                raise TestFailure(f"node exited (code {node.proc.returncode}) after block {index + 1}")
        session.check_head(last_block_hash)
    except TestFailure as err:
        result.status, result.reason = FAIL, str(err)
        result.start_failure = isinstance(err, NodeDidNotStart)
        if node is not None and node.proc is not None and not log_printed:
            print(f"--- node log tail ({test.name}) ---\n{node.log_tail()}\n---", file=sys.stderr)
    finally:
        if node is not None:
            node.stop()
        if opts.keep_logs:
            os.makedirs(opts.keep_logs, exist_ok=True)
            if node is not None and os.path.exists(node.log_path):
                shutil.copyfile(node.log_path, os.path.join(opts.keep_logs, _safe_name(test.name) + ".log"))
        shutil.rmtree(workdir, ignore_errors=True)
