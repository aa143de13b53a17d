"""Start, probe and stop one `ethrex node` process per test.

Why it exists: Hive runs every test against a freshly started client. Without
Docker we do the same with a local process on free loopback ports, its own
temporary data directory, genesis file and JWT secret. Every wait is bounded,
and the process is always stopped (SIGTERM, then SIGKILL after a grace period)
so a misbehaving node can neither hang the runner nor outlive it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from typing import List, Optional

from . import jwt
from .rpc import AuthError, RPCClient, RPCError, TransportError


class NodeStartError(Exception):
    """The node exited early or never answered on its RPC ports."""


def free_ports(count: int) -> List[int]:
    """Ask the kernel for `count` distinct free loopback ports.

    All sockets are held open until every port is chosen so they differ; there
    is a small window before the node binds them, handled by one retry in
    `Node.start`'s caller.
    """
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def tail(path: str, lines: int = 40) -> str:
    """Last `lines` lines of a (possibly large or binary-ish) log file."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 64 * 1024))
            data = fh.read().decode("utf-8", errors="replace")
    except OSError as err:
        return f"<no log: {err}>"
    return "\n".join(data.splitlines()[-lines:])


class Node:
    """One `ethrex node` process with its files in `workdir`."""

    def __init__(
        self,
        binary: str,
        workdir: str,
        genesis: dict,
        db: Optional[str] = None,
        extra_args: Optional[List[str]] = None,
    ):
        self.binary = binary
        self.workdir = workdir
        self.db = db
        self.extra_args = list(extra_args or [])
        self.genesis_path = os.path.join(workdir, "genesis.json")
        self.jwt_path = os.path.join(workdir, "jwt.hex")
        self.datadir = os.path.join(workdir, "data")
        self.log_path = os.path.join(workdir, "node.log")
        self.secret = jwt.new_secret()
        self.proc: Optional[subprocess.Popen] = None
        self._log_fh = None
        self.auth_port = 0
        self.http_port = 0
        with open(self.genesis_path, "w") as fh:
            json.dump(genesis, fh, indent=1)
        with open(self.jwt_path, "w") as fh:
            fh.write(jwt.secret_to_hex(self.secret))
        self.engine: Optional[RPCClient] = None
        self.eth: Optional[RPCClient] = None

    def command(self) -> List[str]:
        cmd = [self.binary, "node", "--network", self.genesis_path, "--datadir", self.datadir]
        if self.db:
            cmd += ["--db", self.db]
        cmd += [
            "--authrpc.addr", "127.0.0.1",
            "--authrpc.port", str(self.auth_port),
            "--authrpc.jwtsecret", self.jwt_path,
            "--http.addr", "127.0.0.1",
            "--http.port", str(self.http_port),
            # No peers in these tests: any free port, no discovery.
            "--p2p.port", "0", "--nodiscover",
        ]
        return cmd + self.extra_args

    def start(self, deadline: float, rpc_timeout: float) -> None:
        """Launch the process and wait (until `deadline`) for both RPC ports to answer."""
        self.auth_port, self.http_port = free_ports(2)
        self._log_fh = open(self.log_path, "ab")
        self._log_fh.write(("$ " + " ".join(self.command()) + "\n").encode())
        self._log_fh.flush()
        try:
            self.proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=self._log_fh,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
            )
        except OSError as err:
            raise NodeStartError(f"cannot execute {self.binary}: {err}") from None
        self.engine = RPCClient(f"http://127.0.0.1:{self.auth_port}", self.secret, rpc_timeout)
        self.eth = RPCClient(f"http://127.0.0.1:{self.http_port}", None, rpc_timeout)
        self._wait_ready(deadline)

    def _wait_ready(self, deadline: float) -> None:
        eth_ok = engine_ok = False
        last_error = "no answer yet"
        delay = 0.05
        while True:
            code = self.proc.poll()
            if code is not None:
                raise NodeStartError(f"node exited with code {code} before answering")
            try:
                if not eth_ok:
                    self.eth.call("eth_blockNumber", [], timeout=2)
                    eth_ok = True
                if not engine_ok:
                    try:
                        self.engine.call("engine_exchangeCapabilities", [[]], timeout=2)
                    except AuthError as err:
                        # Retrying cannot help: every later Engine API call would fail too.
                        raise NodeStartError(f"engine port rejects our JWT: {err}") from None
                    except RPCError:
                        pass  # any JSON-RPC answer proves the authenticated port is up
                    engine_ok = True
                return
            except (TransportError, RPCError) as err:
                last_error = str(err)
            if time.monotonic() >= deadline:
                raise NodeStartError(f"node did not answer before the timeout ({last_error})")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace: float = 10.0) -> Optional[int]:
        """Terminate, then kill after `grace` seconds. Safe to call repeatedly."""
        code = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=grace)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    try:
                        self.proc.wait(timeout=grace)
                    except subprocess.TimeoutExpired:
                        pass
            code = self.proc.returncode
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None
        return code

    def log_tail(self, lines: int = 40) -> str:
        if self._log_fh is not None:
            self._log_fh.flush()
        return tail(self.log_path, lines)
