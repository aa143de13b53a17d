"""Whole-process timings of our import and of peer executors on the same chains (see peers.sh)."""
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Stands for a fresh, empty data directory in a row's commands (see run_once).
DATADIR = object()


def chain(fixture: Path):
    """Total gas used and the head (number, hash, state root) of a blockchain_test fixture."""
    data = json.loads(fixture.read_text())
    test = next(iter(data.values()))
    headers = [b["blockHeader"] for b in test["blocks"]]
    last = headers[-1]
    head = (int(last["number"], 16), last["hash"], last["stateRoot"])
    return sum(int(h["gasUsed"], 16) for h in headers), head


def run_once(cmds, check):
    """Wall time of CMDS run one after the other. With CHECK, in a fresh, empty data directory
    (made before the clock starts, removed after it stops), their output in a log beside it;
    CHECK(datadir, log) then verifies what they did, off the clock."""
    if check is None:
        start = time.perf_counter()
        for cmd in cmds:
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - start
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        datadir, log = Path(tmp) / "data", Path(tmp) / "log"
        datadir.mkdir()
        argv = [[str(datadir) if a is DATADIR else a for a in cmd] for cmd in cmds]
        with open(log, "w") as out:
            start = time.perf_counter()
            for cmd in argv:
                if subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode:
                    out.flush()
                    print(log.read_text(errors="replace")[-4000:], file=sys.stderr)
                    sys.exit(f"peers: {' '.join(cmd)} failed")
            elapsed = time.perf_counter() - start
        check(datadir, log)
        return elapsed


def timed(cmds, runs, check=None):
    run_once(cmds, check)  # warm-up
    times = [run_once(cmds, check) for _ in range(runs)]
    return statistics.median(times), min(times), max(times)


def ethrex_head(want):
    """CHECK for `ethrex import`: its summary line names the fixture's head, every block imported."""
    number, hash_, root = want

    def check(datadir, log):
        text = log.read_text(errors="replace")
        m = re.search(r"imported (\d+) blocks \((\d+) already present\); head is block (\d+) "
                      r"(0x[0-9a-f]{64}) \(state root (0x[0-9a-f]{64})\)", text)
        got = m and (int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4), m.group(5))
        if got != (number, 0, number, hash_, root):
            print(text[-4000:], file=sys.stderr)
            sys.exit(f"peers: ethrex import ended with {m and m.group(0)!r}, want {number} blocks "
                     f"imported, head {number} {hash_} (state root {root})")
    return check


def geth_head(want):
    """CHECK for `geth import`: the head block geth's database records is the fixture's."""
    number, hash_, root = want

    def check(datadir, log):
        meta = subprocess.run(["geth", "--datadir", str(datadir), "db", "metadata"],
                              capture_output=True, text=True)
        field = dict(re.findall(r"\|\s*(headBlock\.\w+)\s*\|\s*(\S+)", meta.stdout))
        got = (field.get("headBlock.Number"), field.get("headBlock.Hash"), field.get("headBlock.Root"))
        if got != (str(number), hash_, root):
            print(log.read_text(errors="replace")[-4000:], meta.stdout, meta.stderr[-2000:], file=sys.stderr)
            sys.exit(f"peers: geth import's head is {got}, want {(number, hash_, root)}")
    return check


def main():
    directory, runs, ethrex = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    osaka = directory / "osaka"
    ams_gas, ams_head = chain(directory / "stress.blockchain_test.json")
    osaka_gas, _ = chain(osaka / "stress.blockchain_test.json")
    genesis, rlp, bal = (str(directory / f) for f in ("stress.genesis.json", "stress.rlp", "stress.bal.rlp"))
    bench = [ethrex, "import-bench", "--sleep-ms", "0", "--db", "rocksdb"]
    imp = [ethrex, "import", "--network", genesis, "--datadir", DATADIR, "--db", "rocksdb", "--bal", bal, rlp]
    # geth: its defaults (pebble, path scheme, --cache 4096, snapshot, prefetcher; every block
    # fully validated, state root included) and --nocompaction: by default `geth import` ends
    # by compacting the whole database, to measure the disk I/O, which is no part of importing.
    geth = [["geth", "--datadir", DATADIR, "init", genesis],
            ["geth", "--datadir", DATADIR, "import", "--nocompaction", rlp]]
    rows = [
        ("ethrex import-bench sequential (Amsterdam)", ams_gas, [bench + ["--fixture", rlp, "--mode", "sequential"]], None),
        ("ethrex import-bench parallel (Amsterdam)", ams_gas, [bench + ["--fixture", rlp, "--mode", "parallel"]], None),
        ("ethrex import parallel (Amsterdam)", ams_gas, [imp], ethrex_head(ams_head)),
        ("ethrex import single-threaded (Amsterdam)", ams_gas, [imp + ["--single-threaded"]], ethrex_head(ams_head)),
        ("revme btest (Amsterdam)", ams_gas, [["revme", "btest", str(directory / "stress.blockchain_test.json")]], None),
        ("geth init + import (Amsterdam)", ams_gas, geth, geth_head(ams_head)),
        ("ethrex import-bench sequential (Osaka)", osaka_gas, [bench + ["--fixture", str(osaka / "stress.rlp"), "--mode", "sequential"]], None),
        ("geth evm blocktest (Osaka)", osaka_gas, [["evm", "blocktest", str(osaka / "stress.blockchain_test.json")]], None),
    ]
    results = []
    for name, gas, cmds, check in rows:
        med, lo, hi = timed(cmds, runs, check)
        results.append((name, gas, med, lo, hi))
    wall = {name: med for name, _, med, _, _ in results}
    fork_gas = {"Amsterdam": ams_gas, "Osaka": osaka_gas}
    base = {fork: fork_gas[fork] / wall[f"ethrex import-bench sequential ({fork})"] for fork in fork_gas}
    width = max(len(name) for name, *_ in results)
    print(f"whole-process wall time, {runs} runs after a warm-up (median [min-max])")
    print(f"{'command':<{width}} {'Mgas':>8} {'seconds':>22} {'Mgas/s':>8} {'vs ethrex seq':>14}")
    for name, gas, med, lo, hi in results:
        fork = "Amsterdam" if "Amsterdam" in name else "Osaka"
        rate = gas / med
        print(f"{name:<{width}} {gas / 1e6:>8.1f} {med:>8.2f} [{lo:.2f}-{hi:.2f}] {rate / 1e6:>8.1f} {rate / base[fork]:>13.2f}x")
    ours = wall["ethrex import parallel (Amsterdam)"]
    print(f"judged (wall time, medians): ethrex import parallel / revme btest "
          f"{ours / wall['revme btest (Amsterdam)']:.2f}x; "
          f"geth init + import / ethrex import parallel {wall['geth init + import (Amsterdam)'] / ours:.2f}x")


if __name__ == "__main__":
    main()
