"""Unit tests of the Docker-free consume-engine runner (standard library only).

Run from the repository root:
    python3 -m unittest discover -s hive -p 'test_*.py'

Fixtures are read as data from $HIVE_RUNNER_FIXTURES (default ../shared/fixtures/eest,
the tests-bal v7.3.1 set, next to the repository); tests that need them are skipped
when they are absent. The
end-to-end tests drive consume_engine.py against mock_node.py, a fake node, so
they need neither the real client nor Docker.
"""

from __future__ import annotations

import base64
import glob
import hashlib
import hmac
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from engine_runner import bal, exceptions, fixtures, jwt, payload, requests, rlp  # noqa: E402
from engine_runner.keccak import keccak256, sha3_256  # noqa: E402

# The runner's own tests read fixture JSON as data (the mock node executes nothing), so they
# keep the tests-bal v7.3.1 files they were written against, whatever EEST_FIXTURES names.
FIXTURES = os.environ.get(
    "HIVE_RUNNER_FIXTURES", os.path.join(os.path.dirname(os.path.dirname(HERE)), "shared", "fixtures", "eest")
)
GLAMSTERDAM = os.environ.get(
    "EEST_GLAMSTERDAM_FIXTURES",
    os.path.join(os.path.dirname(os.path.dirname(HERE)), "shared", "fixtures", "eest-glamsterdam"),
)
SCRIPT = os.path.join(HERE, "consume_engine.py")
MOCK = os.path.join(HERE, "mock_node.py")


def fixture_files():
    return sorted(glob.glob(os.path.join(FIXTURES, "**", "*.json"), recursive=True))


def all_tests():
    for path in fixture_files():
        with open(path) as fh:
            for name, test in json.load(fh).items():
                if fixtures.is_blockchain_test(test):
                    yield path, name, test


def find_fixture(fragment):
    for path in fixture_files():
        if fragment in path:
            return path
    return None


def needs_fixtures(test):
    return unittest.skipUnless(fixture_files(), f"no fixtures under {FIXTURES}")(test)


class RLPTest(unittest.TestCase):
    VECTORS = [
        (b"dog", "83646f67"),
        ([], "c0"),
        (0, "80"),
        (b"", "80"),
        (15, "0f"),
        (1024, "820400"),
        (b"\x00", "00"),
        (b"\x80", "8180"),
        ([b"cat", b"dog"], "c88363617483646f67"),
        ([[], [[]], [[], [[]]]], "c7c0c1c0c3c0c1c0"),
        (
            b"Lorem ipsum dolor sit amet, consectetur adipisicing elit",
            "b8384c6f72656d20697073756d20646f6c6f722073697420616d65742c20636f6e7365637465747572206164697069736963696e6720656c6974",
        ),
    ]

    def test_known_vectors(self):
        for value, expected in self.VECTORS:
            with self.subTest(value=value):
                self.assertEqual(rlp.encode(value).hex(), expected)

    def test_round_trips(self):
        samples = [
            b"",
            b"\x7f",
            b"\x80",
            b"x" * 55,
            b"y" * 56,
            b"z" * 1024,
            [b"a", [b"b", [b"c" * 60]], []],
            [b"q" * 30] * 3,
            [[b"\x01"] * 100],
        ]
        for value in samples:
            with self.subTest(length=len(value)):
                self.assertEqual(rlp.decode(rlp.encode(value)), value)
        for n in [0, 1, 127, 128, 255, 256, 2**64, 2**256 - 1]:
            self.assertEqual(rlp.bytes_to_int(rlp.decode(rlp.encode(n))), n)

    def test_long_list_prefix(self):
        items = [b"x" * 10] * 10  # 110-byte payload -> 0xf8 0x6e
        self.assertEqual(rlp.encode(items)[:2].hex(), "f86e")

    def test_rejects_malformed(self):
        for bad in ["8100", "b80100", "c3", "83646f", "83646f6700", "b90000"]:
            with self.subTest(bad=bad):
                with self.assertRaises(rlp.RLPError):
                    rlp.decode(bytes.fromhex(bad))

    @needs_fixtures
    def test_fixture_blocks_reencode_identically(self):
        count = 0
        for _, name, test in all_tests():
            for block in test.get("blocks", []):
                raw = rlp.hex_to_bytes(block["rlp"])
                try:
                    decoded = rlp.decode(raw)
                except rlp.RLPError:
                    self.assertIn("expectException", block, name)
                    continue
                self.assertEqual(rlp.encode(decoded), raw, name)
                count += 1
        self.assertGreater(count, 0)


class KeccakTest(unittest.TestCase):
    def test_permutation_matches_hashlib_sha3(self):
        for size in [0, 1, 135, 136, 137, 300]:
            data = bytes(range(256)) * 2
            data = data[:size]
            self.assertEqual(sha3_256(data), hashlib.sha3_256(data).digest())

    def test_known_keccak(self):
        self.assertEqual(
            keccak256(b"").hex(), "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
        )
        # empty list: the empty ommers hash and the empty-BAL hash
        self.assertEqual("0x" + keccak256(b"\xc0").hex(), payload.EMPTY_OMMERS_HASH)


class BALTest(unittest.TestCase):
    @needs_fixtures
    def test_every_fixture_bal(self):
        """Deterministic, lossless, and hashes to the header's blockAccessListHash."""
        checked = 0
        for _, name, test in all_tests():
            for i, block in enumerate(test.get("blocks", [])):
                if "blockAccessList" in block:
                    bal_json, header = block["blockAccessList"], block["blockHeader"]
                elif "blockAccessList" in block.get("rlp_decoded", {}):
                    bal_json = block["rlp_decoded"]["blockAccessList"]
                    header = block["rlp_decoded"]["blockHeader"]
                else:
                    continue
                with self.subTest(test=name, block=i):
                    encoded = bal.encode_bal(bal_json)
                    self.assertEqual(encoded, bal.encode_bal(json.loads(json.dumps(bal_json))))
                    self.assertEqual(bal.decode_bal(encoded), bal.normalize_bal_json(bal_json))
                    expected_hash = header["blockAccessListHash"]
                    if "hash_mismatch" not in name:
                        self.assertEqual("0x" + keccak256(encoded).hex(), expected_hash)
                    checked += 1
        self.assertGreater(checked, 0)

    def test_order_is_preserved(self):
        unsorted = [
            {"address": "0x" + "22" * 20, "storageReads": ["0x05", "0x01"]},
            {"address": "0x" + "11" * 20, "balanceChanges": [
                {"blockAccessIndex": "0x02", "postBalance": "0x00"},
                {"blockAccessIndex": "0x01", "postBalance": "0x0100"},
            ]},
        ]
        items = rlp.decode(bal.encode_bal(unsorted))
        self.assertEqual(items[0][0], b"\x22" * 20)
        self.assertEqual(items[0][2], [b"\x05", b"\x01"])
        self.assertEqual(items[1][3], [[b"\x02", b""], [b"\x01", b"\x01\x00"]])

    def test_empty(self):
        self.assertEqual(bal.encode_bal([]), b"\xc0")


