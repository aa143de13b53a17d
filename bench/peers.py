"""Whole-process timings of our import and of peer executors on the same chains (see peers.sh)."""
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path


def chain_gas(fixture: Path) -> int:
    data = json.loads(fixture.read_text())
    test = next(iter(data.values()))
    return sum(int(b["blockHeader"]["gasUsed"], 16) for b in test["blocks"])


def timed(cmd, runs):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), max(times)


def main():
    directory, runs, ethrex = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    osaka = directory / "osaka"
    ams_gas = chain_gas(directory / "stress.blockchain_test.json")
    osaka_gas = chain_gas(osaka / "stress.blockchain_test.json")
    bench = [ethrex, "import-bench", "--sleep-ms", "0", "--db", "rocksdb"]
    rows = [
        ("ethrex sequential (Amsterdam)", ams_gas, bench + ["--fixture", str(directory / "stress.rlp"), "--mode", "sequential"]),
        ("ethrex parallel (Amsterdam)", ams_gas, bench + ["--fixture", str(directory / "stress.rlp"), "--mode", "parallel"]),
        ("revme btest (Amsterdam)", ams_gas, ["revme", "btest", str(directory / "stress.blockchain_test.json")]),
        ("ethrex sequential (Osaka)", osaka_gas, bench + ["--fixture", str(osaka / "stress.rlp"), "--mode", "sequential"]),
        ("geth evm blocktest (Osaka)", osaka_gas, ["evm", "blocktest", str(osaka / "stress.blockchain_test.json")]),
    ]
    results = []
    for name, gas, cmd in rows:
        med, lo, hi = timed(cmd, runs)
        results.append((name, gas, med, lo, hi))
    base = {"Amsterdam": results[0][1] / results[0][2], "Osaka": results[3][1] / results[3][2]}
    print(f"whole-process wall time, {runs} runs after a warm-up (median [min-max])")
    print(f"{'command':<32} {'Mgas':>8} {'seconds':>22} {'Mgas/s':>8} {'vs ethrex seq':>14}")
    for name, gas, med, lo, hi in results:
        fork = "Amsterdam" if "Amsterdam" in name else "Osaka"
        rate = gas / med
        print(f"{name:<32} {gas / 1e6:>8.1f} {med:>8.2f} [{lo:.2f}-{hi:.2f}] {rate / 1e6:>8.1f} {rate / base[fork]:>13.2f}x")


if __name__ == "__main__":
    main()
