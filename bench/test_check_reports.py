#!/usr/bin/env python3
"""Tests of bench/check_reports.py: python3 bench/test_check_reports.py (stdlib unittest).
Each check accepts a report shaped like the one scripts/test.sh produces and rejects it
with one thing wrong."""
import copy
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import check_reports  # noqa: E402

ROOT = "0x" + "ab" * 32
MODES = ["sequential", "sequential-pooled", "parallel", "ceiling", "design:type2", "design:parallel-io"]


def import_bench_report():
    sweep = [
        {"mode": mode, "threads": threads, "batch": batch, "design": design, "final_state_root": ROOT,
         "blocks": 8, "backend_reads": 10, "parallel_blocks": 8}
        for mode in ("sequential", "parallel") for threads in (1, 4) for batch in (1, 4)
        for design in ("batched-io", "parallel-io")
    ]
    return {
        "io": {"cold": True, "read_latency_us": 20},
        "fixture": {"blocks": 8},
        "modes": {m: {"wall_ms": 1.5, "final_state_root": ROOT} for m in MODES},
        "sweep": sweep[:16],
    }


def sizes_report(blocks):
    return {"designs": {n: {"blocks": blocks, "mean_bytes": 100} for n in check_reports.DESIGNS}}


def designs_report():
    names = ["sequential"] + ["design:" + n for n in check_reports.DESIGNS]
    return {"modes": {n: {"final_state_root": ROOT} for n in names}}


def db_bench_report():
    return {
        "load": {db: {"entries": 50000, "bytes_on_disk": 4096} for db in ("mdbx", "rocksdb")},
        "points": [{"db": db, "threads": t, "cold": True, "iops": 1000.0, "p50_us": 10.0, "p99_us": 50.0,
                    "reads": 300} for db in ("mdbx", "rocksdb") for t in (1, 4)],
    }


def trie_bench_report():
    schemes = [("mpt", None)] + [("binary", g) for g in range(1, 9)]
    return {"rows": [{"scheme": s, "group_depth": g, "workload": w, "runs": 3, "median_ms": {"total": 2.0},
                      "mgas_per_s": 50.0} for s, g in schemes for w in range(5)]}


class Checks(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, report):
        path = Path(self.tmp.name) / name
        path.write_text(json.dumps(report))
        return str(path)

    def assert_rejects(self, check, *paths):
        with self.assertRaises(AssertionError):
            check(*paths)

    def test_import_bench(self):
        good = import_bench_report()
        self.assertIn("16 sweep points", check_reports.import_bench(self.write("ok.json", good)))
        bad = copy.deepcopy(good)
        bad["sweep"][3]["final_state_root"] = "0x" + "cd" * 32
        self.assert_rejects(check_reports.import_bench, self.write("roots.json", bad))
        bad = copy.deepcopy(good)
        bad["io"]["cold"] = False
        self.assert_rejects(check_reports.import_bench, self.write("warm.json", bad))
        bad = copy.deepcopy(good)
        bad["sweep"][-1]["parallel_blocks"] = 7
        self.assert_rejects(check_reports.import_bench, self.write("fallback.json", bad))

    def test_bal_designs(self):
        sizes, designs, ef = (self.write("sizes.json", sizes_report(3)), self.write("designs.json", designs_report()),
                              self.write("ef.json", sizes_report(40)))
        self.assertIn("8 designs sized; 8 design consumers", check_reports.bal_designs(sizes, designs, ef))
        # The stress chain has 3 blocks: the EF sizes (40 blocks) in its place are rejected.
        self.assert_rejects(check_reports.bal_designs, ef, designs, ef)
        bad = designs_report()
        bad["modes"]["design:type5"]["final_state_root"] = "0x00"
        self.assert_rejects(check_reports.bal_designs, sizes, self.write("bad.json", bad), ef)

    def test_db_bench(self):
        good = db_bench_report()
        self.assertIn("4 points, 1200 reads", check_reports.db_bench(self.write("ok.json", good)))
        bad = copy.deepcopy(good)
        bad["points"][2]["p50_us"] = 60.0
        self.assert_rejects(check_reports.db_bench, self.write("p50.json", bad))
        bad = copy.deepcopy(good)
        del bad["points"][1]
        self.assert_rejects(check_reports.db_bench, self.write("missing.json", bad))

    def test_trie_bench(self):
        good = trie_bench_report()
        self.assertEqual(check_reports.trie_bench(self.write("ok.json", good)), "trie-bench: 45 rows")
        bad = copy.deepcopy(good)
        bad["rows"][7]["runs"] = 2
        self.assert_rejects(check_reports.trie_bench, self.write("runs.json", bad))

    def test_command_line(self):
        script = str(HERE / "check_reports.py")
        ok = subprocess.run([sys.executable, script, "trie-bench", self.write("ok.json", trie_bench_report())],
                            capture_output=True, text=True)
        self.assertEqual((ok.returncode, ok.stdout), (0, "trie-bench: 45 rows\n"), ok.stderr)
        bad = trie_bench_report()
        bad["rows"].pop()
        failed = subprocess.run([sys.executable, script, "trie-bench", self.write("bad.json", bad)],
                                capture_output=True, text=True)
        self.assertNotEqual(failed.returncode, 0)
        self.assertIn("AssertionError", failed.stderr)
        usage = subprocess.run([sys.executable, script, "db-bench"], capture_output=True, text=True)
        self.assertNotEqual(usage.returncode, 0)
        self.assertIn("usage", usage.stderr)


if __name__ == "__main__":
    unittest.main()
