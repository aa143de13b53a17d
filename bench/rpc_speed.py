"""JSON-RPC requests per second, `ethrex node` against go-ethereum v1.17.10 on the same
chain (driven by bench/rpc-speed.sh, which imports the chain, starts and stops the nodes).

The request lists are built once, from the reference node (geth), and the same files are
sent to both nodes by the same load generator: wrk (C, epoll) with bench/rpc_speed.lua,
which cycles through the file's JSON bodies (one per line), each wrk thread from its own
offset. Four methods:
  eth_call                  ERC-20 balanceOf(holder) on the stress chain's most popular
                            token (token 0) at `latest`, the holder varying over the
                            distinct senders and recipients of its Transfer logs;
  eth_getLogs               blocks 0 .. latest, one address: the token with the most
                            Transfer logs over the whole chain that stay within ethrex's
                            10,000-log answer cap (docs/rpc.md; geth has none); the number
                            of logs is printed and must be the same on both;
  eth_getTransactionReceipt real transaction hashes of the chain, an even sample across all
                            blocks, shuffled (seeded);
  debug_traceTransaction    callTracer, hashes as above from the blocks whose parent state
                            geth (a full node, path scheme) holds (`prepare` finds them).

  rpc_speed.py prepare --url GETH --genesis F --out DIR [--receipts N] [--traces N]
        DIR/<method>.jsonl (the bodies) and DIR/meta.json (what was chosen and why).
  rpc_speed.py answers --url URL --dir DIR --out F [--samples K]
        the raw answers to every request of each list (K > 0: the first K); an error or a
        null result fails: a bench must not measure error replies.
  rpc_speed.py compare --geth F --ethrex F
        byte for byte (bench/geth_rpc_blocks.py's comparison: any difference counts, in
        value, key order or formatting); lists what differs (each differing request up to
        ten a method, then which fields across all); exits 1 on a difference.
  rpc_speed.py settle --pid PID [--limit S]
        waits until the process is idle (start-up work, geth's indexers, done).
  rpc_speed.py warmup --url URL --dir DIR --method M --seconds S --client NAME --round R
                      --results F
        sequential requests for S seconds (at least 3): the node's caches warmed, and the
        latency at one client (a JSON line in F) by which `load` sizes its points.
  rpc_speed.py load --url URL --dir DIR --method M --conc C --seconds S [--max-seconds X]
                    --client NAME --round R --pid PID --results F [--settle S]
        one wrk point (-t C -c C), once the node is idle (at most S s), lasting S seconds or,
        for a slow method, about 10 requests per connection (the warm-up's latency x C /
        cores), at most X; appends a JSON line to F: requests/s, latency, wrk's socket and
        non-2xx errors, JSON-RPC error answers, the node's CPU seconds and wrk's over the
        point. Requests/s is the sum over the connections of each one's completed requests
        over its span, first request to last answer (bench/rpc_speed.lua): wrk's own count
        over the duration drops the request in flight at the end, one per connection, which
        for a method of a second or more is much of a point (that count is kept too, as
        rps_count). A point where a connection completes nothing is run again, twice as
        long, once. Exits 1 when any request failed.
  rpc_speed.py summary --results F --meta F [--json OUT] [--info K=V ...]
        the table of medians and ratios (ethrex / geth, > 1 = ethrex faster), and JSON.
"""
import argparse
import http.client
import json
import math
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from geth_rpc_blocks import (AnswerError, compare_bodies, field_summary, order_summary, post,  # noqa: E402
                             report_block, result_of, short_labels)
from procstat import cpu_ticks  # noqa: E402

METHODS = ["eth_call", "eth_getLogs", "eth_getTransactionReceipt", "debug_traceTransaction"]
LUA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rpc_speed.lua")
ETHREX_LOG_CAP = 10_000  # logs per eth_getLogs answer (crates/rpc/src/eth/logs.rs, docs/rpc.md)
TRANSFER = "0x" + "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
TOKENS = 8  # testing/chaingen/src/mainnet/contracts.rs
TRACER = {"tracer": "callTracer"}


def keccak(data):
    from eth_hash.auto import keccak as k
    return k(data)


