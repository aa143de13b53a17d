"""Unit tests of rpc_compat.py's judging logic (no node is started).

Run: python3 -m unittest hive/test_rpc_compat.py   (or python3 hive/test_rpc_compat.py)
"""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rpc_compat as rc  # noqa: E402

REQUEST = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}'
BLOCK_SCHEMA = {
    "type": "object",
    "required": ["number", "hash"],
    "properties": {
        "number": {"type": "string", "pattern": "^0x(0|[1-9a-f][0-9a-f]*)$"},
        "hash": {"type": "string", "pattern": "^0x[0-9a-f]{64}$"},
    },
}
SCHEMAS = {
    "eth_getBlockByNumber": rc.jsonschema.Draft201909Validator(BLOCK_SCHEMA),
    "eth_blockNumber": rc.jsonschema.Draft201909Validator({"type": "string"}),
}


def check(got, want, method="eth_blockNumber", speconly=False):
    """check_response on two JSON texts (or values)."""
    if not isinstance(got, str):
        got = json.dumps(got)
    if not isinstance(want, str):
        want = json.dumps(want)
    return rc.check_response(method, got.encode(), want, speconly, SCHEMAS)


def ok(result):
    return {"jsonrpc": "2.0", "id": 1, "result": result}


def err(code, message="boom", **extra):
    return {"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": message, **extra}}


class ExactComparison(unittest.TestCase):
    def test_key_order_and_whitespace_do_not_matter(self):
        self.assertIsNone(check('{"result":"0x1", "id":1,\n "jsonrpc":"2.0"}  ', ok("0x1")))

    def test_different_value_fails_with_path(self):
        reason = check(ok({"a": [1, {"b": "0x2"}]}), ok({"a": [1, {"b": "0x3"}]}))
        self.assertIn('$.result.a[1].b: expected "0x3", got "0x2"', reason)

    def test_extra_key_fails(self):
        reason = check(ok({"a": 1, "extra": None}), ok({"a": 1}))
        self.assertIn("$.result.extra: expected <missing>, got null", reason)

    def test_missing_key_fails(self):
        reason = check(ok({}), ok({"a": 1}))
        self.assertIn("$.result.a: expected 1, got <missing>", reason)

    def test_null_is_not_missing(self):
        self.assertIsNotNone(check(ok({"a": None}), ok({})))

    def test_array_length_matters(self):
        reason = check(ok([1, 2, 3]), ok([1, 2]))
        self.assertIn("$.result[2]: expected <missing>, got 3", reason)

    def test_types_matter(self):
        self.assertIsNotNone(check(ok(1), ok("1")))
        self.assertIsNotNone(check(ok(True), ok(1)))
        self.assertIsNotNone(check(ok([]), ok({})))

    def test_numbers_compare_as_float64(self):
        self.assertIsNone(check('{"id":1.0,"result":10}', '{"id":1,"result":1e1}'))
        # 2^53 + 1 is not a float64: Go's json.Number.Float64 rounds it to 2^53.
        self.assertIsNone(check(ok(9007199254740993), ok(9007199254740992)))
        self.assertIsNotNone(check(ok(2), ok(3)))

    def test_numbers_beyond_float64_compare_as_text(self):
        self.assertIsNotNone(check('{"result":1e400}', '{"result":2e400}'))
        self.assertIsNone(check('{"result":1e400}', '{"result":1e400}'))

    def test_invalid_json_response_fails(self):
        self.assertIn("invalid JSON", check("not json", ok("0x1")))
        self.assertIn("invalid JSON", check('{"result":NaN}', '{"result":0}'))
        self.assertIn("invalid JSON", check("", ok("0x1")))

    def test_first_difference_none_only_when_equal(self):
        want = rc.parse_json('{"a":[1,{"b":null}],"c":"x"}')
        self.assertIsNone(rc.first_difference(rc.parse_json('{"c":"x","a":[1.0,{"b":null}]}'), want))
        self.assertEqual(
            rc.first_difference(rc.parse_json('{"a":[1,{"b":false}],"c":"x"}'), want)[0],
            "$.a[1].b",
        )


