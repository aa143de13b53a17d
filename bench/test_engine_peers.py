#!/usr/bin/env python3
"""Tests of bench/engine_peers.py without a client binary: python3 bench/test_engine_peers.py
(stdlib unittest). The numbers, the answer checks, the summary, and `feed` end to end
against a stand-in Engine API (a local HTTP server on 127.0.0.1 that checks the JWT and
answers as a client would, or rejects one block)."""
import argparse
import json
import os
import sys
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import engine_peers as ep  # noqa: E402
from hive.engine_runner import jwt  # noqa: E402


def h(n: int) -> str:
    return "0x" + format(n, "064x")


class Numbers(unittest.TestCase):
    def test_pct_nearest_rank(self):
        v = list(range(1, 150))  # 149 values
        self.assertEqual(ep.pct(v, 0.5), 75)
        self.assertEqual(ep.pct(v, 0.99), 148)
        self.assertEqual(ep.pct([3.0], 0.99), 3.0)
        self.assertIsNone(ep.pct([], 0.5))
        self.assertEqual(ep.pct([5, 1, 3, 2, 4], 0.5), 3)

    def test_mgas(self):
        # 100 Mgas in 4 blocks of 250 ms: 1 s in all.
        self.assertAlmostEqual(ep.mgas_per_s(100_000_000, [250.0] * 4), 100.0)
        self.assertIsNone(ep.mgas_per_s(1, []))

    def test_forkchoice_lags_finalized(self):
        hashes = [h(i) for i in range(100)]
        self.assertEqual(ep.forkchoice(hashes, 0)["finalizedBlockHash"], h(0))
        self.assertEqual(ep.forkchoice(hashes, 10),
                         {"headBlockHash": h(10), "safeBlockHash": h(10), "finalizedBlockHash": h(0)})
        self.assertEqual(ep.forkchoice(hashes, 99)["finalizedBlockHash"], h(99 - ep.FINALIZED_LAG))


class Answers(unittest.TestCase):
    def test_payload_valid(self):
        self.assertIsNone(ep.payload_problem(3, h(3), {"result": {"status": "VALID", "latestValidHash": h(3)}}))

    def test_payload_invalid_names_block_and_answer(self):
        reply = {"result": {"status": "INVALID", "latestValidHash": h(2), "validationError": "state root mismatch"}}
        msg = ep.payload_problem(3, h(3), reply)
        self.assertIn("block 3", msg)
        self.assertIn("INVALID", msg)
        self.assertIn("state root mismatch", msg)
        self.assertIn("SYNCING", ep.payload_problem(1, h(1), {"result": {"status": "SYNCING", "latestValidHash": None}}))
        self.assertIn("ACCEPTED", ep.payload_problem(1, h(1), {"result": {"status": "ACCEPTED"}}))

    def test_payload_error_and_wrong_hash(self):
        msg = ep.payload_problem(7, h(7), {"error": {"code": -32602, "message": "invalid params"}})
        self.assertIn("block 7", msg)
        self.assertIn("-32602", msg)
        self.assertIn("latestValidHash", ep.payload_problem(7, h(7), {"result": {"status": "VALID", "latestValidHash": h(6)}}))

    def test_fcu(self):
        ok = {"result": {"payloadStatus": {"status": "VALID", "latestValidHash": h(4)}, "payloadId": None}}
        self.assertIsNone(ep.fcu_problem(4, h(4), ok))
        self.assertIn("head 4", ep.fcu_problem(4, h(4), {"result": {"payloadStatus": {"status": "SYNCING"}}}))


def run_record(client, rnd, p50, p99, mgas, ok=True, **kw):
    rec = {"kind": "run", "client": client, "round": rnd, "ok": ok, "p50_ms": p50, "p99_ms": p99,
           "mgas_s": mgas, "blocks": 10, "gas": 10 ** 9, "fcu_p50_ms": 1.0, "peak_rss_mb": 100}
    rec.update(kw)
    return rec


class Summary(unittest.TestCase):
    def test_medians_and_ratios(self):
        recs = [run_record("ethrex", 1, 10, 20, 300), run_record("geth", 1, 40, 80, 70),
                run_record("ethrex", 2, 12, 22, 280), run_record("geth", 2, 50, 90, 60),
                run_record("ethrex", 3, 11, 30, 290), run_record("geth", 3, 45, 85, 65),
                {"kind": "note", "client": "reth", "text": "not run: no --reth BIN"}]
        s = ep.summarize(recs, ["ethrex", "geth", "reth"])
        self.assertEqual(s["ethrex"]["p50_ms"], 11)
        self.assertEqual(s["ethrex"]["p99_ms"], 22)
        self.assertEqual(s["geth"]["mgas_s"], 65)
        self.assertEqual(s["ethrex"]["runs"], 3)
        self.assertEqual(len(s["geth"]["rounds"]), 3)
        self.assertTrue(s["reth"]["status"].startswith("not run"))
        r = ep.ratios(s)
        self.assertAlmostEqual(r["p50"], round(11 / 45, 3))
        self.assertAlmostEqual(r["mgas_s"], round(290 / 65, 3))

    def test_failure_is_kept(self):
        recs = [run_record("ethrex", 1, 10, 20, 300),
                {"kind": "run", "client": "geth", "round": 1, "ok": False, "error": "block 2: newPayload answered ...",
                 "block": 2}]
        s = ep.summarize(recs, ["ethrex", "geth"])
        self.assertNotIn("runs", s["geth"])
        self.assertIn("block 2", s["geth"]["failures"][0])
        self.assertIsNone(ep.ratios(s)["p50"])


# ---- feed against a stand-in Engine API


