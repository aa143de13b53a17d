#!/usr/bin/env python3
"""Tests of bench/web3_compare.py's pure helpers (no nodes, no solc): python3
bench/test_web3_compare.py (stdlib unittest; web3.py must be installed)."""
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import web3_compare as w  # noqa: E402


def step(pc, op, gas, cost, depth=1, **extra):
    return {"pc": pc, "op": op, "gas": gas, "gasCost": cost, "depth": depth, **extra}


class Frames(unittest.TestCase):
    def test_gas_left_out_and_nested_calls_kept(self):
        frame = {"type": "CALL", "from": "0xAB", "to": "0xCD", "gas": "0x10", "gasUsed": "0x5",
                 "input": "0x01", "value": "0x0",
                 "calls": [{"type": "CALL", "from": "0xCD", "to": "0xCD", "gas": "0x8",
                            "gasUsed": "0x2", "input": "0x02", "output": "0x03"}]}
        self.assertEqual(w.call_frames(frame), {
            "type": "CALL", "from": "0xab", "to": "0xcd", "input": "0x01", "value": "0x0",
            "calls": [{"type": "CALL", "from": "0xcd", "to": "0xcd", "input": "0x02", "output": "0x03",
                       "calls": []}]})
        self.assertEqual(w.frame_gas(frame), (16, 5))

    def test_error_and_reason_kept(self):
        frame = {"type": "CALL", "error": "execution reverted", "revertReason": "no", "gas": "0x1",
                 "gasUsed": "0x1"}
        self.assertEqual(w.call_frames(frame)["revertReason"], "no")
        self.assertEqual(w.call_frames(frame)["error"], "execution reverted")


class StructLogs(unittest.TestCase):
    def test_steps_with_storage_only_at_storage_ops(self):
        result = {"structLogs": [step(0, "PUSH1", 100, 3),
                                 step(2, "SLOAD", 97, 2100, storage={"0x00AA": "0x01"})]}
        self.assertEqual(w.struct_steps(result), [[0, "PUSH1", 1, None], [2, "SLOAD", 1, None, {"0x00aa": "0x01"}]])
        self.assertEqual(w.struct_steps(result, storage=False), [[0, "PUSH1", 1, None], [2, "SLOAD", 1, None]])

    def test_compute_costs_skip_state_ops(self):
        result = {"structLogs": [step(0, "PUSH1", 100, 3), step(2, "SSTORE", 97, 5000), step(3, "STOP", 0, 0)]}
        self.assertEqual(w.compute_costs(result), [(0, "PUSH1", 3), (2, "STOP", 0)])

    def test_gas_chain(self):
        ok = {"structLogs": [step(0, "PUSH1", 100, 3), step(2, "PUSH1", 97, 3), step(4, "CALL", 94, 50),
                             step(0, "STOP", 40, 0, depth=2), step(5, "POP", 80, 2), step(6, "STOP", 78, 0)]}
        self.assertEqual(w.gas_chain_breaks(ok), [])
        bad = {"structLogs": [step(0, "PUSH1", 100, 3), step(2, "ADD", 90, 3)]}
        self.assertEqual(w.gas_chain_breaks(bad), [(0, "PUSH1", 100, 3, 90)])


CONTRACT = "0x5fbdb2315678afecb367f032d93f642f64180aa3"
EVENT_TOPICS = ["0xe435f0fbe584e62b62f48f4016a57ef6c95e4c79f5babbe6ad3bb64f3281d261",
                "0x000000000000000000000000f39fd6e51aad88f6f4ce6ab8827279cfffb92266", "0x" + "00" * 32]
# Both nodes' logsBloom of a receipt with that one log (the deployment's).
EVENT_BLOOM = ("0x"
               "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
               "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
               "0000000000000000000000400200000000000001000008000000000000000000001000000000000000000000"
               "0000000000000000000000000000000000000000000000020000000000000000000000000000000000000000"
               "0000000000000000000000000000000000000040000000200000000000000000000000002000000000000000"
               "000020000000000400000000000000000000000000000000000080000000000000000000")
TRANSFER = {"address": "0x" + "ff" * 19 + "fe", "topics": [w.TRANSFER_TOPIC, "0x01", "0x02"],
            "logIndex": 0, "blockHash": b"\xaa"}


class Logs(unittest.TestCase):
    def test_bloom_of_a_known_receipt(self):
        self.assertEqual(len(EVENT_BLOOM), 2 + 512)
        self.assertEqual(w.bloom([{"address": CONTRACT, "topics": EVENT_TOPICS}]), EVENT_BLOOM)
        self.assertEqual(w.bloom([]), "0x" + "00" * 256)

    def test_transfer_logs_told_apart_and_left_out_of_indexes(self):
        event = {"address": CONTRACT, "topics": EVENT_TOPICS, "logIndex": 1, "blockHash": b"\xaa"}
        self.assertTrue(w.is_transfer_log(TRANSFER))
        self.assertFalse(w.is_transfer_log(event))
        self.assertFalse(w.is_transfer_log({**TRANSFER, "address": CONTRACT}))
        self.assertEqual(w.own_index(event, {"0xaa": [0]}), 0)
        self.assertEqual(w.own_index(event, {}), 1)

    def test_receipt_view_without_transfer_logs(self):
        event = {"address": CONTRACT, "topics": EVENT_TOPICS, "logIndex": 1}
        receipt = {"status": 1, "type": 2, "from": "0xAB", "to": CONTRACT, "contractAddress": None,
                   "transactionIndex": 0, "logs": [TRANSFER, event]}
        view = w.receipt_view(receipt)
        self.assertEqual(view["logs"], 1)
        self.assertEqual(view["logsBloom of them"], EVENT_BLOOM)
        self.assertEqual(view["from"], "0xab")

    def test_gas_mode(self):
        self.assertEqual(w.gas_mode("Shanghai,Cancun,Prague,Osaka,Amsterdam,Bogota"), "all")
        self.assertEqual(w.gas_mode("Shanghai,Cancun,Prague,Osaka,Bogota"), "opcodes")
        self.assertEqual(w.gas_mode("Shanghai,Cancun,Prague,Osaka"), "compute")


class Values(unittest.TestCase):
    def test_plain(self):
        self.assertEqual(w.plain({"a": b"\x01\x02", "b": (1, [b""])}), {"a": "0x0102", "b": [1, ["0x"]]})

    def test_lower_hex_leaves_text(self):
        self.assertEqual(w.lower_hex({"x": "0xAbC", "y": "Hello", "z": ["0xF"]}),
                         {"x": "0xabc", "y": "Hello", "z": ["0xf"]})

    def test_compare_union_of_keys(self):
        same, differ = w.compare([("a", {"k": 1, "m": 2}), ("b", {"k": 1, "n": 3})])
        self.assertEqual([k for k, _, _ in same], ["k"])
        self.assertEqual(differ, [("m", 2, "<missing>"), ("n", "<missing>", 3)])

    def test_first_diff(self):
        self.assertEqual(w.first_diff([1, 2, 3], [1, 5, 3]), "[1]: 2 vs 5")
        self.assertEqual(w.first_diff([1], [1, 2]), "lengths 1 vs 2")
        self.assertEqual(w.first_diff({"a": 1, "b": 2}, {"a": 1, "b": 3}), "b: 2 vs 3")


if __name__ == "__main__":
    unittest.main()
