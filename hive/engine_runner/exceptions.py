"""What a rejection proves: fixture exception names vs. the node's verdicts.

Why it exists: a strict runner must check that an invalid block is rejected
*for the reason the fixture names*, not merely rejected. Two questions:

1. A block the runner cannot even decode (so it is never sent) proves only that
   it is malformed. Which `expectException` values does that satisfy?
   -> `decode_failure_satisfies` (the same table as crates/ef-tests):

   | expected exception                                   | block RLP does not decode | BAL does not encode |
   |------------------------------------------------------|:---:|:---:|
   | `BlockException.RLP_*`, `TransactionException.RLP_*` (not `RLP_BLOCK_LIMIT_EXCEEDED`, a size rule) | yes | no |
   | `BlockException.INCORRECT_BLOCK_FORMAT`               | yes | yes |
   | `TransactionException.TYPE_NOT_SUPPORTED`             | yes | no |
   | `BlockException.INVALID_BLOCK_ACCESS_LIST`            | no  | yes |
   | anything else                                        | no  | no  |

2. Which exception does the node's `validationError` text stand for?
   -> `classify_validation_error`, a set of names from two sources:

   a. ethrex starts every validationError with the EF name of the rule
      (`crates/rpc/src/engine.rs`: `"<Block|Transaction>Exception.NAME: details"`);
      that prefix is the node's own class.
   b. The message itself: ethrex's `BlockError` / `ExecutionError` texts
      (`crates/blockchain/src/error.rs`, `crates/vm/src/error.rs`, revm's
      transaction errors inside them) each name one rule; MESSAGE_RULES maps
      them (first match wins) to the EF names that rule is tested under. This
      is what lets a node without the prefix, or a coarse prefix, be judged.

   The verdict matches when that set meets the fixture's alternatives
   (`A|B` = either). A validationError that maps to no name never matches.
"""

from __future__ import annotations

import re
from typing import FrozenSet, List, Optional, Tuple

BLOCK_RLP = "block RLP"
BAL = "block access list"

_PREFIX = re.compile(r"^\s*((?:Block|Transaction)Exception\.[A-Z0-9_]+)\b")

B = "BlockException."
T = "TransactionException."

