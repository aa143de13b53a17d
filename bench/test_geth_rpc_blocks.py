#!/usr/bin/env python3
"""Tests of bench/geth_rpc_blocks.py's comparison (no nodes): python3
bench/test_geth_rpc_blocks.py (stdlib unittest)."""
import json
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import geth_rpc_blocks as g  # noqa: E402

BLOCK = ('{"baseFeePerGas":"0x7","hash":"0xaa","number":"0x1b","transactions":'
         '[{"chainId":"0x1","hash":"0x01","v":"0x0"}],"uncles":[]}')


def body(result_text, id_="1", spaced=False):
    sep = ", " if spaced else ","
    return f'{{"jsonrpc":"2.0"{sep}"id":{id_}{sep}"result":{result_text}}}\n'.encode()


class Parsing(unittest.TestCase):
    def test_raw_result_is_exact(self):
        text = '{ "b" : 1,\n "a":[1, 2] }'
        raw, value = g.result_of(body(text, spaced=True))
        self.assertEqual(raw, text)
        self.assertEqual(list(value), ["b", "a"])

    def test_result_anywhere_and_nested_result_key_ignored(self):
        b = '{"result":{"result":5},"id":1,"jsonrpc":"2.0"}'
        raw, value = g.result_of(b)
        self.assertEqual(raw, '{"result":5}')
        self.assertEqual(value, {"result": 5})

    def test_null_result(self):
        self.assertEqual(g.result_of(body("null")), ("null", None))

    def test_error_answer(self):
        with self.assertRaisesRegex(g.AnswerError, "error answer.*-32000"):
            g.result_of(b'{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"x"}}')

    def test_duplicate_keys(self):
        with self.assertRaisesRegex(g.AnswerError, "duplicate key"):
            g.result_of(body('{"a":1,"a":2}'))
        with self.assertRaisesRegex(g.AnswerError, "duplicate top-level"):
            g.result_of(b'{"result":1,"result":2}')

    def test_not_an_object(self):
        with self.assertRaises(g.AnswerError):
            g.result_of(b"[1]")
        with self.assertRaises(g.AnswerError):
            g.result_of(b'{"result":1')


class Compare(unittest.TestCase):
    def test_identical(self):
        c = g.compare_bodies(body(BLOCK, id_="7"), body(BLOCK))
        self.assertEqual(c.status, "identical")
        self.assertFalse(c.failed())

    def test_formatting_only(self):
        spaced = json.dumps(json.loads(BLOCK))  # ", " and ": " separators, same order
        c = g.compare_bodies(body(spaced), body(BLOCK))
        self.assertEqual(c.status, "formatting")
        self.assertFalse(c.failed())
        self.assertTrue(c.failed(strict_bytes=True))

    def test_key_order_only(self):
        v = json.loads(BLOCK)
        reordered = {k: v[k] for k in reversed(list(v))}
        reordered["transactions"] = [{"v": "0x0", "hash": "0x01", "chainId": "0x1"}]
        c = g.compare_bodies(body(json.dumps(reordered, separators=(",", ":"))), body(BLOCK))
        self.assertEqual(c.status, "order")
        self.assertEqual(c.values, [])
        self.assertEqual([p for p, _, _ in c.orders], ["(result)", "transactions[0]"])
        self.assertEqual(c.orders[1][1], ["v", "hash", "chainId"])
        self.assertEqual(c.orders[1][2], ["chainId", "hash", "v"])
        self.assertTrue(c.failed())
        self.assertFalse(c.failed(ignore_order=True))

    def test_values(self):
        ours = json.loads(BLOCK)
        ours["number"] = "0x01b"                      # changed
        del ours["baseFeePerGas"]                     # absent on our side
        ours["totalDifficulty"] = "0x1"               # extra on our side
        del ours["transactions"][0]["chainId"]
        ours["transactions"].append("0x02")           # longer list
        c = g.compare_bodies(body(json.dumps(ours)), body(BLOCK))
        self.assertEqual(c.status, "value")
        self.assertTrue(c.failed(ignore_order=True))
        got = {p: (a, b) for p, a, b in c.values}
        self.assertEqual(got["number"], ("0x01b", "0x1b"))
        self.assertIs(got["baseFeePerGas"][0], g.MISSING)
        self.assertIs(got["totalDifficulty"][1], g.MISSING)
        self.assertEqual(got["transactions[0].chainId"], (g.MISSING, "0x1"))
        self.assertEqual(got["transactions.length"], (2, 1))
        self.assertEqual(got["transactions[1]"], ("0x02", g.MISSING))
        self.assertEqual(len(c.values), 6)
        # Different key sets, same relative order of the shared keys: no order difference.
        self.assertEqual(c.orders, [])

    def test_types_differ(self):
        c = g.compare_bodies(body('{"a":1}'), body('{"a":"0x1"}'))
        self.assertEqual(c.values, [("a", 1, "0x1")])
        c = g.compare_bodies(body('{"a":true}'), body('{"a":1}'))
        self.assertEqual(c.status, "value")
        c = g.compare_bodies(body("null"), body(BLOCK))
        self.assertEqual(c.values[0][0], "(result)")

    def test_values_and_order_together(self):
        c = g.compare_bodies(body('{"b":1,"a":2}'), body('{"a":2,"b":3}'))
        self.assertEqual(c.status, "value")
        self.assertEqual(c.values, [("b", 1, 3)])
        self.assertEqual(c.orders, [("(result)", ["b", "a"], ["a", "b"])])

    def test_error_answers(self):
        err = b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}'
        c = g.compare_bodies(err, body(BLOCK))
        self.assertEqual(c.status, "error")
        self.assertEqual([s for s, _ in c.errors], ["ours"])
        self.assertTrue(c.failed(ignore_order=True))
        c = g.compare_bodies(b"not json", err)
        self.assertEqual([s for s, _ in c.errors], ["ours", "geth"])


