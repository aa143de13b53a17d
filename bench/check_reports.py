#!/usr/bin/env python3
"""Checks of the JSON reports the seconds-long studies in scripts/test.sh write; each
assertion fails the run. One subcommand per report:

    python3 bench/check_reports.py import-bench BENCH_JSON
    python3 bench/check_reports.py bal-designs SIZES_JSON DESIGNS_JSON EF_SIZES_JSON
    python3 bench/check_reports.py db-bench DB_BENCH_JSON
    python3 bench/check_reports.py trie-bench TRIE_BENCH_JSON

Tests: python3 bench/test_check_reports.py (stdlib unittest)."""
import json
import sys

DESIGNS = {"type1", "type2", "type3", "type4", "type5", "type6", "full", "parallel-io"}


def load(path):
    with open(path) as fh:
        return json.load(fh)


def import_bench(bench):
    """The I/O-realistic bench on a small filled state: cold, --batch 1,4, every point at
    one state root."""
    report = load(bench)
    assert report["io"]["cold"] and report["io"]["read_latency_us"] == 20, report["io"]
    assert set(report["modes"]) == {"sequential", "sequential-pooled", "parallel", "ceiling",
                                   "design:type2", "design:parallel-io"}, report["modes"].keys()
    assert all(m["wall_ms"] > 0 for m in report["modes"].values())
    assert len({m["final_state_root"] for m in report["modes"].values()}) == 1, "modes disagree"
    sweep = report["sweep"]
    assert len(sweep) == 4 * 2 * 2, len(sweep)
    roots = {p["final_state_root"] for p in sweep}
    assert len(roots) == 1, roots
    assert all(p["blocks"] == report["fixture"]["blocks"] for p in sweep)
    assert all(p["backend_reads"] > 0 for p in sweep), "a cold run read nothing from the database"
    batched = [p for p in sweep if p["batch"] == 4 and p["mode"] != "sequential"]
    assert batched and all(p["parallel_blocks"] == p["blocks"] for p in batched), batched
    return f"{len(sweep)} sweep points, one final state root {roots.pop()}"


def bal_designs(sizes_path, designs_path, ef_sizes_path):
    """bal-lab sizes on the stress chain and the EF fixtures, and every design's consumer
    importing the stress chain to one state root."""
    sizes = load(sizes_path)["designs"]
    assert set(sizes) == DESIGNS, sizes.keys()
    assert all(s["blocks"] == 3 and s["mean_bytes"] > 0 for s in sizes.values()), sizes
    ef = load(ef_sizes_path)["designs"]
    assert set(ef) == DESIGNS and all(s["blocks"] > 0 for s in ef.values()), ef
    modes = load(designs_path)["modes"]
    assert set(modes) == {"sequential"} | {"design:" + n for n in DESIGNS}, modes.keys()
    roots = {m["final_state_root"] for m in modes.values()}
    assert len(roots) == 1, roots
    return f"{len(sizes)} designs sized; {len(modes) - 1} design consumers at state root {roots.pop()}"


def db_bench(path):
    """db-bench on both backends, 50,000 entries, 1 and 4 threads, cold."""
    report = load(path)
    assert set(report["load"]) == {"mdbx", "rocksdb"}, report["load"].keys()
    assert all(l["entries"] == 50000 and l["bytes_on_disk"] > 0 for l in report["load"].values())
    points = report["points"]
    assert sorted((p["db"], p["threads"]) for p in points) == [("mdbx", 1), ("mdbx", 4), ("rocksdb", 1), ("rocksdb", 4)]
    assert all(p["cold"] and p["iops"] > 0 and 0 < p["p50_us"] <= p["p99_us"] for p in points), points
    return f"db-bench: {len(points)} points, {sum(p['reads'] for p in points)} reads checked"


def trie_bench(path):
    """trie-bench: 5 workloads on the MPT and the binary trie at group depths 1-8, 3 runs."""
    rows = load(path)["rows"]
    assert len(rows) == 5 * 9, len(rows)
    assert {(r["scheme"], r["group_depth"]) for r in rows} == {("mpt", None)} | {("binary", g) for g in range(1, 9)}
    assert all(r["runs"] == 3 and r["median_ms"]["total"] > 0 and r["mgas_per_s"] > 0 for r in rows)
    return f"trie-bench: {len(rows)} rows"


CHECKS = {
    "import-bench": (import_bench, 1),
    "bal-designs": (bal_designs, 3),
    "db-bench": (db_bench, 1),
    "trie-bench": (trie_bench, 1),
}


def main(argv):
    if len(argv) < 1 or argv[0] not in CHECKS or len(argv) - 1 != CHECKS[argv[0]][1]:
        usage = ", ".join(f"{name} ({n} JSON file{'s' if n > 1 else ''})" for name, (_, n) in CHECKS.items())
        sys.exit(f"usage: check_reports.py CHECK JSON...; checks: {usage}")
    check, _ = CHECKS[argv[0]]
    print(check(*argv[1:]))


if __name__ == "__main__":
    main(sys.argv[1:])
