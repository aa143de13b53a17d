#!/usr/bin/env python3
"""Docker-free stand-in for Hive's `ethereum/rpc-compat` simulator.

Runs the ethereum/execution-apis JSON-RPC conformance tests (`<method>/<test>.io`
files) against one local node, loaded the way Hive loads a client, and judges the
answers by Hive's rules. The rules are those of ethereum/hive
simulators/ethereum/rpc-compat at commit a74a5a7063419f570c83a271dd8b36d4731f5872
(main.go: runTest, redactErrorMessages, numbersEqual; testload.go: loadTests,
loadTestFile; schema.go: the speconly schema check):

* Tests are the `*.io` files under the fixtures folder, in the order Go's
  filepath.Walk visits them (each directory's entries sorted by name, depth
  first). A test's name is its path relative to the folder, without `.io`.
* In a file, blank lines are skipped; `//` lines before the first message are
  the header comment, and a header line whose text (after `//` and one space)
  starts with `speconly:` makes the test speconly; later `//` lines are ignored.
  `>>` (request) and `<<` (expected response) lines carry one JSON value each;
  any other line makes the file invalid.
* Each request is POSTed as is (Content-Type: application/json) to the node's
  HTTP port, 5 s for the whole exchange; a transport failure fails the test.
  The response, trimmed, must be valid JSON.
* A speconly exchange whose response has no top-level `error` member passes if
  the response's `result` validates against the method's OpenRPC result schema
  (openrpc-results.json, JSON Schema draft 2019-09, `format` not asserted).
* Every other exchange is compared exactly: same types, same object keys, same
  array lengths, numbers equal when their float64 values are (their text when
  out of float64 range). The one leniency: wherever the expected response and
  the answer both hold an `error` object with a `message` at the same place
  (top level, or nested as in eth_simulateV1's calls[].error; not inside an
  error object), both messages are dropped. The error `code` and `data` must
  still match.
* A test passes if all its exchanges match; it stops at the first mismatch
  (the file's later requests are not sent). A `<<` with no request waiting for
  it, or a request left without a `<<`, fails the test.
* All tests run against one node, whose state they share: chain.rlp imported
  into genesis.json's chain, then headfcu.json sent to the Engine API (JWT)
  before the first test.

Two deliberate departures from Hive, both about setup rather than judging: an
invalid `.io` file fails only that test (Hive aborts the suite), and a rejected
headfcu.json is reported and the run continues (Hive stops before any test).

Usage: python3 hive/rpc_compat.py [--client ethrex|geth] [--bin ETHREX]
[--geth-bin GETH] [--fixtures DIR] [-k SUBSTRING] [--keep DIR] [--json OUT]
[--allow-failures] [--expect-pass N] [-v]
Prints `FAIL <method>/<test>: <reason>` per failing test, then the line
`rpc-compat: N passed, M failed`. Exit status: 0 if none failed (or with
--allow-failures), 1 on failures or fewer passes than --expect-pass, 2 if the
node could not be loaded or started, 130/143 when interrupted.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from engine_runner import jwt  # noqa: E402


def _import_jsonschema():
    try:
        import jsonschema
    except ImportError:
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "jsonschema"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        import jsonschema
    return jsonschema


jsonschema = _import_jsonschema()

REQUEST_TIMEOUT = 5.0  # Hive's http.Client timeout
START_TIMEOUT = 60.0  # until eth_blockNumber answers
SETUP_TIMEOUT = 600.0  # one chain-loading command (init / import)
ENGINE_TIMEOUT = 30.0  # the headfcu.json call
STOP_GRACE = 10.0  # SIGTERM, then SIGKILL
SHORT = 300  # length of a reason on a FAIL line


# --- test files ---------------------------------------------------------------


class TestFileError(ValueError):
    """The .io file is not in the test format."""


@dataclass
class Message:
    send: bool  # `>>` request, else `<<` expected response
    text: str


@dataclass
class RpcTest:
    name: str
    comment: str = ""
    speconly: bool = False
    messages: List[Message] = field(default_factory=list)


def find_tests(root: str) -> List[Tuple[str, str]]:
    """(name, path) of every `.io` file under root, in filepath.Walk order."""
    found: List[Tuple[str, str]] = []

    def walk(directory: str, prefix: str) -> None:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: os.fsencode(e.name))
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                walk(entry.path, prefix + entry.name + "/")
            elif entry.name.endswith(".io"):
                found.append((prefix + entry.name[: -len(".io")], entry.path))

    walk(root, "")
    return found


def parse_test(name: str, text: str) -> RpcTest:
    """Read one `.io` file's text (see the module docstring for the format)."""
    test = RpcTest(name)
    in_header = True
    for raw in text.split("\n"):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("//"):
            if in_header:
                comment = line[2:].removeprefix(" ")
                test.comment += comment + "\n"
                test.speconly = test.speconly or comment.startswith("speconly:")
        elif line.startswith((">>", "<<")):
            in_header = False
            data = line[2:].strip()
            try:
                parse_json(data)
            except ValueError:
                raise TestFileError(f"invalid JSON in line {shorten(line, 80)!r}") from None
            test.messages.append(Message(line.startswith(">>"), data))
        else:
            raise TestFileError(f"invalid test line {shorten(line, 80)!r}")
    return test


