"""Helpers for bench/geth-rpc-blocks.sh: our node's `eth_getBlockByNumber` answers against
geth's, byte for byte.

Each answer's `result` is taken from the response body exactly as sent (its raw bytes),
and parsed keeping the key order (Python dicts keep insertion order). Two answers are
  - identical when their raw `result` bytes are equal;
  - equal up to formatting when their canonical texts (compact JSON, keys in the order
    sent) are equal: whitespace or string escapes differ, nothing else (a note);
  - different in key order only when the parsed values are equal but some object lists
    its keys in another order (reported apart; fails unless --ignore-order);
  - different in value otherwise: the fields that differ, both values (fails).
The comparison functions are pure (no I/O); bench/test_geth_rpc_blocks.py tests them.

  python3 bench/geth_rpc_blocks.py compare --ours URL --geth URL [--first 0] [--last 54]
      [--tags earliest,latest,safe,finalized] [--save DIR] [--ignore-order] [--strict-bytes]
  python3 bench/geth_rpc_blocks.py tags URL [--tags latest,safe,finalized]   (their numbers)
  python3 bench/geth_rpc_blocks.py fcu AUTH_URL JWT_FILE FCU_JSON   (an Engine API call
      from a file such as headfcu.json, signed with the node's JWT secret; prints the answer)
"""
import argparse
import base64
import hashlib
import hmac
import json
import re
import sys
import time
import urllib.error
import urllib.request
from json.decoder import scanstring

MISSING = object()  # a key one side does not have
TRUNCATE = 90  # longest value printed in a diff line


class AnswerError(ValueError):
    """A response body that is not a JSON-RPC answer with a `result`."""


# ---- parsing