class GenesisTest(unittest.TestCase):
    def test_fork_schedules(self):
        self.assertEqual(fixtures.fork_schedule("Cancun"), {"Paris": 0, "Shanghai": 0, "Cancun": 0})
        self.assertEqual(fixtures.fork_schedule("PragueToOsakaAtTime15k")["Osaka"], 15000)
        self.assertEqual(fixtures.fork_at(fixtures.fork_schedule("PragueToOsakaAtTime15k"), 14999), "Prague")
        self.assertEqual(fixtures.fork_at(fixtures.fork_schedule("Amsterdam"), 12), "Amsterdam")
        with self.assertRaises(fixtures.UnsupportedNetwork):
            fixtures.fork_schedule("Berlin")

    @needs_fixtures
    def test_genesis_from_fixture(self):
        _, name, test = next(all_tests())
        genesis = fixtures.build_genesis(test)
        header = test["genesisBlockHeader"]
        config = genesis["config"]
        self.assertEqual(config["chainId"], int(test["config"]["chainid"], 16))
        for key in ["shanghaiTime", "cancunTime", "pragueTime", "osakaTime", "amsterdamTime"]:
            self.assertEqual(config[key], 0)
        self.assertEqual(config["londonBlock"], 0)
        self.assertIs(config["terminalTotalDifficultyPassed"], True)
        self.assertEqual(config["blobSchedule"]["cancun"],
                         {"target": 3, "max": 6, "baseFeeUpdateFraction": 3338477})
        self.assertIn("bpo1", config["blobSchedule"])
        for field in ["gasLimit", "baseFeePerGas", "timestamp", "difficulty", "excessBlobGas",
                      "blobGasUsed", "nonce"]:
            self.assertEqual(int(genesis[field], 16), int(header[field], 16), field)
        for field in ["extraData", "mixHash", "coinbase"]:
            self.assertEqual(genesis[field], header[field])
        self.assertEqual(set(genesis["alloc"]), {a.lower() for a in test["pre"]})
        for address, account in genesis["alloc"].items():
            for key, value in account.get("storage", {}).items():
                self.assertEqual(len(key), 66)
                self.assertEqual(len(value), 66)
            self.assertFalse(account["balance"].startswith("0x0") and account["balance"] != "0x0")


class PayloadTest(unittest.TestCase):
    def _test(self, fragment):
        path = find_fixture(fragment)
        if path is None:
            self.skipTest(f"fixture {fragment} not found")
        with open(path) as fh:
            return next(iter(json.load(fh).values()))

    def test_all_transaction_types(self):
        test = self._test("bal_all_transaction_types.json")
        block = test["blocks"][0]
        call = payload.build_call(block, fixtures.fork_schedule(test["network"]))
        header = block["blockHeader"]
        self.assertEqual(call.method, "engine_newPayloadV5")
        self.assertEqual(call.fcu_version, 4)
        self.assertFalse(call.expect_invalid)
        self.assertEqual(len(call.params), 4)
        p, hashes, beacon_root, requests = call.params
        self.assertEqual(len(p["transactions"]), len(block["transactions"]))
        mapping = {
            "parentHash": "parentHash", "feeRecipient": "coinbase", "stateRoot": "stateRoot",
            "receiptsRoot": "receiptTrie", "logsBloom": "bloom", "prevRandao": "mixHash",
            "extraData": "extraData", "blockHash": "hash",
        }
        for key, json_key in mapping.items():
            self.assertEqual(p[key], header[json_key], key)
        for key, json_key in {
            "blockNumber": "number", "gasLimit": "gasLimit", "gasUsed": "gasUsed",
            "timestamp": "timestamp", "baseFeePerGas": "baseFeePerGas",
            "blobGasUsed": "blobGasUsed", "excessBlobGas": "excessBlobGas",
            "slotNumber": "slotNumber",
        }.items():
            self.assertEqual(int(p[key], 16), int(header[json_key], 16), key)
            self.assertFalse(p[key].startswith("0x0") and p[key] != "0x0", f"{key} not minimal")
        self.assertEqual(p["withdrawals"], [])
        self.assertEqual(beacon_root, header["parentBeaconBlockRoot"])
        self.assertEqual(requests, [])
        self.assertEqual(
            "0x" + keccak256(rlp.hex_to_bytes(p["blockAccessList"])).hex(), header["blockAccessListHash"]
        )
        # transaction encodings: type byte for typed txs, a plain RLP list for legacy
        expected_hashes = []
        for raw_hex, tx in zip(p["transactions"], block["transactions"]):
            raw = rlp.hex_to_bytes(raw_hex)
            tx_type = int(tx["type"], 16)
            if tx_type == 0:
                fields = rlp.decode(raw)
                self.assertEqual(rlp.bytes_to_int(fields[0]), int(tx["nonce"], 16))
                self.assertEqual("0x" + fields[3].hex(), tx["to"])
                self.assertEqual(rlp.bytes_to_int(fields[6]), int(tx["v"], 16))
            else:
                self.assertEqual(raw[0], tx_type)
                fields = rlp.decode(raw[1:])
                self.assertEqual(rlp.bytes_to_int(fields[0]), int(tx["chainId"], 16))
            expected_hashes += tx.get("blobVersionedHashes", [])
        self.assertEqual(hashes, expected_hashes)
        self.assertEqual(len(hashes), 1)

    def test_withdrawals(self):
        found = [(t, b) for _, _, t in all_tests() for b in t["blocks"] if b.get("withdrawals")]
        if not found:
            self.skipTest("no fixture block with withdrawals")
        test, block = found[0]
        call = payload.build_call(block, fixtures.fork_schedule(test["network"]))
        got = call.params[0]["withdrawals"]
        self.assertEqual(len(got), len(block["withdrawals"]))
        for mine, theirs in zip(got, block["withdrawals"]):
            for key in ["index", "validatorIndex", "amount"]:
                self.assertEqual(int(mine[key], 16), int(theirs[key], 16))
            self.assertEqual(mine["address"], theirs["address"])

    def test_invalid_block_uses_rlp_decoded(self):
        test = self._test("bal_invalid_account_order.json")
        block = test["blocks"][0]
        call = payload.build_call(block, fixtures.fork_schedule(test["network"]))
        self.assertTrue(call.expect_invalid)
        self.assertEqual(call.block_hash, block["rlp_decoded"]["blockHeader"]["hash"])
        self.assertEqual(call.params[0]["blockAccessList"],
                         "0x" + bal.encode_bal(block["rlp_decoded"]["blockAccessList"]).hex())

    def test_requests_skip_and_decode_skip(self):
        test = self._test("bal_all_transaction_types.json")
        block = dict(test["blocks"][0])
        items = rlp.decode(rlp.hex_to_bytes(block["rlp"]))
        items[0][20] = b"\x11" * 32  # a non-empty requestsHash
        block["rlp"] = "0x" + rlp.encode(items).hex()
        with self.assertRaises(payload.SkipTest):
            payload.build_call(block, fixtures.fork_schedule("Amsterdam"))
        bad = {"rlp": "0xf9ffff00", "expectException": "BlockException.RLP_STRUCTURES_ENCODING"}
        with self.assertRaises(payload.SkipBlock) as caught:
            payload.build_call(bad, fixtures.fork_schedule("Amsterdam"))
        self.assertEqual(caught.exception.what, exceptions.BLOCK_RLP)
        with self.assertRaises(ValueError):
            payload.build_call({"rlp": "0xf9ffff00"}, fixtures.fork_schedule("Amsterdam"))

    def test_hash_fallback_is_keccak_of_header(self):
        test = self._test("bal_all_transaction_types.json")
        block = {"rlp": test["blocks"][0]["rlp"]}
        call = payload.build_call(block, fixtures.fork_schedule("Amsterdam"))
        self.assertEqual(call.block_hash, test["blocks"][0]["blockHeader"]["hash"])

    @needs_fixtures
    def test_every_fixture_block_builds(self):
        for _, name, test in all_tests():
            schedule = fixtures.fork_schedule(test["network"])
            for i, block in enumerate(test["blocks"]):
                with self.subTest(test=name, block=i):
                    try:
                        call = payload.build_call(block, schedule)
                    except payload.SkipBlock:
                        self.assertIn("expectException", block)
                        continue
                    self.assertEqual(call.expect_invalid, "expectException" in block)
                    self.assertTrue(call.block_hash.startswith("0x") and len(call.block_hash) == 66)


