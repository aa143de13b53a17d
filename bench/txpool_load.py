"""The transaction pool under load, `ethrex node` against go-ethereum v1.17.10 on loopback
(driven by bench/txpool-load.sh, which starts and stops the nodes).

Every transaction is signed once, before anything is timed (secp256k1 through coincurve,
keys keccak("txpool-load" || index), EIP-1559 transfers of 1 wei to a recipient that exists
in the genesis, so 21,000 gas each under Amsterdam's state gas), and the same bytes go to
both clients through the same sender: JSON-RPC batches of eth_sendRawTransaction over a few
persistent HTTP connections (keep-alive), each sender's transactions on one connection in
order.

  txpool_load.py prepare --out DIR [--senders 10000] [--engine-per-block 300]
                         [--engine-rounds 20]
        DIR/genesis.json (every fork to Amsterdam at 0; the senders funded, a few special
        accounts: nonce 1 at genesis, or too poor for a transfer), DIR/genesis-engine.json
        (the same with a block gas limit of engine-per-block transfers), DIR/sets.pickle
        (the signed transactions) and DIR/prepare.json (how long signing took).
  txpool_load.py accept --sets F --url URL --auth URL --jwt F --pid PID --client NAME
        (1) the mixed set: chains of 3 and single transfers, gapped nonces, replacements
        with a 20% bump, and refusals (nonce too low, wrong chain id, zero tip, intrinsic
        gas too low, gas above the block's; 30M gas (above
        Osaka's 2^24 cap, which Amsterdam's EIP-8037 lifts; accepted by both), fee cap below
        the tip, insufficient funds, underpriced replacements, duplicates, garbage bytes);
        accepted tx/s and each transaction's outcome (for the comparison).
  txpool_load.py peer --sets F --feeder URL --feeder-auth URL --feeder-jwt F
                      --url URL --auth URL --jwt F --client NAME
        (2) a geth feeder loaded with N transactions (senders x 4 nonces) by RPC dials the
        receiver (admin_addPeer); the time until the receiver's txpool_status counts N.
  txpool_load.py memory --sets F --url URL --auth URL --jwt F --pid PID --client NAME
        (3) senders x 20 nonces offered by RPC (nonce by nonce); the pool's count against
        its cap and the node's resident memory before, after and at its peak.
  txpool_load.py engine --sets F --url URL --auth URL --jwt F --pid PID
        (4) the script as the consensus client: rounds of forkchoiceUpdatedV4 with payload
        attributes -> getPayloadV6 -> newPayloadV5 -> forkchoiceUpdatedV4, blocks filled
        from a pre-loaded pool; then the same while a second process hammers
        eth_sendRawTransaction; newPayload's latency (request to VALID) in both.
  txpool_load.py summary --results F [--json OUT] [--quick]
        one line per measurement (medians over the runs), BELOW TARGET where a target is
        missed, the whole as one JSON object; exits 1 on a functional failure recorded by
        the runs.

Each measuring command appends one JSON line to --results (default: stdout only) and exits
1 on a functional failure (no transaction accepted, a pool above its cap, a peer's
transactions not arriving, a payload not VALID)."""
import argparse
import http.client
import json
import os
import pickle
import random
import re
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from geth_rpc_blocks import jwt_token  # noqa: E402
from geth_txpool import amsterdam_genesis  # noqa: E402
from procstat import cpu_ticks  # noqa: E402

CHAIN_ID = 0x7E57_0002
RECIPIENT = bytes.fromhex("00000000000000000000000000000000000c0ffe")
GWEI = 10**9
TIP = GWEI
FEE_CAP = 1000 * GWEI  # room for the base fee to climb through the engine rounds' full blocks
RICH = 10**24
POOR = 10**9  # less than 21,000 gas at any fee cap used here
POOL_CAP = 10_000  # ethrex's default (crates/txpool/src/config.rs)
NONCES = 20  # the memory run's nonces per sender
PEER_NONCES = 4  # the peer run's, within geth's 16 guaranteed slots per account
BATCH = 100
CONNS = 4
# EIP-2935, 4788, 7002, 7251 and EIP-8282's two: the system contracts every Amsterdam block
# calls (their code is read from a `--dev` node, which deploys them).
SYSTEM_CONTRACTS = ["0x0000F90827F1C53a10cb7A02335B175320002935", "0x000F3df6D732807Ef1319fB7B8bB8522d0Beac02",
                    "0x00000961Ef480Eb55e80D19ad83579A64c007002", "0x0000BBdDc7CE488642fb579F8B00f3a590007251",
                    "0x0000BFF46984E3725691FA540A8C7589300D8282", "0x000064D678505AD48F8CCB093BC65613800E8282"]
TARGETS = {"accept_ratio": 1.5, "peer_ratio": 1.5, "engine_p50_ratio": 1.2}


# ---- signing (RLP by hand; keccak from eth_hash; secp256k1 from coincurve)


def _keccak():
    from eth_hash.auto import keccak

    return keccak