def derive_address(seed, label, index):
    """testing/chaingen/src/keys.rs derive_address: keccak(seed_le ++ label ++ index_le)[12:]."""
    return "0x" + keccak(seed.to_bytes(8, "little") + label.encode() + index.to_bytes(8, "little"))[12:].hex()


def body(method, params):
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, separators=(",", ":"))


def rpc(url, method, params, timeout=60):
    raw = post(url, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, timeout=timeout)
    return result_of(raw)[1]


# ---- prepare (from the reference node)


def logs_in_chunks(url, address, head, chunk=16):
    out = []
    for start in range(0, head + 1, chunk):
        out += rpc(url, "eth_getLogs", [{"fromBlock": hex(start), "toBlock": hex(min(head, start + chunk - 1)),
                                         "address": address}])
    return out


def prepare(a):
    url = a.url
    genesis = json.load(open(a.genesis))
    alloc = {k.lower().removeprefix("0x") for k in genesis.get("alloc", {})}
    head = int(rpc(url, "eth_blockNumber", []), 16)
    tokens = [derive_address(0, "import-bench/token", i) for i in range(TOKENS)]
    missing = [t for t in tokens if t[2:] not in alloc]
    if missing:
        raise SystemExit(f"prepare: the genesis has no token at {missing} (not a stress chain?)")
    # Every transaction hash, block by block.
    blocks = []
    for n in range(1, head + 1):
        b = rpc(url, "eth_getBlockByNumber", [hex(n), False])
        blocks.append((n, b["transactions"]))
    txs = [(n, h) for n, hs in blocks for h in hs]
    if not txs:
        raise SystemExit("prepare: the chain has no transactions")
    # Transfer logs of each token over the whole chain (in chunks: no answer cap matters).
    per_token = {}
    for t in tokens:
        logs = logs_in_chunks(url, t, head)
        per_token[t] = [lg for lg in logs if lg["topics"] and lg["topics"][0] == TRANSFER]
        per_token[t + "/all"] = len(logs)
    counts = {t: per_token[t + "/all"] for t in tokens}
    within = [t for t in tokens if counts[t] <= ETHREX_LOG_CAP]
    if not within:
        raise SystemExit(f"prepare: every token has more than {ETHREX_LOG_CAP} logs: {counts}")
    logs_addr = max(within, key=lambda t: (counts[t], -tokens.index(t)))
    # eth_call: balanceOf(holder) on token 0, holders from its Transfer logs.
    call_token = tokens[0]
    holders = []
    seen = set()
    for lg in per_token[call_token]:
        for topic in lg["topics"][1:3]:
            h = "0x" + topic[-40:]
            if h not in seen and h != "0x" + "00" * 20:
                seen.add(h)
                holders.append(h)
    rnd = random.Random(a.seed)
    rnd.shuffle(holders)
    holders = holders[:a.calls]
    calls = [body("eth_call", [{"to": call_token, "data": "0x70a08231" + "00" * 12 + h[2:]}, "latest"])
             for h in holders]
    # Receipts: an even sample across the chain, shuffled.
    def sample(items, n):
        if len(items) <= n:
            return list(items)
        step = len(items) / n
        return [items[int(i * step)] for i in range(n)]
    receipts = sample(txs, a.receipts)
    rnd.shuffle(receipts)
    # Traces: the blocks whose parent state geth holds. A path-scheme full node keeps the
    # last 128 states (the disk layer and 128 diff layers); probe the first transaction of
    # each block from the oldest up, and keep the blocks from the first one that traces.
    traceable_from = None
    first_error, probed_errors = "no block has a transaction", 0
    for n, hs in blocks:
        if not hs:
            continue
        raw = post(url, {"jsonrpc": "2.0", "id": 1, "method": "debug_traceTransaction", "params": [hs[0], TRACER]},
                   timeout=120)
        try:
            result_of(raw)
            traceable_from = n
            break
        except AnswerError as e:
            if not probed_errors:
                first_error = str(e)
            probed_errors += 1
            continue
    if traceable_from is None:
        raise SystemExit(f"prepare: geth traces no transaction of the chain ({first_error})")
    traceable = [(n, h) for n, h in txs if n >= traceable_from]
    traces = sample(traceable, a.traces)
    rnd.shuffle(traces)
    lists = {
        "eth_call": calls,
        "eth_getLogs": [body("eth_getLogs", [{"fromBlock": "0x0", "toBlock": "latest", "address": logs_addr}])],
        "eth_getTransactionReceipt": [body("eth_getTransactionReceipt", [h]) for _, h in receipts],
        "debug_traceTransaction": [body("debug_traceTransaction", [h, TRACER]) for _, h in traces],
    }
    os.makedirs(a.out, exist_ok=True)
    for m, reqs in lists.items():
        with open(os.path.join(a.out, f"{m}.jsonl"), "w") as f:
            f.write("\n".join(reqs) + "\n")
    meta = {
        "head": head, "transactions": len(txs),
        "eth_call": {"token": call_token, "holders": len(calls), "block": "latest",
                     "what": "ERC-20 balanceOf(holder) of token 0, holders from its Transfer logs"},
        "eth_getLogs": {"address": logs_addr, "token_index": tokens.index(logs_addr), "fromBlock": "0x0",
                        "toBlock": "latest", "logs": counts[logs_addr], "logs_per_token": counts,
                        "rule": f"the token with the most logs within ethrex's {ETHREX_LOG_CAP}-log cap"},
        "eth_getTransactionReceipt": {"hashes": len(receipts), "of": len(txs)},
        "debug_traceTransaction": {"tracer": "callTracer", "hashes": len(traces), "from_block": traceable_from,
                                   "of": len(traceable),
                                   "older_blocks_error": first_error if probed_errors else None},
    }
    json.dump(meta, open(os.path.join(a.out, "meta.json"), "w"), indent=1)
    print(f"requests: eth_call balanceOf x{len(calls)} holders of {call_token}; eth_getLogs 0..latest of "
          f"token {tokens.index(logs_addr)} {logs_addr} ({counts[logs_addr]} logs; per token {list(counts.values())}); "
          f"receipts x{len(receipts)} of {len(txs)} txs; callTracer traces x{len(traces)} (blocks "
          f"{traceable_from}..{head}, geth's states)")
    return 0


