#!/usr/bin/env python3
"""Renders bench/db-study.sh's runs (OUT/runs/*.json, *.log) into OUT/db-study.md and
OUT/db-study.json, with the storage study's published figures beside ours.

Usage: bench/db_study.py OUT [--repo DIR] [--seconds N]
Exits 1 when a run is missing or the execution runs do not all end in one state root."""

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

# Parallel-I/O execution, mega blocks of ~1,121 Mgas, 16-core 5950X, NVMe RAID-0 (Mgas/s).
PUBLISHED_EXEC = {8: {"mdbx": 2369, "rocksdb": 6524}, 16: {"mdbx": 3705, "rocksdb": 10842}}


class StudyError(Exception):
    pass


def load(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise StudyError(f"{path}: {e}") from e


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out) + "\n"


def f1(x):
    return "—" if x is None else f"{x:.1f}"


def ratio(a, b):
    return None if a is None or not b else a / b


def fx(x):
    return "—" if x is None else f"{x:.2f}x"


def exec_section(runs_dir):
    """Per backend Mgas/s of every sweep point, MDBX / RocksDB beside the published ratio."""
    points = []
    for path in sorted(runs_dir.glob("exec-*.json")):
        run = load(path)
        db = run["fixture"]["db"]
        if run.get("io", {}).get("index") == "cold":
            db += "-coldindex"
        latency = run.get("io", {}).get("read_latency_us", 0)
        for p in run.get("sweep", []):
            points.append(dict(p, db=db, latency=latency, run=path.name))
    if not points:
        raise StudyError(f"no exec-*.json runs in {runs_dir}")
    roots = {p["final_state_root"] for p in points}
    if len(roots) != 1:
        bad = [(p["run"], p["mode"], p["threads"], p["batch"], p["final_state_root"]) for p in points]
        raise StudyError("execution runs end in different state roots: " + repr(bad))
    keys = sorted({(p["latency"], int(p["batch"]), p["mode"], int(p["threads"])) for p in points},
                  key=lambda k: (k[0], k[1], k[2] != "sequential", k[2], k[3]))
    rows, summary = [], []
    for latency, batch, mode, threads in keys:
        by_db = {p["db"]: p["mgas_per_s"] for p in points
                 if (p["latency"], int(p["batch"]), p["mode"], int(p["threads"])) == (latency, batch, mode, threads)}
        r, m, mc = by_db.get("rocksdb"), by_db.get("mdbx"), by_db.get("mdbx-coldindex")
        pub = PUBLISHED_EXEC.get(threads) if mode == "design:parallel-io" and batch > 1 else None
        rows.append([latency, batch, mode, threads, f1(r), f1(m), fx(ratio(m, r)), f1(mc), fx(ratio(mc, r)),
                     f"{pub['rocksdb']:,} / {pub['mdbx']:,} ({pub['mdbx'] / pub['rocksdb']:.2f}x)" if pub else "—"])
        summary.append({"read_latency_us": latency, "batch": batch, "mode": mode, "threads": threads,
                        "rocksdb_mgas_per_s": r, "mdbx_mgas_per_s": m, "mdbx_over_rocksdb": ratio(m, r),
                        "mdbx_index_cold_mgas_per_s": mc, "mdbx_index_cold_over_rocksdb": ratio(mc, r)})
    text = table(["latency µs", "batch", "mode", "threads", "RocksDB Mgas/s", "MDBX Mgas/s", "MDBX / RocksDB",
                  "MDBX, index cold, Mgas/s", "its ratio", "published RocksDB / MDBX Mgas/s"], rows)
    return text, summary, roots.pop()


def main_section(runs_dir):
    rows, summary = [], {}
    for db in ("rocksdb", "mdbx"):
        path = runs_dir / f"main-{db}.json"
        if not path.exists():
            raise StudyError(f"missing {path}")
        modes = load(path)["modes"]
        med = {name: m["median"] for name, m in modes.items()}
        seq, par = med.get("sequential"), med.get("parallel")
        if not seq or not par:
            raise StudyError(f"{path}: needs the sequential and parallel modes")
        r = par["ggas_per_s"] / seq["ggas_per_s"]
        ceiling = med.get("ceiling")
        rows.append([db, f"{seq['ggas_per_s']:.3f}", f"{par['ggas_per_s']:.3f}", f"{r:.2f}x",
                     fx(ratio(ceiling["ggas_per_s"], seq["ggas_per_s"])) if ceiling else "—",
                     f1(seq["persist_ms"]), f1(par["persist_ms"])])
        summary[db] = {"parallel_over_sequential": r, "persist_ms_sequential": seq["persist_ms"],
                       "persist_ms_parallel": par["persist_ms"]}
    text = table(["backend", "sequential Ggas/s", "parallel Ggas/s", "parallel / sequential",
                  "ceiling / sequential", "persist (bg) ms, sequential", "persist (bg) ms, parallel"], rows)
    return text, summary


