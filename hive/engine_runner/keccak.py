"""Pure-Python Keccak-256 (the pre-standard padding Ethereum uses).

Why it exists: `hashlib` only has the FIPS-202 SHA3 variants, whose padding
differs from Ethereum's keccak256. The runner itself never needs a hash (block
hashes come from the fixtures), but the unit tests use this to prove that the
BAL encoding reproduces each fixture header's `blockAccessListHash` bit for
bit. It is slow (pure Python) and only meant for small inputs.

Correctness of the permutation is checked in the tests by running it with the
SHA3 padding and comparing against `hashlib.sha3_256`.
"""

from __future__ import annotations

_MASK = (1 << 64) - 1


def _round_constants():
    # Iota constants from the degree-8 LFSR x^8 + x^6 + x^5 + x^4 + 1.
    state = 1
    bits = []
    for _ in range(7 * 24):
        bits.append(state & 1)
        state <<= 1
        if state & 0x100:
            state ^= 0x171
    constants = []
    for i in range(24):
        value = 0
        for j in range(7):
            if bits[7 * i + j]:
                value |= 1 << ((1 << j) - 1)
        constants.append(value)
    return constants


def _rotation_offsets():
    # Rho offsets: walk (x, y) <- (y, 2x + 3y) starting from (1, 0).
    offsets = [[0] * 5 for _ in range(5)]
    x, y = 1, 0
    for t in range(24):
        offsets[x][y] = ((t + 1) * (t + 2) // 2) % 64
        x, y = y, (2 * x + 3 * y) % 5
    return offsets


_RC = _round_constants()
_ROT = _rotation_offsets()


def _rotl(value: int, shift: int) -> int:
    shift %= 64
    if shift == 0:
        return value
    return ((value << shift) | (value >> (64 - shift))) & _MASK


def _permute(lanes):
    # lanes[x][y], 64-bit integers.
    for rc in _RC:
        c = [lanes[x][0] ^ lanes[x][1] ^ lanes[x][2] ^ lanes[x][3] ^ lanes[x][4] for x in range(5)]
        d = [c[(x - 1) % 5] ^ _rotl(c[(x + 1) % 5], 1) for x in range(5)]
        for x in range(5):
            for y in range(5):
                lanes[x][y] ^= d[x]
        b = [[0] * 5 for _ in range(5)]
        for x in range(5):
            for y in range(5):
                b[y][(2 * x + 3 * y) % 5] = _rotl(lanes[x][y], _ROT[x][y])
        for x in range(5):
            for y in range(5):
                lanes[x][y] = b[x][y] ^ ((~b[(x + 1) % 5][y]) & b[(x + 2) % 5][y])
        lanes[0][0] ^= rc
    return lanes


def _sponge(data: bytes, rate: int, suffix: int, out_len: int) -> bytes:
    padded = bytearray(data)
    padded.append(suffix)
    while len(padded) % rate:
        padded.append(0)
    padded[-1] |= 0x80
    lanes = [[0] * 5 for _ in range(5)]
    for block_start in range(0, len(padded), rate):
        block = padded[block_start : block_start + rate]
        for i in range(rate // 8):
            x, y = i % 5, i // 5
            lanes[x][y] ^= int.from_bytes(block[8 * i : 8 * i + 8], "little")
        _permute(lanes)
    out = bytearray()
    while len(out) < out_len:
        for i in range(rate // 8):
            x, y = i % 5, i // 5
            out += lanes[x][y].to_bytes(8, "little")
        if len(out) < out_len:
            _permute(lanes)
    return bytes(out[:out_len])


def keccak256(data: bytes) -> bytes:
    """Ethereum keccak256 (padding byte 0x01)."""
    return _sponge(bytes(data), 136, 0x01, 32)


def sha3_256(data: bytes) -> bytes:
    """FIPS-202 SHA3-256 with the same permutation (for self-testing only)."""
    return _sponge(bytes(data), 136, 0x06, 32)