# ---- answers and their comparison


def answers(a):
    t0 = time.perf_counter()
    out = {}
    fail = []
    for m in METHODS:
        reqs = [line for line in open(os.path.join(a.dir, f"{m}.jsonl")) if line.strip()]
        if a.samples > 0:
            reqs = reqs[:a.samples]
        out[m] = []
        for r in reqs:
            req = json.loads(r)
            raw = post(a.url, req, timeout=120)
            out[m].append({"request": req, "body": raw.decode("utf-8", "replace")})
            try:
                _, value = result_of(raw)
                if value is None or value == []:
                    fail.append(f"{m} {json.dumps(req['params'])[:120]}: result {json.dumps(value)}")
            except (AnswerError, ValueError) as e:
                fail.append(f"{m} {json.dumps(req['params'])[:120]}: {e}"[:400])
    json.dump(out, open(a.out, "w"))
    for f in fail[:20]:
        print(f"!! {a.url}: {f}", file=sys.stderr)
    if len(fail) > 20:
        print(f"!! {a.url}: ... {len(fail) - 20} more", file=sys.stderr)
    print(f"answers of {a.url}: " + ", ".join(f"{m} {len(out[m])}" for m in METHODS) +
          f" requests ({time.perf_counter() - t0:.1f} s)")
    return 1 if fail else 0


SHOWN_PER_METHOD = 10


