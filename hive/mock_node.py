#!/usr/bin/env python3
"""A fake `ethrex node` used only by the unit tests of the runner.

Why it exists: the end-to-end path of consume_engine.py (free ports, process
start, JWT, readiness probing, forkchoice to genesis, payload verdicts, stop)
must be testable without the real node. This stub speaks just enough of the
Engine API and eth JSON-RPC, with behaviour steered by environment variables:

  MOCK_GENESIS_HASH     hash eth_getBlockByNumber("0x0") reports (required)
  MOCK_INVALID_HASHES   comma-separated block hashes answered INVALID
  MOCK_VALIDATION_ERROR the validationError of those INVALID answers
                        (default "mock: block listed as invalid")
  MOCK_RPC_ERROR_HASHES comma-separated block hashes answered with a JSON-RPC
                        error instead (code MOCK_RPC_ERROR_CODE, default -32602)
  MOCK_IGNORE_FCU       "1": forkchoiceUpdated answers VALID but the head stays
                        (eth_getBlockByNumber("latest") keeps the old head)
  MOCK_MODE             "exit" (exit 3 at once), "hang" (never listen),
                        otherwise serve normally
  MOCK_RECORD           file to append every received request to (JSON lines)

It checks the things a real node would refuse: a bad JWT (HTTP 401), wrong
param counts for each newPayload version, missing Amsterdam payload fields,
and unknown parents (SYNCING).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PARAMS = {1: 1, 2: 1, 3: 3, 4: 4, 5: 4}


def b64d(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _hashes(variable: str) -> set:
    return {h.lower() for h in os.environ.get(variable, "").split(",") if h}


class State:
    def __init__(self, genesis_hash: str, invalid: set, record: str | None):
        self.known = {genesis_hash.lower()}
        self.numbers = {genesis_hash.lower(): 0}
        self.genesis_hash = genesis_hash
        self.invalid = invalid
        self.record = record
        self.head = genesis_hash
        self.validation_error = os.environ.get("MOCK_VALIDATION_ERROR", "mock: block listed as invalid")
        self.rpc_error = _hashes("MOCK_RPC_ERROR_HASHES")
        self.rpc_error_code = int(os.environ.get("MOCK_RPC_ERROR_CODE", "-32602"))
        self.ignore_fcu = os.environ.get("MOCK_IGNORE_FCU") == "1"
        self.lock = threading.Lock()


def make_handler(state: State, secret: bytes | None):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep the node log small
            pass

        def _reply(self, code: int, body: dict):
            raw = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def _jwt_ok(self) -> bool:
            auth = self.headers.get("Authorization", "")
            if not auth.startswith("Bearer "):
                return False
            parts = auth[7:].split(".")
            if len(parts) != 3:
                return False
            mac = hmac.new(secret, (parts[0] + "." + parts[1]).encode(), hashlib.sha256).digest()
            if not hmac.compare_digest(mac, b64d(parts[2])):
                return False
            claims = json.loads(b64d(parts[1]))
            return abs(claims.get("iat", 0) - time.time()) <= 60

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            if secret is not None and not self._jwt_ok():
                self._reply(401, {"error": "bad jwt"})
                return
            if state.record:
                with state.lock, open(state.record, "a") as fh:
                    fh.write(json.dumps(body) + "\n")
            try:
                result = self.dispatch(body["method"], body.get("params", []))
                self._reply(200, {"jsonrpc": "2.0", "id": body.get("id"), "result": result})
            except RpcFail as err:
                self._reply(200, {"jsonrpc": "2.0", "id": body.get("id"),
                                  "error": {"code": err.code, "message": err.msg}})

        def dispatch(self, method, params):
            if method == "eth_blockNumber":
                return "0x0"
            if method == "eth_getBlockByNumber":
                if params[0] == "0x0":
                    return {"hash": state.genesis_hash, "number": "0x0"}
                if params[0] == "latest":
                    with state.lock:
                        return {"hash": state.head, "number": hex(state.numbers.get(state.head.lower(), 0))}
                return None
            if method == "engine_exchangeCapabilities":
                return ["engine_newPayloadV5", "engine_forkchoiceUpdatedV4"]
            if method.startswith("engine_newPayloadV"):
                version = int(method[len("engine_newPayloadV"):])
                if len(params) != PARAMS.get(version, -1):
                    raise RpcFail(-32602, f"{method} takes {PARAMS.get(version)} params")
                payload = params[0]
                if version >= 5 and ("blockAccessList" not in payload or "slotNumber" not in payload):
                    raise RpcFail(-32602, "missing blockAccessList/slotNumber")
                block_hash = payload["blockHash"].lower()
                if block_hash in state.rpc_error:
                    raise RpcFail(state.rpc_error_code, "mock: error listed for this block")
                with state.lock:
                    if payload["parentHash"].lower() not in state.known:
                        return {"status": "SYNCING", "latestValidHash": None, "validationError": None}
                    if block_hash in state.invalid:
                        return {"status": "INVALID", "latestValidHash": payload["parentHash"],
                                "validationError": state.validation_error}
                    state.known.add(block_hash)
                    state.numbers[block_hash] = int(payload["blockNumber"], 16)
                return {"status": "VALID", "latestValidHash": block_hash, "validationError": None}
            if method.startswith("engine_forkchoiceUpdatedV"):
                head = params[0]["headBlockHash"].lower()
                with state.lock:
                    if head not in state.known:
                        status = {"status": "SYNCING", "latestValidHash": None, "validationError": None}
                    else:
                        if not state.ignore_fcu:
                            state.head = head
                        status = {"status": "VALID", "latestValidHash": head, "validationError": None}
                return {"payloadStatus": status, "payloadId": None}
            raise RpcFail(-32601, f"method {method} not found")

    return Handler


class RpcFail(Exception):
    def __init__(self, code, msg):
        super().__init__(msg)
        self.code, self.msg = code, msg


def main():
    if len(sys.argv) < 2 or sys.argv[1] != "node":
        print("mock: only the `node` subcommand exists", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser()
    for flag in ["--network", "--datadir", "--db", "--authrpc.addr", "--authrpc.port",
                 "--authrpc.jwtsecret", "--http.addr", "--http.port", "--metrics.port"]:
        parser.add_argument(flag)
    parser.add_argument("--p2p.port")
    parser.add_argument("--nodiscover", action="store_true")
    args = parser.parse_args(sys.argv[2:])
    mode = os.environ.get("MOCK_MODE", "")
    print(f"mock node starting, mode={mode!r}", flush=True)
    if mode == "exit":
        print("mock: fatal error on purpose", flush=True)
        return 3
    if mode == "hang":
        time.sleep(3600)
        return 0
    with open(args.network) as fh:
        json.load(fh)  # must be valid JSON
    with open(getattr(args, "authrpc.jwtsecret")) as fh:
        secret = bytes.fromhex(fh.read().strip().removeprefix("0x"))
    state = State(os.environ["MOCK_GENESIS_HASH"], _hashes("MOCK_INVALID_HASHES"),
                  os.environ.get("MOCK_RECORD"))
    servers = [
        ThreadingHTTPServer((getattr(args, "authrpc.addr"), int(getattr(args, "authrpc.port"))),
                            make_handler(state, secret)),
        ThreadingHTTPServer((getattr(args, "http.addr"), int(getattr(args, "http.port"))),
                            make_handler(state, None)),
    ]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print("mock node listening", flush=True)
    stop.wait(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