def _pairs(pairs):
    keys = [k for k, _ in pairs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise AnswerError(f"duplicate key(s) {', '.join(dup)}")
    return dict(pairs)


def parse_ordered(text):
    """JSON text -> Python values with every object's keys in the order sent; a duplicate
    key is an error (a dict could not hold both)."""
    return json.loads(text, object_pairs_hook=_pairs)


def canonical(value):
    """Compact JSON text of a parsed value, keys in their order (the form compared)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _ws(text, i):
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def raw_member(body, key):
    """The exact text of top-level member `key` of a JSON object `body` (str), or None when
    the object has no such member. Raises AnswerError when `body` is not a JSON object."""
    dec = json.JSONDecoder()
    i = _ws(body, 0)
    if not body.startswith("{", i):
        raise AnswerError("the answer is not a JSON object")
    i = _ws(body, i + 1)
    if body.startswith("}", i):
        return None
    found = None
    while True:
        if not body.startswith('"', i):
            raise AnswerError(f"expected a key at offset {i}")
        name, i = scanstring(body, i + 1)
        i = _ws(body, i)
        if not body.startswith(":", i):
            raise AnswerError(f"expected ':' at offset {i}")
        i = _ws(body, i + 1)
        try:
            _, end = dec.raw_decode(body, i)
        except json.JSONDecodeError as e:
            raise AnswerError(f"bad JSON value for {name!r}: {e}") from None
        if name == key:
            if found is not None:
                raise AnswerError(f"duplicate top-level key {key!r}")
            found = body[i:end]
        i = _ws(body, end)
        if body.startswith("}", i):
            return found
        if not body.startswith(",", i):
            raise AnswerError(f"expected ',' or '}}' at offset {i}")
        i = _ws(body, i + 1)


def result_of(body):
    """(raw `result` text, parsed value) of a JSON-RPC response body (bytes or str).
    An `error` answer raises AnswerError with the error in its message."""
    if isinstance(body, bytes):
        body = body.decode("utf-8")
    raw = raw_member(body, "result")
    if raw is None:
        err = raw_member(body, "error")
        raise AnswerError(f"error answer: {err}" if err is not None else "no result in the answer")
    return raw, parse_ordered(raw)


# ---- comparison (pure)


def _join(path, key):
    return f"{path}.{key}" if path else str(key)


def value_diffs(ours, geth, path=""):
    """[(path, ours, geth)] where the values differ, keys compared as sets (order ignored);
    a key one side lacks has MISSING on that side. Lists of different lengths are compared
    item by item up to the shorter one, then the length (path `P.length`) and extra items."""
    if isinstance(ours, dict) and isinstance(geth, dict):
        out = []
        for k in list(geth) + [k for k in ours if k not in geth]:
            out += value_diffs(ours.get(k, MISSING), geth.get(k, MISSING), _join(path, k))
        return out
    if isinstance(ours, list) and isinstance(geth, list):
        out = []
        for i, (a, b) in enumerate(zip(ours, geth)):
            out += value_diffs(a, b, f"{path}[{i}]")
        if len(ours) != len(geth):
            out.append((f"{path}.length", len(ours), len(geth)))
            for i in range(min(len(ours), len(geth)), max(len(ours), len(geth))):
                a = ours[i] if i < len(ours) else MISSING
                b = geth[i] if i < len(geth) else MISSING
                out.append((f"{path}[{i}]", a, b))
        return out
    # type(True) != type(1): JSON true and 1 differ.
    if type(ours) is not type(geth) or ours != geth:
        return [(path or "(result)", ours, geth)]
    return []


def order_diffs(ours, geth, path=""):
    """[(path, ours_keys, geth_keys)] for every object (at any depth, both sides objects)
    whose keys held by both sides come in a different order. Keys only one side has are
    value differences, not order ones, and are left out of the lists compared."""
    out = []
    if isinstance(ours, dict) and isinstance(geth, dict):
        common = set(ours) & set(geth)
        a = [k for k in ours if k in common]
        b = [k for k in geth if k in common]
        if a != b:
            out.append((path or "(result)", list(ours), list(geth)))
        for k in geth:
            if k in ours:
                out += order_diffs(ours[k], geth[k], _join(path, k))
    elif isinstance(ours, list) and isinstance(geth, list):
        for i, (a, b) in enumerate(zip(ours, geth)):
            out += order_diffs(a, b, f"{path}[{i}]")
    return out


class Comparison:
    """One request's two answers compared. `status`: identical, formatting, order, value
    or error (an answer that is an error or unreadable)."""

    def __init__(self, status, values=(), orders=(), errors=()):
        self.status = status
        self.values = list(values)
        self.orders = list(orders)
        self.errors = list(errors)

    def failed(self, ignore_order=False, strict_bytes=False):
        if self.status in ("value", "error"):
            return True
        if self.status == "order":
            return not ignore_order
        return self.status == "formatting" and strict_bytes


def compare_bodies(ours_body, geth_body):
    """Compare two JSON-RPC response bodies' `result`s (see the module's doc)."""
    parsed, errors = [], []
    for side, body in (("ours", ours_body), ("geth", geth_body)):
        try:
            parsed.append(result_of(body))
        except (AnswerError, UnicodeDecodeError, json.JSONDecodeError) as e:
            parsed.append(None)
            errors.append((side, str(e)))
    if errors:
        return Comparison("error", errors=errors)
    (ours_raw, ours), (geth_raw, geth) = parsed
    return compare_results(ours_raw, ours, geth_raw, geth)


def compare_results(ours_raw, ours, geth_raw, geth):
    if ours_raw == geth_raw:
        return Comparison("identical")
    if canonical(ours) == canonical(geth):
        return Comparison("formatting")
    values = value_diffs(ours, geth)
    orders = order_diffs(ours, geth)
    if not values:
        return Comparison("order", orders=orders)
    return Comparison("value", values=values, orders=orders)


# ---- reporting (pure)


def show(value):
    """A value for a diff line: compact JSON, long ones cut, MISSING as <absent>."""
    if value is MISSING:
        return "<absent>"
    text = canonical(value)
    if len(text) > TRUNCATE:
        text = f"{text[:TRUNCATE - 20]}...({len(text)} chars)"
    return text


def shape(path):
    """A path with list indices dropped: transactions[3].v -> transactions[].v."""
    return re.sub(r"\[\d+\]", "[]", path)


def report_block(label, comparisons, max_lines=24):
    """Lines for one block: `comparisons` maps a variant ("full=false", "full=true") to its
    Comparison. Differences with the same field shape and the same two values (e.g. one
    field in every transaction) make one line, with how many; one already listed for an
    earlier variant is not repeated. Key-order differences are summarised apart
    (order_summary)."""
    lines, seen = [], set()
    for variant, c in comparisons.items():
        if c.status == "error":
            for side, msg in c.errors:
                lines.append(f"  {variant}: {side}: {msg}")
            continue
        groups = {}
        for p, a, b in c.values:
            groups.setdefault((shape(p), show(a), show(b)), []).append(p)
        new = [(k, paths) for k, paths in groups.items() if k not in seen]
        seen.update(groups)
        for (s, a, b), paths in new:
            where = paths[0] if len(paths) == 1 else f"{s} (x{len(paths)})"
            lines.append(f"  {variant} {where}: ours {a} | geth {b}")
        if c.values and not new:
            lines.append(f"  {variant}: the same value differences")
    if len(lines) > max_lines:
        more = len(lines) - max_lines
        lines = lines[:max_lines] + [f"  ... {more} more lines"]
    return [label] + lines if lines else []


def order_summary(items):
    """`items`: [(label, Comparison)]. One entry per distinct (object shape, ours keys,
    geth keys), with the labels where it occurs: [(shape, ours_keys, geth_keys, labels)]."""
    groups = {}
    for label, c in items:
        for path, a, b in c.orders:
            key = (shape(path), tuple(a), tuple(b))
            groups.setdefault(key, [])
            if label not in groups[key]:
                groups[key].append(label)
    return [(s, list(a), list(b), labels) for (s, a, b), labels in groups.items()]


def field_summary(items):
    """[(shape, count)]: how many answers each differing field (indices dropped) differs in."""
    counts = {}
    for _, c in items:
        for s in {shape(p) for p, _, _ in c.values}:
            counts[s] = counts.get(s, 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def short_labels(labels, limit=12):
    return ", ".join(labels[:limit]) + (f" (+{len(labels) - limit} more)" if len(labels) > limit else "")


def ranges(labels):
    """Labels with runs of consecutive block numbers joined: 0, 2..5, latest."""
    out, run = [], []
    for label in labels + [None]:
        if label is not None and label.isdigit() and run and int(label) == int(run[-1]) + 1:
            run.append(label)
            continue
        if run:
            out.append(run[0] if len(run) == 1 else f"{run[0]}..{run[-1]}")
        run = [label] if label is not None and label.isdigit() else []
        if label is not None and not label.isdigit():
            out.append(label)
    return ", ".join(out)


def absent_on_ours(comparisons):
    """True when every variant is only `ours null, geth a block` (a block we lack)."""
    return bool(comparisons) and all(
        c.status == "value" and len(c.values) == 1 and c.values[0][0] == "(result)"
        and c.values[0][1] is None and isinstance(c.values[0][2], dict)
        for c in comparisons.values())


def report(results, ignore_order=False, strict_bytes=False):
    """(lines, failed labels) for [(label, {variant: Comparison})], in order: the value
    differences per block (blocks we lack on one line), the key-order differences, the
    differing fields."""
    lines, failed, absent, items = [], [], [], []
    for label, comparisons in results:
        items += [(f"{label}/{v}", c) for v, c in comparisons.items()]
        if any(c.failed(ignore_order, strict_bytes) for c in comparisons.values()):
            failed.append(label)
        if absent_on_ours(comparisons):
            absent.append(label)
            continue
        lines += report_block(f"block {label}:", {v: c for v, c in comparisons.items()
                                                  if c.status in ("value", "error")})
    if absent:
        lines.append(f"absent on our node (result null), geth has them: {ranges(absent)}")
    orders = order_summary(items)
    if orders:
        lines.append("key order differences (objects whose shared keys come in another order; "
                     "full key lists, each distinct case once):")
        for s, a, b, labels in orders:
            lines.append(f"  {s} in {len(labels)} answers: {short_labels(labels)}")
            lines.append(f"    ours: {', '.join(a)}")
            lines.append(f"    geth: {', '.join(b)}")
    fields = field_summary(items)
    if fields:
        lines.append("differing fields (answers each differs in): " +
                     ", ".join(f"{s} ({n})" for s, n in fields))
    return lines, failed


# ---- I/O


def post(url, payload, headers=None, timeout=10):
    """POST a JSON-RPC payload; the response body's bytes (HTTP errors' bodies too)."""
    body = json.dumps(payload).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.read()
    except urllib.error.HTTPError as e:
        return e.read() or json.dumps({"error": f"HTTP {e.code}"}).encode()
    except Exception as e:  # no answer: a body that says so, so the comparison reports it
        return json.dumps({"jsonrpc": "2.0", "id": 1, "error": f"no answer: {e}"}).encode()


def call(url, method, params):
    return post(url, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params})


def jwt_token(secret_hex, now=None):
    """HS256 {"iat": now} under the hex secret (0x optional), as the Engine API wants."""
    b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
    secret = bytes.fromhex(secret_hex.strip().removeprefix("0x"))
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    claims = b64(json.dumps({"iat": int(time.time() if now is None else now)}).encode())
    sig = hmac.new(secret, f"{head}.{claims}".encode(), hashlib.sha256).digest()
    return f"{head}.{claims}.{b64(sig)}"


def cmd_fcu(args):
    payload = json.load(open(args.file))
    token = jwt_token(open(args.jwt).read())
    body = post(args.url, payload, {"Authorization": f"Bearer {token}"})
    print(body.decode(errors="replace").strip())
    answer = json.loads(body)
    status = (answer.get("result") or {}).get("payloadStatus", {}).get("status")
    return 0 if status == "VALID" else 1


def cmd_tags(args):
    """One line: each tag's block number (or the error) on the node at args.url."""
    out = []
    for tag in args.tags.split(","):
        try:
            _, block = result_of(call(args.url, "eth_getBlockByNumber", [tag, False]))
            out.append(f"{tag}={int(block['number'], 16) if block else 'null'}")
        except (AnswerError, ValueError, KeyError, TypeError) as e:
            out.append(f"{tag}=({e})")
    print(" ".join(out))
    return 0


