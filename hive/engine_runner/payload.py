"""Turn a fixture block into the Engine API call Hive would send for it.

Why it exists: plain `blockchain_test` fixtures carry blocks as RLP, while the
Engine API wants `engine_newPayloadVn(ExecutionPayload, versionedHashes,
parentBeaconBlockRoot, executionRequests)`. The header and body are decoded
from the block's `rlp` (the bytes the fixture author actually produced, which
matters for invalid blocks), the block hash is taken from the fixture, and the
Amsterdam block access list is encoded from its JSON form (see bal.py).

`blockchain_test_engine` fixtures already contain the params; those are passed
through untouched.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import List, Optional

from . import bal, rlp
from .exceptions import BAL, BLOCK_RLP
from .fixtures import fork_at
from .requests import RequestsError, RequestTracker, requests_hash

EMPTY_REQUESTS_HASH = "0x" + hashlib.sha256(b"").hexdigest()
EMPTY_OMMERS_HASH = "0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347"
ZERO_HASH = "0x" + "00" * 32

HEADER_FIELDS = [
    "parentHash", "ommersHash", "coinbase", "stateRoot", "transactionsRoot",
    "receiptsRoot", "logsBloom", "difficulty", "number", "gasLimit", "gasUsed",
    "timestamp", "extraData", "mixHash", "nonce", "baseFeePerGas",
    "withdrawalsRoot", "blobGasUsed", "excessBlobGas", "parentBeaconBlockRoot",
    "requestsHash", "blockAccessListHash", "slotNumber",
]
_IDX = {name: i for i, name in enumerate(HEADER_FIELDS)}

# fork -> (newPayload version, forkchoiceUpdated version, header field count)
ENGINE_VERSIONS = {
    "Paris": (1, 1, 16),
    "Shanghai": (2, 2, 17),
    "Cancun": (3, 3, 20),
    "Prague": (4, 3, 21),
    "Osaka": (4, 3, 21),
    "Amsterdam": (5, 4, 23),
}


class SkipTest(Exception):
    """The rest of this test cannot be run faithfully (e.g. execution requests unknown)."""


class SkipBlock(Exception):
    """This (expected-invalid) block cannot be sent at all.

    `what` says why: `exceptions.BLOCK_RLP` or `exceptions.BAL` when that part does
    not decode (the rejection then proves only a malformed block), None when the
    block decodes but cannot be expressed as an ExecutionPayload (uncles, PoW
    fields, a header of another fork's shape). The runner decides from the
    fixture's exception whether that counts as the expected rejection.
    """

    def __init__(self, message: str, what: Optional[str] = None):
        super().__init__(message)
        self.what = what


@dataclass
class PayloadCall:
    method: str
    params: list
    fcu_version: int
    block_hash: str
    expect_invalid: bool
    expected: str = ""  # the fixture's exception text, for messages
    error_code: Optional[int] = None  # engine fixtures: expected JSON-RPC error code
    notes: List[str] = field(default_factory=list)


def hx(data: bytes) -> str:
    return "0x" + data.hex()


def qty(data: bytes) -> str:
    return hex(rlp.bytes_to_int(data))


def fcu_version_for(fork: str) -> int:
    return ENGINE_VERSIONS[fork][1]


@dataclass
class DecodedBlock:
    header: list
    transactions: List[bytes]  # EIP-2718 encodings, ready for the payload
    uncles: list
    withdrawals: Optional[list]


def decode_block(rlp_hex: str) -> DecodedBlock:
    """Split a block's RLP into header items, raw transactions, uncles, withdrawals."""
    items = rlp.decode(rlp.hex_to_bytes(rlp_hex))
    if not isinstance(items, list) or len(items) < 3 or not isinstance(items[0], list):
        raise rlp.RLPError("block RLP is not [header, transactions, uncles, ...]")
    header, txs, uncles = items[0], items[1], items[2]
    if not isinstance(txs, list) or not isinstance(uncles, list):
        raise rlp.RLPError("transactions/uncles must be lists")
    if any(isinstance(x, list) for x in header):
        raise rlp.RLPError("header fields must be byte strings")
    withdrawals = items[3] if len(items) > 3 else None
    if withdrawals is not None and not isinstance(withdrawals, list):
        raise rlp.RLPError("withdrawals must be a list")
    return DecodedBlock(header, [raw_transaction(t) for t in txs], uncles, withdrawals)


def raw_transaction(item) -> bytes:
    """Typed txs sit in the body as byte strings (type || payload); legacy ones as lists."""
    return rlp.encode(item) if isinstance(item, list) else item


def blob_versioned_hashes(raw_txs: List[bytes]) -> List[str]:
    """Versioned hashes of all type-3 transactions, in block order (field 10)."""
    hashes: List[str] = []
    for raw in raw_txs:
        if raw and raw[0] == 0x03:
            fields = rlp.decode(raw[1:])
            if isinstance(fields, list) and len(fields) > 10 and isinstance(fields[10], list):
                hashes.extend(hx(h) for h in fields[10])
    return hashes


def withdrawals_json(items: list) -> List[dict]:
    out = []
    for w in items:
        if not isinstance(w, list) or len(w) != 4:
            raise rlp.RLPError("withdrawal must be [index, validatorIndex, address, amount]")
        out.append(
            {
                "index": qty(w[0]),
                "validatorIndex": qty(w[1]),
                "address": hx(w[2]),
                "amount": qty(w[3]),
            }
        )
    return out


def _header_json(block: dict) -> Optional[dict]:
    if "blockHeader" in block:
        return block["blockHeader"]
    return (block.get("rlp_decoded") or {}).get("blockHeader")


def _bal_json(block: dict):
    if "blockAccessList" in block:
        return block["blockAccessList"]
    return (block.get("rlp_decoded") or {}).get("blockAccessList")


def _not_representable(decoded: DecodedBlock, header_len: int) -> Optional[str]:
    """Why a block cannot be expressed as an ExecutionPayload, if it cannot."""
    h = decoded.header
    if len(h) != header_len:
        return f"header has {len(h)} fields, the fork needs {header_len}"
    if decoded.uncles:
        return "block has uncles"
    if hx(h[_IDX["ommersHash"]]) != EMPTY_OMMERS_HASH:
        return "non-empty ommers hash"
    if rlp.bytes_to_int(h[_IDX["difficulty"]]) != 0:
        return "non-zero difficulty"
    if h[_IDX["nonce"]] != b"\x00" * 8:
        return "non-zero nonce"
    return None


def build_call(block: dict, schedule: dict, tracker: Optional[RequestTracker] = None) -> PayloadCall:
    """Engine API call for one `blocks[i]` entry of a plain blockchain_test.

    `tracker` follows the execution-request queues through the test's blocks
    (pass the same one for every block, in order); a fresh one when omitted.
    """
    expected = block.get("expectException") or ""
    expect_invalid = bool(expected)
    try:
        decoded = decode_block(block["rlp"])
    except (rlp.RLPError, KeyError, ValueError) as err:
        if expect_invalid:
            raise SkipBlock(f"block RLP does not decode ({err})", BLOCK_RLP) from None
        raise ValueError(f"valid block has undecodable RLP: {err}") from None

    h = decoded.header
    if len(h) <= _IDX["timestamp"]:
        if expect_invalid:
            raise SkipBlock("block RLP does not decode (header too short)", BLOCK_RLP)
        raise ValueError("valid block header too short")
    timestamp = rlp.bytes_to_int(h[_IDX["timestamp"]])
    fork = fork_at(schedule, timestamp)
    np_version, fcu_version, header_len = ENGINE_VERSIONS[fork]

    problem = _not_representable(decoded, header_len)
    if problem:
        if expect_invalid:
            raise SkipBlock(f"not representable as an engine payload ({problem})", None)
        raise ValueError(f"valid block is not representable as a payload: {problem}")

    header_json = _header_json(block)
    if header_json and header_json.get("hash"):
        block_hash = header_json["hash"]
    else:
        from .keccak import keccak256  # only needed when the fixture omits the hash

        block_hash = hx(keccak256(rlp.encode(h)))

    def f(name: str) -> bytes:
        return h[_IDX[name]]

    payload = {
        "parentHash": hx(f("parentHash")),
        "feeRecipient": hx(f("coinbase")),
        "stateRoot": hx(f("stateRoot")),
        "receiptsRoot": hx(f("receiptsRoot")),
        "logsBloom": hx(f("logsBloom")),
        "prevRandao": hx(f("mixHash")),
        "blockNumber": qty(f("number")),
        "gasLimit": qty(f("gasLimit")),
        "gasUsed": qty(f("gasUsed")),
        "timestamp": qty(f("timestamp")),
        "extraData": hx(f("extraData")),
        "baseFeePerGas": qty(f("baseFeePerGas")),
        "blockHash": block_hash,
        "transactions": [hx(t) for t in decoded.transactions],
    }
    if np_version >= 2:
        payload["withdrawals"] = withdrawals_json(decoded.withdrawals or [])
    if np_version >= 3:
        payload["blobGasUsed"] = qty(f("blobGasUsed"))
        payload["excessBlobGas"] = qty(f("excessBlobGas"))
    notes: List[str] = []
    if np_version >= 5:
        bal_json = _bal_json(block)
        if bal_json is not None:
            try:
                payload["blockAccessList"] = hx(bal.encode_bal(bal_json))
            except (ValueError, TypeError, KeyError, AttributeError) as err:
                if expect_invalid:
                    raise SkipBlock(f"block access list does not encode ({err!r})", BAL) from None
                raise ValueError(f"valid block's blockAccessList does not encode: {err!r}") from None
        else:
            notes.append("fixture has no blockAccessList; sent without one")
        payload["slotNumber"] = qty(f("slotNumber"))

    params: list = [payload]
    if np_version >= 3:
        try:
            hashes = blob_versioned_hashes(decoded.transactions)
        except rlp.RLPError as err:
            if expect_invalid:
                raise SkipBlock(f"block RLP does not decode (blob tx: {err})", BLOCK_RLP) from None
            raise
        params += [hashes, hx(f("parentBeaconBlockRoot"))]
    if np_version >= 4:
        # The node hashes executionRequests into the header's requestsHash: the list
        # must be exact, so it is rebuilt from the receipts and checked against it.
        header_hash = hx(f("requestsHash"))
        number = rlp.bytes_to_int(f("number"))
        tracker = tracker if tracker is not None else RequestTracker()
        try:
            requests = tracker.requests_for(block, commit=not expect_invalid)
        except RequestsError as err:
            if header_hash != EMPTY_REQUESTS_HASH:
                raise SkipTest(
                    f"block {number}: its execution requests cannot be rebuilt from the fixture "
                    f"({err}; requestsHash {header_hash})"
                ) from None
            # The header commits to no requests: none were dequeued, so the queues
            # are empty after this block.
            requests = []
            if not expect_invalid:
                tracker.clear()
        rebuilt_hash = requests_hash(requests)
        if rebuilt_hash != header_hash:
            raise SkipTest(
                f"block {number}: the execution requests rebuilt from its receipts hash to "
                f"{rebuilt_hash}, the header says requestsHash {header_hash}; the block cannot "
                f"be sent with its real requests"
            )
        if requests:
            notes.append(
                "executionRequests rebuilt from receipts: "
                + ", ".join(f"type {r[0]} ({len(r) - 1} bytes)" for r in requests)
            )
        params.append([hx(r) for r in requests])

    return PayloadCall(
        method=f"engine_newPayloadV{np_version}",
        params=params,
        fcu_version=fcu_version,
        block_hash=block_hash,
        expect_invalid=expect_invalid,
        expected=expected,
        notes=notes,
    )


def engine_calls(test: dict) -> List[PayloadCall]:
    """Calls of a `blockchain_test_engine` fixture, sent exactly as given."""
    calls = []
    for entry in test["engineNewPayloads"]:
        params = entry["params"]
        error_code = entry.get("errorCode")
        validation_error = entry.get("validationError")
        calls.append(
            PayloadCall(
                method=f"engine_newPayloadV{int(entry['newPayloadVersion'])}",
                params=params,
                fcu_version=int(entry.get("forkchoiceUpdatedVersion") or 0),
                block_hash=params[0]["blockHash"],
                expect_invalid=bool(validation_error) or error_code is not None,
                expected=validation_error or "",
                error_code=int(error_code) if error_code is not None else None,
            )
        )
    return calls
