#!/usr/bin/env python3
"""The study "Block-level access lists and parallel I/O", reproduced (see io-study.sh).

Subcommands (python3 stdlib only):
  step     run one command of the study, time it, append it to the manifest (JSON lines)
  machine  write this machine's description (cores, RAM, CPU model, disks) as JSON
  check    fail if any sweep point's final state root differs from the sequential one's
           on the same fixture
  render   build io-study.md, io-study.json and the SVG plots from the runs' JSON

Every "ours" number in the output is read from the runs' JSON (`ethrex import-bench
--json`); the published numbers are the constants in PUBLISHED below, labelled as such.
"""
import argparse
import datetime
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from xml.sax.saxutils import escape

BATCHED = "design:batched-io"
PARALLEL_IO = "design:parallel-io"
SEQUENTIAL = "sequential"
PARALLEL = "parallel"
# Sweep modes in the order of the tables' columns (any other mode found gets a column after).
MODE_ORDER = (PARALLEL_IO, BATCHED, SEQUENTIAL, PARALLEL)
MODE_LABEL = {
    PARALLEL_IO: "parallel-I/O BAL",
    BATCHED: "batched-I/O BAL",
    SEQUENTIAL: "sequential",
    PARALLEL: "parallel (client default)",
}
# Name of the file the study script writes beside each fixture it generates.
FIXTURE_META = "io-study.fixture.json"

# The reference study's figures. Constants: nothing here is measured on this machine.
PUBLISHED = {
    "setup": {
        "machine": "16-core AMD Ryzen 9 5950X",
        "disk": "NVMe RAID-0",
        "database": "RocksDB, flat state",
        "cold": "page cache dropped",
        "blocks": "mainnet blocks",
    },
    "baseline": {
        "io_share_without_prewarming": 0.70,
        "reth_single_thread_mdbx_mgas_per_s": 350,
        "reth_with_prewarming_mgas_per_s": 700,
    },
    # Parallel-I/O BAL, one block at a time.
    "per_block": {
        "design": PARALLEL_IO,
        "mgas_per_s": {1: 740, 2: 1447, 4: 2167, 8: 2994, 16: 3220, 32: 3253},
        "longest_tx_share_at_16": 0.75,
        "longest_tx_s": [6.85, 9.57],
        "total_s": [13.8, 60.6],
    },
    # 50 consecutive blocks executed as one unit, committed once.
    "mega_block": {
        "batch": 50,
        "mgas_per_unit": 1121,
        "mgas_per_s": {1: 943, 2: 1857, 4: 3505, 8: 6524, 16: 10842, 32: 10794},
        "longest_tx_share_max": 0.15,
    },
    # Batched-I/O vs parallel-I/O at 16 threads; only the endpoints are published.
    "batch_sizes": {
        "threads": 16,
        "mgas_per_unit": {1: 22, 100: 2243},
        "batched_io": {1: 3587, 100: 11129},
        "parallel_io": {1: 2893, 100: 11292},
    },
    # Transactions that only SLOAD random keys: 16M gas / 2,039 gas per read.
    "worst_case": {
        "threads": 16,
        "tx_gas": 16_000_000,
        "gas_per_read": 2039,
        "reads_per_tx": 7845,
        "rows": {
            64_000_000: {"batched_io": 6400, "parallel_io": 780, "ratio": 8.0},
            640_000_000: {"batched_io": None, "parallel_io": None, "ratio": 1.6},
        },
    },
}


class StudyError(Exception):
    pass


# ---------------------------------------------------------------------------- step