def compare(a):
    g, e = json.load(open(a.geth)), json.load(open(a.ethrex))
    bad = 0
    lines = []
    summary = []
    items = []
    for m in METHODS:
        same = 0
        statuses = {}
        if len(g[m]) != len(e[m]) or any(gb["request"] != eb["request"] for gb, eb in zip(g[m], e[m])):
            lines.append(f"{m}: the two answer files are not of the same requests")
            bad += 1
        for k, (gb, eb) in enumerate(zip(g[m], e[m])):
            c = compare_bodies(eb["body"].encode(), gb["body"].encode())
            if c.status == "identical":
                same += 1
                continue
            bad += 1
            statuses[c.status] = statuses.get(c.status, 0) + 1
            params = json.dumps(gb["request"]["params"])
            items.append((f"{m}#{k}", c))
            if sum(statuses.values()) > SHOWN_PER_METHOD:
                continue
            label = f"{m} #{k} {params[:160]}: {c.status} (ethrex's answer is 'ours')"
            lines += report_block(label, {"result": c}) or [label]
            if c.status == "formatting":
                lines.append(f"  ethrex: {eb['body'][:200]}")
                lines.append(f"  geth:   {gb['body'][:200]}")
        n = min(len(g[m]), len(e[m]))
        summary.append(f"{m} {same}/{n}" + (f" ({', '.join(f'{v} {s}' for s, v in statuses.items())})"
                                            if statuses else ""))
        if m == "eth_getLogs":
            counts = []
            for side in (e, g):
                try:
                    counts.append(len(result_of(side[m][0]["body"].encode())[1]))
                except (AnswerError, ValueError, IndexError):
                    counts.append(None)
            print(f"eth_getLogs 0..latest: ethrex returns {counts[0]} logs, geth {counts[1]}")
            if counts[0] != counts[1]:
                bad += 1
    for s_, ours, geth, labels in order_summary(items):
        lines.append(f"key order of {s_} differs in {len(labels)} answers ({short_labels(labels, 6)})")
        lines.append(f"  ethrex: {', '.join(ours)}")
        lines.append(f"  geth:   {', '.join(geth)}")
    fields = field_summary(items)
    if fields:
        lines.append("differing fields (answers each differs in): " + ", ".join(f"{s_} ({n})" for s_, n in fields))
    for line in lines:
        print(line)
    print(f"answers byte-identical: {', '.join(summary)}" + ("" if not bad else f"; {bad} DIFFER"))
    return 1 if bad else 0


# ---- load


def settle_pid(pid, limit=30.0, window=0.25, quiet_needed=2):
    """Waits until pid uses under a tenth of a core over `quiet_needed` windows in a row;
    returns the seconds waited."""
    hz = os.sysconf("SC_CLK_TCK")
    t0 = time.time()
    quiet = 0
    last = cpu_ticks(pid)
    while time.time() - t0 < limit and quiet < quiet_needed:
        time.sleep(window)
        now = cpu_ticks(pid)
        busy = last is not None and now is not None and (now - last) > 0.1 * window * hz
        quiet = 0 if busy else quiet + 1
        last = now
    return round(time.time() - t0, 2)


def settle(a):
    print(f"idle after {settle_pid(a.pid, a.limit)} s")
    return 0


def busy_ticks():
    """Ticks every CPU of the machine spent busy (not idle or iowait), from /proc/stat."""
    try:
        f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
        return sum(f) - f[3] - f[4]
    except (OSError, ValueError, IndexError):
        return None


def rss_mb(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024)
    except OSError:
        return None


