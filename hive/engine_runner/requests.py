"""EIP-7685 execution requests of a fixture block, rebuilt from its receipts.

Why it exists: from Prague on, `engine_newPayloadV4/V5` take the block's
`executionRequests` as a parameter and the node derives the header's
`requestsHash` from them, so a block with requests can only be sent with the
exact list. A plain `blockchain_test` does not carry that list, but its valid
blocks carry their receipts, and every request starts as a log:

- type 0x00, deposits (EIP-6110): `DepositEvent` logs of the deposit contract,
  in log order; the request is pubkey || withdrawal_credentials || amount ||
  signature || index (the five ABI `bytes` fields, concatenated);
- type 0x01, withdrawal requests (EIP-7002): every log of the predeploy at
  0x00000961Ef480Eb55e80D19ad83579A64c007002 is one queued request: its data
  is source address || validator pubkey || amount with the amount big-endian
  (as the caller sent it), while the dequeued request carries the amount
  little-endian (the queue stores it so); the end-of-block system call
  dequeues at most 16;
- type 0x02, consolidation requests (EIP-7251): likewise for the predeploy at
  0x0000BBdDc7CE488642fb579F8B00f3a590007251, at most 2 per block.

Queued requests beyond a block's maximum stay queued for the next block, so a
`RequestTracker` follows the queues through the test's valid blocks. The
result is only used when it hashes to the header's `requestsHash`; anything
else (a queue pre-filled in the genesis state, a block without receipts)
makes the caller skip the test with both hashes in the reason.
"""

from __future__ import annotations

import hashlib
from typing import Dict, List, Optional

DEPOSIT_CONTRACT = "0x00000000219ab540356cbb839cbe05303d7705fa"
# keccak256("DepositEvent(bytes,bytes,bytes,bytes,bytes)")
DEPOSIT_EVENT_TOPIC = "0x649bbc62d0e31342afea4e5cd82d4049e7e1ee912fc0889aa790803be39038c5"
WITHDRAWAL_REQUEST_PREDEPLOY = "0x00000961ef480eb55e80d19ad83579a64c007002"
CONSOLIDATION_REQUEST_PREDEPLOY = "0x0000bbddc7ce488642fb579f8b00f3a590007251"
MAX_WITHDRAWAL_REQUESTS_PER_BLOCK = 16
MAX_CONSOLIDATION_REQUESTS_PER_BLOCK = 2
WITHDRAWAL_REQUEST_SIZE = 20 + 48 + 8
CONSOLIDATION_REQUEST_SIZE = 20 + 48 + 48
EMPTY_REQUESTS_HASH = "0x" + hashlib.sha256(b"").hexdigest()


class RequestsError(ValueError):
    """The requests cannot be rebuilt from what the fixture holds."""


def _bytes(hex_text: str) -> bytes:
    text = hex_text[2:] if hex_text.lower().startswith("0x") else hex_text
    return bytes.fromhex(text)


def requests_hash(requests: List[bytes]) -> str:
    """EIP-7685: sha256 over the sha256 of each request (type byte || data) with data."""
    outer = hashlib.sha256()
    for request in requests:
        if len(request) > 1:
            outer.update(hashlib.sha256(request).digest())
    return "0x" + outer.hexdigest()


def deposit_request(data: bytes) -> bytes:
    """The EIP-6110 request of one DepositEvent log's ABI data: its five `bytes` fields."""
    fields = []
    for i in range(5):
        head = data[32 * i: 32 * i + 32]
        if len(head) != 32:
            raise RequestsError("DepositEvent data too short")
        offset = int.from_bytes(head, "big")
        length_word = data[offset: offset + 32]
        if len(length_word) != 32:
            raise RequestsError("DepositEvent field offset out of range")
        length = int.from_bytes(length_word, "big")
        value = data[offset + 32: offset + 32 + length]
        if len(value) != length:
            raise RequestsError("DepositEvent field truncated")
        fields.append(value)
    expected = [48, 32, 8, 96, 8]
    if [len(f) for f in fields] != expected:
        raise RequestsError(f"DepositEvent field lengths {[len(f) for f in fields]}, expected {expected}")
    return b"".join(fields)


class RequestTracker:
    """Follows the EIP-7002 / EIP-7251 queues through a test's blocks."""

    def __init__(self, deposit_contract: Optional[str] = None):
        self.deposit_contract = (deposit_contract or DEPOSIT_CONTRACT).lower()
        self.withdrawals: List[bytes] = []
        self.consolidations: List[bytes] = []

    def clear(self) -> None:
        """Empty both queues (a valid block whose header commits to no requests)."""
        self.withdrawals = []
        self.consolidations = []

    def _logs(self, block: dict) -> List[dict]:
        receipts = block.get("receipts")
        if receipts is None:
            if block.get("transactions"):
                raise RequestsError("the block has transactions but the fixture gives no receipts")
            return []
        logs: List[dict] = []
        for receipt in receipts:
            logs.extend(receipt.get("logs") or [])
        return logs

    def requests_for(self, block: dict, commit: bool) -> List[bytes]:
        """The block's requests (type byte || data, non-empty types only, by type).

        `commit`: the block is valid, so its enqueued and dequeued requests
        change the queues for the blocks after it.
        """
        deposits = b""
        withdrawals = list(self.withdrawals)
        consolidations = list(self.consolidations)
        for log in self._logs(block):
            address = (log.get("address") or "").lower()
            data = _bytes(log.get("data") or "0x")
            topics = [t.lower() for t in log.get("topics") or []]
            if address == self.deposit_contract and topics[:1] == [DEPOSIT_EVENT_TOPIC]:
                deposits += deposit_request(data)
            elif address == WITHDRAWAL_REQUEST_PREDEPLOY:
                if len(data) != WITHDRAWAL_REQUEST_SIZE:
                    raise RequestsError(f"withdrawal request log of {len(data)} bytes")
                withdrawals.append(data[:-8] + data[-8:][::-1])
            elif address == CONSOLIDATION_REQUEST_PREDEPLOY:
                if len(data) != CONSOLIDATION_REQUEST_SIZE:
                    raise RequestsError(f"consolidation request log of {len(data)} bytes")
                consolidations.append(data)
        taken_w = withdrawals[:MAX_WITHDRAWAL_REQUESTS_PER_BLOCK]
        taken_c = consolidations[:MAX_CONSOLIDATION_REQUESTS_PER_BLOCK]
        if commit:
            self.withdrawals = withdrawals[MAX_WITHDRAWAL_REQUESTS_PER_BLOCK:]
            self.consolidations = consolidations[MAX_CONSOLIDATION_REQUESTS_PER_BLOCK:]
        out = []
        for type_byte, data in ((b"\x00", deposits), (b"\x01", b"".join(taken_w)), (b"\x02", b"".join(taken_c))):
            if data:
                out.append(type_byte + data)
        return out


def by_type(requests: List[bytes]) -> Dict[int, bytes]:
    """{type: data} of a request list (for messages and tests)."""
    return {r[0]: r[1:] for r in requests}