def cmd_step(a):
    """Runs a.command (unless --cached), tees its output to a.log, appends a manifest line."""
    entry = {
        "name": a.name,
        "table": a.table,
        "command": shlex.join(a.command),
        "json": a.json or None,
        "log": a.log or None,
        "cached": a.cached,
        "seconds": 0.0,
        "started": datetime.datetime.now().isoformat(timespec="seconds"),
    }
    if a.cached:
        print(f"== {a.name}: cached ({a.note or 'present'})", flush=True)
        entry["note"] = a.note
        append_manifest(a.manifest, entry)
        return 0
    print(f"== {a.name}: {entry['command']}", flush=True)
    log_path = Path(a.log) if a.log else None
    if log_path:
        log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    tail = []
    with open(log_path, "wb") if log_path else open(os.devnull, "wb") as log:
        try:
            proc = subprocess.Popen(a.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        except OSError as e:
            raise StudyError(f"step {a.name}: cannot run {a.command[0]}: {e}") from e
        for line in proc.stdout:
            log.write(line)
            log.flush()
            if not a.quiet:
                sys.stdout.buffer.write(b"   " + line)
                sys.stdout.flush()
            tail = (tail + [line])[-40:]
        rc = proc.wait()
    entry["seconds"] = round(time.monotonic() - start, 3)
    entry["exit"] = rc
    append_manifest(a.manifest, entry)
    if rc != 0:
        sys.stderr.buffer.write(b"".join(tail))
        raise StudyError(f"step {a.name} failed (exit {rc}) after {entry['seconds']:.1f} s; log: {a.log}")
    if a.json and not Path(a.json).is_file():
        raise StudyError(f"step {a.name} exited 0 but wrote no {a.json}")
    print(f"   {a.name}: {entry['seconds']:.1f} s", flush=True)
    return 0


def append_manifest(path, entry):
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")


def read_manifest(path):
    if not path:
        return []
    p = Path(path)
    if not p.is_file():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


# ---------------------------------------------------------------------------- machine


def read_text(path):
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def run_text(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_info(paths=(), ethrex=None, repo=None):
    """This machine: cores, RAM, CPU model, the disks holding `paths`, kernel, commit."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 0
    cpu = ""
    for line in read_text("/proc/cpuinfo").splitlines():
        if line.lower().startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    ram_gib = None
    for line in read_text("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            ram_gib = round(int(line.split()[1]) / 1024 / 1024, 1)
    disks = []
    for path in paths:
        df = run_text(["df", "-PT", str(path)]).splitlines()
        if len(df) < 2:
            continue
        device, fstype = df[1].split()[:2]
        disk = {"path": str(path), "device": device, "fstype": fstype}
        parent = run_text(["lsblk", "-no", "PKNAME", device]).splitlines()
        name = parent[0].strip() if parent and parent[0].strip() else device
        fields = run_text(["lsblk", "-dno", "ROTA,SIZE,MODEL", name if name.startswith("/") else "/dev/" + name])
        if fields:
            parts = fields.split(None, 2)
            disk["rotational"] = parts[0] == "1"
            disk["size"] = parts[1] if len(parts) > 1 else ""
            disk["model"] = parts[2].strip() if len(parts) > 2 else ""
        disks.append(disk)
    info = {
        "cores": cores,
        "cpu_model": cpu or platform.processor() or "unknown",
        "ram_gib": ram_gib,
        "disks": disks,
        "kernel": platform.release(),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
    }
    if repo:
        commit = run_text(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"])
        dirty = run_text(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"])
        info["commit"] = commit + ("-dirty" if dirty else "") if commit else None
    if ethrex:
        try:
            info["ethrex"] = {
                "path": str(ethrex),
                "built": datetime.datetime.fromtimestamp(os.stat(ethrex).st_mtime).isoformat(timespec="seconds"),
            }
        except OSError:
            info["ethrex"] = {"path": str(ethrex)}
    return info


def cmd_machine(a):
    info = machine_info(a.path, a.ethrex, a.repo)
    text = json.dumps(info, indent=2)
    if a.out:
        Path(a.out).write_text(text + "\n")
    else:
        print(text)
    return 0


# ---------------------------------------------------------------------------- runs and points


REQUIRED_POINT_KEYS = ("mode", "threads", "batch", "mgas_per_s", "final_state_root")


def load_run(path):
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise StudyError(f"{path}: cannot read the bench JSON: {e}") from e
    for key in ("fixture", "sweep"):
        if key not in data:
            raise StudyError(f"{path}: no '{key}' in the bench JSON (was it written by import-bench --sweep-modes ...?)")
    if not isinstance(data["sweep"], list) or not data["sweep"]:
        raise StudyError(f"{path}: empty 'sweep'")
    for i, p in enumerate(data["sweep"]):
        missing = [k for k in REQUIRED_POINT_KEYS if k not in p]
        if missing:
            raise StudyError(f"{path}: sweep point {i} lacks {', '.join(missing)}")
    return data


def fixture_meta(fixture):
    """What the study script recorded about a fixture (workload, gas limit, state size), or
    a guess from the path and the JSON's totals when the meta file is missing."""
    path = fixture.get("path", "")
    meta_file = Path(path).parent / FIXTURE_META
    meta = {}
    if path and meta_file.is_file():
        try:
            meta = json.loads(meta_file.read_text())
        except ValueError:
            meta = {}
    if "workload" not in meta:
        meta["workload"] = "sload-random" if "sload" in os.path.basename(os.path.dirname(path)) + path else "mix"
    if not meta.get("gas_limit"):
        blocks = fixture.get("blocks") or 0
        meta["gas_limit"] = None
        meta["gas_per_block"] = (fixture.get("gas") or 0) / blocks if blocks else None
    return meta


def points_of(runs):
    """Every sweep point of every run, with its run, fixture and I/O settings attached."""
    points = []
    for name, run in runs:
        fx = run["fixture"]
        meta = fixture_meta(fx)
        for p in run["sweep"]:
            q = dict(p)
            q["run"] = str(name)
            q["fixture"] = fx.get("path", "")
            q["fixture_blocks"] = fx.get("blocks")
            q["fixture_gas"] = fx.get("gas")
            q["db"] = fx.get("db")
            q["workload"] = meta["workload"]
            q["gas_limit"] = meta.get("gas_limit")
            q["io"] = run.get("io", {})
            points.append(q)
    return points


def describe(p):
    return f"{p['mode']} threads={p['threads']} batch={p['batch']} ({os.path.basename(p['run'])})"


def check_roots(points):
    """Errors (strings): points whose final state root differs from the sequential point's
    on the same fixture (or, without a sequential point, from the fixture's first point)."""
    errors = []
    by_fixture = {}
    for p in points:
        by_fixture.setdefault(os.path.normpath(p["fixture"]), []).append(p)
    for fixture, pts in by_fixture.items():
        empty = [p for p in pts if not p.get("final_state_root")]
        for p in empty:
            errors.append(f"{fixture}: {describe(p)} has no final_state_root")
        pts = [p for p in pts if p.get("final_state_root")]
        if not pts:
            continue
        seq = [p for p in pts if p["mode"] == SEQUENTIAL]
        ref = seq[0] if seq else pts[0]
        what = "the sequential point" if seq else "the first point (no sequential point on this fixture)"
        for p in pts:
            if p["final_state_root"].lower() != ref["final_state_root"].lower():
                errors.append(
                    f"{fixture}: {describe(p)} ended in state root {p['final_state_root']}, "
                    f"{what} {describe(ref)} in {ref['final_state_root']}"
                )
    return errors


def cmd_check(a):
    runs = [(path, load_run(path)) for path in a.runs]
    points = points_of(runs)
    errors = check_roots(points)
    if errors:
        raise StudyError("state roots differ:\n  " + "\n  ".join(errors))
    fixtures = len({os.path.normpath(p["fixture"]) for p in points})
    print(f"state roots: {len(points)} sweep points on {fixtures} fixture(s) agree")
    return 0


# ---------------------------------------------------------------------------- selections


def select(points, **want):
    return [p for p in points if all(p.get(k) == v for k, v in want.items())]


def med(points, key="mgas_per_s"):
    """Median of `key` over the points (a point measured in more than one step), or None."""
    values = [float(p[key]) for p in points if p.get(key) is not None]
    return statistics.median(values) if values else None


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def share(points):
    """Longest transactions' share of the time: longest_tx_ms / total_ms (medians)."""
    return ratio(med(points, "longest_tx_ms"), med(points, "total_ms"))


def units(p):
    """Execution units (blocks or batches) of a point's run."""
    blocks = p.get("blocks") or p.get("fixture_blocks") or 0
    batch = max(int(p.get("batch") or 1), 1)
    return math.ceil(blocks / batch) if blocks else 0


def mgas_per_unit(points):
    values = []
    for p in points:
        gas = p.get("gas") or p.get("fixture_gas")
        n = units(p)
        if gas and n:
            values.append(gas / n / 1e6)
    return statistics.median(values) if values else None


def modes_present(points):
    found = {p["mode"] for p in points}
    return [m for m in MODE_ORDER if m in found] + sorted(found - set(MODE_ORDER))


def one_fixture(points, label):
    fixtures = sorted({os.path.normpath(p["fixture"]) for p in points})
    if len(fixtures) > 1:
        raise StudyError(f"runs from {len(fixtures)} different {label} fixtures ({', '.join(fixtures)}); render them separately")
    return fixtures[0] if fixtures else None


# ---------------------------------------------------------------------------- formatting


DASH = "—"


def f_ours(v):
    return DASH if v is None else f"{v:,.1f}"


def f_pub(v):
    return DASH if v is None else f"{v:,.0f}"


def f_x(v):
    return DASH if v is None else f"{v:.2f}x"


def f_pct(v):
    return DASH if v is None else f"{v * 100:.0f}%"


def md_table(header, rows, numeric=True):
    """A Markdown table; numeric: right-align every column but the first."""
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---:" if i and numeric else "---" for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def label(mode):
    return MODE_LABEL.get(mode, mode)


# ---------------------------------------------------------------------------- tables


def thread_table(points, batch, published_rates, published_share, share_note):
    """Mgas/s per thread count at one batch size: rows, Markdown, and the data for JSON."""
    pts = select(points, batch=batch)
    modes = modes_present(pts)
    threads = sorted({int(p["threads"]) for p in pts} | set(published_rates))
    # The baseline of every table: the sequential import, one block at a time, on 1 thread.
    seq1 = med(select(points, mode=SEQUENTIAL, threads=1, batch=1))
    pub1 = published_rates.get(1)
    base = {m: med(select(pts, mode=m, threads=1)) for m in modes}
    data = []
    for t in threads:
        row = {"threads": t, "published_mgas_per_s": published_rates.get(t),
               "published_speedup": ratio(published_rates.get(t), pub1), "ours": {}}
        for m in modes:
            sel = select(pts, mode=m, threads=t)
            v = med(sel)
            row["ours"][m] = {
                "mgas_per_s": v,
                "speedup_vs_1_thread": ratio(v, base[m]),
                "vs_sequential_1_thread": ratio(v, seq1),
                "longest_tx_share": share(sel),
                "amdahl_mgas_per_s": med(sel, "amdahl_mgas_per_s"),
                "points": len(sel),
            }
        data.append(row)
    rate_header = ["threads", "published: parallel-I/O Mgas/s"] + [f"ours: {label(m)} Mgas/s" for m in modes]
    rate_rows = [[r["threads"], f_pub(r["published_mgas_per_s"])] + [f_ours(r["ours"][m]["mgas_per_s"]) for m in modes]
                 for r in data]
    main = PARALLEL_IO if PARALLEL_IO in modes else (modes[0] if modes else None)
    scale_header = ["threads", "published: speedup vs 1 thread", "published: longest-tx share"]
    scale_header += [f"ours: {label(m)} speedup vs 1 thread" for m in modes if m != SEQUENTIAL]
    if main:
        scale_header += [f"ours: {label(main)} / sequential@1", f"ours: {label(main)} longest-tx share",
                         f"ours: {label(main)} Amdahl bound Mgas/s"]
    scale_rows = []
    for r in data:
        row = [r["threads"], f_x(r["published_speedup"]),
               share_note if r["threads"] == published_share else DASH]
        row += [f_x(r["ours"][m]["speedup_vs_1_thread"]) for m in modes if m != SEQUENTIAL]
        if main:
            o = r["ours"][main]
            row += [f_x(o["vs_sequential_1_thread"]), f_pct(o["longest_tx_share"]), f_ours(o["amdahl_mgas_per_s"])]
        scale_rows.append(row)
    return data, modes, md_table(rate_header, rate_rows), md_table(scale_header, scale_rows)


def batch_table(points, threads):
    pts = select(points, threads=threads)
    modes = modes_present(pts)
    pub = PUBLISHED["batch_sizes"]
    batches = sorted({int(p["batch"]) for p in pts} | set(pub["batched_io"]))
    data = []
    for b in batches:
        sel = select(pts, batch=b)
        row = {
            "batch": b,
            "published_mgas_per_unit": pub["mgas_per_unit"].get(b),
            "published_batched_io": pub["batched_io"].get(b),
            "published_parallel_io": pub["parallel_io"].get(b),
            "published_batched_over_parallel": ratio(pub["batched_io"].get(b), pub["parallel_io"].get(b)),
            "ours_mgas_per_unit": mgas_per_unit(sel),
            "ours": {m: {"mgas_per_s": med(select(sel, mode=m)), "longest_tx_share": share(select(sel, mode=m)),
                         "points": len(select(sel, mode=m))} for m in modes},
        }
        row["ours_batched_over_parallel"] = ratio(row["ours"].get(BATCHED, {}).get("mgas_per_s"),
                                                  row["ours"].get(PARALLEL_IO, {}).get("mgas_per_s"))
        data.append(row)
    header = ["batch (blocks)", "published: Mgas per unit", "ours: Mgas per unit",
              "published: batched-I/O", "published: parallel-I/O", "published: batched / parallel"]
    header += [f"ours: {label(m)} Mgas/s" for m in modes] + ["ours: batched / parallel"]
    rows = []
    for r in data:
        row = [r["batch"], f_pub(r["published_mgas_per_unit"]), f_ours(r["ours_mgas_per_unit"]),
               f_pub(r["published_batched_io"]), f_pub(r["published_parallel_io"]),
               f_x(r["published_batched_over_parallel"])]
        row += [f_ours(r["ours"][m]["mgas_per_s"]) for m in modes] + [f_x(r["ours_batched_over_parallel"])]
        rows.append(row)
    return data, modes, md_table(header, rows)


def worst_key(p):
    """A worst-case fixture's row: its gas limit, or its gas per block when not recorded."""
    if p.get("gas_limit"):
        return int(p["gas_limit"])
    blocks = p.get("fixture_blocks") or p.get("blocks") or 1
    return int(round((p.get("fixture_gas") or p.get("gas") or 0) / blocks))


def published_worst(key):
    for limit, row in PUBLISHED["worst_case"]["rows"].items():
        if abs(key - limit) <= 0.25 * limit:
            return limit, row
    return None, None


def worst_table(points, threads):
    pts = [p for p in points if p["workload"] == "sload-random"]
    keys = sorted({worst_key(p) for p in pts})
    data = []
    for k in keys:
        sel = [p for p in pts if worst_key(p) == k]
        fixtures = {os.path.normpath(p["fixture"]) for p in sel}
        if len(fixtures) > 1:
            raise StudyError(f"more than one worst-case fixture at {k / 1e6:.0f} Mgas per block: {', '.join(sorted(fixtures))}")
        limit, pub = published_worst(k)
        b = med(select(sel, mode=BATCHED, threads=threads))
        pio = med(select(sel, mode=PARALLEL_IO, threads=threads))
        data.append({
            "gas_per_block": k,
            "published_gas_per_block": limit,
            "published_batched_io": pub and pub["batched_io"],
            "published_parallel_io": pub and pub["parallel_io"],
            "published_batched_over_parallel": pub and pub["ratio"],
            "ours_sequential_1_thread": med(select(sel, mode=SEQUENTIAL, threads=1)),
            "ours_batched_io": b,
            "ours_parallel_io": pio,
            "ours_parallel": med(select(sel, mode=PARALLEL, threads=threads)),
            "ours_batched_over_parallel": ratio(b, pio),
            "ours_batched_longest_tx_share": share(select(sel, mode=BATCHED, threads=threads)),
            "ours_transactions_per_block": ratio(sel[0].get("transactions_total"), sel[0].get("fixture_blocks")),
        })
    header = ["Mgas per block", "ours: sequential@1 Mgas/s", "published: batched-I/O", f"ours: batched-I/O@{threads}",
              "published: parallel-I/O", f"ours: parallel-I/O@{threads}", "published: batched / parallel",
              "ours: batched / parallel"]
    if any(r["ours_parallel"] is not None for r in data):
        header.append(f"ours: parallel (client default)@{threads}")
    rows = []
    for r in data:
        row = [f"{r['gas_per_block'] / 1e6:,.0f}", f_ours(r["ours_sequential_1_thread"]),
               f_pub(r["published_batched_io"]), f_ours(r["ours_batched_io"]),
               f_pub(r["published_parallel_io"]), f_ours(r["ours_parallel_io"]),
               ("~" + f_x(r["published_batched_over_parallel"])) if r["published_batched_over_parallel"] else DASH,
               f_x(r["ours_batched_over_parallel"])]
        if len(header) > 8:
            row.append(f_ours(r["ours_parallel"]))
        rows.append(row)
    return data, md_table(header, rows)


# ---------------------------------------------------------------------------- SVG


COLORS = {
    PARALLEL_IO: "#1f77b4",
    BATCHED: "#d62728",
    SEQUENTIAL: "#7f7f7f",
    PARALLEL: "#2ca02c",
}


def nice_ticks(lo, hi):
    """Tick values for a linear axis from lo to hi."""
    span = hi - lo if hi > lo else 1.0
    step = 10 ** math.floor(math.log10(span / 5))
    for m in (1, 2, 5, 10):
        if span / (step * m) <= 6:
            step *= m
            break
    first = math.floor(lo / step) * step
    ticks, v = [], first
    while v <= hi + step * 1e-9:
        if v >= lo - step * 1e-9:
            ticks.append(round(v, 10))
        v += step
    return ticks


def fmt_tick(v):
    if v >= 1000:
        return f"{v:,.0f}"
    if v >= 1:
        return f"{v:g}"
    return f"{v:.2g}"


def line_chart(title, xlabel, ylabel, series, log_y=True, subtitle=""):
    """A self-contained SVG line chart: x on a log scale (thread counts, batch sizes),
    y on a log (or linear) scale. series: [{"name", "color", "dashed", "points": [(x, y)]}]."""
    width, height = 900, 480
    left, right, top, bottom = 80, 300, 56, 56
    pw, ph = width - left - right, height - top - bottom
    clean = []
    for s in series:
        pts = sorted((float(x), float(y)) for x, y in s["points"] if x and y is not None and y > 0 and x > 0)
        if pts:
            clean.append(dict(s, points=pts))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="22" font-size="16">{escape(title)}</text>']
    if subtitle:
        out.append(f'<text x="{left}" y="40" fill="#555">{escape(subtitle)}</text>')
    if not clean:
        out.append(f'<text x="{left + pw / 2}" y="{top + ph / 2}" text-anchor="middle">no data</text></svg>')
        return "\n".join(out) + "\n"
    xs = sorted({x for s in clean for x, _ in s["points"]})
    ys = [y for s in clean for _, y in s["points"]]
    lx0, lx1 = math.log(xs[0]), math.log(xs[-1])
    if lx1 == lx0:
        lx0, lx1 = lx0 - 1, lx1 + 1

    def px(x):
        return left + (math.log(x) - lx0) / (lx1 - lx0) * pw

    if log_y:
        y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
        if y1 == y0:
            y1 += 1

        def py(y):
            return top + ph - (math.log10(y) - y0) / (y1 - y0) * ph

        grid = []
        for d in range(y0, y1 + 1):
            for m in (1, 2, 5):
                v = m * 10 ** d
                if 10 ** y0 <= v <= 10 ** y1:
                    grid.append((v, m == 1))
    else:
        y0, y1 = 0.0, max(ys) * 1.1

        def py(y):
            return top + ph - (y - y0) / (y1 - y0) * ph

        grid = [(v, True) for v in nice_ticks(y0, y1)]
    for v, major in grid:
        y = py(v)
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="{"#ccc" if major else "#eee"}"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="{"#000" if major else "#888"}">{escape(fmt_tick(v))}</text>')
    for x in xs:
        X = px(x)
        out.append(f'<line x1="{X:.1f}" x2="{X:.1f}" y1="{top}" y2="{top + ph}" stroke="#eee"/>')
        out.append(f'<text x="{X:.1f}" y="{top + ph + 16}" text-anchor="middle">{escape(fmt_tick(x))}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#000"/>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 14}" text-anchor="middle">{escape(xlabel)}</text>')
    out.append(f'<text x="18" y="{top + ph / 2}" text-anchor="middle" transform="rotate(-90 18 {top + ph / 2})">{escape(ylabel)}</text>')
    for i, s in enumerate(clean):
        dash = ' stroke-dasharray="6 4"' if s.get("dashed") else ""
        coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s["points"])
        if s.get("line", True):
            out.append(f'<polyline points="{coords}" fill="none" stroke="{s["color"]}" stroke-width="2"{dash}/>')
        for x, y in s["points"]:
            shape = (f'<rect x="{px(x) - 3.5:.1f}" y="{py(y) - 3.5:.1f}" width="7" height="7" fill="white" stroke="{s["color"]}"/>'
                     if s.get("dashed") else
                     f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{s["color"]}"/>')
            out.append(shape)
        ly = top + 10 + i * 20
        lx = left + pw + 16
        out.append(f'<line x1="{lx}" x2="{lx + 28}" y1="{ly}" y2="{ly}" stroke="{s["color"]}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{lx + 34}" y="{ly + 4}">{escape(s["name"])}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def series_from(rows, key_x, getter):
    return [(r[key_x], getter(r)) for r in rows]


def svg_threads(per_block, mega, mega_batch, focus_label):
    s = [{"name": "published: parallel-I/O, per block", "color": COLORS[PARALLEL_IO], "dashed": True,
          "points": list(PUBLISHED["per_block"]["mgas_per_s"].items())},
         {"name": f"published: mega block {PUBLISHED['mega_block']['batch']}", "color": "#9467bd", "dashed": True,
          "points": list(PUBLISHED["mega_block"]["mgas_per_s"].items())}]
    for m in (PARALLEL_IO, BATCHED, SEQUENTIAL, PARALLEL):
        s.append({"name": f"ours: {label(m)}, per block", "color": COLORS[m],
                  "points": series_from(per_block, "threads", lambda r, m=m: r["ours"].get(m, {}).get("mgas_per_s"))})
    for m, color in ((PARALLEL_IO, "#9467bd"), (BATCHED, "#ff7f0e")):
        s.append({"name": f"ours: {label(m)}, mega block {mega_batch}", "color": color,
                  "points": series_from(mega, "threads", lambda r, m=m: r["ours"].get(m, {}).get("mgas_per_s"))})
    return line_chart("Mgas/s vs threads (log scale): ours beside the published study", "threads", "Mgas/s (log)", s,
                      subtitle=focus_label)


def svg_speedup(per_block, mega, mega_batch):
    def speed(rows, m):
        return series_from(rows, "threads", lambda r: r["ours"].get(m, {}).get("speedup_vs_1_thread"))

    pb = PUBLISHED["per_block"]["mgas_per_s"]
    mb = PUBLISHED["mega_block"]["mgas_per_s"]
    s = [{"name": "published: parallel-I/O, per block", "color": COLORS[PARALLEL_IO], "dashed": True,
          "points": [(t, v / pb[1]) for t, v in pb.items()]},
         {"name": "published: mega block", "color": "#9467bd", "dashed": True,
          "points": [(t, v / mb[1]) for t, v in mb.items()]},
         {"name": "ours: parallel-I/O, per block", "color": COLORS[PARALLEL_IO], "points": speed(per_block, PARALLEL_IO)},
         {"name": "ours: batched-I/O, per block", "color": COLORS[BATCHED], "points": speed(per_block, BATCHED)},
         {"name": f"ours: parallel-I/O, mega block {mega_batch}", "color": "#9467bd", "points": speed(mega, PARALLEL_IO)},
         {"name": f"ours: batched-I/O, mega block {mega_batch}", "color": "#ff7f0e", "points": speed(mega, BATCHED)}]
    return line_chart("Speedup over the same design on 1 thread (linear): shapes compare across machines",
                      "threads", "speedup vs 1 thread", s, log_y=False)


def svg_batches(batches, threads):
    pub = PUBLISHED["batch_sizes"]
    # Two published endpoints each: markers only, no line implying the points between.
    s = [{"name": "published: batched-I/O @16", "color": COLORS[BATCHED], "dashed": True, "line": False,
          "points": list(pub["batched_io"].items())},
         {"name": "published: parallel-I/O @16", "color": COLORS[PARALLEL_IO], "dashed": True, "line": False,
          "points": list(pub["parallel_io"].items())}]
    for m in (BATCHED, PARALLEL_IO, PARALLEL, SEQUENTIAL):
        s.append({"name": f"ours: {label(m)} @{threads}", "color": COLORS[m],
                  "points": series_from(batches, "batch", lambda r, m=m: r["ours"].get(m, {}).get("mgas_per_s"))})
    return line_chart("Batch size (blocks per execution unit) vs Mgas/s (log scale)", "batch size (blocks)",
                      "Mgas/s (log)", s, subtitle="published: only the batch-1 and batch-100 endpoints")


# ---------------------------------------------------------------------------- render


def distinct(values):
    out = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def io_text(io):
    if not io:
        return "not reported"
    parts = [f"cold={str(io.get('cold')).lower()}"]
    if "cache_drop" in io:
        parts.append(f"cache drop: {io['cache_drop']}")
    if "read_latency_us" in io:
        parts.append(f"emulated read latency {io['read_latency_us']} µs")
    if "io_threads" in io:
        parts.append(f"{io['io_threads']} I/O threads")
    return ", ".join(parts)


def disk_text(machine):
    disks = machine.get("disks") or []
    if not disks:
        return "unknown"
    parts = []
    for d in disks:
        kind = "" if "rotational" not in d else (" (rotational)" if d["rotational"] else " (non-rotational)")
        model = f" {d['model']}" if d.get("model") else ""
        size = f" {d['size']}" if d.get("size") else ""
        parts.append(f"`{d['path']}`: {d['device']} {d['fstype']}{size}{model}{kind}")
    return "; ".join(parts)


def fixture_text(points, label_):
    if not points:
        return f"{label_}: no runs"
    p = points[0]
    meta = fixture_meta({"path": p["fixture"], "blocks": p.get("fixture_blocks"), "gas": p.get("fixture_gas")})
    bits = [f"`{p['fixture']}`", f"{p.get('fixture_blocks')} blocks", f"{(p.get('fixture_gas') or 0) / 1e6:,.1f} Mgas"]
    for k, name in (("accounts", "state accounts"), ("slots", "state slots"), ("gas_limit", "gas limit"), ("seed", "seed")):
        if meta.get(k):
            v = meta[k]
            bits.append(f"{name} {v:,}" if isinstance(v, int) else f"{name} {v}")
    return f"{label_} ({meta.get('workload')}): " + ", ".join(bits)


def commands_for(manifest, table):
    return [e for e in manifest if e.get("table") == table]


def commands_md(manifest, table, runs_note):
    entries = commands_for(manifest, table)
    if not entries:
        return f"Command: not recorded (rendered from {runs_note})."
    lines = ["Produced by:", "", "```"]
    for e in entries:
        when = "cached" if e.get("cached") else f"{e.get('seconds', 0):.1f} s"
        lines.append(f"# {e['name']} ({when})")
        lines.append(e["command"])
    lines += ["```"]
    return "\n".join(lines)


def render(runs, out_dir, manifest=None, machine=None, mega_batch=50, focus_threads=16, params=None):
    """Builds io-study.md, io-study.json and the SVGs in out_dir; returns the JSON document.
    Raises StudyError when the state roots disagree (nothing is written then)."""
    manifest = manifest or []
    points = points_of(runs)
    errors = check_roots(points)
    if errors:
        raise StudyError("state roots differ:\n  " + "\n  ".join(errors))
    machine = machine or machine_info()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # The transaction count of each fixture, for the worst-case rows.
    for name, run in runs:
        for p in points:
            if p["run"] == str(name):
                p.setdefault("transactions_total", run["fixture"].get("transactions"))

    mix = [p for p in points if p["workload"] != "sload-random"]
    mix_fixture = one_fixture(mix, "mix")
    worst = [p for p in points if p["workload"] == "sload-random"]

    per_block, pb_modes, pb_rates_md, pb_scale_md = thread_table(
        mix, 1, PUBLISHED["per_block"]["mgas_per_s"], 16, "~75%")
    mega, mega_modes, mega_rates_md, mega_scale_md = thread_table(
        mix, mega_batch, PUBLISHED["mega_block"]["mgas_per_s"], 16, "<15%")
    mega_unit = mgas_per_unit(select(mix, batch=mega_batch))
    batches, batch_modes, batches_md = batch_table(mix, focus_threads)
    worst_rows, worst_md = worst_table(worst, focus_threads)

    def at(rows, key, k, m, field="mgas_per_s"):
        for r in rows:
            if r[key] == k:
                return r["ours"].get(m, {}).get(field)
        return None

    ours_batches = sorted({int(p["batch"]) for p in mix if int(p["threads"]) == focus_threads})
    big = max(ours_batches) if ours_batches else None
    pb, mb = PUBLISHED["per_block"]["mgas_per_s"], PUBLISHED["mega_block"]["mgas_per_s"]
    bs = PUBLISHED["batch_sizes"]
    wr = PUBLISHED["worst_case"]["rows"]

    def worst_ratio(limit):
        for r in worst_rows:
            if r["published_gas_per_block"] == limit:
                return r["ours_batched_over_parallel"]
        return None

    F = focus_threads
    ratios = [
        ("parallel-I/O per block: 16 threads / 1 thread", f"{F} / 1", pb[16] / pb[1],
         ratio(at(per_block, "threads", F, PARALLEL_IO), at(per_block, "threads", 1, PARALLEL_IO))),
        ("parallel-I/O per block, 16 threads / sequential on 1 thread", f"{F} / 1",
         None, at(per_block, "threads", F, PARALLEL_IO, "vs_sequential_1_thread")),
        (f"mega block {PUBLISHED['mega_block']['batch']}: 16 threads / 1 thread (parallel-I/O)",
         f"batch {mega_batch}, {F} / 1", mb[16] / mb[1],
         ratio(at(mega, "threads", F, PARALLEL_IO), at(mega, "threads", 1, PARALLEL_IO))),
        ("mega block / per block at 16 threads (parallel-I/O)", f"batch {mega_batch} / 1 at {F}", mb[16] / pb[16],
         ratio(at(mega, "threads", F, PARALLEL_IO), at(per_block, "threads", F, PARALLEL_IO))),
        ("batched-I/O / parallel-I/O, batch 1, 16 threads", f"batch 1, {F} threads",
         bs["batched_io"][1] / bs["parallel_io"][1],
         ratio(at(batches, "batch", 1, BATCHED), at(batches, "batch", 1, PARALLEL_IO))),
        ("batched-I/O / parallel-I/O, batch 100, 16 threads", f"batch {big}, {F} threads",
         bs["batched_io"][100] / bs["parallel_io"][100],
         ratio(at(batches, "batch", big, BATCHED), at(batches, "batch", big, PARALLEL_IO))),
        ("parallel-I/O batch 100 / batch 1, 16 threads", f"batch {big} / 1, {F} threads",
         bs["parallel_io"][100] / bs["parallel_io"][1],
         ratio(at(batches, "batch", big, PARALLEL_IO), at(batches, "batch", 1, PARALLEL_IO))),
        ("worst case 64 Mgas/block: batched-I/O / parallel-I/O", f"{F} threads",
         wr[64_000_000]["ratio"], worst_ratio(64_000_000)),
        ("worst case 640 Mgas/block: batched-I/O / parallel-I/O", f"{F} threads",
         wr[640_000_000]["ratio"], worst_ratio(640_000_000)),
        ("reth: with prewarming / single-threaded (not a BAL design)", "batched-I/O@1 / sequential@1",
         PUBLISHED["baseline"]["reth_with_prewarming_mgas_per_s"] / PUBLISHED["baseline"]["reth_single_thread_mdbx_mgas_per_s"],
         at(per_block, "threads", 1, BATCHED, "vs_sequential_1_thread")),
    ]

    ios = distinct([p["io"] for p in points])
    dbs = distinct([p.get("db") for p in points])
    bench_cores = distinct([r.get("machine", {}).get("cores") for _, r in runs if r.get("machine")])
    cores_text = f"{machine.get('cores')} (nproc)"
    if bench_cores and bench_cores != [machine.get("cores")]:
        cores_text += f"; the bench saw {', '.join(str(c) for c in bench_cores)}"
    runs_note = ", ".join(os.path.basename(str(n)) for n, _ in runs)
    seq1 = at(per_block, "threads", 1, SEQUENTIAL)
    pub_setup = PUBLISHED["setup"]
    fixtures_md = [fixture_text(mix, "thread and batch sweeps")]
    for k in sorted({worst_key(p) for p in worst}):
        fixtures_md.append(fixture_text([p for p in worst if worst_key(p) == k], f"worst case {k / 1e6:,.0f} Mgas/block"))

    md = []
    w = md.append
    w("# Block-level access lists and parallel I/O: the study's tables on this machine\n")
    w(f"Generated by `bench/io-study.sh` on {machine.get('date', '')}"
      + (f" at commit {machine['commit']}" if machine.get("commit") else "") + f", from {len(runs)} bench run(s) "
      f"({len(points)} sweep points). Columns marked **published** are constants from the reference study "
      "(`PUBLISHED` in `bench/io_study.py`); every **ours** number is read from the runs' JSON "
      "(all points are in `io-study.json`). Where a point was measured in more than one step the table shows the "
      "median. \u201c—\u201d: not published, or not measured in this run.\n")
    w("## The two machines\n")
    w(md_table(["", "published", "ours"], numeric=False, rows=[
        ["CPU", pub_setup["machine"], f"{machine.get('cpu_model')}, {cores_text} cores"],
        ["RAM", DASH, f"{machine.get('ram_gib')} GiB" if machine.get("ram_gib") else "unknown"],
        ["disk", pub_setup["disk"], disk_text(machine)],
        ["database", pub_setup["database"], ", ".join(str(d) for d in dbs)],
        ["cold reads", pub_setup["cold"], "; ".join(io_text(io) for io in ios)],
        ["blocks", pub_setup["blocks"], "generated by `ethrex fixture stress` (below)"],
        ["kernel", DASH, machine.get("kernel", "")],
    ]))
    w("")
    w("Fixtures:\n")
    for f in fixtures_md:
        w(f"- {f}")
    w("")
    w(f"**The absolute numbers do not compare.** The study ran mainnet blocks on 16 cores (32 hardware threads) "
      f"with real NVMe RAID-0 reads after dropping the page cache; this run has {machine.get('cores')} core(s), "
      "generated blocks, and cold reads whose cost is mostly the emulated per-read latency above, served by a "
      "fixed pool of I/O threads. Past the core count, extra threads here can only overlap I/O waits, not "
      "execution. Compare the shapes: the ratios below, the speedup plot (`io-study-speedup.svg`), and where "
      "each curve flattens.\n")

    w("## Ratios (the comparable part)\n")
    w(md_table(["ratio", "published", "ours (what was measured)", "ours"],
               [[name, f_x(p) if p is not None else DASH, what, f_x(o)] for name, what, p, o in ratios]))
    w("")

    w("## 1. Baseline: single-threaded import\n")
    base = PUBLISHED["baseline"]
    w(md_table(["", "published", "ours"], numeric=False, rows=[
        ["I/O share of block processing without prewarming", f"~{base['io_share_without_prewarming'] * 100:.0f}%",
         "not measured (the bench reports totals per sweep point, not an I/O split)"],
        ["single-threaded Mgas/s", f"~{base['reth_single_thread_mdbx_mgas_per_s']} (reth, MDBX)",
         f"{f_ours(seq1)} (ethrex sequential, 1 thread, cold)"],
        ["with prewarming / BAL prefetch, 1 thread, Mgas/s", f"~{base['reth_with_prewarming_mgas_per_s']} (reth, prewarming)",
         f"{f_ours(at(per_block, 'threads', 1, BATCHED))} (batched-I/O BAL, 1 thread)"],
    ]))
    w("\nOurs: from the thread sweep of section 2.\n")

    w("## 2. One block at a time: Mgas/s by thread count (batch 1)\n")
    w(pb_rates_md + "\n")
    w(f"Scaling and the longest transaction (published: the longest transactions took "
      f"{PUBLISHED['per_block']['longest_tx_s'][0]}-{PUBLISHED['per_block']['longest_tx_s'][1]} s of "
      f"{PUBLISHED['per_block']['total_s'][0]}-{PUBLISHED['per_block']['total_s'][1]} s, ~75% of the time at 16 "
      "threads). Longest-tx share = `longest_tx_ms / total_ms`; Amdahl bound = `amdahl_mgas_per_s` "
      "(gas / time of the longest transactions).\n")
    w(pb_scale_md + "\n")
    w(commands_md(manifest, "threads", runs_note) + "\n")

    w(f"## 3. Mega blocks: {mega_batch} consecutive blocks as one unit (published: "
      f"{PUBLISHED['mega_block']['batch']} blocks, ~{PUBLISHED['mega_block']['mgas_per_unit']:,} Mgas per unit)\n")
    w(f"Ours: {f_ours(mega_unit)} Mgas per unit.\n")
    w(mega_rates_md + "\n")
    w(mega_scale_md + "\n")
    w(commands_md(manifest, "mega", runs_note) + "\n")

    w(f"## 4. Batched-I/O vs parallel-I/O by batch size ({F} threads; published: 16)\n")
    w("Published: only the batch-1 and batch-100 endpoints (22 to 2,243 Mgas per unit); batched-I/O's lead "
      "shrinks from ~20% to ~0.\n")
    w(batches_md + "\n")
    w(commands_md(manifest, "batches", runs_note) + "\n")

    wc = PUBLISHED["worst_case"]
    w(f"## 5. Worst case: transactions that only SLOAD random keys ({F} threads; published: 16)\n")
    w(f"Published: {wc['tx_gas'] / 1e6:.0f}M gas per transaction / {wc['gas_per_read']:,} gas per read = "
      f"~{wc['reads_per_tx']:,} reads per transaction; batched-I/O ~8x parallel-I/O at 64 Mgas per block "
      "(6,400 vs 780 Mgas/s), ~1.6x at 640 Mgas.\n")
    w(worst_md + "\n")
    w(commands_md(manifest, "worst", runs_note) + "\n")

    steps = [e for e in manifest]
    if steps:
        w("## Steps and their times\n")
        w(md_table(["step", "table", "seconds", "log"],
                   [[e["name"], e.get("table", ""), "cached" if e.get("cached") else f"{e.get('seconds', 0):,.1f}",
                     f"`{e['log']}`" if e.get("log") else DASH] for e in steps], numeric=False))
        total = sum(e.get("seconds", 0) for e in steps)
        w(f"\nTotal: {total:,.1f} s.\n")
        if params:
            w("Parameters: " + ", ".join(f"`{k}={v}`" for k, v in params.items()) + "\n")

    fixtures = len({os.path.normpath(p["fixture"]) for p in points})
    w("## State roots\n")
    w(f"All {len(points)} sweep points on {fixtures} fixture(s) ended in the state root of the sequential import "
      "of the same fixture (checked by `bench/io_study.py check`).\n")
    w("## Plots\n")
    w("- `io-study-threads.svg`: Mgas/s vs threads, log scale, ours (solid) beside published (dashed)")
    w("- `io-study-speedup.svg`: speedup over 1 thread, per design")
    w("- `io-study-batches.svg`: batch size vs Mgas/s, log scale")

    doc = {
        "generated": machine.get("date"),
        "machine": machine,
        "published": jsonable(PUBLISHED),
        "io": ios,
        "mix_fixture": mix_fixture,
        "parameters": params or {},
        "steps": manifest,
        "runs": [str(n) for n, _ in runs],
        "points": points,
        "tables": {
            "per_block": per_block,
            "mega_block": {"batch": mega_batch, "mgas_per_unit": mega_unit, "rows": mega},
            "batch_sizes": {"threads": F, "rows": batches},
            "worst_case": {"threads": F, "rows": worst_rows},
            "ratios": [{"ratio": n, "ours_measured": what, "published": p, "ours": o} for n, what, p, o in ratios],
        },
    }
    focus_note = f"ours: {machine.get('cores')} cores, {'; '.join(io_text(io) for io in ios)}"
    files = {
        "io-study.md": "\n".join(md) + "\n",
        "io-study.json": json.dumps(jsonable(doc), indent=2) + "\n",
        "io-study-threads.svg": svg_threads(per_block, mega, mega_batch, focus_note),
        "io-study-speedup.svg": svg_speedup(per_block, mega, mega_batch),
        "io-study-batches.svg": svg_batches(batches, F),
    }
    for name, text in files.items():
        tmp = out_dir / (name + ".tmp")
        tmp.write_text(text)
        tmp.replace(out_dir / name)
    return doc


def jsonable(v):
    """JSON-safe copy: int dict keys become strings."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def cmd_render(a):
    runs = [(path, load_run(path)) for path in a.runs]
    if not runs:
        raise StudyError("no runs given")
    manifest = read_manifest(a.manifest)
    machine = json.loads(Path(a.machine).read_text()) if a.machine and Path(a.machine).is_file() else None
    params = {}
    if a.params_file and Path(a.params_file).is_file():
        for line in Path(a.params_file).read_text().splitlines():
            if "=" in line and not line.lstrip().startswith("#"):
                k, v = line.split("=", 1)
                params[k.strip()] = v.strip()
    params.update(kv.split("=", 1) for kv in a.param)
    mega = a.mega_batch or int(params.get("mega_batch") or PUBLISHED["mega_block"]["batch"])
    focus = a.focus_threads or int(params.get("focus_threads") or PUBLISHED["batch_sizes"]["threads"])
    render(runs, a.out, manifest, machine, mega, focus, params or None)
    print(f"io-study: {Path(a.out) / 'io-study.md'}, io-study.json, io-study-threads.svg, "
          "io-study-speedup.svg, io-study-batches.svg")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("step", help="run and time one command, append it to the manifest")
    s.add_argument("--manifest", required=True)
    s.add_argument("--name", required=True)
    s.add_argument("--table", default="")
    s.add_argument("--json", default="")
    s.add_argument("--log", default="")
    s.add_argument("--cached", action="store_true", help="record the step as cached without running it")
    s.add_argument("--note", default="")
    s.add_argument("--quiet", action="store_true", help="only log the command's output")
    s.add_argument("command", nargs=argparse.REMAINDER)
    m = sub.add_parser("machine", help="describe this machine as JSON")
    m.add_argument("--out")
    m.add_argument("--ethrex")
    m.add_argument("--repo")
    m.add_argument("--path", action="append", default=[], help="a directory whose disk to describe (repeatable)")
    c = sub.add_parser("check", help="fail if the state roots on one fixture differ")
    c.add_argument("runs", nargs="+")
    r = sub.add_parser("render", help="build the Markdown, JSON and SVG report")
    r.add_argument("--out", required=True)
    r.add_argument("--manifest")
    r.add_argument("--machine")
    r.add_argument("--mega-batch", type=int, help="batch size of the mega-block table (default: the params "
                   "file's mega_batch, else 50)")
    r.add_argument("--focus-threads", type=int, help="thread count of the batch-size and worst-case tables "
                   "(default: the params file's focus_threads, else the study's 16)")
    r.add_argument("--params-file", help="KEY=VALUE lines (written by io-study.sh) shown in the report")
    r.add_argument("--param", action="append", default=[], help="KEY=VALUE shown in the report (repeatable)")
    r.add_argument("runs", nargs="+")
    a = ap.parse_args(argv)
    if a.cmd == "step":
        if a.command and a.command[0] == "--":
            a.command = a.command[1:]
        if not a.command:
            ap.error("step: no command after --")
    try:
        return {"step": cmd_step, "machine": cmd_machine, "check": cmd_check, "render": cmd_render}[a.cmd](a)
    except StudyError as e:
        print(f"io-study: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
