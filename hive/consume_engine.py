#!/usr/bin/env python3
"""Docker-free stand-in for Hive's `consume-engine` simulator.

For every blockchain test fixture under the given paths, start a fresh
`ethrex node` on free loopback ports, import the fixture's blocks through the
Engine API (engine_newPayloadVn + engine_forkchoiceUpdatedVn) and check every
verdict strictly: an invalid block must be INVALID for one of the fixture's
exceptions, a JSON-RPC error passes only where the fixture names its errorCode,
and the final head must be the fixture's lastblockhash. Plain `blockchain_test`
fixtures are converted to payloads on the fly (execution requests rebuilt from
the receipts); `blockchain_test_engine` fixtures are replayed as given. Entries
of other formats are reported as skipped, with the reason.

Output: progress on stderr; on stdout one `FAIL name: reason` line per failure,
one `SKIP name: reason` per skipped test, one `NOTE name: ...` per block that
was not sent (and why that is its expected rejection), then `K skipped` and,
last, `N passed, M failed`. Exit code 0 only if nothing failed and something
passed.

Standard library only, on purpose: the runner must not depend on the client's
code or on anything that has to be installed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from engine_runner import fixtures  # noqa: E402
from engine_runner.runner import FAIL, PASS, SKIP, Options, Result, run_test  # noqa: E402


def default_binary() -> str:
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.expanduser("~/.cache/ethrex-target")
    return os.path.join(target, "release", "ethrex")


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Run EF blockchain tests against `ethrex node` through the Engine API "
        "(Hive consume-engine without Docker)."
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="fixture files or directories")
    parser.add_argument("--bin", default=default_binary(),
                        help="ethrex binary (default: $CARGO_TARGET_DIR/release/ethrex)")
    parser.add_argument("--db", choices=["mdbx", "rocksdb"], help="storage backend for the node")
    parser.add_argument("--keep-logs", metavar="DIR", help="copy every node log to DIR/<test>.log")
    parser.add_argument("-k", dest="substrings", action="append", metavar="SUBSTRING",
                        help="only tests whose name contains SUBSTRING (repeatable: any)")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                        help="budget for one test, node start included (default 120)")
    parser.add_argument("--rpc-timeout", type=float, default=30.0, metavar="SECONDS",
                        help="timeout of a single JSON-RPC call (default 30)")
    parser.add_argument("--node-arg", action="append", default=[], metavar="ARG",
                        help="extra argument appended to `ethrex node` (repeatable)")
    parser.add_argument("--max-start-failures", type=int, default=3, metavar="N",
                        help="stop (failing the remaining tests) after N node start failures "
                        "in a row (default 3; 0 = never stop)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print notes of passing tests")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    binary = os.path.abspath(args.bin)
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        print(f"error: node binary {binary} is not an executable file", file=sys.stderr)
        print("0 passed, 0 failed")
        return 2

    tests = fixtures.discover(args.paths, args.substrings)
    if not tests:
        print("error: no tests found" + (" matching -k" if args.substrings else ""), file=sys.stderr)
    opts = Options(
        binary=binary,
        db=args.db,
        timeout=args.timeout,
        rpc_timeout=args.rpc_timeout,
        keep_logs=args.keep_logs,
        verbose=args.verbose,
        extra_args=args.node_arg,
    )

    results = []
    started = time.monotonic()
    start_failures = 0
    for i, test in enumerate(tests, 1):
        if args.max_start_failures and start_failures >= args.max_start_failures:
            result = Result(test.name, FAIL, f"not run: the node failed to start {start_failures} times in a row")
        else:
            try:
                result = run_test(test, opts)
            except Exception as err:  # a runner bug must not hide the other tests' results
                traceback.print_exc()
                result = Result(test.name, FAIL, f"runner error: {err!r}")
            start_failures = start_failures + 1 if result.start_failure else 0
        results.append(result)
        line = f"[{i}/{len(tests)}] {result.status.upper()} {test.name} ({result.seconds:.1f}s)"
        if result.reason:
            line += f": {result.reason}"
        print(line, file=sys.stderr, flush=True)
        for note in result.unsent:
            print(f"    note: {note}", file=sys.stderr)
        if args.verbose:
            for note in result.notes:
                print(f"    note: {note}", file=sys.stderr)

    passed = sum(r.status == PASS for r in results)
    failed = [r for r in results if r.status == FAIL]
    skipped = [r for r in results if r.status == SKIP]
    print(f"ran {len(results)} tests in {time.monotonic() - started:.1f}s", file=sys.stderr)
    for r in failed:
        print(f"FAIL {r.name}: {r.reason}")
    for r in skipped:
        print(f"SKIP {r.name}: {r.reason}")
    for r in results:
        for note in r.unsent:
            print(f"NOTE {r.name}: {note}")
    print(f"{len(skipped)} skipped")
    print(f"{passed} passed, {len(failed)} failed")
    return 0 if not failed and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