class JWTTest(unittest.TestCase):
    def test_structure_and_signature(self):
        secret = jwt.new_secret()
        self.assertEqual(len(secret), 32)
        token = jwt.make_token(secret)
        parts = token.split(".")
        self.assertEqual(len(parts), 3)
        for part in parts:
            self.assertNotIn("=", part)
        header = json.loads(jwt.b64url_decode(parts[0]))
        self.assertEqual(header, {"alg": "HS256", "typ": "JWT"})
        claims = json.loads(jwt.b64url_decode(parts[1]))
        self.assertLessEqual(abs(claims["iat"] - time.time()), 5)
        expected = hmac.new(secret, f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256).digest()
        self.assertEqual(base64.urlsafe_b64encode(expected).rstrip(b"=").decode(), parts[2])
        self.assertEqual(jwt.verify_token(token, secret)["iat"], claims["iat"])
        with self.assertRaises(ValueError):
            jwt.verify_token(token, b"\x00" * 32)

    def test_secret_file_format(self):
        self.assertRegex(jwt.secret_to_hex(jwt.new_secret()), r"^0x[0-9a-f]{64}$")


# What ethrex answers for a block whose BAL does not match its execution
# (crates/rpc/src/engine.rs `verdict_text` over BlockError::BalMismatch).
NODE_BAL_MISMATCH = ("BlockException.INVALID_BLOCK_ACCESS_LIST: block access list does not match "
                     "execution: account 0x00 nonce changes differ")