class ErrorLeniency(unittest.TestCase):
    def test_error_messages_are_ignored(self):
        self.assertIsNone(check(err(-32602, "mine"), err(-32602, "theirs")))

    def test_error_code_must_match(self):
        reason = check(err(-32601, "Method not found"), err(-32602, "invalid"))
        self.assertIn("$.error.code: expected -32602, got -32601", reason)
        self.assertIn("(error messages ignored)", reason)

    def test_error_data_must_match(self):
        self.assertIsNotNone(check(err(3, "x", data="0x01"), err(3, "y", data="0x02")))
        self.assertIsNotNone(check(err(3, "x", data="0x01"), err(3, "y")))
        self.assertIsNone(check(err(3, "x", data="0x01"), err(3, "y", data="0x01")))

    def test_error_instead_of_result_fails(self):
        reason = check(err(-32601, "Method not found"), ok("0x1"))
        self.assertIn('expected a result, got error {"code":-32601,"message":"Method not found"}', reason)

    def test_result_instead_of_error_fails(self):
        self.assertIn("expected an error", check(ok("0x1"), err(-32602)))

    def test_message_kept_when_only_one_side_has_it(self):
        self.assertIsNotNone(check(err(1, "x"), {"jsonrpc": "2.0", "id": 1, "error": {"code": 1}}))
        self.assertIsNotNone(check({"jsonrpc": "2.0", "id": 1, "error": {"code": 1}}, err(1, "x")))

    def test_nested_errors_are_redacted_like_simulate_calls(self):
        got = ok([{"calls": [{"status": "0x0", "error": {"code": -32015, "message": "reverted"}}]}])
        want = ok([{"calls": [{"status": "0x0", "error": {"code": -32015, "message": "execution reverted"}}]}])
        self.assertIsNone(check(got, want))
        want["result"][0]["calls"][0]["error"]["code"] = 3
        self.assertIsNotNone(check(got, want))

    def test_redaction_does_not_descend_into_errors(self):
        got = rc.parse_json('{"error":{"code":1,"message":"a","data":{"error":{"message":"x"}}}}')
        want = rc.parse_json('{"error":{"code":1,"message":"b","data":{"error":{"message":"y"}}}}')
        self.assertTrue(rc.redact_error_messages(got, want))
        self.assertEqual(rc.dumps(got), '{"error":{"code":1,"data":{"error":{"message":"x"}}}}')
        self.assertEqual(rc.dumps(want), '{"error":{"code":1,"data":{"error":{"message":"y"}}}}')

    def test_no_redaction_without_errors(self):
        got, want = rc.parse_json('{"result":{"message":"a"}}'), rc.parse_json('{"result":{"message":"b"}}')
        self.assertFalse(rc.redact_error_messages(got, want))
        self.assertIsNotNone(rc.first_difference(got, want))