# Code that returns its own balance, slot 0, NUMBER, TIMESTAMP, COINBASE and BASEFEE as six
# words: what state and block overrides change, read back by a call.
PROBE_CODE = ("0x" + "47600052" + "600054602052" + "43604052" + "42606052" + "41608052"
              + "4860a052" + "60c06000f3")
PROBE = "0x00000000000000000000000000000000000c0de0"
# A valid ecrecover input (hash, v, r, s), so a moved ecrecover answers with an address.
ECRECOVER_INPUT = ("0x456e9aea5e197a1f1af7a3e85a3212fa4049a3ba34c2289b4c860fc0b0c64ef3"
                   + "00" * 31 + "1c"
                   + "9242685bf161793cc25603c231bc2f568eb630ea16aa137d2664ac8038825608"
                   + "4f8ae3bd7535248d0bd448298cc2e2071e56992d0774dc340c368ae950852ada")


def override_requests():
    """eth_call, eth_estimateGas and debug_traceCall with state overrides (code, balance,
    nonce, state, stateDiff, a moved precompile) and block overrides (number, time, fee
    recipient, base fee, PREVRANDAO) at the head, for both clients to answer alike."""
    slot0 = "0x" + "00" * 32
    probe = {"to": PROBE}
    state = {PROBE: {"code": PROBE_CODE, "balance": "0x1234", "state": {slot0: "0x" + "00" * 31 + "05"}}}
    diff = {PROBE: {"code": PROBE_CODE, "stateDiff": {slot0: "0x" + "00" * 31 + "07"}}}
    block = {"number": "0x100", "time": "0x10000", "feeRecipient": "0x" + "be" * 20,
             "baseFeePerGas": "0x7", "prevRandao": "0x" + "ab" * 32}
    moved = {"0x0000000000000000000000000000000000000001":
             {"movePrecompileToAddress": "0x0000000000000000000000000000000000123456"}}
    rich = "0x" + "ca" * 20
    return [("call state override", "eth_call", [probe, "latest", state]),
            ("call stateDiff override", "eth_call", [probe, "latest", diff]),
            ("call block override", "eth_call", [probe, "latest", state, block]),
            ("call priced block override", "eth_call",
             [dict(probe, **{"from": rich, "maxFeePerGas": "0x100"}), "latest",
              dict(state, **{rich: {"balance": "0xffffffffffffffff"}}), block]),
            ("call moved precompile", "eth_call",
             [{"to": "0x0000000000000000000000000000000000123456", "input": ECRECOVER_INPUT}, "latest", moved]),
            ("call precompile gone", "eth_call",
             [{"to": "0x0000000000000000000000000000000000000001", "input": ECRECOVER_INPUT}, "latest", moved]),
            ("estimate with balance override", "eth_estimateGas",
             [{"from": rich, "to": PROBE, "value": "0x10", "maxFeePerGas": "0x100000000"}, "latest",
              dict(state, **{rich: {"balance": "0xffffffffffffffff", "nonce": "0x7"}})]),
            ("traceCall struct logger", "debug_traceCall",
             [probe, "latest", {"stateOverrides": state, "blockOverrides": block}]),
            ("traceCall callTracer", "debug_traceCall",
             [dict(probe, **{"from": rich, "value": "0x10"}), "latest",
              {"tracer": "callTracer", "stateOverrides": dict(state, **{rich: {"balance": "0xffff"}})}]),
            ("traceCall prestateTracer", "debug_traceCall",
             [probe, "latest", {"tracer": "prestateTracer", "stateOverrides": diff}])]