class ExceptionsTest(unittest.TestCase):
    def test_decode_failures_satisfy_only_decode_class_names(self):
        rlp_yes = ["BlockException.RLP_STRUCTURES_ENCODING", "BlockException.RLP_WITHDRAWALS_NOT_READ",
                   "BlockException.INCORRECT_BLOCK_FORMAT", "TransactionException.TYPE_NOT_SUPPORTED",
                   "BlockException.INVALID_BAL_HASH|BlockException.RLP_STRUCTURES_ENCODING"]
        rlp_no = ["BlockException.RLP_BLOCK_LIMIT_EXCEEDED", "BlockException.INVALID_BLOCK_ACCESS_LIST",
                  "BlockException.INVALID_BAL_HASH|BlockException.INVALID_BLOCK_HASH",
                  "TransactionException.INSUFFICIENT_ACCOUNT_FUNDS", "RLP_STRUCTURES_ENCODING", "", None]
        for name in rlp_yes:
            self.assertTrue(exceptions.decode_failure_satisfies(exceptions.BLOCK_RLP, name), name)
        for name in rlp_no:
            self.assertFalse(exceptions.decode_failure_satisfies(exceptions.BLOCK_RLP, name), name)
        for name in ["BlockException.INVALID_BLOCK_ACCESS_LIST", "BlockException.INCORRECT_BLOCK_FORMAT"]:
            self.assertTrue(exceptions.decode_failure_satisfies(exceptions.BAL, name), name)
        for name in ["BlockException.INVALID_BAL_HASH", "BlockException.RLP_STRUCTURES_ENCODING",
                     "BlockException.BLOCK_ACCESS_LIST_GAS_LIMIT_EXCEEDED"]:
            self.assertFalse(exceptions.decode_failure_satisfies(exceptions.BAL, name), name)

    def test_node_messages_map_to_their_rules(self):
        """Texts as the node writes them (error.rs Display, engine.rs prefixes)."""
        cases = [
            (NODE_BAL_MISMATCH, "BlockException.INVALID_BLOCK_ACCESS_LIST"),
            ("block access list does not match execution: x", "BlockException.INVALID_BLOCK_ACCESS_LIST"),
            ("BlockException.INVALID_BLOCK_HASH: block hash 0xab does not match the payload (0xcd)",
             "BlockException.INVALID_BLOCK_HASH"),
            ("block access list hash 0x01 does not match header 0x02", "BlockException.INVALID_BAL_HASH"),
            ("block access list has 900 items, over the cap for gas limit 30000000",
             "BlockException.BLOCK_ACCESS_LIST_GAS_LIMIT_EXCEEDED"),
            ("BlockException.INCORRECT_BLOCK_FORMAT: block access list is malformed: accounts not sorted",
             "BlockException.INCORRECT_BLOCK_FORMAT"),
            ("block access list is malformed: duplicate account", "BlockException.INVALID_BLOCK_ACCESS_LIST"),
            ("transaction 0 is invalid: lack of funds (10) for max fee (20)",
             "TransactionException.INSUFFICIENT_ACCOUNT_FUNDS"),
            ("transaction 1 is invalid: nonce 5 too low, expected 6", "TransactionException.NONCE_MISMATCH_TOO_LOW"),
            ("state root mismatch: header 0x1, computed 0x2", "BlockException.INVALID_STATE_ROOT"),
            ("gas used mismatch: header 1, executed 2", "BlockException.INVALID_GAS_USED"),
            ("requests hash mismatch: header None, executed 0x1", "BlockException.INVALID_REQUESTS"),
            ("extra data is 33 bytes, over 32", "BlockException.EXTRA_DATA_TOO_BIG"),
            ("BlockException.INVALID_BLOCK_ACCESS_LIST: x (ancestor 0x12 is invalid)",
             "BlockException.INVALID_BLOCK_ACCESS_LIST"),
        ]
        for text, name in cases:
            with self.subTest(text=text):
                self.assertIn(name, exceptions.classify_validation_error(text))
                ok, _ = exceptions.verdict_matches(text, f"BlockException.SOMETHING_ELSE|{name}")
                self.assertTrue(ok)

    def test_wrong_or_unknown_reasons_do_not_match(self):
        self.assertFalse(exceptions.verdict_matches(NODE_BAL_MISMATCH, "BlockException.INVALID_BAL_HASH")[0])
        self.assertFalse(exceptions.verdict_matches(
            "transaction 0 is invalid: lack of funds (1) for max fee (2)",
            "TransactionException.NONCE_MISMATCH_TOO_LOW")[0])
        self.assertEqual(exceptions.classify_validation_error("mock: block listed as invalid"), frozenset())
        self.assertFalse(exceptions.verdict_matches("mock: block listed as invalid",
                                                    "BlockException.INVALID_BLOCK_ACCESS_LIST")[0])
        self.assertFalse(exceptions.verdict_matches(None, "BlockException.INVALID_BLOCK_ACCESS_LIST")[0])
        self.assertFalse(exceptions.verdict_matches(NODE_BAL_MISMATCH, "")[0])
        # a prefix names one rule exactly: no partial-name matches
        self.assertFalse(exceptions.verdict_matches("BlockException.INVALID_BLOCK_HASH: x",
                                                    "BlockException.INVALID_BLOCK_HASHES")[0])


def _abi_bytes_fields(fields):
    """ABI encoding of a tuple of `bytes` values (the DepositEvent layout)."""
    head, tail = b"", b""
    offset = 32 * len(fields)
    for value in fields:
        head += (offset + len(tail)).to_bytes(32, "big")
        padded = value + b"\x00" * (-len(value) % 32)
        tail += len(value).to_bytes(32, "big") + padded
    return head + tail


class RequestsTest(unittest.TestCase):
    def test_deposit_topic_is_the_event_signature(self):
        self.assertEqual("0x" + keccak256(b"DepositEvent(bytes,bytes,bytes,bytes,bytes)").hex(),
                         requests.DEPOSIT_EVENT_TOPIC)

    def test_empty_hash(self):
        self.assertEqual(requests.requests_hash([]), payload.EMPTY_REQUESTS_HASH)

    def test_rebuilt_from_logs_with_queue_carry_over(self):
        fields = [b"\x01" * 48, b"\x02" * 32, b"\x03" * 8, b"\x04" * 96, b"\x05" * 8]
        deposit_log = {"address": requests.DEPOSIT_CONTRACT, "topics": [requests.DEPOSIT_EVENT_TOPIC],
                       "data": "0x" + _abi_bytes_fields(fields).hex()}
        withdrawal = lambda i: {"address": requests.WITHDRAWAL_REQUEST_PREDEPLOY, "topics": [],  # noqa: E731
                                "data": "0x" + (bytes([i]) * 76).hex()}
        consolidation = {"address": requests.CONSOLIDATION_REQUEST_PREDEPLOY, "topics": [],
                         "data": "0x" + "07" * 116}
        other = {"address": "0x" + "ff" * 20, "topics": [], "data": "0x" + "09" * 76}
        block = {"transactions": [{}], "receipts": [
            {"logs": [deposit_log, other] + [withdrawal(i) for i in range(18)]},
            {"logs": [consolidation, consolidation, consolidation]},
        ]}
        tracker = requests.RequestTracker()
        got = tracker.requests_for(block, commit=True)
        self.assertEqual([r[0] for r in got], [0, 1, 2])
        self.assertEqual(got[0][1:], b"".join(fields))
        self.assertEqual(got[1][1:], b"".join(bytes([i]) * 76 for i in range(16)))
        self.assertEqual(got[2][1:], bytes([7]) * 232)
        # two withdrawals and one consolidation stay queued for the next block
        following = tracker.requests_for({"receipts": []}, commit=False)
        self.assertEqual(following, [b"\x01" + bytes([16]) * 76 + bytes([17]) * 76, b"\x02" + bytes([7]) * 116])
        # commit=False left the queues alone
        self.assertEqual(tracker.requests_for({"receipts": []}, commit=True), following)
        self.assertEqual(tracker.requests_for({"receipts": []}, commit=True), [])
        with self.assertRaises(requests.RequestsError):
            tracker.requests_for({"transactions": [{}]}, commit=True)  # no receipts

    def test_withdrawal_request_amount_turns_little_endian(self):
        # The log carries the amount as the caller sent it (big-endian); the dequeued
        # request, which the header's requestsHash commits to, carries it little-endian.
        source, pubkey = b"\xaa" * 20, b"\xbb" * 48
        log = {"address": requests.WITHDRAWAL_REQUEST_PREDEPLOY, "topics": [],
               "data": "0x" + (source + pubkey + bytes(range(1, 9))).hex()}
        got = requests.RequestTracker().requests_for({"receipts": [{"logs": [log]}]}, commit=True)
        self.assertEqual(got, [b"\x01" + source + pubkey + bytes(range(8, 0, -1))])

    def test_fixture_block_with_requests_is_sent_with_them(self):
        path = os.path.join(GLAMSTERDAM, "block_access_lists_eip7002", "bal_7002_request_from_contract.json")
        if not os.path.exists(path):
            self.skipTest(f"{path} not found")
        with open(path) as fh:
            test = next(iter(json.load(fh).values()))
        block = test["blocks"][0]
        call = payload.build_call(block, fixtures.fork_schedule(test["network"]))
        sent = [rlp.hex_to_bytes(r) for r in call.params[3]]
        self.assertEqual([r[0] for r in sent], [1])
        self.assertEqual(requests.requests_hash(sent), block["blockHeader"]["requestsHash"])
        # a header that commits to other requests cannot be sent faithfully: skipped
        items = rlp.decode(rlp.hex_to_bytes(block["rlp"]))
        items[0][20] = b"\x22" * 32
        with self.assertRaises(payload.SkipTest) as caught:
            payload.build_call({**block, "rlp": "0x" + rlp.encode(items).hex()},
                               fixtures.fork_schedule(test["network"]))
        self.assertIn("requestsHash 0x" + "22" * 32, str(caught.exception))


