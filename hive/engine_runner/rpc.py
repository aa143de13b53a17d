"""Tiny JSON-RPC 2.0 client over HTTP (urllib), with optional JWT auth.

Why it exists: the runner talks to two endpoints of the node, the plain `eth_`
port and the JWT-protected Engine API port, and must never hang, so every call
has an explicit socket timeout.
"""

from __future__ import annotations

import itertools
import json
import urllib.error
import urllib.request
from typing import Any, Optional

from . import jwt


class RPCError(Exception):
    """The server answered with a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(f"JSON-RPC error {code}: {message}")
        self.code = code
        self.message = message
        self.data = data


class TransportError(Exception):
    """No usable answer: connection refused, timeout, HTTP error, bad JSON."""


class AuthError(TransportError):
    """HTTP 401/403: the server refused our JWT (wrong secret, clock skew...)."""


class RPCClient:
    def __init__(self, url: str, jwt_secret: Optional[bytes] = None, timeout: float = 30.0):
        self.url = url
        self.jwt_secret = jwt_secret
        self.timeout = timeout
        self._ids = itertools.count(1)

    def call(self, method: str, params: list, timeout: Optional[float] = None) -> Any:
        body = json.dumps(
            {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        ).encode()
        headers = {"Content-Type": "application/json"}
        if self.jwt_secret is not None:
            headers["Authorization"] = "Bearer " + jwt.make_token(self.jwt_secret)
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as err:
            # Some servers put a JSON-RPC error in a non-200 response; use it if so.
            raw = err.read() if hasattr(err, "read") else b""
            try:
                reply = json.loads(raw)
                if isinstance(reply, dict) and "error" in reply:
                    e = reply["error"] or {}
                    raise RPCError(e.get("code", 0), e.get("message", ""), e.get("data"))
            except (ValueError, TypeError):
                pass
            kind = AuthError if err.code in (401, 403) else TransportError
            raise kind(f"HTTP {err.code} from {method}: {raw[:200]!r}") from None
        except (urllib.error.URLError, OSError) as err:
            raise TransportError(f"{method}: {err}") from None
        try:
            reply = json.loads(raw)
        except ValueError:
            raise TransportError(f"{method}: invalid JSON reply {raw[:200]!r}") from None
        if not isinstance(reply, dict):
            raise TransportError(f"{method}: unexpected reply {raw[:200]!r}")
        if reply.get("error") is not None:
            e = reply["error"]
            if isinstance(e, dict):
                raise RPCError(e.get("code", 0), str(e.get("message", "")), e.get("data"))
            raise RPCError(0, str(e))
        if "result" not in reply:
            raise TransportError(f"{method}: reply without result {raw[:200]!r}")
        return reply["result"]