class Reports(unittest.TestCase):
    def test_show(self):
        self.assertEqual(g.show(g.MISSING), "<absent>")
        self.assertEqual(g.show({"a": [1]}), '{"a":[1]}')
        long = g.show("0x" + "00" * 256)
        self.assertLessEqual(len(long), g.TRUNCATE + 20)
        self.assertIn("(516 chars)", long)

    def test_shape(self):
        self.assertEqual(g.shape("transactions[3].accessList[0].address"), "transactions[].accessList[].address")

    def test_report_block_dedupes_variants(self):
        a = g.compare_bodies(body('{"x":"0x1","transactions":["0xa"]}'), body('{"x":"0x2","transactions":["0xa"]}'))
        b = g.compare_bodies(body('{"x":"0x1","transactions":[{"v":"0x1"}]}'),
                             body('{"x":"0x2","transactions":[{"v":"0x25"}]}'))
        lines = g.report_block("block 5:", {"full=false": a, "full=true": b})
        self.assertEqual(lines, [
            "block 5:",
            '  full=false x: ours "0x1" | geth "0x2"',
            '  full=true transactions[0].v: ours "0x1" | geth "0x25"',
        ])
        many = g.compare_bodies(body('{"t":[{"c":"0x0"},{"c":"0x0"},{"c":"0x1"}]}'), body('{"t":[{},{},{}]}'))
        self.assertEqual(g.report_block("block 2:", {"full=true": many}), [
            "block 2:",
            '  full=true t[].c (x2): ours "0x0" | geth <absent>',
            '  full=true t[2].c: ours "0x1" | geth <absent>',
        ])
        lines = g.report_block("block 5:", {"full=false": a, "full=true": a})
        self.assertEqual(lines[-1], "  full=true: the same value differences")
        self.assertEqual(g.report_block("block 6:", {}), [])

    def test_report_block_limits_lines(self):
        ours = {f"k{i}": i for i in range(40)}
        c = g.compare_bodies(body(json.dumps(ours)), body("{}"))
        lines = g.report_block("block 1:", {"full=false": c}, max_lines=5)
        self.assertEqual(len(lines), 7)
        self.assertEqual(lines[-1], "  ... 35 more lines")

    def test_summaries(self):
        c1 = g.compare_bodies(body('{"b":1,"a":[{"y":1,"x":2}]}'), body('{"a":[{"x":2,"y":1}],"b":2}'))
        c2 = g.compare_bodies(body('{"b":1,"a":[]}'), body('{"a":[],"b":1}'))
        orders = g.order_summary([("1/full=false", c1), ("2/full=false", c2)])
        self.assertEqual(orders, [
            ("(result)", ["b", "a"], ["a", "b"], ["1/full=false", "2/full=false"]),
            ("a[]", ["y", "x"], ["x", "y"], ["1/full=false"]),
        ])
        self.assertEqual(g.field_summary([("1", c1), ("2", c2)]), [("b", 1)])


class WholeReport(unittest.TestCase):
    def test_ranges(self):
        self.assertEqual(g.ranges(["0", "2", "3", "4", "7", "latest", "safe"]), "0, 2..4, 7, latest, safe")
        self.assertEqual(g.ranges([]), "")
        self.assertEqual(g.ranges(["9"]), "9")

    def test_report(self):
        same = g.compare_bodies(body(BLOCK), body(BLOCK))
        gone = g.compare_bodies(body("null"), body(BLOCK))
        order = g.compare_bodies(body('{"b":1,"a":2}'), body('{"a":2,"b":1}'))
        value = g.compare_bodies(body('{"a":1}'), body('{"a":2}'))
        both = lambda c: {"full=false": c, "full=true": c}
        results = [("0", both(same)), ("1", both(value)), ("2", both(gone)), ("3", both(gone)),
                   ("4", both(order)), ("latest", both(gone))]
        lines, failed = g.report(results)
        self.assertEqual(failed, ["1", "2", "3", "4", "latest"])
        self.assertEqual(lines[:3], ["block 1:", '  full=false a: ours 1 | geth 2',
                                     "  full=true: the same value differences"])
        self.assertIn("absent on our node (result null), geth has them: 2..3, latest", lines)
        self.assertIn("    ours: b, a", lines)
        self.assertEqual(lines[-1], "differing fields (answers each differs in): (result) (6), a (2)")
        _, failed = g.report(results, ignore_order=True)
        self.assertEqual(failed, ["1", "2", "3", "latest"])
        lines, failed = g.report([("0", both(same))])
        self.assertEqual((lines, failed), ([], []))


class Jwt(unittest.TestCase):
    def test_token_shape_and_signature(self):
        import base64
        import hashlib
        import hmac
        secret = "0x" + "11" * 32
        token = g.jwt_token(secret, now=1700000000)
        head, claims, sig = token.split(".")
        dec = lambda s: base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
        self.assertEqual(json.loads(dec(head)), {"alg": "HS256", "typ": "JWT"})
        self.assertEqual(json.loads(dec(claims)), {"iat": 1700000000})
        want = hmac.new(bytes.fromhex("11" * 32), f"{head}.{claims}".encode(), hashlib.sha256).digest()
        self.assertEqual(dec(sig), want)
        self.assertEqual(g.jwt_token("11" * 32 + "\n", now=1700000000), token)


if __name__ == "__main__":
    unittest.main()