def load_test(name: str, path: str) -> RpcTest:
    with open(path, "rb") as fh:
        return parse_test(name, fh.read().decode("utf-8", "surrogateescape"))


# --- JSON comparison ----------------------------------------------------------


class Number:
    """A JSON number kept as its text, compared the way Hive compares numbers."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING = _Missing()


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str) -> Any:
    """Parse JSON, keeping every number as a `Number` (its exact text)."""
    return json.loads(
        text, parse_int=Number, parse_float=Number, parse_constant=_reject_constant
    )


def dumps(value: Any) -> str:
    """Compact JSON text of a tree from `parse_json` (numbers as written)."""
    if isinstance(value, Number):
        return value.text
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(k) + ":" + dumps(v) for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    return repr(value) if value is MISSING else json.dumps(value)


def _float64(text: str) -> Optional[float]:
    """The float64 value of a number's text; None out of range (Go: ErrRange)."""
    value = float(text)
    return None if math.isinf(value) else value


def numbers_equal(a: Number, b: Number) -> bool:
    fa, fb = _float64(a.text), _float64(b.text)
    if fa is None or fb is None:
        return a.text == b.text
    return fa == fb


def redact_error_messages(got: Any, want: Any) -> bool:
    """Drop `message` from each `error` object present, with a message, in both.

    Walks `want` alongside `got`, without descending into error objects; both
    trees are changed in place. Returns whether anything was dropped.
    """
    redacted = False
    if isinstance(want, dict) and isinstance(got, dict):
        for key, want_child in want.items():
            if key not in got:
                continue
            got_child = got[key]
            if key != "error":
                redacted |= redact_error_messages(got_child, want_child)
            elif (
                isinstance(want_child, dict)
                and isinstance(got_child, dict)
                and "message" in want_child
                and "message" in got_child
            ):
                del want_child["message"], got_child["message"]
                redacted = True
    elif isinstance(want, list) and isinstance(got, list):
        for got_child, want_child in zip(got, want):
            redacted |= redact_error_messages(got_child, want_child)
    return redacted


Difference = Tuple[str, Any, Any]  # (path, expected, got)


def first_difference(got: Any, want: Any, path: str = "$") -> Optional[Difference]:
    """Where `got` first differs from `want`, or None if they are equal."""
    if isinstance(want, Number) and isinstance(got, Number):
        return None if numbers_equal(got, want) else (path, want, got)
    if type(want) is not type(got):
        return (path, want, got)
    if isinstance(want, dict):
        for key, want_child in want.items():
            child = f"{path}.{key}"
            if key not in got:
                return (child, want_child, MISSING)
            diff = first_difference(got[key], want_child, child)
            if diff:
                return diff
        extra = next((key for key in got if key not in want), None)
        return None if extra is None else (f"{path}.{extra}", MISSING, got[extra])
    if isinstance(want, list):
        for i, (got_child, want_child) in enumerate(zip(got, want)):
            diff = first_difference(got_child, want_child, f"{path}[{i}]")
            if diff:
                return diff
        if len(got) == len(want):
            return None
        i = min(len(got), len(want))
        return (
            f"{path}[{i}]",
            want[i] if i < len(want) else MISSING,
            got[i] if i < len(got) else MISSING,
        )
    return None if got == want else (path, want, got)