# (regex searched in the validationError, EF names it stands for). Order matters
# only where two could match the same text: the more specific comes first.
MESSAGE_RULES: List[Tuple[str, Tuple[str, ...]]] = [
    # -- decoding / format (engine.rs, BlockError::Malformed / BalFormat) --
    (r"block access list does not decode", (B + "INCORRECT_BLOCK_FORMAT", B + "INVALID_BLOCK_ACCESS_LIST")),
    (r"block access list is malformed", (B + "INCORRECT_BLOCK_FORMAT", B + "INVALID_BLOCK_ACCESS_LIST")),
    (r"invalid payload:", (B + "INCORRECT_BLOCK_FORMAT",)),
    (r"^malformed block:", (B + "INCORRECT_BLOCK_FORMAT",)),
    # -- payload against its own fields (engine.rs) --
    (r"block hash 0x[0-9a-fA-F]+ does not match the payload", (B + "INVALID_BLOCK_HASH",)),
    (r"blob versioned hashes do not match", (B + "INVALID_VERSIONED_HASHES",)),
    # -- header against parent --
    (r"block number \d+ is not parent number \+ 1", (B + "INVALID_BLOCK_NUMBER",)),
    (r"timestamp \d+ is not after the parent", (B + "INVALID_BLOCK_TIMESTAMP_OLDER_THAN_PARENT",)),
    (r"gas limit \d+ out of bounds for parent gas limit", (B + "INVALID_GASLIMIT",)),
    (r"gas used \d+ exceeds gas limit \d+", (B + "GAS_USED_OVERFLOW",)),
    (r"^base fee ", (B + "INVALID_BASEFEE_PER_GAS",)),
    (r"^excess blob gas ", (B + "INCORRECT_EXCESS_BLOB_GAS",)),
    (r"header field \w+ is missing or present against the fork rules", (B + "INCORRECT_BLOCK_FORMAT",)),
    (r"extra data is \d+ bytes, over 32", (B + "EXTRA_DATA_TOO_BIG", B + "INCORRECT_BLOCK_FORMAT")),
    (r"post-merge header has non-zero difficulty, nonce or ommers", (B + "INCORRECT_BLOCK_FORMAT",)),
    # -- body --
    (r"transactions root mismatch", (B + "INVALID_TRANSACTIONS_ROOT",)),
    (r"withdrawals root mismatch", (B + "INVALID_WITHDRAWALS_ROOT",)),
    (r"^blob gas used \d+, header says", (B + "INCORRECT_BLOB_GAS_USED",)),
    (r"block blob gas \d+ exceeds the maximum", (B + "BLOB_GAS_USED_ABOVE_LIMIT",)),
    (r"cannot recover sender of transaction", (T + "INVALID_SIGNATURE_VRS",)),
    # -- BAL before execution --
    (r"block access list hash 0x[0-9a-fA-F]+ does not match header", (B + "INVALID_BAL_HASH",)),
    (r"block access list has \d+ items, over the cap", (B + "BLOCK_ACCESS_LIST_GAS_LIMIT_EXCEEDED",)),
    # -- execution: revm's transaction errors inside "transaction N is invalid: ..." --
    (r"nonce \d+ too low", (T + "NONCE_MISMATCH_TOO_LOW",)),
    (r"nonce \d+ too high|nonce overflow in transaction", (T + "NONCE_MISMATCH_TOO_HIGH", T + "NONCE_IS_MAX")),
    (r"lack of funds|overflow payment in transaction", (T + "INSUFFICIENT_ACCOUNT_FUNDS",)),
    (r"call gas cost \(\d+\) exceeds the gas limit|gas floor \(\d+\) exceeds the gas limit",
     (T + "INTRINSIC_GAS_TOO_LOW", T + "INTRINSIC_GAS_BELOW_FLOOR_GAS_COST")),
    (r"transaction gas limit \(\d+\) is greater than the cap", (T + "GAS_LIMIT_EXCEEDS_MAXIMUM",)),
    (r"caller gas limit exceeds the block gas limit", (T + "GAS_ALLOWANCE_EXCEEDED",)),
    (r"gas price is less than basefee", (T + "INSUFFICIENT_MAX_FEE_PER_GAS",)),
    (r"priority fee is greater than max fee", (T + "PRIORITY_GREATER_THAN_MAX_FEE_PER_GAS",)),
    (r"reject transactions from senders with deployed code", (T + "SENDER_NOT_EOA",)),
    (r"blob gas price \(\d+\) is greater than max fee per blob gas", (T + "INSUFFICIENT_MAX_FEE_PER_BLOB_GAS",)),
    (r"too many blobs", (T + "TYPE_3_TX_MAX_BLOB_GAS_ALLOWANCE_EXCEEDED", T + "TYPE_3_TX_BLOB_COUNT_EXCEEDED")),
    (r"empty blobs", (T + "TYPE_3_TX_ZERO_BLOBS",)),
    (r"blob create transaction", (T + "TYPE_3_TX_CONTRACT_CREATION",)),
    (r"blob version not supported", (T + "TYPE_3_TX_INVALID_BLOB_VERSIONED_HASH",)),
    (r"empty authorization list", (T + "TYPE_4_EMPTY_AUTHORIZATION_LIST",)),
    (r"authorization list tx has invalid fields", (T + "TYPE_4_TX_CONTRACT_CREATION",)),
    (r"Eip\d+ is not supported|not supported", (T + "TYPE_NOT_SUPPORTED",)),
    (r"transaction \d+ gas limit \d+ exceeds the block's remaining gas", (T + "GAS_ALLOWANCE_EXCEEDED",)),
    (r"system call to 0x[0-9a-fA-F]+ failed|system contract 0x[0-9a-fA-F]+ has no code",
     (B + "SYSTEM_CONTRACT_CALL_FAILED", B + "SYSTEM_CONTRACT_EMPTY")),
    (r"deposit event with invalid layout", (B + "INVALID_DEPOSIT_EVENT_LAYOUT",)),
    # -- results against header --
    (r"gas used mismatch", (B + "INVALID_GAS_USED",)),
    (r"receipts root mismatch", (B + "INVALID_RECEIPTS_ROOT",)),
    (r"logs bloom mismatch", (B + "INVALID_LOG_BLOOM",)),
    (r"requests hash mismatch", (B + "INVALID_REQUESTS",)),
    (r"block access list does not match execution", (B + "INVALID_BLOCK_ACCESS_LIST",)),
    (r"state root mismatch", (B + "INVALID_STATE_ROOT",)),
]
_COMPILED = [(re.compile(pattern), names) for pattern, names in MESSAGE_RULES]


def alternatives(expected: Optional[str]) -> List[str]:
    """`"A|B"` -> `["A", "B"]` (trimmed, empties dropped)."""
    return [name.strip() for name in (expected or "").split("|") if name.strip()]


def _decode_failure_satisfies_one(what: str, name: str) -> bool:
    family, _, rule = name.partition(".")
    if family not in ("BlockException", "TransactionException") or not rule:
        return False
    if what == BLOCK_RLP:
        return (
            (rule.startswith("RLP_") and rule != "RLP_BLOCK_LIMIT_EXCEEDED")
            or name == B + "INCORRECT_BLOCK_FORMAT"
            or name == T + "TYPE_NOT_SUPPORTED"
        )
    if what == BAL:
        return name in (B + "INCORRECT_BLOCK_FORMAT", B + "INVALID_BLOCK_ACCESS_LIST")
    raise ValueError(f"unknown decode failure kind {what!r}")


def decode_failure_satisfies(what: str, expected: Optional[str]) -> bool:
    """Whether a block whose `what` (BLOCK_RLP or BAL) cannot be decoded satisfies `expected`."""
    return any(_decode_failure_satisfies_one(what, name) for name in alternatives(expected))


def classify_validation_error(text: Optional[str]) -> FrozenSet[str]:
    """The EF exception names a node's validationError stands for (empty: none)."""
    if not text:
        return frozenset()
    names = set()
    match = _PREFIX.match(text)
    body = text
    if match:
        names.add(match.group(1))
        body = text[match.end():].lstrip(": ").strip()
    for pattern, mapped in _COMPILED:
        if pattern.search(body):
            names.update(mapped)
            break
    return frozenset(names)


def verdict_matches(validation_error: Optional[str], expected: Optional[str]) -> Tuple[bool, FrozenSet[str]]:
    """(whether the node's validationError is one of the fixture's exceptions, its classes)."""
    names = classify_validation_error(validation_error)
    return bool(names & set(alternatives(expected))), names