def more_requests(geth_url, tag):
    """The other block, transaction, receipt and state requests about block `tag`, built
    from geth's answer for it: its receipts, logs, raw encodings, transaction count and
    traces (struct logger, call, prestate and its diff mode, 4byte); each of
    its transactions by hash and by index, with its receipt and raw form; and for the
    accounts it touched (miner, senders, recipients), balance, nonce and code after the
    block and after its parent, and their proofs (three slots) after the block
    (historical state); for `latest` also proofs of those
    accounts and three slots, eth_config, eth_feeHistory, the next block's fees and calls
    with overrides (`override_requests`)."""
    _, block = result_of(call(geth_url, "eth_getBlockByNumber", [tag, True]))
    if not isinstance(block, dict):
        return []
    number = block["number"]
    out = [("receipts", "eth_getBlockReceipts", [tag]),
           ("rawBlock", "debug_getRawBlock", [tag]),
           ("rawHeader", "debug_getRawHeader", [tag]),
           ("rawReceipts", "debug_getRawReceipts", [tag]),
           ("txCount", "eth_getBlockTransactionCountByNumber", [tag]),
           ("txCountByHash", "eth_getBlockTransactionCountByHash", [block["hash"]]),
           ("logs", "eth_getLogs", [{"blockHash": block["hash"]}]),
           ("logs by range", "eth_getLogs", [{"fromBlock": number, "toBlock": number}])]
    if int(number, 16) > 0:
        out += [("trace", "debug_traceBlockByNumber", [tag]),
                ("callTracer", "debug_traceBlockByNumber", [tag, {"tracer": "callTracer"}]),
                ("prestateTracer", "debug_traceBlockByNumber", [tag, {"tracer": "prestateTracer"}]),
                ("prestate diff", "debug_traceBlockByNumber",
                 [tag, {"tracer": "prestateTracer", "tracerConfig": {"diffMode": True}}]),
                ("4byteTracer", "debug_traceBlockByNumber", [tag, {"tracer": "4byteTracer"}])]
    accounts = {block["miner"]}
    for tx in block["transactions"]:
        h, i = tx["hash"], tx["transactionIndex"]
        out += [(f"tx {i}", "eth_getTransactionByHash", [h]),
                (f"tx {i} by index", "eth_getTransactionByBlockNumberAndIndex", [tag, i]),
                (f"receipt {i}", "eth_getTransactionReceipt", [h]),
                (f"raw tx {i}", "debug_getRawTransaction", [h])]
        accounts.add(tx["from"])
        if tx.get("to"):
            accounts.add(tx["to"])
    if tag == "latest":
        out += [(f"proof {a[:10]}", "eth_getProof", [a, ["0x0", "0x1", "0x" + "00" * 31 + "02"], "latest"])
                for a in sorted(accounts | {tx.get("to") for tx in block["transactions"] if tx.get("to")})]
        out += [("config", "eth_config", []), ("feeHistory", "eth_feeHistory", ["0x8", "latest", [25, 75]]),
                ("baseFee", "eth_baseFee", []), ("blobBaseFee", "eth_blobBaseFee", [])]
        out += override_requests()
    at = [number] + ([hex(int(number, 16) - 1)] if int(number, 16) > 0 else [])
    for account in sorted(accounts):
        if tag != "latest":
            # After an older block: its tries are rebuilt from the change sets.
            out += [(f"proof {account[:10]} @{number}", "eth_getProof",
                     [account, ["0x0", "0x1", "0x" + "00" * 31 + "02"], number])]
        for n in at:
            out += [(f"balance {account[:10]} @{n}", "eth_getBalance", [account, n]),
                    (f"nonce {account[:10]} @{n}", "eth_getTransactionCount", [account, n]),
                    (f"code {account[:10]} @{n}", "eth_getCode", [account, n])]
    return out


