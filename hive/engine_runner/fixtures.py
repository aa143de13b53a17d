"""Fixture discovery, fork schedules and genesis.json generation.

Why it exists: a `blockchain_test` fixture describes its chain with `network`,
`config` (chain id, blob schedule), `pre` (the genesis allocation) and
`genesisBlockHeader`; the node instead wants a geth-style genesis.json. This
module does that translation, keeping every genesis header field the node
hashes (so the node's genesis hash can be checked against the fixture's).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

# Post-merge forks the Engine API can drive, in activation order, with the
# genesis `config` key that schedules each one (Paris has none: it is
# "TTD 0 reached at genesis").
FORKS: List[Tuple[str, Optional[str]]] = [
    ("Paris", None),
    ("Shanghai", "shanghaiTime"),
    ("Cancun", "cancunTime"),
    ("Prague", "pragueTime"),
    ("Osaka", "osakaTime"),
    ("Amsterdam", "amsterdamTime"),
]
FORK_NAMES = [name for name, _ in FORKS]

# Block-number forks that are all active at genesis in any post-merge test.
BLOCK_FORK_KEYS = [
    "homesteadBlock",
    "eip150Block",
    "eip155Block",
    "eip158Block",
    "byzantiumBlock",
    "constantinopleBlock",
    "petersburgBlock",
    "istanbulBlock",
    "muirGlacierBlock",
    "berlinBlock",
    "londonBlock",
    "arrowGlacierBlock",
    "grayGlacierBlock",
    "mergeNetsplitBlock",
]

DEPOSIT_CONTRACT = "0x00000000219ab540356cBB839Cbe05303d7705Fa"

_TRANSITION = re.compile(r"^([A-Za-z]+)To([A-Za-z]+)AtTime(\d+)(k?)$")


class UnsupportedNetwork(ValueError):
    pass


@dataclass
class Test:
    name: str
    path: str
    data: dict
    # Set for entries that are not run: the reason they are skipped (another
    # fixture format) or why they fail without running (unreadable file).
    skip: Optional[str] = None
    error: Optional[str] = None

    @property
    def is_engine(self) -> bool:
        return "engineNewPayloads" in self.data


def fork_schedule(network: str) -> Dict[str, int]:
    """Activation time of each post-merge fork for a fixture `network`.

    Plain networks ("Prague") activate every fork up to and including it at 0.
    Transition networks ("PragueToOsakaAtTime15k") activate the first at 0 and
    the second at the given time (k = x1000).
    """
    match = _TRANSITION.match(network)
    if match:
        first, second, number, kilo = match.groups()
        at = int(number) * (1000 if kilo else 1)
        if first not in FORK_NAMES or second not in FORK_NAMES:
            raise UnsupportedNetwork(f"network {network} is not a post-merge transition")
        schedule = fork_schedule(first)
        schedule[second] = at
        return schedule
    if network not in FORK_NAMES:
        raise UnsupportedNetwork(f"network {network!r} cannot be driven through the Engine API")
    return {name: 0 for name in FORK_NAMES[: FORK_NAMES.index(network) + 1]}


def fork_at(schedule: Dict[str, int], timestamp: int) -> str:
    """The latest fork whose activation time is <= timestamp."""
    active = "Paris"
    for name in FORK_NAMES:
        if name in schedule and schedule[name] <= timestamp:
            active = name
    return active


def quantity(value) -> str:
    """Normalize a hex or int quantity to minimal '0x..' form (geth parsers reject '0x01')."""
    if isinstance(value, int):
        return hex(value)
    text = str(value)
    number = int(text, 16) if text.lower().startswith("0x") else int(text)
    return hex(number)


def _int(value) -> int:
    if isinstance(value, int):
        return value
    text = str(value)
    return int(text, 16) if text.lower().startswith("0x") else int(text)


def _word(value: str) -> str:
    """A storage key/value as 0x + 64 hex digits."""
    return "0x" + format(_int(value), "064x")


def blob_schedule(config: dict) -> Dict[str, Dict[str, int]]:
    """Fixture `config.blobSchedule` with lower-cased keys and integer values."""
    out: Dict[str, Dict[str, int]] = {}
    for fork, params in (config.get("blobSchedule") or {}).items():
        out[fork.lower()] = {k: _int(v) for k, v in params.items()}
    return out


def build_genesis(test: dict) -> dict:
    """geth-style genesis.json for a blockchain test (plain or engine form)."""
    network = test.get("network") or (test.get("config") or {}).get("network")
    if not network:
        raise UnsupportedNetwork("fixture has no network")
    schedule = fork_schedule(network)
    fixture_config = test.get("config") or {}
    header = test["genesisBlockHeader"]

    config: dict = {"chainId": _int(fixture_config.get("chainid", "0x1"))}
    for key in BLOCK_FORK_KEYS:
        config[key] = 0
    config["terminalTotalDifficulty"] = 0
    config["terminalTotalDifficultyPassed"] = True
    for name, key in FORKS:
        if key is not None and name in schedule:
            config[key] = schedule[name]
    schedule_json = blob_schedule(fixture_config)
    if schedule_json:
        config["blobSchedule"] = schedule_json
    config["depositContractAddress"] = DEPOSIT_CONTRACT

    alloc = {}
    for address, account in (test.get("pre") or {}).items():
        entry = {
            "balance": quantity(account.get("balance", "0x0")),
            "nonce": quantity(account.get("nonce", "0x0")),
        }
        code = account.get("code", "0x")
        if code and code not in ("0x", "0X"):
            entry["code"] = code
        storage = account.get("storage") or {}
        if storage:
            entry["storage"] = {_word(k): _word(v) for k, v in storage.items()}
        alloc[address.lower()] = entry

    genesis = {
        "config": config,
        "nonce": quantity(header.get("nonce", "0x0")),
        "timestamp": quantity(header.get("timestamp", "0x0")),
        "extraData": header.get("extraData", "0x"),
        "gasLimit": quantity(header["gasLimit"]),
        "difficulty": quantity(header.get("difficulty", "0x0")),
        "mixHash": header.get("mixHash", "0x" + "00" * 32),
        "coinbase": header.get("coinbase", "0x" + "00" * 20),
        "number": quantity(header.get("number", "0x0")),
        "parentHash": header.get("parentHash", "0x" + "00" * 32),
        "alloc": alloc,
    }
    if "baseFeePerGas" in header:
        genesis["baseFeePerGas"] = quantity(header["baseFeePerGas"])
    if "excessBlobGas" in header:
        genesis["excessBlobGas"] = quantity(header["excessBlobGas"])
    if "blobGasUsed" in header:
        genesis["blobGasUsed"] = quantity(header["blobGasUsed"])
    return genesis


def _json_files(paths: List[str]) -> Iterator[str]:
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs.sort()
                for name in sorted(files):
                    if name.endswith(".json"):
                        yield os.path.join(root, name)
        elif os.path.isfile(path):
            yield path


def fixture_format(value) -> str:
    """The fixture format of one entry: `_info.fixture-format` if named, else by shape."""
    if not isinstance(value, dict):
        return "not a JSON object"
    info = value.get("_info") if isinstance(value.get("_info"), dict) else {}
    named = info.get("fixture-format") or info.get("fixture_format")
    if isinstance(named, str) and named:
        return named
    if "engineNewPayloads" in value:
        if "syncPayload" in value:
            return "blockchain_test_sync"
        if "pre" not in value and "preHash" in value:
            return "blockchain_test_engine_x"
        return "blockchain_test_engine"
    if "transaction" in value and "post" in value:
        return "state_test"
    if "txbytes" in value:
        return "transaction_test"
    if "blocks" in value and "genesisBlockHeader" in value:
        return "blockchain_test"
    return "unknown format (keys: " + ", ".join(list(value)[:8]) + ")"


RUNNABLE_FORMATS = ("blockchain_test", "blockchain_test_engine")

_WHY_NOT = {
    "blockchain_test_engine_x": "its pre-state is a shared pre-allocation group (preHash), which this runner does not load",
    "blockchain_test_sync": "it needs a second client to sync from",
    "state_test": "a state test has no blocks to send over the Engine API",
    "transaction_test": "a transaction test has no blocks to send over the Engine API",
}


def skip_reason(value) -> Optional[str]:
    """Why an entry is not run here (None when it is a blockchain or engine test)."""
    fmt = fixture_format(value)
    if fmt in RUNNABLE_FORMATS:
        return None
    if fmt == "not a JSON object":
        return "not a test: the entry is not a JSON object"
    why = _WHY_NOT.get(fmt, "this runner only runs blockchain_test and blockchain_test_engine fixtures")
    return f"{fmt} fixture: {why}"


def is_blockchain_test(value) -> bool:
    """A blockchain_test or blockchain_test_engine entry, the formats this runner runs."""
    return skip_reason(value) is None


def discover(paths: List[str], substrings: Optional[List[str]] = None) -> List[Test]:
    """Every entry under `paths` whose name contains any substring, as a Test.

    Nothing is dropped silently: entries of other formats come back with `skip`
    set, an unreadable file or a missing path as one Test with `error` set.
    """
    tests: List[Test] = []
    for path in paths:
        if not os.path.exists(path):
            tests.append(Test(name=path, path=path, data={}, error="no such file or directory"))
    for path in _json_files(paths):
        try:
            with open(path) as fh:
                data = json.load(fh)
        except (OSError, ValueError) as err:
            tests.append(Test(name=path, path=path, data={}, error=f"not a readable fixture file: {err}"))
            continue
        if not isinstance(data, dict):
            tests.append(Test(name=path, path=path, data={}, error="not a fixture file: the top level is not an object of tests"))
            continue
        if not data:
            tests.append(Test(name=path, path=path, data={}, skip="the file contains no tests"))
            continue
        for name, value in data.items():
            if substrings and not any(s in name for s in substrings):
                continue
            reason = skip_reason(value)
            tests.append(Test(name=name, path=path, data=value if isinstance(value, dict) else {}, skip=reason))
    return tests
