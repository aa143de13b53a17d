"""Minimal RLP (Recursive Length Prefix) encoder and decoder.

Why it exists: the runner must turn a fixture block's `rlp` into an Engine API
payload (header fields, raw transactions, withdrawals) and must produce the
RLP bytes of a block access list, without depending on any library outside the
Python standard library or on the client's Rust types.

Data model: an RLP item is either `bytes` (a byte string) or a `list` of items.
`encode` also accepts `int` (encoded as its minimal big-endian byte string, so
0 -> empty string) and `str` (encoded as its UTF-8 bytes) for convenience.
`decode` always returns bytes/lists.
"""

from __future__ import annotations

from typing import List, Tuple, Union

Item = Union[bytes, List["Item"]]


class RLPError(ValueError):
    """Raised for malformed RLP input (non-canonical, truncated, trailing bytes)."""


def int_to_bytes(value: int) -> bytes:
    """Minimal big-endian encoding of a non-negative integer (0 -> b'')."""
    if value < 0:
        raise RLPError("RLP cannot encode negative integers")
    if value == 0:
        return b""
    return value.to_bytes((value.bit_length() + 7) // 8, "big")


def bytes_to_int(data: bytes) -> int:
    """Big-endian bytes to int (b'' -> 0)."""
    return int.from_bytes(data, "big") if data else 0


def _length_prefix(length: int, short_base: int) -> bytes:
    # short_base is 0x80 for strings and 0xc0 for lists; the long form adds 55.
    if length <= 55:
        return bytes([short_base + length])
    length_bytes = int_to_bytes(length)
    return bytes([short_base + 55 + len(length_bytes)]) + length_bytes


def encode(item) -> bytes:
    """Encode bytes / int / str / (nested) list into RLP."""
    if isinstance(item, bool):
        raise RLPError("refusing to encode bool; use int explicitly")
    if isinstance(item, int):
        item = int_to_bytes(item)
    elif isinstance(item, str):
        item = item.encode("utf-8")
    elif isinstance(item, (bytearray, memoryview)):
        item = bytes(item)

    if isinstance(item, bytes):
        if len(item) == 1 and item[0] < 0x80:
            return item
        return _length_prefix(len(item), 0x80) + item
    if isinstance(item, (list, tuple)):
        payload = b"".join(encode(x) for x in item)
        return _length_prefix(len(payload), 0xC0) + payload
    raise RLPError(f"cannot RLP-encode value of type {type(item).__name__}")


def _read_length(data: bytes, pos: int, nbytes: int) -> int:
    if pos + nbytes > len(data):
        raise RLPError("truncated length")
    raw = data[pos : pos + nbytes]
    if raw[0] == 0:
        raise RLPError("non-canonical length (leading zero)")
    length = bytes_to_int(raw)
    if length <= 55:
        raise RLPError("non-canonical length (long form for short payload)")
    return length


def decode_item(data: bytes, pos: int = 0) -> Tuple[Item, int]:
    """Decode one item starting at `pos`; return (item, position after it)."""
    if pos >= len(data):
        raise RLPError("unexpected end of input")
    prefix = data[pos]
    if prefix < 0x80:
        return data[pos : pos + 1], pos + 1
    if prefix <= 0xB7:
        length = prefix - 0x80
        start = pos + 1
        end = start + length
        if end > len(data):
            raise RLPError("truncated string")
        if length == 1 and data[start] < 0x80:
            raise RLPError("non-canonical single byte")
        return data[start:end], end
    if prefix <= 0xBF:
        nbytes = prefix - 0xB7
        length = _read_length(data, pos + 1, nbytes)
        start = pos + 1 + nbytes
        end = start + length
        if end > len(data):
            raise RLPError("truncated long string")
        return data[start:end], end
    if prefix <= 0xF7:
        length = prefix - 0xC0
        start = pos + 1
    else:
        nbytes = prefix - 0xF7
        length = _read_length(data, pos + 1, nbytes)
        start = pos + 1 + nbytes
    end = start + length
    if end > len(data):
        raise RLPError("truncated list")
    items = []
    cursor = start
    while cursor < end:
        item, cursor = decode_item(data, cursor)
        items.append(item)
    if cursor != end:
        raise RLPError("list payload overrun")
    return items, end


def decode(data: bytes) -> Item:
    """Decode exactly one RLP item; trailing bytes are an error."""
    item, end = decode_item(bytes(data), 0)
    if end != len(data):
        raise RLPError(f"trailing bytes after RLP item ({len(data) - end})")
    return item


def hex_to_bytes(value: str) -> bytes:
    """'0x..' hex string (odd lengths allowed) to bytes."""
    text = value[2:] if value.startswith(("0x", "0X")) else value
    if len(text) % 2:
        text = "0" + text
    return bytes.fromhex(text)