def cmd_compare(args):
    targets = [(str(n), hex(n)) for n in range(args.first, args.last + 1)]
    targets += [(t, t) for t in args.tags.split(",") if t]
    results, counts = [], {}
    for label, tag in targets:
        comparisons = {}
        for full in (False, True):
            variant = f"full={'true' if full else 'false'}"
            ours = call(args.ours, "eth_getBlockByNumber", [tag, full])
            geth = call(args.geth, "eth_getBlockByNumber", [tag, full])
            if args.save:
                for side, body in (("ours", ours), ("geth", geth)):
                    with open(f"{args.save}/{side}-block-{label}-{variant}.json", "wb") as f:
                        f.write(body)
            c = compare_bodies(ours, geth)
            comparisons[variant] = c
            counts[c.status] = counts.get(c.status, 0) + 1
        if args.more:
            for variant, method, params in more_requests(args.geth, tag):
                c = compare_bodies(call(args.ours, method, params), call(args.geth, method, params))
                comparisons[variant] = c
                counts[c.status] = counts.get(c.status, 0) + 1
        results.append((label, comparisons))
    lines, failed = report(results, args.ignore_order, args.strict_bytes)
    for line in lines:
        print(line)
    n = sum(counts.values())
    tally = ", ".join(f"{counts[k]} {k}" for k in ("identical", "formatting", "order", "value", "error")
                      if counts.get(k))
    what = f"blocks {args.first}..{args.last}" + (f" and {args.tags}" if args.tags else "")
    if failed:
        print(f"geth-rpc-blocks: {len(failed)} of {len(targets)} requested blocks differ from geth "
              f"({what}; {n} answers: {tally}): {ranges(failed)}")
        return 1
    also = " with receipts, transactions, raw forms and state" if args.more else ""
    print(f"geth-rpc-blocks: eth_getBlockByNumber{also} matches geth for {what}, "
          f"full=false and full=true ({n} answers: {tally})")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare")
    c.add_argument("--ours", required=True)
    c.add_argument("--geth", required=True)
    c.add_argument("--first", type=int, default=0)
    c.add_argument("--last", type=int, default=54)
    c.add_argument("--tags", default="", help="block tags compared too, comma-separated")
    c.add_argument("--save", help="write every response body here")
    c.add_argument("--more", action="store_true",
                   help="also compare receipts, transactions, raw encodings and historical state")
    c.add_argument("--ignore-order", action="store_true", help="key order differences do not fail")
    c.add_argument("--strict-bytes", action="store_true", help="formatting-only differences fail")
    t = sub.add_parser("tags")
    t.add_argument("url")
    t.add_argument("--tags", default="latest,safe,finalized")
    f = sub.add_parser("fcu")
    f.add_argument("url")
    f.add_argument("jwt")
    f.add_argument("file")
    args = p.parse_args(argv)
    return {"compare": cmd_compare, "tags": cmd_tags, "fcu": cmd_fcu}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