class EndToEndWithMockNode(unittest.TestCase):
    """consume_engine.py against mock_node.py: process handling, JWT, verdict logic."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ce-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _one_test_file(self, fragment):
        path = find_fixture(fragment)
        if path is None:
            self.skipTest(f"fixture {fragment} not found")
        with open(path) as fh:
            name, test = next(iter(json.load(fh).items()))
        out = os.path.join(self.tmp, os.path.basename(path))
        with open(out, "w") as fh:
            json.dump({name: test}, fh)
        return out, name, test

    def run_cli(self, paths, env=None, extra=(), timeout=120):
        full_env = dict(os.environ)
        full_env.update(env or {})
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, SCRIPT, "--bin", MOCK, *extra, *paths],
            capture_output=True, text=True, env=full_env, timeout=timeout,
        )
        return proc, time.monotonic() - started

    def test_valid_fixture_passes(self):
        path, name, test = self._one_test_file("bal_cross_tx_storage_chain.json")
        proc, _ = self.run_cli([path], {"MOCK_GENESIS_HASH": test["genesisBlockHeader"]["hash"]})
        lines = proc.stdout.strip().splitlines()
        self.assertEqual(lines[-1], "1 passed, 0 failed", proc.stdout + proc.stderr)
        self.assertEqual(lines[-2], "0 skipped")
        self.assertEqual(proc.returncode, 0)

    def test_invalid_block_must_be_rejected(self):
        path, name, test = self._one_test_file("bal_invalid_nonce_value.json")
        invalid = [b["rlp_decoded"]["blockHeader"]["hash"] for b in test["blocks"] if "expectException" in b]
        env = {"MOCK_GENESIS_HASH": test["genesisBlockHeader"]["hash"]}
        proc, _ = self.run_cli([path], {**env, "MOCK_INVALID_HASHES": ",".join(invalid),
                                        "MOCK_VALIDATION_ERROR": NODE_BAL_MISMATCH})
        self.assertEqual(proc.stdout.strip().splitlines()[-1], "1 passed, 0 failed", proc.stderr)
        proc, _ = self.run_cli([path], env)
        self.assertEqual(proc.stdout.strip().splitlines()[-1], "0 passed, 1 failed")
        self.assertIn("expected INVALID", proc.stdout)
        self.assertNotEqual(proc.returncode, 0)

    def test_genesis_mismatch_fails_fast(self):
        path, name, test = self._one_test_file("bal_cross_tx_storage_chain.json")
        proc, elapsed = self.run_cli([path], {"MOCK_GENESIS_HASH": "0x" + "ab" * 32})
        self.assertIn("genesis hash mismatch", proc.stdout)
        self.assertEqual(proc.stdout.strip().splitlines()[-1], "0 passed, 1 failed")
        self.assertLess(elapsed, 30)

    def test_node_that_exits_reports_log_tail(self):
        path, _, _ = self._one_test_file("bal_cross_tx_storage_chain.json")
        proc, _ = self.run_cli([path], {"MOCK_MODE": "exit"})
        self.assertIn("node did not start", proc.stdout)
        self.assertIn("fatal error on purpose", proc.stdout)
        self.assertEqual(proc.returncode, 1)

    def test_hanging_node_is_bounded(self):
        path, _, _ = self._one_test_file("bal_cross_tx_storage_chain.json")
        proc, elapsed = self.run_cli([path], {"MOCK_MODE": "hang"}, extra=["--timeout", "3"])
        self.assertIn("node did not start", proc.stdout)
        self.assertLess(elapsed, 25)

    def test_engine_fixture_replayed_as_given(self):
        """A blockchain_test_engine fixture (built here from a plain one) is sent verbatim."""
        path = find_fixture("bal_cross_tx_funding_chain.json")
        if path is None:
            self.skipTest("fixture not found")
        with open(path) as fh:
            name, test = next(iter(json.load(fh).items()))
        schedule = fixtures.fork_schedule(test["network"])
        entries = []
        invalid = []
        for block in test["blocks"]:
            call = payload.build_call(block, schedule)
            if call.expect_invalid:
                invalid.append(call.block_hash)
            entries.append({
                "params": call.params,
                "newPayloadVersion": call.method[-1],
                "forkchoiceUpdatedVersion": str(call.fcu_version),
                "validationError": block.get("expectException"),
                "errorCode": None,
            })
        # a payload without its BAL must be refused with -32602
        broken = json.loads(json.dumps(entries[0]))
        del broken["params"][0]["blockAccessList"]
        broken["params"][0]["blockHash"] = "0x" + "cd" * 32
        entries.insert(0, {**broken, "errorCode": "-32602", "validationError": None})
        engine = {k: v for k, v in test.items() if k != "blocks"}
        engine["engineNewPayloads"] = entries
        engine["_info"] = {**test.get("_info", {}), "fixture-format": "blockchain_test_engine"}
        out = os.path.join(self.tmp, "engine.json")
        with open(out, "w") as fh:
            json.dump({name.replace("blockchain_test", "blockchain_test_engine"): engine}, fh)
        record = os.path.join(self.tmp, "record.jsonl")
        proc, _ = self.run_cli([out], {"MOCK_GENESIS_HASH": test["genesisBlockHeader"]["hash"],
                                       "MOCK_RECORD": record, "MOCK_INVALID_HASHES": ",".join(invalid),
                                       "MOCK_VALIDATION_ERROR": "TransactionException.INSUFFICIENT_ACCOUNT_FUNDS: "
                                       "transaction 0 is invalid: lack of funds (0) for max fee (1)"})
        self.assertEqual(proc.stdout.strip().splitlines()[-1], "1 passed, 0 failed",
                         proc.stdout + proc.stderr)
        with open(record) as fh:
            sent = [json.loads(line) for line in fh]
        new_payloads = [r for r in sent if r["method"].startswith("engine_newPayload")]
        self.assertEqual([r["params"] for r in new_payloads], [e["params"] for e in entries])
        fcus = [r for r in sent if r["method"].startswith("engine_forkchoiceUpdated")]
        self.assertEqual(len(fcus), 1 + len(test["blocks"]) - len(invalid))
        self.assertTrue(all(r["method"] == "engine_forkchoiceUpdatedV4" for r in fcus))

    # ---- strictness rules ----

    def _write(self, entries, name="strict.json"):
        out = os.path.join(self.tmp, name)
        with open(out, "w") as fh:
            json.dump(entries, fh)
        return out

    def _invalid_nonce(self):
        path = find_fixture("bal_invalid_nonce_value.json")
        if path is None:
            self.skipTest("fixture bal_invalid_nonce_value.json not found")
        with open(path) as fh:
            name, test = next(iter(json.load(fh).items()))
        invalid = [b["rlp_decoded"]["blockHeader"]["hash"] for b in test["blocks"] if "expectException" in b]
        return name, test, invalid

    def _last(self, proc):
        return proc.stdout.strip().splitlines()[-1]

    def test_validation_error_must_name_the_expected_exception(self):
        name, test, invalid = self._invalid_nonce()
        path = self._write({name: test})
        env = {"MOCK_GENESIS_HASH": test["genesisBlockHeader"]["hash"], "MOCK_INVALID_HASHES": ",".join(invalid)}
        for text, passes in [
            (NODE_BAL_MISMATCH, True),
            ("block access list does not match execution: nonce", True),  # no prefix: by message
            ("BlockException.INVALID_BAL_HASH: block access list hash 0x1 does not match header 0x2", False),
            ("transaction 0 is invalid: nonce 1 too low, expected 2", False),
            ("mock: block listed as invalid", False),
        ]:
            with self.subTest(text=text):
                proc, _ = self.run_cli([path], {**env, "MOCK_VALIDATION_ERROR": text})
                if passes:
                    self.assertEqual(self._last(proc), "1 passed, 0 failed", proc.stdout + proc.stderr)
                else:
                    self.assertEqual(self._last(proc), "0 passed, 1 failed", proc.stdout)
                    self.assertIn("INVALID for the wrong reason", proc.stdout)
                    self.assertIn("BlockException.INVALID_BLOCK_ACCESS_LIST", proc.stdout)

    def test_json_rpc_error_needs_an_error_code_in_the_fixture(self):
        name, test, invalid = self._invalid_nonce()
        path = self._write({name: test})
        proc, _ = self.run_cli([path], {"MOCK_GENESIS_HASH": test["genesisBlockHeader"]["hash"],
                                        "MOCK_RPC_ERROR_HASHES": ",".join(invalid)})
        self.assertEqual(self._last(proc), "0 passed, 1 failed", proc.stdout)
        self.assertIn("got JSON-RPC error -32602", proc.stdout)
        self.assertIn("names no errorCode", proc.stdout)

    def _engine_fixture(self, error_code_of_first):
        src = find_fixture("bal_cross_tx_storage_chain.json")
        if src is None:
            self.skipTest("fixture bal_cross_tx_storage_chain.json not found")
        with open(src) as fh:
            name, test = next(iter(json.load(fh).items()))
        schedule = fixtures.fork_schedule(test["network"])
        entries = []
        for block in test["blocks"]:
            if "expectException" in block:
                continue
            call = payload.build_call(block, schedule)
            entries.append({"params": call.params, "newPayloadVersion": call.method[-1],
                            "forkchoiceUpdatedVersion": str(call.fcu_version),
                            "validationError": None, "errorCode": None})
        broken = json.loads(json.dumps(entries[0]))
        broken["params"][0]["blockHash"] = "0x" + "ef" * 32
        entries.insert(0, {**broken, "errorCode": error_code_of_first})
        engine = {k: v for k, v in test.items() if k not in ("blocks", "_info")}  # by shape
        engine["engineNewPayloads"] = entries
        return self._write({name + "-engine": engine}, "engine.json"), test

    def test_engine_error_code_must_be_the_one_named(self):
        path, test = self._engine_fixture("-32602")
        env = {"MOCK_GENESIS_HASH": test["genesisBlockHeader"]["hash"], "MOCK_RPC_ERROR_HASHES": "0x" + "ef" * 32}
        proc, _ = self.run_cli([path], env)
        self.assertEqual(self._last(proc), "1 passed, 0 failed", proc.stdout + proc.stderr)
        proc, _ = self.run_cli([path], {**env, "MOCK_RPC_ERROR_CODE": "-32000"})
        self.assertEqual(self._last(proc), "0 passed, 1 failed", proc.stdout)
        self.assertIn("expected error code -32602, got -32000", proc.stdout)
        # the fixture names an error code but the node answers with a status
        proc, _ = self.run_cli([path], {"MOCK_GENESIS_HASH": test["genesisBlockHeader"]["hash"]})
        self.assertEqual(self._last(proc), "0 passed, 1 failed", proc.stdout)
        self.assertIn("expected JSON-RPC error -32602", proc.stdout)

    def test_final_head_must_be_lastblockhash(self):
        path, name, test = self._one_test_file("bal_cross_tx_storage_chain.json")
        env = {"MOCK_GENESIS_HASH": test["genesisBlockHeader"]["hash"]}
        proc, _ = self.run_cli([path], {**env, "MOCK_IGNORE_FCU": "1"})
        self.assertEqual(self._last(proc), "0 passed, 1 failed", proc.stdout)
        self.assertIn("final head " + test["genesisBlockHeader"]["hash"], proc.stdout)
        self.assertIn("!= lastblockhash " + test["lastblockhash"], proc.stdout)
        wrong = dict(test, lastblockhash="0x" + "12" * 32)
        proc, _ = self.run_cli([self._write({name: wrong})], env)
        self.assertEqual(self._last(proc), "0 passed, 1 failed", proc.stdout)
        self.assertIn("!= lastblockhash 0x" + "12" * 32, proc.stdout)

    def test_undecodable_block_satisfies_only_decode_class_exceptions(self):
        name, test, _ = self._invalid_nonce()
        genesis = test["genesisBlockHeader"]["hash"]
        self.assertEqual(test["lastblockhash"], genesis)  # the only block is invalid
        for exception, passes in [
            ("BlockException.RLP_STRUCTURES_ENCODING", True),
            ("BlockException.INVALID_BAL_HASH|BlockException.INCORRECT_BLOCK_FORMAT", True),
            ("BlockException.INVALID_BLOCK_ACCESS_LIST", False),
            ("TransactionException.INSUFFICIENT_ACCOUNT_FUNDS", False),
        ]:
            with self.subTest(exception=exception):
                broken = json.loads(json.dumps(test))
                broken["blocks"][0]["rlp"] = broken["blocks"][0]["rlp"][:-40]
                broken["blocks"][0]["expectException"] = exception
                proc, _ = self.run_cli([self._write({name: broken})], {"MOCK_GENESIS_HASH": genesis})
                if passes:
                    self.assertEqual(self._last(proc), "1 passed, 0 failed", proc.stdout + proc.stderr)
                    self.assertIn(f"NOTE {name}: block 1 not sent: block RLP does not decode", proc.stdout)
                else:
                    self.assertEqual(self._last(proc), "0 passed, 1 failed", proc.stdout)
                    self.assertIn("which a decode failure does not satisfy", proc.stdout)

    def test_other_formats_and_bad_files_are_reported(self):
        path, name, test = self._one_test_file("bal_cross_tx_storage_chain.json")
        entries = {
            name: test,
            "a_state_test": {"env": {}, "pre": {}, "transaction": {}, "post": {}},
            "b_sync": {**test, "_info": {"fixture-format": "blockchain_test_sync"}},
            "c_not_an_object": [1, 2],
        }
        mixed = self._write(entries)
        broken = os.path.join(self.tmp, "broken.json")
        with open(broken, "w") as fh:
            fh.write("{ not json")
        empty = self._write({}, "empty.json")
        proc, _ = self.run_cli([mixed, broken, empty, os.path.join(self.tmp, "missing")],
                               {"MOCK_GENESIS_HASH": test["genesisBlockHeader"]["hash"]})
        out = proc.stdout
        self.assertEqual(self._last(proc), "1 passed, 2 failed", out + proc.stderr)
        self.assertIn("SKIP a_state_test: state_test fixture:", out)
        self.assertIn("SKIP b_sync: blockchain_test_sync fixture: it needs a second client", out)
        self.assertIn("SKIP c_not_an_object: not a test", out)
        self.assertIn(f"SKIP {empty}: the file contains no tests", out)
        self.assertIn(f"FAIL {broken}: {broken}: not a readable fixture file", out)
        self.assertIn("missing: no such file or directory", out)
        self.assertIn("4 skipped", out.splitlines())
        self.assertNotEqual(proc.returncode, 0)

    def test_execution_requests_are_sent(self):
        path = os.path.join(GLAMSTERDAM, "block_access_lists_eip7002", "bal_7002_request_from_contract.json")
        if not os.path.exists(path):
            self.skipTest(f"{path} not found")
        with open(path) as fh:
            name, test = next(iter(json.load(fh).items()))
        record = os.path.join(self.tmp, "record.jsonl")
        proc, _ = self.run_cli([path], {"MOCK_GENESIS_HASH": test["genesisBlockHeader"]["hash"],
                                        "MOCK_RECORD": record})
        self.assertEqual(self._last(proc), "1 passed, 0 failed", proc.stdout + proc.stderr)
        with open(record) as fh:
            sent = [json.loads(line) for line in fh if '"engine_newPayload' in line]
        self.assertEqual(len(sent), 1)
        execution_requests = [rlp.hex_to_bytes(r) for r in sent[0]["params"][3]]
        self.assertTrue(execution_requests)
        self.assertEqual(requests.requests_hash(execution_requests),
                         test["blocks"][0]["blockHeader"]["requestsHash"])

    def test_filter_and_missing_binary(self):
        path, _, test = self._one_test_file("bal_cross_tx_storage_chain.json")
        proc, _ = self.run_cli([path], {"MOCK_GENESIS_HASH": test["genesisBlockHeader"]["hash"]},
                               extra=["-k", "no-such-test"])
        self.assertEqual(proc.stdout.strip().splitlines()[-1], "0 passed, 0 failed")
        self.assertEqual(proc.returncode, 1)  # nothing passed
        proc = subprocess.run([sys.executable, SCRIPT, "--bin", "/nonexistent/ethrex", path],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("not an executable", proc.stderr)


@unittest.skipUnless(shutil.which("jq"), "jq is not installed")
class MapperTest(unittest.TestCase):
    MAPPER = os.path.join(HERE, "ethrex", "mapper.jq")

    def run_jq(self, genesis, env):
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("HIVE_")}
        full_env.update(env)
        proc = subprocess.run(["jq", "-f", self.MAPPER], input=json.dumps(genesis),
                              capture_output=True, text=True, env=full_env, timeout=30, check=True)
        return json.loads(proc.stdout)

    def test_hive_variables(self):
        genesis = {"config": {"chainId": 1, "extraKey": "kept"}, "gasLimit": "0x1c9c380",
                   "alloc": {"0x" + "11" * 20: {"balance": "0x1"}}}
        env = {
            "HIVE_CHAIN_ID": "3151908",
            "HIVE_FORK_HOMESTEAD": "0", "HIVE_FORK_TANGERINE": "0", "HIVE_FORK_SPURIOUS": "0",
            "HIVE_FORK_BYZANTIUM": "0", "HIVE_FORK_CONSTANTINOPLE": "0", "HIVE_FORK_PETERSBURG": "0",
            "HIVE_FORK_ISTANBUL": "0", "HIVE_FORK_BERLIN": "0", "HIVE_FORK_LONDON": "0",
            "HIVE_MERGE_BLOCK_ID": "0",
            "HIVE_TERMINAL_TOTAL_DIFFICULTY": "0",
            "HIVE_SHANGHAI_TIMESTAMP": "0", "HIVE_CANCUN_TIMESTAMP": "0",
            "HIVE_PRAGUE_TIMESTAMP": "0", "HIVE_OSAKA_TIMESTAMP": "0",
            "HIVE_AMSTERDAM_TIMESTAMP": "15000",
            "HIVE_PRAGUE_BLOB_TARGET": "7", "HIVE_PRAGUE_BLOB_MAX": "11",
            "HIVE_PRAGUE_BLOB_BASE_FEE_UPDATE_FRACTION": "5007716",
            "HIVE_DEPOSIT_CONTRACT_ADDRESS": "0x4242424242424242424242424242424242424242",
        }
        out = self.run_jq(genesis, env)
        config = out["config"]
        self.assertEqual(config["chainId"], 3151908)
        self.assertEqual(config["eip155Block"], 0)
        self.assertEqual(config["eip158Block"], 0)
        self.assertEqual(config["londonBlock"], 0)
        self.assertEqual(config["mergeNetsplitBlock"], 0)
        self.assertEqual(config["terminalTotalDifficulty"], 0)
        self.assertIs(config["terminalTotalDifficultyPassed"], True)
        for key in ["shanghaiTime", "cancunTime", "pragueTime", "osakaTime"]:
            self.assertEqual(config[key], 0)
            self.assertIsInstance(config[key], int)
        self.assertEqual(config["amsterdamTime"], 15000)
        self.assertEqual(config["blobSchedule"]["prague"],
                         {"target": 7, "max": 11, "baseFeeUpdateFraction": 5007716})
        self.assertEqual(config["blobSchedule"]["cancun"],
                         {"target": 3, "max": 6, "baseFeeUpdateFraction": 3338477})
        self.assertIn("amsterdam", config["blobSchedule"])
        self.assertNotIn("bpo1", config["blobSchedule"])
        self.assertEqual(config["depositContractAddress"], "0x4242424242424242424242424242424242424242")
        self.assertEqual(config["extraKey"], "kept")
        self.assertEqual(out["alloc"], genesis["alloc"])
        self.assertEqual(out["gasLimit"], "0x1c9c380")

    def test_unset_variables_keep_input(self):
        genesis = {"config": {"chainId": 5, "cancunTime": 100,
                              "blobSchedule": {"cancun": {"target": 1, "max": 2, "baseFeeUpdateFraction": 3}}}}
        config = self.run_jq(genesis, {})["config"]
        self.assertEqual(config["chainId"], 5)
        self.assertEqual(config["cancunTime"], 100)
        self.assertEqual(config["blobSchedule"]["cancun"], {"target": 1, "max": 2, "baseFeeUpdateFraction": 3})
        self.assertEqual(config["depositContractAddress"], "0x00000000219ab540356cBB839Cbe05303d7705Fa")
        self.assertNotIn("pragueTime", config)

    def test_hex_values(self):
        config = self.run_jq({"config": {}}, {"HIVE_CHAIN_ID": "0x10", "HIVE_CANCUN_TIMESTAMP": "0x0"})["config"]
        self.assertEqual(config["chainId"], 16)
        self.assertEqual(config["cancunTime"], 0)

    def test_fixture_genesis_through_mapper(self):
        """The runner's genesis for a fixture survives the mapper unchanged when env agrees."""
        try:
            _, _, test = next(all_tests())
        except StopIteration:
            self.skipTest("no fixtures")
        genesis = fixtures.build_genesis(test)
        env = {"HIVE_CHAIN_ID": str(genesis["config"]["chainId"]), "HIVE_AMSTERDAM_TIMESTAMP": "0"}
        out = self.run_jq(genesis, env)
        self.assertEqual(out["config"]["blobSchedule"]["amsterdam"], genesis["config"]["blobSchedule"]["amsterdam"])
        self.assertEqual({k: v for k, v in out.items() if k != "config"},
                         {k: v for k, v in genesis.items() if k != "config"})