def fake_prep(directory, blocks=3):
    calls = []
    with open(os.path.join(directory, "calls.jsonl"), "w") as fh:
        for n in range(1, blocks + 1):
            rec = {"number": n, "hash": h(1000 + n), "state_root": h(2000 + n), "gas_used": 1_000_000 * n,
                   "gas_limit": 30_000_000, "txs": n, "method": "engine_newPayloadV5", "fcu_version": 4,
                   "params": [{"blockHash": h(1000 + n), "blockNumber": hex(n)}, [], h(0), []],
                   "block_rlp": "0xc0", "bal": "0xc0"}
            calls.append(rec)
            fh.write(json.dumps(rec) + "\n")
    chain = {"dir": directory, "blocks_in_chain": blocks, "blocks": blocks, "gas": sum(c["gas_used"] for c in calls),
             "txs": 6, "txs_per_block": [1, 3], "gas_used_per_block": [1_000_000, 3_000_000],
             "gas_limit": [30_000_000, 30_000_000], "genesis_hash": h(1000), "head": calls[-1]["hash"],
             "head_state_root": calls[-1]["state_root"]}
    with open(os.path.join(directory, "chain.json"), "w") as fh:
        json.dump(chain, fh)
    return chain


class FakeClient:
    """A stand-in execution client: the JWT checked, blocks VALID unless `reject` names one."""

    def __init__(self, secret, reject=None):
        self.secret, self.reject = secret, reject
        self.head = (0, h(1000), h(2000))
        self.methods = []
        me = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                auth = self.headers.get("Authorization", "")
                if not body["method"].startswith("eth_"):
                    try:
                        jwt.verify_token(auth.removeprefix("Bearer "), me.secret)
                    except ValueError:
                        self.send_response(401)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                out = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": me.answer(body)}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, body):
        method, params = body["method"], body["params"]
        self.methods.append(method)
        if method == "eth_getBlockByNumber":
            n, hsh, root = self.head if params[0] == "latest" else (0, h(1000), h(2000))
            return {"number": hex(n), "hash": hsh, "stateRoot": root}
        if method.startswith("engine_newPayload") or method == "reth_newPayload":
            n = int(params[0]["blockNumber"], 16) if method != "reth_newPayload" else len(
                [m for m in self.methods if m == "reth_newPayload"])
            if n == self.reject:
                return {"status": "INVALID", "latestValidHash": h(1000 + n - 1), "validationError": "bad state root"}
            return {"status": "VALID", "latestValidHash": h(1000 + n), "validationError": None}
        if method.startswith("engine_forkchoiceUpdated"):
            head = params[0]["headBlockHash"]
            n = int(head, 16) - 1000
            self.head = (n, head, h(2000 + n))
            return {"payloadStatus": {"status": "VALID", "latestValidHash": head}, "payloadId": None}
        raise AssertionError(method)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Feed(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        fake_prep(self.dir)
        self.secret = jwt.new_secret()
        self.jwt = os.path.join(self.dir, "jwt.hex")
        with open(self.jwt, "w") as fh:
            fh.write(self.secret.hex())
        self.results = os.path.join(self.dir, "results.jsonl")

    def tearDown(self):
        self.tmp.cleanup()

    def args(self, url, style="engine"):
        return argparse.Namespace(prep=self.dir, auth=url, jwt=self.jwt, eth=url, client="fake", pid=None, round=1,
                                  style=style, results=self.results, timeout=10.0, progress=0)

    def records(self):
        with open(self.results) as fh:
            return [json.loads(line) for line in fh]

    def test_valid_chain(self):
        fake = FakeClient(self.secret)
        try:
            self.assertEqual(ep.feed(self.args(fake.url)), 0)
        finally:
            fake.close()
        rec = self.records()[0]
        self.assertTrue(rec["ok"])
        self.assertEqual(rec["blocks"], 3)
        self.assertEqual(rec["gas"], 6_000_000)
        self.assertEqual(len(rec["newpayload_ms"]), 3)
        self.assertEqual(fake.methods.count("engine_newPayloadV5"), 3)
        # forkchoice to the genesis first, then one per block
        self.assertEqual(fake.methods.count("engine_forkchoiceUpdatedV4"), 4)

    def test_rejected_block_fails_with_number_and_answer(self):
        fake = FakeClient(self.secret, reject=2)
        try:
            self.assertEqual(ep.feed(self.args(fake.url)), 1)
        finally:
            fake.close()
        rec = self.records()[0]
        self.assertFalse(rec["ok"])
        self.assertEqual(rec["block"], 2)
        self.assertIn("block 2", rec["error"])
        self.assertIn("bad state root", rec["error"])
        self.assertEqual(fake.methods.count("engine_newPayloadV5"), 2)

    def test_wrong_jwt_is_a_failure(self):
        fake = FakeClient(jwt.new_secret())
        try:
            self.assertEqual(ep.feed(self.args(fake.url)), 1)
        finally:
            fake.close()
        self.assertIn("JWT", self.records()[0]["error"])

    def test_reth_style_sends_block_and_bal(self):
        fake = FakeClient(self.secret)
        seen = []
        orig = fake.answer

        def spy(body):
            if body["method"] == "reth_newPayload":
                seen.append(body["params"])
            return orig(body)

        fake.answer = spy
        try:
            self.assertEqual(ep.feed(self.args(fake.url, style="reth")), 0)
        finally:
            fake.close()
        # reth's RethNewPayloadInput: {block, bal}, or the block's RLP alone; then
        # wait_for_persistence and wait_for_caches.
        self.assertEqual(seen[0], [{"block": "0xc0", "bal": "0xc0"}, False, False])
        method, params = ep.reth_params({"block_rlp": "0xc0", "bal": "0xc1"}, with_bal=False)
        self.assertEqual((method, params), ("reth_newPayload", ["0xc0", False, False]))


if __name__ == "__main__":
    unittest.main()