class SpecOnly(unittest.TestCase):
    HASH = "0x" + "ab" * 32

    def test_schema_valid_result_passes_whatever_the_example(self):
        got = ok({"number": "0x5", "hash": self.HASH, "extra": 1})
        self.assertIsNone(check(got, ok({"number": "0x0"}), "eth_getBlockByNumber", speconly=True))

    def test_schema_invalid_result_fails(self):
        got = ok({"number": "0x05", "hash": self.HASH})
        reason = check(got, ok({}), "eth_getBlockByNumber", speconly=True)
        self.assertIn("does not match the eth_getBlockByNumber schema", reason)
        self.assertIn("$.number", reason)
        self.assertIn("required", check(ok({"hash": self.HASH}), ok({}), "eth_getBlockByNumber", True))

    def test_error_answer_is_compared_exactly(self):
        self.assertIsNone(check(err(-32000, "a"), err(-32000, "b"), "eth_getBlockByNumber", True))
        self.assertIsNotNone(check(err(-32601), ok({}), "eth_getBlockByNumber", True))

    def test_method_without_schema_fails(self):
        self.assertIn("no result schema", check(ok("0x1"), ok("0x1"), "eth_unknown", speconly=True))

    def test_response_without_result_fails(self):
        self.assertIsNotNone(check({"jsonrpc": "2.0", "id": 1}, ok("0x1"), speconly=True))

    def test_schema_file_loads_as_validators(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump({"methods": {"eth_x": {"type": "integer"}}}, fh)
        self.addCleanup(os.unlink, fh.name)
        schemas = rc.load_schemas(fh.name)
        self.assertTrue(schemas["eth_x"].is_valid(5))
        self.assertFalse(schemas["eth_x"].is_valid("5"))


class IoParsing(unittest.TestCase):
    def test_header_comment_and_speconly(self):
        test = rc.parse_test("m/t", "// first\n//speconly: only the schema\n>> {}\n<< {}\n")
        self.assertEqual(test.comment, "first\nspeconly: only the schema\n")
        self.assertTrue(test.speconly)
        self.assertEqual([(m.send, m.text) for m in test.messages], [(True, "{}"), (False, "{}")])

    def test_speconly_only_counts_in_the_header(self):
        test = rc.parse_test("m/t", "// plain\n>> {}\n// speconly: too late\n<< {}\n")
        self.assertFalse(test.speconly)
        self.assertEqual(test.comment, "plain\n")
        self.assertFalse(rc.parse_test("m/t", "// not speconly: mid-line\n>> {}\n").speconly)

    def test_blank_lines_crlf_and_spacing(self):
        test = rc.parse_test("m/t", "\r\n  >>   [1, 2]  \r\n\n<<{\"a\":1}\r\n")
        self.assertEqual([(m.send, m.text) for m in test.messages], [(True, "[1, 2]"), (False, '{"a":1}')])

    def test_request_text_is_kept_verbatim(self):
        line = '{"params":[1.50], "id" :1}'
        self.assertEqual(rc.parse_test("m/t", ">> " + line).messages[0].text, line)

    def test_invalid_lines(self):
        for bad in ["garbage\n", ">> {not json}\n", "<< \n", "/ half comment\n", ">> NaN\n", ">> [0x1]\n"]:
            with self.assertRaises(rc.TestFileError, msg=bad):
                rc.parse_test("m/t", bad)

    def test_walk_order_is_go_filepath_walk(self):
        root = tempfile.mkdtemp()
        self.addCleanup(__import__("shutil").rmtree, root)
        for rel in ["b.io", "a/x.io", "a-b/y.io", "a/notes.txt", "a/z-y.io", "a/z.io", "c/d/e.io"]:
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            open(os.path.join(root, rel), "w").close()
        names = [name for name, _ in rc.find_tests(root)]
        # A directory is finished before its sibling "a-b" although "a-b/" < "a/"
        # as strings; within a directory names sort with their ".io".
        self.assertEqual(names, ["a/x", "a/z-y", "a/z", "a-b/y", "b", "c/d/e"])


class Sequencing(unittest.TestCase):
    def run_with(self, text, answers):
        sent = []

        def send(body):
            sent.append(body)
            return answers[len(sent) - 1].encode()

        return rc.run_test(rc.parse_test("m/t", text), send, SCHEMAS), sent

    def test_all_exchanges_must_match(self):
        text = f">> {REQUEST}\n<< {json.dumps(ok('0x1'))}\n>> {REQUEST}\n<< {json.dumps(ok('0x2'))}\n"
        result, sent = self.run_with(text, [json.dumps(ok("0x1")), json.dumps(ok("0x2"))])
        self.assertTrue(result.passed, result.reason)
        self.assertEqual(sent, [REQUEST.encode()] * 2)
        result, _ = self.run_with(text, [json.dumps(ok("0x1")), json.dumps(ok("0x3"))])
        self.assertFalse(result.passed)

    def test_stops_at_first_mismatch(self):
        text = f">> {REQUEST}\n<< {json.dumps(ok('0x1'))}\n>> {REQUEST}\n<< {json.dumps(ok('0x2'))}\n"
        result, sent = self.run_with(text, [json.dumps(ok("0x9")), json.dumps(ok("0x2"))])
        self.assertFalse(result.passed)
        self.assertEqual(len(sent), 1)
        self.assertEqual(result.exchange, [">> " + REQUEST, '<< {"jsonrpc": "2.0", "id": 1, "result": "0x9"}'])

    def test_response_before_request_fails(self):
        result, _ = self.run_with(f"<< {json.dumps(ok('0x1'))}\n", [])
        self.assertIn("response before request", result.reason)

    def test_unanswered_request_fails(self):
        result, _ = self.run_with(f">> {REQUEST}\n", [json.dumps(ok("0x1"))])
        self.assertIn("without expected response", result.reason)

    def test_transport_error_fails(self):
        def send(_):
            raise TimeoutError("timed out after 5 s")

        test = rc.parse_test("m/t", f">> {REQUEST}\n<< {json.dumps(ok('0x1'))}\n")
        result = rc.run_test(test, send, SCHEMAS)
        self.assertEqual(result.reason, "request failed: timed out after 5 s")

    def test_speconly_uses_the_requested_method(self):
        text = (
            "// speconly: schema\n"
            '>> {"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}\n'
            f"<< {json.dumps(ok({'number': '0x0'}))}\n"
        )
        good = json.dumps(ok({"number": "0x36", "hash": "0x" + "00" * 32}))
        self.assertTrue(self.run_with(text, [good])[0].passed)
        self.assertFalse(self.run_with(text, [json.dumps(ok("0x36"))])[0].passed)


if __name__ == "__main__":
    unittest.main()