def write_section(runs_dir):
    rows, summary = [], []
    for path in sorted(runs_dir.glob("write-*.json")):
        name = path.stem.removeprefix("write-")
        seq = load(path)["modes"]["sequential"]
        persist = [b["persist_ms"] for b in seq["blocks"] if "persist_ms" in b]
        p90 = statistics.quantiles(persist, n=10)[-1] if len(persist) >= 2 else None
        rows.append([name, f1(seq["median"]["persist_ms"]), f1(p90), f1(seq["median"]["total_ms"]),
                     f"{seq['wall_ms'] / 1e3:.1f}"])
        summary.append({"config": name, "persist_ms_median": seq["median"]["persist_ms"], "persist_ms_p90": p90,
                        "total_ms_median": seq["median"]["total_ms"], "wall_s": seq["wall_ms"] / 1e3})
    if not rows:
        raise StudyError(f"no write-*.json runs in {runs_dir}")
    text = table(["configuration", "persist (bg) ms median", "p90", "import ms / block (median)", "wall s"], rows)
    return text, summary


def db_bench_text(runs_dir, name="db-bench"):
    log = (runs_dir / f"{name}.log").read_text().splitlines()
    start = next((i for i, line in enumerate(log) if line.startswith("## db-bench")), None)
    if start is None:
        raise StudyError(f"{name}.log holds no report")
    # One level down: the study report's own headings are level 2.
    return "\n".join(("#" + line if line.startswith("#") else line) for line in log[start:]) + "\n"


def render(out, repo, seconds):
    runs_dir = out / "runs"
    raw = db_bench_text(runs_dir)
    if (runs_dir / "db-bench-coldindex.log").exists():
        raw += ("\nMDBX again, its index (branch pages) left cold after each drop, as MDBX alone would be "
                "(RocksDB's index and filters stay in its memory through a drop):\n\n"
                + db_bench_text(runs_dir, "db-bench-coldindex"))
    exec_text, exec_summary, root = exec_section(runs_dir)
    main_text, main_summary = main_section(runs_dir)
    write_text, write_summary = write_section(runs_dir)
    commit = None
    if repo:
        try:
            commit = subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            commit = None
    steps = []
    steps_file = runs_dir / "steps.tsv"
    if steps_file.exists():
        steps = [line.split("\t") for line in steps_file.read_text().splitlines() if line]
    md = [f"# MDBX vs RocksDB on this machine (commit `{commit or 'unknown'}`)\n",
          f"`bench/db-study.sh` ({seconds} s here; steps: " + ", ".join(f"{n} {s} s" for n, s in steps) + ").\n",
          "## 1. Raw random reads\n", raw,
          "## 2. Execution with parallel I/O, cold state, per backend\n",
          "Cold: caches emptied and the page cache dropped before every block or mega block (MDBX's mapped "
          "pages released too), then the index read back: MDBX's branch pages, the counterpart of the index and "
          "filter blocks RocksDB holds in its memory through a drop (data cold, index warm, as on a running "
          "node). `MDBX, index cold`: without that read-back (`--cold-index`), the protocol before it. "
          f"Every point ends in state root `{root}`. `design:parallel-io`: the BAL's "
          "post-transaction values as pre-state, reads issued by transactions running in parallel; "
          "`batch` > 1: mega blocks.\n", exec_text,
          "## 3. Main job per backend (warm state, 100 ms between blocks)\n", main_text,
          "## 4. MDBX's write cost (background write per block, `--mode sequential`)\n",
          "`wm1`/`wm0`: MDBX commits through its write map / by writing pages from memory; `p4096`/`p16384`: "
          "page size.\n", write_text]
    (out / "db-study.md").write_text("\n".join(md))
    (out / "db-study.json").write_text(json.dumps(
        {"commit": commit, "seconds": seconds, "execution": exec_summary, "main_job": main_summary,
         "write_cost": write_summary, "db_bench": load(runs_dir / "db-bench.json")}, indent=1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--repo")
    ap.add_argument("--seconds", type=int, default=0)
    a = ap.parse_args()
    try:
        render(a.out, a.repo, a.seconds)
    except StudyError as e:
        print(f"db_study: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