def warmup(a):
    """Sequential requests (one keep-alive connection) cycling through the list for
    `seconds`, at least `min_requests`: warms the node's caches and measures the latency
    at one client, from which `load` sizes its points."""
    reqs = [line.strip() for line in open(os.path.join(a.dir, f"{a.method}.jsonl")) if line.strip()]
    u = urllib.parse.urlparse(a.url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    lat, errors, first = [], 0, None
    t_start = time.perf_counter()
    while ((time.perf_counter() - t_start < a.seconds or len(lat) < a.min_requests)
           and time.perf_counter() - t_start < a.max_seconds):
        body = reqs[len(lat) % len(reqs)]
        t0 = time.perf_counter()
        conn.request("POST", "/", body, {"Content-Type": "application/json"})
        r = conn.getresponse()
        data = r.read()
        lat.append(time.perf_counter() - t0)
        if r.status != 200 or b'"result"' not in data[:200]:
            errors += 1
            first = first or f"{r.status} {data[:300]!r}"
    conn.close()
    rec = {"kind": "warmup", "client": a.client, "round": a.round, "method": a.method, "requests": len(lat),
           "seconds": round(time.perf_counter() - t_start, 3), "mean_ms": round(1000 * statistics.mean(lat), 3),
           "errors": errors, "first_error": first}
    if a.results:
        with open(a.results, "a") as f:
            f.write(json.dumps(rec) + "\n")
    print(f"  {a.client:6} r{a.round} {a.method:26} warm-up: {len(lat)} sequential requests, mean "
          f"{rec['mean_ms']:.2f} ms")
    if errors:
        print(f"!! {a.client} {a.method} warm-up: {errors} error answers: {first}", file=sys.stderr)
        return 1
    return 0


def point_seconds(a, cores):
    """The point's length: --seconds, longer (up to --max-seconds) when a request is slow, so
    that each connection completes about `WAVES` requests: the latency expected at C clients
    is the warm-up's (one client) times C / cores (a node using every core)."""
    warm = None
    if a.results and os.path.exists(a.results):
        for line in open(a.results):
            r = json.loads(line)
            if r["kind"] == "warmup" and (r["client"], r["round"], r["method"]) == (a.client, a.round, a.method):
                warm = r
    if not warm:
        return a.seconds
    expected = warm["mean_ms"] / 1000 * max(1.0, a.conc / cores)
    return int(max(a.seconds, min(a.max_seconds, math.ceil(WAVES * expected))))


WAVES = 10


def load(a):
    file = os.path.join(a.dir, f"{a.method}.jsonl")
    n_reqs = sum(1 for line in open(file) if line.strip())
    hz = os.sysconf("SC_CLK_TCK")
    waited = settle_pid(a.pid, a.settle) if a.settle else 0.0
    cores = os.cpu_count() or 1
    seconds = point_seconds(a, cores)
    for attempt in (1, 2):
        cmd = ["wrk", "-t", str(a.conc), "-c", str(a.conc), "-d", f"{seconds}s", "--timeout", "60s",
               "-s", LUA, a.url + "/", "--", file, str(a.conc)]
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        c0, b0 = cpu_ticks(a.pid), busy_ticks()
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=seconds + 180)
        wall = time.perf_counter() - t0
        c1, b1 = cpu_ticks(a.pid), busy_ticks()
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RPCSPEED ")), None)
        if p.returncode != 0 or line is None:
            print(f"!! wrk failed ({p.returncode}): {p.stdout[-800:]} {p.stderr[-800:]}", file=sys.stderr)
            return 1
        w = json.loads(line[len("RPCSPEED "):])
        # Every connection must have completed a request for its rate to count.
        if w["min_per_conn"] >= 1 or attempt == 2:
            break
        print(f"  {a.client} {a.method} c={a.conc}: a connection completed nothing in {seconds} s; again, twice as long")
        seconds *= 2
    socket_errors = w["connect"] + w["read"] + w["write"] + w["timeout"]
    secs = w["duration_us"] / 1e6
    by_count = w["requests"] / secs if secs else 0.0
    rec = {
        "kind": "point", "client": a.client, "round": a.round, "method": a.method, "conc": a.conc,
        "seconds": round(secs, 3), "requests": w["requests"], "min_per_conn": w["min_per_conn"],
        "rps": round(w["span_rps"], 2), "rps_count": round(by_count, 2), "distinct_requests": n_reqs,
        "bytes_per_answer": round(w["bytes"] / w["requests"]) if w["requests"] else None,
        "lat_p50_ms": w["lat_p50_us"] / 1000, "lat_p99_ms": w["lat_p99_us"] / 1000,
        "lat_mean_ms": round(w["lat_mean_us"] / 1000, 3),
        "socket_errors": socket_errors, "non_2xx": w["status"], "rpc_errors": w["rpc_errors"],
        "first_error": w["first_error"] or None,
        "node_cpu_s": round((c1 - c0) / hz, 2) if c0 is not None and c1 is not None else None,
        "wrk_cpu_s": round(ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime, 2),
        "wall_s": round(wall, 2), "rss_mb": rss_mb(a.pid), "settled_s": waited,
    }
    # What else ran on the machine meanwhile (CPU seconds): the host is shared.
    rec["other_cpu_s"] = (round((b1 - b0) / hz - rec["node_cpu_s"] - rec["wrk_cpu_s"], 2)
                          if b0 is not None and b1 is not None and rec["node_cpu_s"] is not None else None)
    rec["node_cpu_ms_per_req"] = (round(1000 * rec["node_cpu_s"] / w["requests"], 3)
                                  if rec["node_cpu_s"] is not None and w["requests"] else None)
    ok = (socket_errors == 0 and w["status"] == 0 and w["rpc_errors"] == 0 and w["requests"] > 0
          and w["min_per_conn"] >= 1)
    if a.results:
        with open(a.results, "a") as f:
            f.write(json.dumps(rec) + "\n")
    by = "" if secs < 6 else f" ({w['requests']} in {secs:.0f} s)"
    print(f"  {a.client:6} r{a.round} {a.method:26} c={a.conc:<2} {rec['rps']:9.1f} req/s{by}  p50 "
          f"{rec['lat_p50_ms']:8.2f} ms  p99 {rec['lat_p99_ms']:8.2f} ms  node CPU {rec['node_cpu_ms_per_req']} "
          f"ms/req, wrk CPU {rec['wrk_cpu_s']} s, others {rec['other_cpu_s']} s")
    if not ok:
        print(f"!! {a.client} {a.method} c={a.conc}: {w['requests']} requests (fewest by a connection: "
              f"{w['min_per_conn']}), socket errors {socket_errors}, non-2xx {w['status']}, JSON-RPC errors "
              f"{w['rpc_errors']}: {w['first_error']}", file=sys.stderr)
        return 1
    return 0