def shorten(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_difference(got: Any, want: Any, diff: Difference) -> str:
    def has_error(value: Any) -> bool:
        return isinstance(value, dict) and "error" in value

    if has_error(got) and not has_error(want):
        return "expected a result, got error " + shorten(dumps(got["error"]))
    if has_error(want) and not has_error(got):
        return "expected an error, got " + shorten(dumps(got))
    path, expected, actual = diff
    return f"{path}: expected {shorten(dumps(expected))}, got {shorten(dumps(actual))}"


# --- speconly schemas ---------------------------------------------------------


def load_schemas(path: str) -> Dict[str, Any]:
    """Method name -> validator of its result (openrpc-results.json)."""
    with open(path) as fh:
        methods = json.load(fh)["methods"]
    return {name: jsonschema.Draft201909Validator(s) for name, s in methods.items()}


def check_schema(method: str, text: str, schemas: Dict[str, Any]) -> Optional[str]:
    validator = schemas.get(method)
    if validator is None:
        return f"no result schema for speconly method {method!r}"
    reply = json.loads(text, parse_constant=_reject_constant)
    if not isinstance(reply, dict) or "result" not in reply:
        return "speconly: response has neither result nor error"
    error = jsonschema.exceptions.best_match(validator.iter_errors(reply["result"]))
    if error is None:
        return None
    return f"result does not match the {method} schema at {error.json_path}: {error.message}"


# --- one exchange, one test ---------------------------------------------------


def check_response(
    method: str, response: bytes, expected: str, speconly: bool, schemas: Dict[str, Any]
) -> Optional[str]:
    """None if `response` satisfies the `<<` line `expected`, else why not."""
    text = response.decode("utf-8", "replace").strip()
    try:
        got = parse_json(text)
    except ValueError:
        return "invalid JSON response: " + shorten(text)
    if speconly and not (isinstance(got, dict) and "error" in got):
        return check_schema(method, text, schemas)
    want = parse_json(expected)
    redacted = redact_error_messages(got, want)
    diff = first_difference(got, want)
    if diff is None:
        return None
    note = " (error messages ignored)" if redacted else ""
    return describe_difference(got, want, diff) + note


def request_method(text: str) -> str:
    request = json.loads(text)
    method = request.get("method", "") if isinstance(request, dict) else ""
    return method if isinstance(method, str) else json.dumps(method)


@dataclass
class Result:
    name: str
    passed: bool
    reason: str = ""
    exchange: List[str] = field(default_factory=list)  # the last request / response


Send = Callable[[bytes], bytes]


def run_test(test: RpcTest, send: Send, schemas: Dict[str, Any]) -> Result:
    """Play the test's exchanges through `send` (request bytes -> response bytes)."""
    response: Optional[bytes] = None
    method = ""
    exchange: List[str] = []

    def fail(reason: str) -> Result:
        return Result(test.name, False, reason, exchange)

    for message in test.messages:
        if message.send:
            method = request_method(message.text)
            exchange = [">> " + shorten(message.text, 2000)]
            try:
                response = send(message.text.encode("utf-8", "surrogateescape"))
            except (OSError, http.client.HTTPException) as err:
                return fail(f"request failed: {err or type(err).__name__}")
            exchange.append("<< " + shorten(response.decode("utf-8", "replace").strip(), 2000))
            continue
        if response is None:
            return fail("invalid test: response before request")
        reason = check_response(method, response, message.text, test.speconly, schemas)
        if reason:
            return fail(reason)
        response = None
    if response is not None:
        return fail("invalid test: request without expected response")
    return Result(test.name, True)


# --- HTTP ---------------------------------------------------------------------


def post(port: int, body: bytes, timeout: float = REQUEST_TIMEOUT, headers=None) -> bytes:
    """POST `body` to 127.0.0.1:port and return the response body, whatever
    the HTTP status. `timeout` bounds the whole exchange, as Go's
    http.Client.Timeout does: at the deadline the socket is shut down."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed

    timer = threading.Timer(timeout, expire)
    timer.start()
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.sock = sock
    try:
        conn.request("POST", "/", body, {"Content-Type": "application/json", **(headers or {})})
        data = conn.getresponse().read()
    except (OSError, http.client.HTTPException):
        if expired.is_set():
            raise TimeoutError(f"timed out after {timeout:g} s") from None
        raise
    finally:
        timer.cancel()
        conn.close()
    if expired.is_set():
        raise TimeoutError(f"timed out after {timeout:g} s")
    return data


# --- the node under test ------------------------------------------------------


class SetupError(Exception):
    """The node could not be loaded or started."""


def free_ports(count: int) -> List[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def tail(path: str, lines: int = 30) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, os.path.getsize(path) - 32768))
            text = fh.read().decode("utf-8", "replace")
    except OSError as err:
        return f"<no log: {err}>"
    return "\n".join(text.splitlines()[-lines:])


class Client:
    """A node loaded from the fixtures' genesis.json and chain.rlp, as Hive's
    client script for it does, listening on free loopback ports."""

    name = ""

    def __init__(self, binary: str, fixtures: str, workdir: str):
        self.binary = binary
        self.genesis = os.path.join(fixtures, "genesis.json")
        self.chain = os.path.join(fixtures, "chain.rlp")
        self.datadir = os.path.join(workdir, "datadir")
        self.setup_log = os.path.join(workdir, "setup.log")
        self.log_path = os.path.join(workdir, "node.log")
        self.jwt_path = os.path.join(workdir, "jwt.hex")
        self.secret = jwt.new_secret()
        self.http_port, self.auth_port = free_ports(2)
        self.proc: Optional[subprocess.Popen] = None

    def setup_commands(self) -> List[List[str]]:
        raise NotImplementedError

    def node_command(self) -> List[str]:
        raise NotImplementedError

    def load_chain(self) -> None:
        with open(self.setup_log, "ab") as log:
            for command in self.setup_commands():
                log.write(("$ " + " ".join(command) + "\n").encode())
                log.flush()
                try:
                    code = subprocess.run(
                        command, stdin=subprocess.DEVNULL, stdout=log,
                        stderr=subprocess.STDOUT, timeout=SETUP_TIMEOUT,
                    ).returncode
                except (OSError, subprocess.TimeoutExpired) as err:
                    raise SetupError(f"{command[0]}: {err}") from None
                if code != 0:
                    raise SetupError(
                        f"`{' '.join(command[:2])} ...` exited with code {code}:\n"
                        + tail(self.setup_log)
                    )

    def start(self) -> None:
        with open(self.jwt_path, "w") as fh:
            fh.write(jwt.secret_to_hex(self.secret))
        command = self.node_command()
        with open(self.log_path, "ab") as log:
            log.write(("$ " + " ".join(command) + "\n").encode())
            log.flush()
            try:
                self.proc = subprocess.Popen(
                    command, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True,
                )
            except OSError as err:
                raise SetupError(f"cannot run {self.binary}: {err}") from None
        self._wait_ready(time.monotonic() + START_TIMEOUT)

    def _wait_ready(self, deadline: float) -> None:
        while not self._answers():
            if not self.running():
                raise SetupError(
                    f"{self.name} exited with code {self.proc.returncode}:\n" + tail(self.log_path)
                )
            if time.monotonic() > deadline:
                raise SetupError(
                    f"{self.name} did not answer eth_blockNumber within {START_TIMEOUT:.0f} s:\n"
                    + tail(self.log_path)
                )
            time.sleep(0.2)

    def _answers(self) -> bool:
        """eth_blockNumber has a result and the Engine API port accepts connections."""
        body = b'{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}'
        try:
            reply = json.loads(post(self.http_port, body, timeout=2))
            socket.create_connection(("127.0.0.1", self.auth_port), timeout=2).close()
        except (OSError, ValueError, http.client.HTTPException):
            return False
        return isinstance(reply, dict) and "result" in reply

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after STOP_GRACE seconds; safe to call twice."""
        if not self.running():
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def engine_call(self, body: bytes) -> bytes:
        token = jwt.make_token(self.secret)
        return post(self.auth_port, body, ENGINE_TIMEOUT, {"Authorization": "Bearer " + token})


class Ethrex(Client):
    name = "ethrex"

    def setup_commands(self) -> List[List[str]]:
        return [[self.binary, "import", "--network", self.genesis,
                 "--datadir", self.datadir, self.chain]]

    def node_command(self) -> List[str]:
        return [
            self.binary, "node", "--network", self.genesis, "--datadir", self.datadir,
            "--http.addr", "127.0.0.1", "--http.port", str(self.http_port),
            "--authrpc.addr", "127.0.0.1", "--authrpc.port", str(self.auth_port),
            "--authrpc.jwtsecret", self.jwt_path, "--p2p.disabled",
        ]


class Geth(Client):
    """go-ethereum with the flags of Hive's clients/go-ethereum/geth.sh for the
    simulator's environment (forkenv.json: network id, full sync, path scheme),
    plus loopback-only networking in place of Docker's isolation."""

    name = "geth"

    def __init__(self, binary: str, fixtures: str, workdir: str):
        super().__init__(binary, fixtures, workdir)
        with open(os.path.join(fixtures, "forkenv.json")) as fh:
            env = json.load(fh)
        self.flags = [
            "--datadir", self.datadir, "--state.scheme=path",
            "--networkid", env.get("HIVE_NETWORK_ID", "1337"), "--syncmode", "full",
        ]
        if env.get("HIVE_NODETYPE") == "archive":
            self.flags += ["--gcmode", "archive"]

    def setup_commands(self) -> List[List[str]]:
        return [
            [self.binary, *self.flags, "init", self.genesis],
            [self.binary, *self.flags, "import", self.chain],
        ]

    def node_command(self) -> List[str]:
        return [
            self.binary, *self.flags,
            "--http", "--http.addr", "127.0.0.1", "--http.port", str(self.http_port),
            "--http.api", "admin,debug,eth,miner,net,txpool,web3,testing",
            "--authrpc.addr", "127.0.0.1", "--authrpc.port", str(self.auth_port),
            "--authrpc.jwtsecret", self.jwt_path, "--datadir.minfreedisk=0",
            "--nodiscover", "--maxpeers", "0", "--port", "0", "--ipcdisable",
        ]


CLIENTS = {"ethrex": Ethrex, "geth": Geth}


def send_head_fcu(client: Client, path: str) -> Optional[str]:
    """Send headfcu.json to the Engine API; None if its payloadStatus is VALID."""
    with open(path, "rb") as fh:
        body = fh.read()
    try:
        text = client.engine_call(body).decode("utf-8", "replace")
        reply = json.loads(text)
    except (OSError, ValueError, http.client.HTTPException) as err:
        return f"no answer: {err or type(err).__name__}"
    result = reply.get("result") if isinstance(reply, dict) else None
    status = result.get("payloadStatus") if isinstance(result, dict) else None
    if isinstance(status, dict) and status.get("status") == "VALID":
        return None
    return "payloadStatus is not VALID: " + shorten(text.strip(), SHORT)


# --- command line -------------------------------------------------------------


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.expanduser("~/.cache/ethrex-target")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--client", choices=sorted(CLIENTS), default="ethrex",
                   help="node to test, loaded as its Hive client script does (default: ethrex)")
    p.add_argument("--bin", default=os.path.join(target, "release", "ethrex"),
                   help="ethrex binary (default: $CARGO_TARGET_DIR/release/ethrex)")
    p.add_argument("--geth-bin", default=shutil.which("geth") or os.path.expanduser("~/go/bin/geth"),
                   help="geth binary for --client geth (default: geth on PATH, else ~/go/bin/geth)")
    p.add_argument("--fixtures",
                   default=os.path.join(HERE, "..", "..", "shared", "fixtures", "execution-apis"),
                   help="execution-apis tests folder (default: <repo>/../shared/fixtures/execution-apis)")
    p.add_argument("-k", dest="filter", default="", help="run only tests whose name contains this")
    p.add_argument("--keep", metavar="DIR", help="keep datadir and logs in DIR (created; must not hold a datadir)")
    p.add_argument("--json", metavar="OUT", help="write per-test results to OUT")
    p.add_argument("--allow-failures", action="store_true", help="exit 0 whenever the run completed")
    p.add_argument("--expect-pass", type=int, metavar="N", help="exit 1 if fewer than N tests passed")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print passing tests too, and each failure's last exchange")
    return p.parse_args(argv)


