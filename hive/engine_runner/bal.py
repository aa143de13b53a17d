"""EIP-7928 block access list (BAL): fixture JSON <-> RLP.

Why it exists: Amsterdam payloads (`engine_newPayloadV5`) carry the BAL as RLP
bytes in `ExecutionPayloadV4.blockAccessList`, but EF `blockchain_test`
fixtures only give it as JSON (`blocks[i].blockAccessList`, or
`rlp_decoded.blockAccessList` for blocks that are expected to be invalid).

RLP layout (EIP-7928):
    BlockAccessList = [AccountChanges, ...]
    AccountChanges  = [address, storage_changes, storage_reads,
                       balance_changes, nonce_changes, code_changes]
    storage_changes = [[slot, [[index, post_value], ...]], ...]
    storage_reads   = [slot, ...]
    balance_changes = [[index, post_balance], ...]
    nonce_changes   = [[index, post_nonce], ...]
    code_changes    = [[index, new_code], ...]

Integers (slots, values, indices, balances, nonces) are minimal big-endian byte
strings; addresses are 20 raw bytes; code is raw bytes.

The order of every list is kept exactly as it appears in the JSON, even when it
is not the canonical (sorted) order: invalid-BAL fixtures deliberately ship
unsorted or duplicated entries and the client must be the one to reject them.
"""

from __future__ import annotations

from typing import Any, Dict, List

from . import rlp


def _int(value: str) -> bytes:
    return rlp.int_to_bytes(int(value, 16))


def _address(value: str) -> bytes:
    raw = rlp.hex_to_bytes(value)
    if len(raw) != 20:
        raise ValueError(f"address must be 20 bytes, got {len(raw)}: {value}")
    return raw


def bal_to_rlp_items(bal_json: List[Dict[str, Any]]) -> list:
    """Turn the fixture's JSON BAL into the nested RLP item structure."""
    accounts = []
    for account in bal_json:
        storage_changes = [
            [
                _int(slot["slot"]),
                [
                    [_int(change["blockAccessIndex"]), _int(change["postValue"])]
                    for change in slot.get("slotChanges", [])
                ],
            ]
            for slot in account.get("storageChanges", [])
        ]
        storage_reads = [_int(slot) for slot in account.get("storageReads", [])]
        balance_changes = [
            [_int(c["blockAccessIndex"]), _int(c["postBalance"])]
            for c in account.get("balanceChanges", [])
        ]
        nonce_changes = [
            [_int(c["blockAccessIndex"]), _int(c["postNonce"])]
            for c in account.get("nonceChanges", [])
        ]
        code_changes = [
            [_int(c["blockAccessIndex"]), rlp.hex_to_bytes(c["newCode"])]
            for c in account.get("codeChanges", [])
        ]
        accounts.append(
            [
                _address(account["address"]),
                storage_changes,
                storage_reads,
                balance_changes,
                nonce_changes,
                code_changes,
            ]
        )
    return accounts


def encode_bal(bal_json: List[Dict[str, Any]]) -> bytes:
    """RLP bytes of a JSON BAL (order preserved)."""
    return rlp.encode(bal_to_rlp_items(bal_json))


def _q(data: bytes) -> int:
    return rlp.bytes_to_int(data)


def decode_bal(data: bytes) -> List[Dict[str, Any]]:
    """Decode BAL RLP into plain Python values (ints, lowercase hex strings).

    Used by the tests to check that encoding loses nothing; the result has the
    same shape as the JSON but with integers instead of hex quantities.
    """
    items = rlp.decode(data)
    if not isinstance(items, list):
        raise rlp.RLPError("BAL must be an RLP list")
    out = []
    for account in items:
        if not isinstance(account, list) or len(account) != 6:
            raise rlp.RLPError("AccountChanges must be a 6-element list")
        address, storage_changes, storage_reads, balances, nonces, codes = account
        out.append(
            {
                "address": "0x" + address.hex(),
                "storageChanges": [
                    {
                        "slot": _q(slot),
                        "slotChanges": [
                            {"blockAccessIndex": _q(i), "postValue": _q(v)}
                            for i, v in changes
                        ],
                    }
                    for slot, changes in storage_changes
                ],
                "storageReads": [_q(s) for s in storage_reads],
                "balanceChanges": [
                    {"blockAccessIndex": _q(i), "postBalance": _q(v)} for i, v in balances
                ],
                "nonceChanges": [
                    {"blockAccessIndex": _q(i), "postNonce": _q(v)} for i, v in nonces
                ],
                "codeChanges": [
                    {"blockAccessIndex": _q(i), "newCode": "0x" + c.hex()} for i, c in codes
                ],
            }
        )
    return out


def normalize_bal_json(bal_json: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Fixture JSON BAL in the same value form `decode_bal` produces (for comparisons)."""

    def n(value: str) -> int:
        return int(value, 16)

    return [
        {
            "address": account["address"].lower(),
            "storageChanges": [
                {
                    "slot": n(slot["slot"]),
                    "slotChanges": [
                        {"blockAccessIndex": n(c["blockAccessIndex"]), "postValue": n(c["postValue"])}
                        for c in slot.get("slotChanges", [])
                    ],
                }
                for slot in account.get("storageChanges", [])
            ],
            "storageReads": [n(s) for s in account.get("storageReads", [])],
            "balanceChanges": [
                {"blockAccessIndex": n(c["blockAccessIndex"]), "postBalance": n(c["postBalance"])}
                for c in account.get("balanceChanges", [])
            ],
            "nonceChanges": [
                {"blockAccessIndex": n(c["blockAccessIndex"]), "postNonce": n(c["postNonce"])}
                for c in account.get("nonceChanges", [])
            ],
            "codeChanges": [
                {"blockAccessIndex": n(c["blockAccessIndex"]), "newCode": c["newCode"].lower()}
                for c in account.get("codeChanges", [])
            ],
        }
        for account in bal_json
    ]
