#!/usr/bin/env python3
"""Tests of bench/io_study.py and bench/io-study.sh without the client binary:
python3 bench/test_io_study.py (stdlib unittest). The script runs against a stand-in
`ethrex` (written below) that implements the interface the study drives."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import io_study  # noqa: E402

ROOT_OK = "0x" + "ab" * 32
SVGS = ("io-study-threads.svg", "io-study-speedup.svg", "io-study-batches.svg")


def point(mode, threads, batch, mgas, root=ROOT_OK, blocks=4, gas=40_000_000, longest=None, total=100.0):
    return {
        "mode": mode, "threads": threads, "batch": batch, "mgas_per_s": mgas, "total_ms": total,
        "wall_ms": total * 1.1, "longest_tx_ms": longest if longest is not None else total / 4,
        "amdahl_mgas_per_s": mgas * 4, "final_state_root": root, "blocks": blocks, "gas": gas,
    }


def write_run(directory, name, fixture_dir, sweep, workload="mix", gas_limit=64_000_000, blocks=4, gas=40_000_000):
    fixture_dir = Path(fixture_dir)
    fixture_dir.mkdir(parents=True, exist_ok=True)
    (fixture_dir / io_study.FIXTURE_META).write_text(json.dumps(
        {"workload": workload, "gas_limit": gas_limit, "blocks": blocks, "accounts": 1000, "slots": 10000, "seed": 1}))
    run = {
        "fixture": {"path": str(fixture_dir / "stress.rlp"), "blocks": blocks, "transactions": 40, "gas": gas,
                    "db": "rocksdb"},
        "machine": {"cores": 2, "threads": 16},
        "io": {"cold": True, "read_latency_us": 100, "io_threads": 64, "cache_drop": "fadvise"},
        "modes": {},
        "sweep": sweep,
    }
    path = Path(directory) / name
    path.write_text(json.dumps(run))
    return path


MACHINE = {"cores": 2, "cpu_model": "Test CPU", "ram_gib": 8.0, "disks": [], "kernel": "test", "date": "2025-01-01T00:00:00"}


class Synthetic(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        mix = self.dir / "fx" / "mix"
        a = [point("sequential", 1, 1, 111.1), point("sequential", 16, 1, 112.0)]
        for t, v in ((1, 200.0), (16, 1234.5)):
            a.append(point("design:parallel-io", t, 1, v, longest=75.0))
        for t, v in ((1, 250.0), (16, 1500.25)):
            a.append(point("design:batched-io", t, 1, v))
        b = [point("design:parallel-io", 1, 2, 300.0), point("design:parallel-io", 16, 2, 2345.6, longest=10.0),
             point("design:batched-io", 16, 2, 2222.2), point("parallel", 16, 2, 999.9)]
        c = [point("design:parallel-io", 16, 1, 1234.5), point("design:batched-io", 16, 1, 1500.25),
             point("design:parallel-io", 16, 2, 2345.6), point("design:batched-io", 16, 2, 2222.2),
             point("design:parallel-io", 16, 10, 4321.0), point("design:batched-io", 16, 10, 4444.0)]
        sload = self.dir / "fx" / "sload64"
        d = [point("sequential", 1, 1, 9.5, root="0x" + "cd" * 32, gas=128_000_000, blocks=2),
             point("design:batched-io", 16, 1, 640.0, root="0x" + "cd" * 32, gas=128_000_000, blocks=2),
             point("design:parallel-io", 16, 1, 80.0, root="0x" + "cd" * 32, gas=128_000_000, blocks=2)]
        self.runs = [
            write_run(self.dir, "a-threads.json", mix, a),
            write_run(self.dir, "b-mega.json", mix, b),
            write_run(self.dir, "c-batches.json", mix, c),
            write_run(self.dir, "d-sload.json", sload, d, workload="sload-random", gas_limit=64_000_000, blocks=2,
                      gas=128_000_000),
        ]
        self.out = self.dir / "out"

    def tearDown(self):
        self.tmp.cleanup()

    def loaded(self):
        return [(p, io_study.load_run(p)) for p in self.runs]

    def render(self):
        manifest = [{"name": "a-threads", "table": "threads", "command": "ethrex import-bench --threads 1,16",
                     "seconds": 1.5, "cached": False, "json": str(self.runs[0])}]
        io_study.render(self.loaded(), self.out, manifest, MACHINE, mega_batch=2, focus_threads=16)
        return (self.out / "io-study.md").read_text()

    def test_tables_carry_the_runs_numbers(self):
        md = self.render()
        for number in ("1,234.5", "1,500.2", "111.1", "2,345.6", "2,222.2", "999.9", "640.0", "80.0", "9.5"):
            self.assertIn(number, md)
        # Published constants, labelled.
        for number in ("3,220", "10,842", "3,587", "11,292", "6,400", "780"):
            self.assertIn(number, md)
        self.assertIn("published", md)
        # Ratios from the runs: parallel-io@16 / sequential@1, batched/parallel at batch 1 and the worst case.
        self.assertIn(f"{1234.5 / 111.1:.2f}x", md)
        self.assertIn(f"{1500.25 / 1234.5:.2f}x", md)
        self.assertIn(f"{640.0 / 80.0:.2f}x", md)
        # Longest-tx share of parallel-io@16 (75 of 100 ms).
        self.assertIn("75%", md)
        # The machine, the I/O settings and the recorded command.
        self.assertIn("Test CPU", md)
        self.assertIn("read latency 100 µs", md)
        self.assertIn("cache drop: fadvise", md)
        self.assertIn("ethrex import-bench --threads 1,16", md)
        # Batch 10: measured, not published (dashes in the published columns).
        row10 = [line for line in md.splitlines() if line.startswith("| 10 |")]
        self.assertTrue(row10 and "4,321.0" in row10[0] and "4,444.0" in row10[0], row10)
        self.assertEqual(row10[0].split(" | ")[1], "—")
        # Batch 100: published, not measured here.
        row100 = [line for line in md.splitlines() if line.startswith("| 100 |")]
        self.assertTrue(row100 and "11,129" in row100[0] and "—" in row100[0])

    def test_json_merges_points_and_published(self):
        self.render()
        doc = json.loads((self.out / "io-study.json").read_text())
        self.assertEqual(len(doc["points"]), sum(len(r["sweep"]) for _, r in self.loaded()))
        self.assertEqual(doc["published"]["per_block"]["mgas_per_s"]["16"], 3220)
        rows = {r["threads"]: r for r in doc["tables"]["per_block"]}
        self.assertEqual(rows[16]["ours"]["design:parallel-io"]["mgas_per_s"], 1234.5)
        worst = doc["tables"]["worst_case"]["rows"][0]
        self.assertEqual(worst["ours_batched_io"], 640.0)
        self.assertEqual(worst["published_batched_over_parallel"], 8.0)

    def test_svgs_are_well_formed(self):
        self.render()
        for name in SVGS:
            root = ET.parse(self.out / name).getroot()
            self.assertTrue(root.tag.endswith("svg"), name)
            self.assertTrue(root.findall(".//{http://www.w3.org/2000/svg}polyline"), name)
        empty = io_study.line_chart("a < b & c", "x", "y", [{"name": "none", "color": "#000", "points": []}])
        ET.fromstring(empty)

    def test_state_root_mismatch_fails(self):
        bad = write_run(self.dir, "e-bad.json", self.dir / "fx" / "mix",
                        [point("design:batched-io", 16, 2, 1.0, root="0x" + "ee" * 32)])
        runs = self.loaded() + [(bad, io_study.load_run(bad))]
        errors = io_study.check_roots(io_study.points_of(runs))
        self.assertEqual(len(errors), 1)
        self.assertIn("0x" + "ee" * 32, errors[0])
        self.assertIn("sequential", errors[0])
        with self.assertRaises(io_study.StudyError):
            io_study.render(runs, self.out, [], MACHINE)
        self.assertFalse((self.out / "io-study.md").exists())
        self.assertEqual(io_study.main(["check"] + [str(p) for p in self.runs + [bad]]), 1)
        self.assertEqual(io_study.main(["check"] + [str(p) for p in self.runs]), 0)

    def test_missing_fields_fail(self):
        bad = self.dir / "bad.json"
        bad.write_text(json.dumps({"fixture": {"path": "x"}, "sweep": [{"mode": "sequential"}]}))
        with self.assertRaises(io_study.StudyError):
            io_study.load_run(bad)


# A stand-in for the client: `fixture stress` writes the four files, `import-bench` writes
# a sweep with one point per (mode, threads, batch). FAKE_BAD_ROOT=1 gives batched-I/O a
# different state root at batches > 1; FAKE_OLD=1 leaves the new flags out of --help.
FAKE_ETHREX = textwrap.dedent('''\
    #!/usr/bin/env python3
    import json, os, sys
    args = sys.argv[1:]
    def opt(name, default=None):
        return args[args.index(name) + 1] if name in args else default
    if args[:2] == ["fixture", "stress"]:
        if "--help" in args:
            flags = ["--out", "--blocks", "--gas-limit", "--min-txs", "--max-txs", "--seed"]
            if not os.environ.get("FAKE_OLD"):
                flags += ["--state-accounts", "--state-slots", "--workload"]
            print("\\n".join(f"      {f} <X>" for f in flags))
            sys.exit(0)
        out = opt("--out"); os.makedirs(out, exist_ok=True)
        meta = {"blocks": int(opt("--blocks")), "gas_limit": int(opt("--gas-limit")), "workload": opt("--workload")}
        with open(os.path.join(out, "stress.rlp"), "w") as f: json.dump(meta, f)
        for n in ("stress.bal.rlp", "stress.genesis.json", "stress.state.json"):
            open(os.path.join(out, n), "w").close()
        with open(os.environ["FAKE_LOG"], "a") as f: f.write("fixture " + out + "\\n")
        sys.exit(0)
    if args[0] == "import-bench":
        if "--help" in args:
            flags = ["--fixture", "--mode", "--threads", "--db", "--sleep-ms", "--json"]
            if not os.environ.get("FAKE_OLD"):
                flags += ["--sweep-modes", "--bal-design", "--batch", "--cold", "--read-latency-us", "--io-threads"]
            print("\\n".join(f"      {f} <X>" for f in flags))
            sys.exit(0)
        fixture = opt("--fixture")
        meta = json.load(open(fixture))
        blocks, gas = meta["blocks"], meta["blocks"] * meta["gas_limit"] // 2
        modes = [m for m in opt("--sweep-modes", "sequential,parallel").split(",") if m]
        modes += ["design:" + d for d in opt("--bal-design", "").split(",") if d]
        sweep = []
        for m in modes:
            for t in map(int, opt("--threads", "1").split(",")):
                for b in map(int, opt("--batch", "1").split(",")):
                    rate = {"sequential": 100.0, "parallel": 150.0}.get(m, 200.0) * (t if m != "sequential" else 1) * (1 + b / 10)
                    root = "0x" + "11" * 32
                    if os.environ.get("FAKE_BAD_ROOT") and m == "design:batched-io" and b > 1:
                        root = "0x" + "22" * 32
                    total = gas / rate / 1e3
                    sweep.append({"mode": m, "threads": t, "batch": b, "mgas_per_s": rate, "total_ms": total,
                                  "wall_ms": total, "longest_tx_ms": total / 3, "amdahl_mgas_per_s": rate * 3,
                                  "final_state_root": root, "blocks": blocks, "gas": gas})
        doc = {"fixture": {"path": fixture, "blocks": blocks, "transactions": blocks * 4, "gas": gas, "db": opt("--db")},
               "machine": {"cores": 2, "threads": 2},
               "io": {"cold": "--cold" in args, "read_latency_us": int(opt("--read-latency-us", 0)),
                      "io_threads": int(opt("--io-threads", 0)), "cache_drop": "none"},
               "modes": {}, "sweep": sweep}
        with open(opt("--json"), "w") as f: json.dump(doc, f)
        print("fake import-bench done")
        sys.exit(0)
    sys.exit(2)
''')


class Script(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.fake = self.dir / "ethrex"
        self.fake.write_text(FAKE_ETHREX)
        self.fake.chmod(0o755)
        self.out = self.dir / "out"
        self.env = dict(os.environ, ETHREX=str(self.fake), IO_STUDY_FIXTURES=str(self.dir / "fixtures"),
                        FAKE_LOG=str(self.dir / "fake.log"), TMPDIR=str(self.dir))
        for k in list(self.env):
            if k.startswith("IO_STUDY_") and k != "IO_STUDY_FIXTURES":
                del self.env[k]

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, *args, **env):
        return subprocess.run(["bash", str(HERE / "io-study.sh"), *args], env=dict(self.env, **env),
                              capture_output=True, text=True, timeout=120)

    def test_quick_study_end_to_end(self):
        r = self.run_script("--quick", str(self.out))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        md = (self.out / "io-study.md").read_text()
        self.assertIn("## 2. One block at a time", md)
        self.assertIn("--sweep-modes sequential --bal-design batched-io,parallel-io --threads 1,4 --batch 1", md)
        self.assertIn("--batch 1,2", md)
        for name in SVGS:
            ET.parse(self.out / name)
        steps = [json.loads(line) for line in (self.out / "steps.jsonl").read_text().splitlines()]
        self.assertEqual({s["table"] for s in steps}, {"fixtures", "threads", "mega", "batches", "worst"})
        self.assertTrue(all("seconds" in s for s in steps))
        doc = json.loads((self.out / "io-study.json").read_text())
        # The fake's rates: sequential 110, the designs 220 per thread at batch 1.
        self.assertIn("| 1 | 740 | 220.0 | 220.0 | 110.0 |", md)
        self.assertTrue(any(p["mode"] == "design:parallel-io" and p["batch"] == 2 for p in doc["points"]))
        fixtures = Path(self.env["FAKE_LOG"]).read_text().count("fixture ")
        self.assertEqual(fixtures, 3)  # mix + two sload-random
        # A second run reuses the cached fixtures, and --render-only rebuilds from the runs.
        r = self.run_script("--quick", str(self.out))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(Path(self.env["FAKE_LOG"]).read_text().count("fixture "), 3)
        (self.out / "io-study.md").unlink()
        r = self.run_script("--render-only", str(self.out))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("| 1 | 740 | 220.0 | 220.0 | 110.0 |", (self.out / "io-study.md").read_text())

    def test_state_root_mismatch_stops_the_study(self):
        r = self.run_script("--quick", str(self.out), FAKE_BAD_ROOT="1")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("state root", r.stderr)
        self.assertFalse((self.out / "io-study.md").exists())

    def test_binary_without_the_flags_is_refused(self):
        r = self.run_script("--quick", str(self.out), FAKE_OLD="1")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("has no --state-accounts", r.stderr)

    def test_bad_knob_is_refused(self):
        r = self.run_script("--quick", str(self.out), IO_STUDY_THREADS="1,x")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("THREADS", r.stderr)


if __name__ == "__main__":
    unittest.main()