# ---- summary


def summary(a):
    recs = [json.loads(line) for line in open(a.results) if line.strip()]
    meta = json.load(open(a.meta)) if a.meta else {}
    info = dict(kv.split("=", 1) for kv in a.info or [])
    pts = [r for r in recs if r["kind"] == "point"]
    concs = sorted({r["conc"] for r in pts})
    table = []
    failed = [r for r in recs if r["kind"] == "failure"]
    bad_points = [r for r in recs if r["kind"] == "point" and
                  (r["socket_errors"] or r["non_2xx"] or r["rpc_errors"] or not r["requests"]
                   or r["min_per_conn"] < 1)]
    for m in METHODS:
        for c in concs:
            row = {"method": m, "conc": c}
            for client in ("ethrex", "geth"):
                rs = [r for r in pts if r["method"] == m and r["conc"] == c and r["client"] == client]
                row[client] = {
                    "rps_median": round(statistics.median([r["rps"] for r in rs]), 1) if rs else None,
                    "rps_runs": [r["rps"] for r in rs],
                    "p50_ms_median": round(statistics.median([r["lat_p50_ms"] for r in rs]), 3) if rs else None,
                    "p99_ms_median": round(statistics.median([r["lat_p99_ms"] for r in rs]), 3) if rs else None,
                    "node_cpu_ms_per_req_median": (round(statistics.median(
                        [r["node_cpu_ms_per_req"] for r in rs if r["node_cpu_ms_per_req"] is not None]), 3)
                        if any(r["node_cpu_ms_per_req"] is not None for r in rs) else None),
                    "bytes_per_answer": rs[0]["bytes_per_answer"] if rs else None,
                }
            e, g = row["ethrex"]["rps_median"], row["geth"]["rps_median"]
            row["ratio"] = round(e / g, 3) if e and g else None
            table.append(row)
    rounds = max([r["round"] for r in pts], default=0)
    wall = sum(r["wall_s"] for r in pts)
    others = sum(r["other_cpu_s"] or 0 for r in pts)
    info["other_processes_cores_during_load"] = round(others / wall, 2) if wall else None
    print(f"\nrpc-speed: requests/s, medians of {rounds} round(s) (ethrex, geth alternating; wrk -t C -c C); "
          f"ratio = ethrex / geth (> 1: ethrex faster)")
    hdr = (f"| method | clients | ethrex req/s | geth req/s | ratio | ethrex p50 ms | geth p50 ms | "
           f"ethrex CPU ms/req | geth CPU ms/req |")
    print(hdr)
    print("|" + "---|" * 9)
    for row in table:
        e, g = row["ethrex"], row["geth"]
        def f(x, fmt="{:.1f}"):
            return "-" if x is None else fmt.format(x)
        print(f"| {row['method']} | {row['conc']} | {f(e['rps_median'])} | {f(g['rps_median'])} | "
              f"{f(row['ratio'], '{:.2f}x')} | {f(e['p50_ms_median'], '{:.2f}')} | {f(g['p50_ms_median'], '{:.2f}')} | "
              f"{f(e['node_cpu_ms_per_req_median'], '{:.3f}')} | {f(g['node_cpu_ms_per_req_median'], '{:.3f}')} |")
    print(f"other processes on the machine during the points: {info['other_processes_cores_during_load']} "
          f"cores on average (of {os.cpu_count()})")
    if meta:
        gl = meta["eth_getLogs"]
        print(f"eth_call: {meta['eth_call']['what']} ({meta['eth_call']['holders']} holders, {meta['eth_call']['token']}); "
              f"eth_getLogs: blocks 0..latest of {gl['address']} (token {gl['token_index']}): {gl['logs']} logs; "
              f"receipts: {meta['eth_getTransactionReceipt']['hashes']} of {meta['eth_getTransactionReceipt']['of']} "
              f"txs; debug_traceTransaction: callTracer, {meta['debug_traceTransaction']['hashes']} txs of blocks "
              f"{meta['debug_traceTransaction']['from_block']}..{meta['head']}")
    for r in bad_points:
        print(f"!! {r['client']} r{r['round']} {r['method']} c={r['conc']}: socket errors {r['socket_errors']}, "
              f"non-2xx {r['non_2xx']}, JSON-RPC errors {r['rpc_errors']} of {r['requests']}: {r['first_error']}")
    for r in failed:
        print(f"!! FAILED: {r['what']}")
    out = {"info": info, "requests": meta, "table": table, "points": [r for r in recs if r["kind"] == "point"],
           "failures": [r["what"] for r in failed],
           "error_points": len(bad_points)}
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=1)
            fh.write("\n")
    return 1 if failed or bad_points or any(r["ratio"] is None for r in table) else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("prepare")
    s.add_argument("--url", required=True)
    s.add_argument("--genesis", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--calls", type=int, default=1000)
    s.add_argument("--receipts", type=int, default=2000)
    s.add_argument("--traces", type=int, default=500)
    s.add_argument("--seed", type=int, default=1)
    s = sub.add_parser("answers")
    s.add_argument("--url", required=True)
    s.add_argument("--dir", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--samples", type=int, default=0, help="the first K requests of each list; 0: all")
    s = sub.add_parser("compare")
    s.add_argument("--geth", required=True)
    s.add_argument("--ethrex", required=True)
    s = sub.add_parser("settle")
    s.add_argument("--pid", type=int, required=True)
    s.add_argument("--limit", type=float, default=30)
    s = sub.add_parser("load")
    s.add_argument("--url", required=True)
    s.add_argument("--dir", required=True)
    s.add_argument("--method", required=True, choices=METHODS)
    s.add_argument("--conc", type=int, required=True)
    s.add_argument("--seconds", type=int, required=True, help="whole seconds (wrk -d), at least")
    s.add_argument("--max-seconds", type=int, default=30, help="the longest a slow method's point may take")
    s.add_argument("--client", required=True)
    s.add_argument("--round", type=int, default=1)
    s.add_argument("--pid", type=int, required=True)
    s.add_argument("--results")
    s.add_argument("--settle", type=float, default=10, help="wait (at most this long) for the node to be idle first")
    s = sub.add_parser("warmup")
    s.add_argument("--url", required=True)
    s.add_argument("--dir", required=True)
    s.add_argument("--method", required=True, choices=METHODS)
    s.add_argument("--seconds", type=float, required=True)
    s.add_argument("--min-requests", type=int, default=3)
    s.add_argument("--max-seconds", type=float, default=60)
    s.add_argument("--client", required=True)
    s.add_argument("--round", type=int, default=1)
    s.add_argument("--results")
    s = sub.add_parser("summary")
    s.add_argument("--results", required=True)
    s.add_argument("--meta")
    s.add_argument("--json")
    s.add_argument("--info", nargs="*")
    a = p.parse_args()
    return {"prepare": prepare, "answers": answers, "compare": compare, "settle": settle, "warmup": warmup,
            "load": load, "summary": summary}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