def report(result: Result, verbose: bool) -> None:
    if result.passed:
        if verbose:
            print(f"PASS {result.name}", flush=True)
        return
    print(f"FAIL {result.name}: {shorten(result.reason, SHORT)}", flush=True)
    if verbose:
        for line in result.exchange:
            print("    " + line)


def run_suite(client: Client, args: argparse.Namespace, schemas: Dict[str, Any]) -> List[Result]:
    results = []
    for name, path in find_tests(args.fixtures):
        if args.filter not in name:
            continue
        try:
            test = load_test(name, path)
        except (OSError, TestFileError) as err:
            result = Result(name, False, f"invalid test file: {err}")
        else:
            result = run_test(test, lambda body: post(client.http_port, body), schemas)
        report(result, args.verbose)
        results.append(result)
    return results


def write_json(path: str, client: Client, results: List[Result]) -> None:
    passed = sum(r.passed for r in results)
    with open(path, "w") as fh:
        json.dump({
            "client": client.name,
            "binary": client.binary,
            "passed": passed,
            "failed": len(results) - passed,
            "tests": [
                {"name": r.name, "passed": r.passed, "reason": r.reason, "exchange": r.exchange}
                for r in results
            ],
        }, fh, indent=1)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    args.fixtures = os.path.abspath(args.fixtures)
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        if os.path.exists(os.path.join(args.keep, "datadir")):
            print(f"rpc-compat: {args.keep} already holds a datadir", file=sys.stderr)
            return 2
    workdir = os.path.abspath(args.keep or tempfile.mkdtemp(prefix="rpc-compat-"))
    binary = args.geth_bin if args.client == "geth" else args.bin
    client = CLIENTS[args.client](os.path.abspath(binary), args.fixtures, workdir)
    # SIGTERM unwinds like Ctrl-C does, so the node is always stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        schemas = load_schemas(os.path.join(args.fixtures, "openrpc-results.json"))
        print(f"rpc-compat: loading the chain into {client.name} ({client.binary})", file=sys.stderr)
        client.load_chain()
        client.start()
        problem = send_head_fcu(client, os.path.join(args.fixtures, "headfcu.json"))
        if problem:
            print(f"rpc-compat: headfcu.json: {problem} (continuing)", file=sys.stderr)
        results = run_suite(client, args, schemas)
        if not client.running():
            print(f"rpc-compat: {client.name} exited during the run:\n" + tail(client.log_path),
                  file=sys.stderr)
    except (SetupError, OSError, ValueError) as err:
        print(f"rpc-compat: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rpc-compat: interrupted", file=sys.stderr)
        return 130
    finally:
        client.stop()
        if args.keep:
            print(f"rpc-compat: datadir and logs kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    if args.json:
        write_json(args.json, client, results)
    passed = sum(r.passed for r in results)
    failed = len(results) - passed
    code = 0 if failed == 0 or args.allow_failures else 1
    if args.expect_pass is not None and passed < args.expect_pass:
        print(f"rpc-compat: {passed} passed, fewer than --expect-pass {args.expect_pass}",
              file=sys.stderr)
        code = 1
    print(f"rpc-compat: {passed} passed, {failed} failed", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