class StartScriptTest(unittest.TestCase):
    """ethrex.sh with a stub `ethrex`: mapping, JWT file and the exact node command line."""

    @unittest.skipUnless(shutil.which("jq") and shutil.which("bash"), "needs jq and bash")
    def test_start_script(self):
        # The script uses fixed paths (/genesis.json, /jwt.secret, /data); run a
        # copy with those rewritten into a temp dir.
        tmp = tempfile.mkdtemp(prefix="ethrex-sh-")
        self.addCleanup(shutil.rmtree, tmp, True)
        with open(os.path.join(HERE, "ethrex", "ethrex.sh")) as fh:
            script = fh.read()
        for path in ["/genesis-mapped.json", "/genesis.json", "/jwt.secret", "/mapper.jq", "/data",
                     "/chain.rlp", "/blocks"]:
            script = script.replace(path, tmp + path)
        script_path = os.path.join(tmp, "ethrex.sh")
        with open(script_path, "w") as fh:
            fh.write(script)
        shutil.copy(os.path.join(HERE, "ethrex", "mapper.jq"), os.path.join(tmp, "mapper.jq"))
        with open(os.path.join(tmp, "genesis.json"), "w") as fh:
            json.dump({"config": {"chainId": 1}, "alloc": {}}, fh)
        stub = os.path.join(tmp, "ethrex-stub")
        with open(stub, "w") as fh:
            fh.write("#!/bin/sh\necho \"ARGS: $*\"\n")
        os.chmod(stub, 0o755)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HIVE_")}
        env.update({"ETHREX_BIN": stub, "HIVE_CANCUN_TIMESTAMP": "0"})
        proc = subprocess.run(["bash", script_path], capture_output=True, text=True, env=env, timeout=30)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        args = next(l for l in proc.stdout.splitlines() if l.startswith("ARGS: "))[6:].split()
        self.assertEqual(args[0], "node")
        self.assertEqual(args[args.index("--network") + 1], tmp + "/genesis-mapped.json")
        self.assertEqual(args[args.index("--authrpc.port") + 1], "8551")
        self.assertEqual(args[args.index("--http.port") + 1], "8545")
        self.assertEqual(args[args.index("--authrpc.addr") + 1], "0.0.0.0")
        with open(os.path.join(tmp, "jwt.secret")) as fh:
            self.assertEqual(bytes.fromhex(fh.read()[2:]), b"secretsecretsecretsecretsecretse")
        with open(os.path.join(tmp, "genesis-mapped.json")) as fh:
            self.assertEqual(json.load(fh)["config"]["cancunTime"], 0)


if __name__ == "__main__":
    unittest.main()