def rlp_bytes(b):
    if len(b) == 1 and b[0] < 0x80:
        return b
    if len(b) < 56:
        return bytes([0x80 + len(b)]) + b
    n = len(b).to_bytes((len(b).bit_length() + 7) // 8, "big")
    return bytes([0xB7 + len(n)]) + n + b


def rlp_int(i):
    return rlp_bytes(i.to_bytes((i.bit_length() + 7) // 8, "big")) if i else b"\x80"


def rlp_list(encoded_items):
    payload = b"".join(encoded_items)
    if len(payload) < 56:
        return bytes([0xC0 + len(payload)]) + payload
    n = len(payload).to_bytes((len(payload).bit_length() + 7) // 8, "big")
    return bytes([0xF7 + len(n)]) + n + payload


def secret(index):
    return _keccak()(b"txpool-load" + index.to_bytes(4, "big"))


def address(index):
    from coincurve import PrivateKey

    return _keccak()(PrivateKey(secret(index)).public_key.format(compressed=False)[1:])[-20:]


def sign(key, nonce, chain_id=CHAIN_ID, tip=TIP, fee_cap=FEE_CAP, gas=21_000, to=RECIPIENT, value=1):
    """A signed EIP-1559 transaction: (raw hex, hash hex)."""
    keccak = _keccak()
    fields = [rlp_int(chain_id), rlp_int(nonce), rlp_int(tip), rlp_int(fee_cap), rlp_int(gas),
              rlp_bytes(to), rlp_int(value), rlp_bytes(b""), rlp_list([])]
    sig = key.sign_recoverable(keccak(b"\x02" + rlp_list(fields)), hasher=None)
    r, s, v = int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:64], "big"), sig[64]
    raw = b"\x02" + rlp_list(fields + [rlp_int(v), rlp_int(r), rlp_int(s)])
    return "0x" + raw.hex(), "0x" + keccak(raw).hex()


def _sign_chunk(args):
    """Worker: the matrix rows of senders [lo, hi), NONCES each."""
    from coincurve import PrivateKey

    lo, hi = args
    rows = []
    for i in range(lo, hi):
        key = PrivateKey(secret(i))
        rows.append([sign(key, n) for n in range(NONCES)])
    return rows


def _sign_specs(specs):
    """Worker: [(sender index, nonce, overrides)] -> [(raw, hash)]."""
    from coincurve import PrivateKey

    keys = {}
    out = []
    for index, nonce, kw in specs:
        key = keys.get(index) or keys.setdefault(index, PrivateKey(secret(index)))
        out.append(sign(key, nonce, **kw))
    return out


def mixed_plan(s):
    """The accept run's transactions, per group, as (sender key, label, spec or raw): a
    spec (sender index, nonce, overrides) to sign, or garbage bytes. Group sizes scale with
    the sender count s (10,000 in the full run); the accepted ones stay under the pool's
    cap: 0.45 s + 0.45 s + 0.04 s entries."""
    rng = random.Random(7)
    n = lambda frac: max(2, int(s * frac))
    groups = {}
    at = 0

    def take(k):
        nonlocal at
        lo = at
        at += k
        return range(lo, at)

    groups["chain3"] = take(n(0.15))
    groups["single"] = take(n(0.45))
    groups["gapped"] = take(n(0.04))
    groups["wrong_chain"] = take(n(0.08))
    groups["zero_tip"] = take(n(0.08))
    groups["intrinsic"] = take(n(0.06))
    groups["gas_30m"] = take(n(0.035))
    groups["over_block"] = take(n(0.035))
    groups["cap_below_tip"] = take(n(0.07))
    assert at <= s, (at, s)
    specials = {"nonce_low": range(s, s + n(0.06)), "poor": range(s + n(0.06), s + 2 * n(0.06))}
    items = []  # (ordering key, label, spec-or-raw)
    for i in groups["chain3"]:
        for nonce in range(3):
            items.append((i, "chain3", (i, nonce, {})))
    for i in groups["single"]:
        items.append((i, "single", (i, 0, {})))
    for i in groups["gapped"]:
        items.append((i, "gapped", (i, 1, {})))
    for i in groups["wrong_chain"]:
        items.append((i, "wrong_chain", (i, 0, {"chain_id": CHAIN_ID + 1})))
    for i in groups["zero_tip"]:
        items.append((i, "zero_tip", (i, 0, {"tip": 0})))
    for i in groups["intrinsic"]:
        items.append((i, "intrinsic", (i, 0, {"gas": 20_000})))
    for i in groups["gas_30m"]:
        items.append((i, "gas_30m", (i, 0, {"gas": 30_000_000, "fee_cap": 10 * GWEI})))
    for i in groups["over_block"]:
        items.append((i, "over_block", (i, 0, {"gas": 70_000_000, "fee_cap": 10 * GWEI})))
    for i in groups["cap_below_tip"]:
        items.append((i, "cap_below_tip", (i, 0, {"tip": 20 * GWEI, "fee_cap": 10 * GWEI})))
    for i in specials["nonce_low"]:
        items.append((i, "nonce_low", (i, 0, {})))
    for i in specials["poor"]:
        items.append((i, "poor", (i, 0, {})))
    # After their originals (same sender, so the same connection, later in its order):
    # replacements of a chain's middle transaction with 20% more on both fees (accepted),
    # replacements of a single with 5% more (refused), exact duplicates (refused).
    k = n(0.03)
    for i in list(groups["chain3"])[:k]:
        items.append((i, "replace_ok", (i, 1, {"tip": TIP * 12 // 10, "fee_cap": FEE_CAP * 12 // 10})))
    for i in list(groups["single"])[:k]:
        items.append((i, "replace_low", (i, 0, {"tip": TIP * 105 // 100, "fee_cap": FEE_CAP * 105 // 100})))
    for i in list(groups["single"])[k:2 * k]:
        items.append((i, "duplicate", (i, 0, {})))
    for j in range(k):
        junk = rng.randbytes(rng.randrange(1, 200))
        if j % 2:  # a typed envelope whose body is not a transaction
            junk = b"\x02" + junk
        items.append((-1 - j, "garbage", "0x" + junk.hex()))
    # A seeded shuffle that keeps each sender's transactions in their planned order.
    order = list(range(len(items)))
    rng.shuffle(order)
    slot_of = [0] * len(items)
    for slot, pos in enumerate(order):
        slot_of[pos] = slot
    by_sender = {}
    for pos, item in enumerate(items):
        by_sender.setdefault(item[0], []).append(pos)
    shuffled = [None] * len(items)
    for positions in by_sender.values():
        for slot, pos in zip(sorted(slot_of[p] for p in positions), positions):
            shuffled[slot] = items[pos]
    return shuffled, specials


def prepare(a):
    from multiprocessing import Pool

    os.makedirs(a.out, exist_ok=True)
    s = a.senders
    t0 = time.time()
    plan, specials = mixed_plan(s)
    with Pool(os.cpu_count() or 1) as pool:
        step = max(1, s // (4 * (os.cpu_count() or 1)))
        chunks = [(lo, min(s, lo + step)) for lo in range(0, s, step)]
        matrix = [row for rows in pool.map(_sign_chunk, chunks) for row in rows]
        specs = [x[2] for x in plan if not isinstance(x[2], str)]
        per = max(1, len(specs) // (os.cpu_count() or 1) + 1)
        signed = [t for part in pool.map(_sign_specs, [specs[i:i + per] for i in range(0, len(specs), per)])
                  for t in part]
        n_special = len(specials["nonce_low"]) + len(specials["poor"])
        addrs = pool.map(address, range(s + n_special), chunksize=256)
    sign_s = time.time() - t0
    signed_iter = iter(signed)
    mixed = []
    for key, label, spec in plan:
        if isinstance(spec, str):
            mixed.append({"conn_key": key, "label": label, "raw": spec, "hash": None})
        else:
            raw, h = next(signed_iter)
            mixed.append({"conn_key": key, "label": label, "raw": raw, "hash": h})
    alloc = {"0x" + addrs[i].hex(): {"balance": hex(RICH)} for i in range(s)}
    for i in specials["nonce_low"]:
        alloc["0x" + addrs[i].hex()] = {"balance": hex(RICH), "nonce": "0x1"}
    for i in specials["poor"]:
        alloc["0x" + addrs[i].hex()] = {"balance": hex(POOR)}
    alloc["0x" + RECIPIENT.hex()] = {"balance": "0x1"}
    if a.system_code:  # the predeploys Prague and Amsterdam blocks call, as `--dev` deploys them
        dev = Rpc(a.system_code)
        for addr in SYSTEM_CONTRACTS:
            code = dev.call("eth_getCode", [addr, "latest"])
            if len(code) < 4:
                raise SystemExit(f"prepare: the dev node has no code at {addr}")
            alloc[addr] = {"balance": "0x0", "nonce": "0x1", "code": code}
    for name, gas_limit in (("genesis.json", 60_000_000), ("genesis-engine.json", a.engine_per_block * 21_000)):
        with open(os.path.join(a.out, name), "w") as f:
            json.dump(amsterdam_genesis(CHAIN_ID, alloc, gas_limit, GWEI), f)
    sets = {"senders": s, "matrix": matrix, "mixed": mixed, "engine_per_block": a.engine_per_block,
            "engine_rounds": a.engine_rounds, "peer_senders": a.peer_senders}
    with open(os.path.join(a.out, "sets.pickle"), "wb") as f:
        pickle.dump(sets, f, protocol=pickle.HIGHEST_PROTOCOL)
    n_signed = len(signed) + s * NONCES
    info = {"kind": "prepare", "signed": n_signed, "sign_s": round(sign_s, 2),
            "sign_per_s": round(n_signed / sign_s), "mixed": len(mixed), "matrix": s * NONCES,
            "senders": s, "special_senders": n_special, "cpus": os.cpu_count()}
    print(f"prepare: signed {n_signed} transactions in {sign_s:.1f} s ({n_signed / sign_s:.0f}/s on "
          f"{os.cpu_count()} processes; not part of any rate); genesis with {len(alloc)} accounts")
    emit(a, info)
    return 0


# ---- JSON-RPC


class Rpc:
    """One persistent HTTP connection; Engine API calls carry a fresh JWT."""

    def __init__(self, url, jwt_file=None, timeout=60):
        u = urllib.parse.urlsplit(url)
        self.host, self.port, self.timeout = u.hostname, u.port, timeout
        self.secret = open(jwt_file).read() if jwt_file else None
        self.conn = None

    def post(self, body):
        headers = {"Content-Type": "application/json"}
        if self.secret:
            headers["Authorization"] = f"Bearer {jwt_token(self.secret)}"
        for attempt in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
                self.conn.request("POST", "/", body, headers)
                resp = self.conn.getresponse()
                data = resp.read()
                if resp.status != 200 and not data:
                    raise RuntimeError(f"HTTP {resp.status}")
                return data
            except (http.client.HTTPException, ConnectionError, OSError):
                self.conn = None
                if attempt:
                    raise

    def call(self, method, params=()):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
        answer = json.loads(self.post(body))
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]


def pool_count(url):
    st = Rpc(url).call("txpool_status")
    return int(st["pending"], 16), int(st["queued"], 16)


def fcu_genesis(url, auth, jwt):
    head = Rpc(url).call("eth_getBlockByNumber", ["0x0", False])["hash"]
    state = {"headBlockHash": head, "safeBlockHash": head, "finalizedBlockHash": head}
    answer = Rpc(auth, jwt).call("engine_forkchoiceUpdatedV4", [state, None])
    status = answer["payloadStatus"]["status"]
    if status != "VALID":
        raise SystemExit(f"forkchoiceUpdated to the genesis: {answer}")
    return head


def send_all(url, per_conn, stop=None, loop=False, budget_s=None):
    """Sends each connection's list of (id, raw) in JSON-RPC batches of BATCH over its own
    persistent connection, all connections at once. Returns (outcomes by id: "ok:<hash>"
    or the error message, seconds from the start to the last answer, batches sent).
    With loop, goes round its list again until `stop` is set (the hammer). With budget_s,
    no batch is sent after that many seconds (the ids never sent have no outcome)."""
    bodies = []
    for items in per_conn:
        conn_bodies = []
        for i in range(0, len(items), BATCH):
            chunk = items[i:i + BATCH]
            conn_bodies.append(json.dumps([{"jsonrpc": "2.0", "id": k, "method": "eth_sendRawTransaction",
                                            "params": [raw]} for k, raw in chunk]).encode())
        bodies.append(conn_bodies)
    outcomes = {}
    errors = []
    sent = [0] * len(per_conn)
    barrier = threading.Barrier(len(per_conn) + 1)

    def worker(c):
        rpc = Rpc(url)
        barrier.wait()
        end = None if budget_s is None else time.perf_counter() + budget_s
        try:
            while True:
                for body in bodies[c]:
                    if stop is not None and stop.is_set():
                        return
                    if end is not None and time.perf_counter() > end:
                        return
                    answer = json.loads(rpc.post(body))
                    if not isinstance(answer, list):
                        raise RuntimeError(f"batch answered with {str(answer)[:300]}")
                    for r in answer:
                        outcomes[r.get("id")] = ("ok:" + str(r["result"])) if "result" in r else \
                            str((r.get("error") or {}).get("message", r.get("error")))
                    sent[c] += 1
                if not loop:
                    return
        except Exception as e:  # noqa: BLE001 - reported by the caller
            errors.append(f"connection {c}: {e!r}")

    threads = [threading.Thread(target=worker, args=(c,), daemon=True) for c in range(len(per_conn))]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    took = time.perf_counter() - t0
    if errors:
        raise RuntimeError("; ".join(errors))
    return outcomes, took, sum(sent)


def split(items, conns=CONNS):
    """[(conn_key, id, raw)] -> one list of (id, raw) per connection, by conn_key."""
    per = [[] for _ in range(conns)]
    for key, k, raw in items:
        per[key % conns].append((k, raw))
    return per


def error_class(outcome):
    """An answer's class: "accepted", or the error's words before any ':' or number."""
    if outcome.startswith("ok:"):
        return "accepted"
    words = outcome.split(":")[0]
    return re.sub(r"\s+", " ", re.sub(r"0x[0-9a-fA-F]+|\d+", "N", words)).strip()


def rss_mb(pid):
    out = {}
    try:
        for line in open(f"/proc/{pid}/status"):
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = round(int(rest.split()[0]) / 1024)
    except OSError:
        pass
    return out.get("VmRSS"), out.get("VmHWM")


def settle(*pids, limit=30.0):
    """Waits until every pid uses under a tenth of a core over two half-second windows in
    a row (a node's start-up work done: ethrex builds the KZG trusted setup on a thread at
    start, ~1-3 s of a core and ~100 MB); returns the seconds waited."""
    pids = [p for p in pids if p]
    if not pids:
        return 0.0
    hz = os.sysconf("SC_CLK_TCK")
    t0 = time.time()
    quiet = 0
    last = [cpu_ticks(p) for p in pids]
    while time.time() - t0 < limit and quiet < 2:
        time.sleep(0.5)
        now = [cpu_ticks(p) for p in pids]
        busy = any(a is not None and b is not None and (b - a) > 0.05 * hz for a, b in zip(last, now))
        quiet = 0 if busy else quiet + 1
        last = now
    return round(time.time() - t0, 2)


def status_ms(url, times=5):
    """txpool_status's median latency (ms) over a few calls."""
    rpc = Rpc(url)
    took = []
    for _ in range(times):
        t0 = time.perf_counter()
        rpc.call("txpool_status")
        took.append((time.perf_counter() - t0) * 1000)
    return round(sorted(took)[len(took) // 2], 2)


def load_sets(path):
    with open(path, "rb") as f:
        return pickle.load(f)


def emit(a, record):
    if getattr(a, "results", None):
        with open(a.results, "a") as f:
            f.write(json.dumps(record) + "\n")


def cpu_load():
    try:
        return float(open("/proc/loadavg").read().split()[0])
    except OSError:
        return None


# ---- (1) the mixed set by RPC


def accept(a):
    sets = load_sets(a.sets)
    mixed = sets["mixed"]
    fcu_genesis(a.url, a.auth, a.jwt)
    settled = settle(a.pid)
    rss0, _ = rss_mb(a.pid)
    load0 = cpu_load()
    outcomes, took, _ = send_all(a.url, split([(m["conn_key"], k, m["raw"]) for k, m in enumerate(mixed)]))
    rss1, hwm = rss_mb(a.pid)
    pending, queued = pool_count(a.url)
    per_tx = []
    wrong_hash = 0
    for k, m in enumerate(mixed):
        o = outcomes.get(k, "no answer")
        if o.startswith("ok:") and m["hash"] and o[3:].lower() != m["hash"]:
            wrong_hash += 1
        per_tx.append(error_class(o))
    accepted = sum(1 for c in per_tx if c == "accepted")
    by_label = {}
    for m, c in zip(mixed, per_tx):
        by_label.setdefault(m["label"], {}).setdefault(c, 0)
        by_label[m["label"]][c] += 1
    messages = {}
    for k, m in enumerate(mixed):  # one full message per (label, class), for the report
        o = outcomes.get(k, "no answer")
        messages.setdefault(f"{m['label']}|{error_class(o)}", o[:160])
    rec = {"kind": "accept", "client": a.client, "run": a.run, "sent": len(mixed), "accepted": accepted,
           "seconds": round(took, 4), "accepted_per_s": round(accepted / took, 1),
           "sent_per_s": round(len(mixed) / took, 1), "pending": pending, "queued": queued,
           "wrong_hash": wrong_hash, "by_label": by_label, "messages": messages,
           "classes": per_tx, "answers": [outcomes.get(k, "no answer")[:120] for k in range(len(mixed))],
           "raws": [m["raw"][:80] if m["label"] == "garbage" else "" for m in mixed], "rss_before_mb": rss0, "rss_after_mb": rss1, "peak_rss_mb": hwm,
           "loadavg_before": load0, "settle_s": settled}
    print(f"accept[{a.client} run {a.run}]: {accepted} of {len(mixed)} accepted in {took:.3f} s = "
          f"{accepted / took:.0f} accepted tx/s ({len(mixed) / took:.0f} answered/s); pool {pending} pending "
          f"+ {queued} queued; RSS {rss0} -> {rss1} MB")
    emit(a, rec)
    fail = []
    if accepted == 0:
        fail.append("no transaction accepted")
    if wrong_hash:
        fail.append(f"{wrong_hash} accepted transactions answered with another hash")
    if a.client == "ethrex" and pending + queued > POOL_CAP:
        fail.append(f"pool holds {pending + queued} > cap {POOL_CAP}")
    for f in fail:
        print(f"!! accept[{a.client}]: {f}")
    return 1 if fail else 0


# ---- (2) through a peer


def peer(a):
    sets = load_sets(a.sets)
    p = sets["peer_senders"]
    items = [(i, i * PEER_NONCES + n, sets["matrix"][i][n][0]) for n in range(PEER_NONCES) for i in range(p)]
    n_total = len(items)
    fcu_genesis(a.feeder, a.feeder_auth, a.feeder_jwt)
    outcomes, took, _ = send_all(a.feeder, split(items))
    ok = sum(1 for o in outcomes.values() if o.startswith("ok:"))
    if ok != n_total:
        bad = sorted({o for o in outcomes.values() if not o.startswith("ok:")})[:5]
        print(f"!! peer[{a.client}]: the feeder took {ok} of {n_total}: {bad}")
        return 1
    deadline = time.time() + 30
    while sum(pool_count(a.feeder)) < n_total and time.time() < deadline:
        time.sleep(0.05)
    fcu_genesis(a.url, a.auth, a.jwt)
    enode = Rpc(a.url).call("admin_nodeInfo")["enode"]
    settled = settle(a.pid, a.feeder_pid)
    before = sum(pool_count(a.url))
    rpc = Rpc(a.url)
    t0 = time.perf_counter()
    Rpc(a.feeder).call("admin_addPeer", [enode])
    got, first_at, connected_at = 0, None, None
    feeder = Rpc(a.feeder)
    while time.perf_counter() - t0 < a.timeout:
        st = rpc.call("txpool_status")
        got = int(st["pending"], 16) + int(st["queued"], 16)
        now = time.perf_counter() - t0
        if got and first_at is None:
            first_at = now
        if connected_at is None and feeder.call("admin_peers"):
            connected_at = now
        if got >= n_total:
            break
        time.sleep(a.poll_ms / 1000)
    took = time.perf_counter() - t0
    rec = {"kind": "peer", "client": a.client, "run": a.run, "n": n_total, "received": got,
           "pool_before": before, "seconds": round(took, 4), "tx_per_s": round(got / took, 1),
           "connected_after_s": connected_at and round(connected_at, 4),
           "first_tx_after_s": first_at and round(first_at, 4), "loadavg_before": cpu_load(),
           "settle_s": settled, "poll_ms": a.poll_ms}
    print(f"peer[{a.client} run {a.run}]: {got} of {n_total} of the feeder's transactions in the pool "
          f"{took:.3f} s after admin_addPeer = {got / took:.0f} tx/s (peer seen after "
          f"{connected_at if connected_at is None else round(connected_at, 3)} s, first tx after "
          f"{first_at if first_at is None else round(first_at, 3)} s)")
    emit(a, rec)
    if got < n_total:
        print(f"!! peer[{a.client}]: only {got} of {n_total} arrived within {a.timeout} s")
        return 1
    return 0


# ---- (3) memory bound


def memory(a):
    sets = load_sets(a.sets)
    m = sets["matrix"]
    s = len(m)
    items = [(i, n * s + i, m[i][n][0]) for n in range(NONCES) for i in range(s)]
    fcu_genesis(a.url, a.auth, a.jwt)
    settled = settle(a.pid)
    rss0, hwm0 = rss_mb(a.pid)
    samples = []
    stop = threading.Event()

    def sampler():
        while not stop.is_set():
            try:
                samples.append(sum(pool_count(a.url)))
            except Exception:  # noqa: BLE001 - a missed sample
                pass
            stop.wait(0.25)

    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    outcomes, took, _ = send_all(a.url, split(items), budget_s=a.budget)
    stop.set()
    th.join()
    answered = len(outcomes)
    rss1, hwm1 = rss_mb(a.pid)
    pending, queued = pool_count(a.url)
    time.sleep(2)
    rss2, hwm2 = rss_mb(a.pid)
    full_status_ms = status_ms(a.url)
    classes = {}
    for o in outcomes.values():
        c = error_class(o)
        classes[c] = classes.get(c, 0) + 1
    accepted = classes.get("accepted", 0)
    max_seen = max(samples + [pending + queued])
    rec = {"kind": "memory", "client": a.client, "offered": len(items), "sent": answered,
           "accepted": accepted, "budget_s": a.budget, "complete": answered == len(items),
           "seconds": round(took, 3), "answered_per_s": round(answered / took, 1),
           "pending": pending, "queued": queued, "max_pool_seen": max_seen, "classes": classes,
           "rss_before_mb": rss0, "rss_after_mb": rss1, "rss_after_2s_mb": rss2,
           "peak_rss_mb": hwm2, "peak_rss_before_mb": hwm0, "settle_s": settled,
           "txpool_status_ms_full_pool": full_status_ms}
    if answered < len(items):
        print(f"memory[{a.client}]: SLOW: only {answered} of {len(items)} answered within the {a.budget} s budget")
    print(f"memory[{a.client}]: sent {answered} of {len(items)} in {took:.1f} s ({answered / took:.0f}/s), "
          f"{accepted} accepted; pool {pending} pending + {queued} queued (highest seen {max_seen}); "
          f"RSS {rss0} -> {rss1} MB (2 s later {rss2}), peak {hwm2} MB; answers {classes}; "
          f"txpool_status on the full pool {full_status_ms} ms")
    emit(a, rec)
    if accepted == 0:
        print(f"!! memory[{a.client}]: no transaction accepted")
        return 1
    if a.client == "ethrex" and max_seen > POOL_CAP:
        print(f"!! memory[{a.client}]: pool held {max_seen} > cap {POOL_CAP}")
        return 1
    return 0


# ---- (4) newPayload under load


def pct(values, q):
    v = sorted(values)
    if not v:
        return None
    import math

    return v[min(len(v) - 1, max(0, math.ceil(q * len(v)) - 1))]


def hammer(a):
    """A separate process: sends its slice of the matrix in a loop until SIGTERM/stdin
    closes, then prints {"sent", "accepted", "seconds"} as JSON."""
    import signal

    sets = load_sets(a.sets)
    m = sets["matrix"]
    s = len(m)
    lo = a.first_sender
    items = [(i, n * s + i, m[i][n][0]) for n in range(NONCES) for i in range(lo, s)]
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    result = {}

    def run():
        t0 = time.perf_counter()
        outcomes, took, batches = send_all(a.url, split(items), stop=stop, loop=True)
        result.update(outcomes=outcomes, took=took, batches=batches)

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join()
    outcomes = result.get("outcomes", {})
    acc = sum(1 for o in outcomes.values() if o.startswith("ok:"))
    classes = {}
    for o in outcomes.values():
        c = error_class(o)
        classes[c] = classes.get(c, 0) + 1
    print(json.dumps({"sent": result.get("batches", 0) * BATCH, "seconds": round(result.get("took", 0), 3),
                      "distinct_accepted": acc, "last_classes": classes}))
    return 0


def engine(a):
    sets = load_sets(a.sets)
    per_block, rounds = sets["engine_per_block"], sets["engine_rounds"]
    warmup = 1 if rounds < 10 else 2  # rounds run before each phase and not counted
    m = sets["matrix"]
    s = len(m)
    head = fcu_genesis(a.url, a.auth, a.jwt)
    settle(a.pid)
    eth = Rpc(a.url)
    auth = Rpc(a.auth, a.jwt)
    # 5% over what the rounds take: the builder moves the gas limit up by 1/1024 a block.
    preload_senders = per_block * (rounds + warmup) * 105 // 100
    if preload_senders >= s:
        raise SystemExit(f"engine: {preload_senders} preload senders need more than {s}")
    # The unloaded phase's pool: one transfer from each of per_block*rounds senders.
    items = [(i, i, m[i][0][0]) for i in range(preload_senders)]
    outcomes, took, _ = send_all(a.url, split(items))
    ok = sum(1 for o in outcomes.values() if o.startswith("ok:"))
    if ok != len(items):
        raise SystemExit(f"engine: preload took {ok} of {len(items)}")
    number = 0
    timestamp = int(eth.call("eth_getBlockByNumber", ["0x0", False])["timestamp"], 16)
    phases = {}

    def round_():
        nonlocal head, number, timestamp
        number += 1
        timestamp += 12
        attrs = {"timestamp": hex(timestamp), "prevRandao": "0x" + number.to_bytes(32, "big").hex(),
                 "suggestedFeeRecipient": "0x" + "00" * 19 + "01", "withdrawals": [],
                 "parentBeaconBlockRoot": "0x" + number.to_bytes(32, "big").hex(), "slotNumber": hex(number)}
        state = {"headBlockHash": head, "safeBlockHash": head, "finalizedBlockHash": head}
        t0 = time.perf_counter()
        fcu = auth.call("engine_forkchoiceUpdatedV4", [state, attrs])
        t_build = time.perf_counter() - t0
        pid = fcu.get("payloadId")
        if not pid:
            raise SystemExit(f"engine: no payloadId: {fcu}")
        env = auth.call("engine_getPayloadV6", [pid])
        payload = env["executionPayload"]
        t0 = time.perf_counter()
        st = auth.call("engine_newPayloadV5", [payload, [], attrs["parentBeaconBlockRoot"],
                                               env.get("executionRequests", [])])
        t_new = time.perf_counter() - t0
        if st.get("status") != "VALID":
            raise SystemExit(f"engine: newPayload of block {number}: {st}")
        head = payload["blockHash"]
        state = {"headBlockHash": head, "safeBlockHash": head, "finalizedBlockHash": head}
        t0 = time.perf_counter()
        fcu2 = auth.call("engine_forkchoiceUpdatedV4", [state, None])
        t_fcu = time.perf_counter() - t0
        if fcu2["payloadStatus"]["status"] != "VALID":
            raise SystemExit(f"engine: forkchoiceUpdated to block {number}: {fcu2}")
        return t_new, t_build, t_fcu, len(payload["transactions"])

    def phase(name):
        for _ in range(warmup):
            round_()
        res = [round_() for _ in range(rounds)]
        new = [r[0] * 1000 for r in res]
        phases[name] = {"newpayload_ms": [round(x, 2) for x in new],
                        "p50_ms": round(pct(new, 0.5), 2), "p99_ms": round(pct(new, 0.99), 2),
                        "build_fcu_p50_ms": round(pct([r[1] * 1000 for r in res], 0.5), 2),
                        "head_fcu_p50_ms": round(pct([r[2] * 1000 for r in res], 0.5), 2),
                        "txs_per_block": [r[3] for r in res], "pool_after": sum(pool_count(a.url))}
        txs = phases[name]["txs_per_block"]
        print(f"engine[{name}]: {rounds} blocks of {min(txs)}-{max(txs)} txs: newPayload p50 "
              f"{phases[name]['p50_ms']} ms, p99 {phases[name]['p99_ms']} ms (build fcu p50 "
              f"{phases[name]['build_fcu_p50_ms']} ms, head fcu p50 {phases[name]['head_fcu_p50_ms']} ms)")

    rss0, _ = rss_mb(a.pid)
    phase("unloaded")
    # The loaded phase: a second process sends the rest of the matrix (senders past the
    # preload, NONCES each) in a loop; blocks fill from its transactions.
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "hammer", "--sets", a.sets,
                             "--url", a.url, "--first-sender", str(preload_senders)],
                            stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 20
        while sum(pool_count(a.url)) < 2 * per_block and time.time() < deadline:
            if proc.poll() is not None:
                raise SystemExit("engine: the hammer stopped early")
            time.sleep(0.05)
        time.sleep(0.5)
        t0 = time.perf_counter()
        phase("loaded")
        loaded_s = time.perf_counter() - t0
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=60)
    try:
        ham = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        ham = {"raw": out[-500:]}
    rss1, hwm = rss_mb(a.pid)
    ratio = phases["loaded"]["p50_ms"] / phases["unloaded"]["p50_ms"]
    rec = {"kind": "engine", "client": "ethrex", "rounds": rounds, "warmup_rounds": warmup,
           "per_block": per_block, **phases,
           "p50_ratio": round(ratio, 3), "hammer": ham, "loaded_seconds": round(loaded_s, 3),
           "rss_before_mb": rss0, "rss_after_mb": rss1, "peak_rss_mb": hwm}
    print(f"engine: hammer sent {ham.get('sent')} txs in {ham.get('seconds')} s "
          f"({(ham.get('sent') or 0) / max(ham.get('seconds') or 1e-9, 1e-9):.0f}/s); its last answers "
          f"{ham.get('last_classes')}")
    emit(a, rec)
    return 0


# ---- summary


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def summary(a):
    recs = [json.loads(line) for line in open(a.results) if line.strip()]
    out = {"quick": a.quick, "targets": TARGETS}
    lines = []
    fail = False
    below = []
    prep = [r for r in recs if r["kind"] == "prepare"]
    if prep:
        out["signing"] = {k: prep[0][k] for k in ("signed", "sign_s", "sign_per_s", "cpus")}
    # (1)
    acc = {c: [r for r in recs if r["kind"] == "accept" and r["client"] == c] for c in ("ethrex", "geth")}
    if acc["ethrex"] and acc["geth"]:
        med = {c: median([r["accepted_per_s"] for r in acc[c]]) for c in acc}
        ratio = med["ethrex"] / med["geth"]
        # Same answers? Compare each transaction's class, run by run (first run of each).
        e, g = acc["ethrex"][0], acc["geth"][0]
        diffs = {}
        examples = {}
        for k, (ce, cg) in enumerate(zip(e["classes"], g["classes"])):
            if ce != cg:
                key = f"ethrex '{ce}' / geth '{cg}'"
                diffs[key] = diffs.get(key, 0) + 1
                examples.setdefault(key, {"ethrex": e["answers"][k], "geth": g["answers"][k],
                                          "raw": e["raws"][k] or None})
        unstable = {c: len({tuple(r["classes"]) for r in acc[c]}) > 1 for c in acc}
        out["accept"] = {c: {"accepted_per_s_median": med[c], "runs": [r["accepted_per_s"] for r in acc[c]],
                             "accepted": acc[c][0]["accepted"], "sent": acc[c][0]["sent"],
                             "pending": acc[c][0]["pending"], "queued": acc[c][0]["queued"],
                             "by_label": acc[c][0]["by_label"], "messages": acc[c][0]["messages"],
                             "answers_differ_between_runs": unstable[c]} for c in acc}
        out["accept"]["ratio"] = round(ratio, 3)
        out["accept"]["class_differences"] = diffs
        out["accept"]["difference_examples"] = examples
        flag = "" if ratio >= TARGETS["accept_ratio"] else f"  BELOW TARGET ({TARGETS['accept_ratio']}x)"
        if flag:
            below.append("accept")
        lines.append(f"(1) eth_sendRawTransaction: ethrex {med['ethrex']:.0f} accepted tx/s, geth {med['geth']:.0f} "
                     f"(median of {len(acc['ethrex'])}/{len(acc['geth'])} runs); ratio {ratio:.2f}x{flag}")
        same = "same" if not diffs else f"{sum(diffs.values())} DIFFER:"
        lines.append(f"    answers: ethrex accepted {e['accepted']} of {e['sent']}, geth {g['accepted']}; "
                     f"per-transaction classes {same}")
        for key, n in diffs.items():
            ex = examples[key]
            raw = f" (e.g. {ex['raw']}...)" if ex["raw"] else ""
            lines.append(f"      {n} x {key}: \"{ex['ethrex']}\" vs \"{ex['geth']}\"{raw}")
        if any(unstable.values()):
            lines.append(f"    answers changed between runs: {unstable}")
    elif not a.only:
        fail = True
        lines.append("(1) eth_sendRawTransaction: MISSING a client's runs")
    # (2)
    pe = {c: [r for r in recs if r["kind"] == "peer" and r["client"] == c] for c in ("ethrex", "geth")}
    if pe["ethrex"] and pe["geth"]:
        med = {c: median([r["tx_per_s"] for r in pe[c]]) for c in pe}
        secs = {c: median([r["seconds"] for r in pe[c]]) for c in pe}
        ratio = med["ethrex"] / med["geth"]
        flag = "" if ratio >= TARGETS["peer_ratio"] else f"  BELOW TARGET ({TARGETS['peer_ratio']}x)"
        if flag:
            below.append("peer")
        n = pe["ethrex"][0]["n"]
        out["peer"] = {c: {"tx_per_s_median": med[c], "seconds_median": secs[c], "n": n,
                           "runs": [r["tx_per_s"] for r in pe[c]],
                           "received": [r["received"] for r in pe[c]]} for c in pe}
        out["peer"]["ratio"] = round(ratio, 3)
        lines.append(f"(2) from a geth peer, {n} txs: ethrex {med['ethrex']:.0f} tx/s ({secs['ethrex']:.3f} s), geth "
                     f"{med['geth']:.0f} tx/s ({secs['geth']:.3f} s); ratio {ratio:.2f}x{flag}")
    elif not a.only:
        fail = True
        lines.append("(2) through a peer: MISSING a client's runs")
    # (3)
    mem = {r["client"]: r for r in recs if r["kind"] == "memory"}
    out["memory"] = mem
    for c, r in mem.items():
        cap = f" (cap {POOL_CAP})" if c == "ethrex" else ""
        if not r["complete"]:
            below.append(f"memory_{c}_incomplete")
        sent = (f"{r['sent']} of {r['offered']} sent within {r['budget_s']:.0f} s (SLOW: "
                f"{r['answered_per_s']:.0f}/s)" if not r["complete"] else
                f"{r['sent']} offered in {r['seconds']:.1f} s")
        lines.append(f"(3) memory[{c}]: {sent}, {r['accepted']} accepted; pool "
                     f"{r['pending'] + r['queued']}{cap}, highest seen {r['max_pool_seen']}; RSS {r['rss_before_mb']}"
                     f" -> {r['rss_after_mb']} MB, peak {r['peak_rss_mb']} MB; txpool_status on it "
                     f"{r.get('txpool_status_ms_full_pool')} ms")
        if c == "ethrex" and r["max_pool_seen"] > POOL_CAP:
            fail = True
    if "ethrex" not in mem and not a.only:
        fail = True
        lines.append("(3) memory: MISSING")
    # (4)
    eng = [r for r in recs if r["kind"] == "engine"]
    if eng:
        r = eng[0]
        out["engine"] = {k: r[k] for k in ("rounds", "per_block", "unloaded", "loaded", "p50_ratio", "hammer",
                                           "rss_before_mb", "rss_after_mb", "peak_rss_mb")}
        flag = "" if r["p50_ratio"] <= TARGETS["engine_p50_ratio"] else \
            f"  BELOW TARGET (loaded p50 within {TARGETS['engine_p50_ratio']}x)"
        if flag:
            below.append("engine")
        lines.append(f"(4) newPayload, {r['rounds']} blocks of ~{r['per_block']} txs: unloaded p50 "
                     f"{r['unloaded']['p50_ms']} ms p99 {r['unloaded']['p99_ms']} ms; loaded p50 "
                     f"{r['loaded']['p50_ms']} ms p99 {r['loaded']['p99_ms']} ms; ratio {r['p50_ratio']:.2f}x{flag}")
    else:
        fail = True
        lines.append("(4) newPayload latency: MISSING")
    failures = [r for r in recs if r["kind"] == "failure"]
    if failures:
        fail = True
        for r in failures:
            lines.append(f"!! FAILED: {r['what']}")
    out["below_target"] = below
    out["functional_failure"] = fail
    for line in lines:
        print(line)
    text = json.dumps(out, indent=1)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")
    print(text)
    return 1 if fail else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser("prepare")
    pr.add_argument("--out", required=True)
    pr.add_argument("--senders", type=int, default=10_000)
    pr.add_argument("--peer-senders", type=int, default=1_000)
    pr.add_argument("--engine-per-block", type=int, default=300)
    pr.add_argument("--engine-rounds", type=int, default=20)
    pr.add_argument("--results")
    pr.add_argument("--system-code", help="URL of an `ethrex node --dev` to read the system contracts from")
    for name in ("accept", "memory", "engine", "peer"):
        s = sub.add_parser(name)
        s.add_argument("--sets", required=True)
        s.add_argument("--url", required=True)
        s.add_argument("--auth", required=True)
        s.add_argument("--jwt", required=True)
        s.add_argument("--pid", type=int, default=0)
        s.add_argument("--client", default="ethrex")
        s.add_argument("--run", type=int, default=1)
        s.add_argument("--results")
        if name == "peer":
            s.add_argument("--feeder", required=True)
            s.add_argument("--feeder-auth", required=True)
            s.add_argument("--feeder-jwt", required=True)
            s.add_argument("--feeder-pid", type=int, default=0)
            s.add_argument("--timeout", type=float, default=60)
            s.add_argument("--poll-ms", type=float, default=20)
        if name == "memory":
            s.add_argument("--budget", type=float, default=150, help="seconds of sending at most")
    h = sub.add_parser("hammer")
    h.add_argument("--sets", required=True)
    h.add_argument("--url", required=True)
    h.add_argument("--first-sender", type=int, required=True)
    sm = sub.add_parser("summary")
    sm.add_argument("--results", required=True)
    sm.add_argument("--json")
    sm.add_argument("--quick", action="store_true")
    sm.add_argument("--only", choices=["engine"], help="only (4) was run: the others are not missing")
    a = p.parse_args()
    return {"prepare": prepare, "accept": accept, "peer": peer, "memory": memory, "engine": engine,
            "hammer": hammer, "summary": summary}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
