"""HS256 JSON Web Tokens for the Engine API's authenticated port.

Why it exists: the execution client only accepts Engine API calls carrying
`Authorization: Bearer <jwt>`, an HS256 token signed with the shared 32-byte
secret and an `iat` claim within +-60 s of the node's clock. A fresh token is
minted for every request so long test runs never drift out of that window.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from typing import Optional


def b64url(data: bytes) -> str:
    """Base64url without padding, as JWT requires."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def new_secret() -> bytes:
    """A random 32-byte secret."""
    return secrets.token_bytes(32)


def secret_to_hex(secret: bytes) -> str:
    """The form written to the jwtsecret file (0x-prefixed, 64 hex digits)."""
    return "0x" + secret.hex()


def make_token(secret: bytes, now: Optional[int] = None) -> str:
    """Sign {"iat": now} with HS256 under `secret` (the raw 32 bytes)."""
    header = {"alg": "HS256", "typ": "JWT"}
    payload = {"iat": int(time.time()) if now is None else int(now)}
    signing_input = (
        b64url(json.dumps(header, separators=(",", ":")).encode())
        + "."
        + b64url(json.dumps(payload, separators=(",", ":")).encode())
    )
    signature = hmac.new(secret, signing_input.encode("ascii"), hashlib.sha256).digest()
    return signing_input + "." + b64url(signature)


def verify_token(token: str, secret: bytes) -> dict:
    """Check the HS256 signature and return the claims (used by the tests)."""
    parts = token.split(".")
    if len(parts) != 3:
        raise ValueError("JWT must have 3 parts")
    header = json.loads(b64url_decode(parts[0]))
    if header.get("alg") != "HS256":
        raise ValueError("unexpected alg")
    expected = hmac.new(secret, (parts[0] + "." + parts[1]).encode("ascii"), hashlib.sha256).digest()
    if not hmac.compare_digest(expected, b64url_decode(parts[2])):
        raise ValueError("bad signature")
    return json.loads(b64url_decode(parts[1]))
