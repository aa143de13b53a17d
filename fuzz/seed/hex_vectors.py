#!/usr/bin/env python3
"""Seeds from the hex test vectors in crates/net: the EIP-8 discovery packets
(discv4_packet), the EIP-8 Hello and Disconnect payloads (rlpx_p2p), and geth's Status
and Receipts payloads (eth_message, prefixed with the version and id bytes the target
reads). Run from the repository root: python3 fuzz/seed/hex_vectors.py"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "fuzz" / "corpus"


def consts(path):
    """Every `const NAME: &str = "hex";` in a Rust file, whitespace removed."""
    text = (ROOT / path).read_text()
    out = {}
    for m in re.finditer(r'const ([A-Z0-9_]+): &str =\s*"([0-9a-fA-F\s]+)"', text):
        out[m.group(1)] = bytes.fromhex("".join(m.group(2).split()))
    return out


def write(target, name, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


for name, data in consts("crates/net/src/discv4/tests.rs").items():
    write("discv4_packet", f"eip8-{name.lower()}", data)

p2p = (ROOT / "crates/net/src/rlpx/p2p.rs").read_text()
m = re.search(r"fn eip8_hello_vector_decodes.*?concat!\((.*?)\)", p2p, re.S)
write("rlpx_p2p", "eip8-hello", bytes.fromhex("".join(re.findall(r'"([0-9a-f]+)"', m.group(1)))))
for code in (0x00, 0x04, 0x10):
    write("rlpx_p2p", f"disconnect-{code:02x}", bytes([0xC1, code]) if code else bytes([0xC1, 0x80]))
write("rlpx_p2p", "disconnect-bare-04", bytes([0x04]))

eth = consts("crates/net/src/eth/tests.rs")
# Target input: [version selector (69 + b % 3), message id, payload...].
write("eth_message", "geth-status-69", bytes([0, 0x00]) + eth["GETH_STATUS_69"])
write("eth_message", "geth-receipts-69", bytes([0, 0x10]) + eth["GETH_RECEIPTS_69"])

# The ENR spec's example record (EIP-778), for Enr::decode.
tests = (ROOT / "crates/net/src/discv4/tests.rs").read_text()
m = re.search(r'unhex\(\s*"(f884b840[0-9a-f\\\s]+)"', tests)
write("discv4_packet", "enr-spec-record", bytes.fromhex(re.sub(r"[\\\s]", "", m.group(1))))
