"""Transactions between ethrex and geth 1.17.10 as peers on loopback (see geth-txpool.sh).

  geth_txpool.py genesis OUT SYSTEM_FROM     writes the two nodes' genesis (every fork to
                                              Amsterdam at 0; the test mnemonic's first four
                                              accounts funded; the system contracts copied
                                              from the genesis SYSTEM_FROM, one the client's
                                              fixture generator wrote)
  geth_txpool.py run --ours URL --ours-auth URL --ours-jwt F --geth URL --geth-auth URL
                     --geth-jwt F --trusted-setup F
                                              the round trip: both nodes get a forkchoice
                                              naming the genesis (they take peers'
                                              transactions only while following a chain);
                                              a transfer signed with web3.py's eth_account
                                              and sent to ethrex must reach geth's pool, one
                                              sent to geth must reach ours; then a blob
                                              transaction each way (EIP-7594 cell proofs
                                              computed with the ckzg bindings), whose blob
                                              both nodes' engine_getBlobsV2 must return
                                              alike; then, acting as the consensus client,
                                              a payload ethrex builds from its pool must
                                              carry all four with their blobs and be VALID
                                              on geth (same state root, receipts and BAL)
                                              and on ethrex."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from geth_rpc_blocks import call, jwt_token, post, result_of  # noqa: E402

MNEMONIC = "test test test test test test test test test test test junk"
CHAIN_ID = 0x7E57_0001
WAIT_S = 20  # a deadlock guard; gossip on loopback takes milliseconds


def accounts():
    from eth_account import Account

    Account.enable_unaudited_hdwallet_features()
    return [Account.from_mnemonic(MNEMONIC, account_path=f"m/44'/60'/0'/0/{i}") for i in range(4)]


def system_contracts(path):
    """The predeploys (EIP-2935, 4788, 7002, 7251 and the builder contracts) of a genesis:
    the accounts with code whose address starts with two zero bytes."""
    alloc = json.load(open(path))["alloc"]
    return {a: v for a, v in alloc.items() if v.get("code") and a.lower().startswith("0x0000")}


def amsterdam_genesis(chain_id, alloc, gas_limit, base_fee=10**9):
    """A geth-style genesis with every fork to Amsterdam at block 0 / time 0 (and the
    blob schedule up to Amsterdam's): what both nodes of the geth benches start from."""
    forks = ["homestead", "eip150", "eip155", "eip158", "byzantium", "constantinople", "petersburg",
             "istanbul", "berlin", "london"]
    config = {"chainId": chain_id, **{f"{f}Block": 0 for f in forks},
              "terminalTotalDifficulty": 0,
              **{f"{f}Time": 0 for f in ["shanghai", "cancun", "prague", "osaka", "amsterdam"]},
              "depositContractAddress": "0x0000000000000000000000000000000000000000",
              "blobSchedule": {
                  "cancun": {"target": 3, "max": 6, "baseFeeUpdateFraction": 3338477},
                  "prague": {"target": 6, "max": 9, "baseFeeUpdateFraction": 5007716},
                  "osaka": {"target": 6, "max": 9, "baseFeeUpdateFraction": 5007716},
                  "amsterdam": {"target": 14, "max": 21, "baseFeeUpdateFraction": 11684671}}}
    return {"config": config, "gasLimit": hex(gas_limit), "difficulty": "0x0",
            "baseFeePerGas": hex(base_fee), "alloc": alloc}


def genesis(out, system_from):
    alloc = {a.address: {"balance": hex(10**24)} for a in accounts()}
    contracts = system_contracts(system_from)
    assert len(contracts) >= 4, f"{system_from} has {len(contracts)} system contracts"
    alloc.update(contracts)
    doc = amsterdam_genesis(CHAIN_ID, alloc, 60_000_000)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    return 0


def engine(url, jwt_file, method, params):
    token = jwt_token(open(jwt_file).read())
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return json.loads(post(url, body, {"Authorization": f"Bearer {token}"}))


def pooled(url, tx_hash):
    _, content = result_of(call(url, "txpool_content", []))
    return any(tx.get("hash") == tx_hash for side in content.values()
               for by_nonce in side.values() for tx in by_nonce.values())


def transfer(acct, nonce):
    from eth_utils import to_checksum_address

    to = to_checksum_address("0x" + "ab" * 20)
    tx = {"type": 2, "chainId": CHAIN_ID, "nonce": nonce, "to": to, "value": 1,
          "gas": 250_000, "maxFeePerGas": 10 * 10**9, "maxPriorityFeePerGas": 10**9}
    signed = acct.sign_transaction(tx)
    return "0x" + signed.raw_transaction.hex().removeprefix("0x"), "0x" + signed.hash.hex().removeprefix("0x")


def blob_transaction(acct, nonce, seed, setup):
    """A one-blob type-3 transaction in its EIP-7594 network form:
    0x03 || rlp([tx, 1, blobs, commitments, cell_proofs]); returns (raw, hash, versioned hash,
    blob, proofs)."""
    import ckzg
    import hashlib
    import rlp
    from eth_utils import to_checksum_address

    # Every 32-byte field element starts with a zero byte: below the BLS modulus.
    blob = b"".join(b"\x00" + bytes([(seed + i) % 256]) * 31 for i in range(4096))
    commitment = ckzg.blob_to_kzg_commitment(blob, setup)
    _, proofs = ckzg.compute_cells_and_kzg_proofs(blob, setup)
    versioned = b"\x01" + hashlib.sha256(commitment).digest()[1:]
    tx = {"type": 3, "chainId": CHAIN_ID, "nonce": nonce, "to": to_checksum_address("0x" + "cd" * 20),
          "value": 0, "gas": 100_000, "maxFeePerGas": 10 * 10**9, "maxPriorityFeePerGas": 10**9,
          "maxFeePerBlobGas": 10**9, "blobVersionedHashes": [versioned]}
    signed = acct.sign_transaction(tx)
    consensus = bytes(signed.raw_transaction)
    fields = rlp.decode(consensus[1:])
    network = b"\x03" + rlp.encode([fields, 1, [blob], [commitment], list(proofs)])
    hex_ = lambda b: "0x" + b.hex()
    return hex_(network), hex_(bytes(signed.hash)), hex_(versioned), hex_(blob), [hex_(p) for p in proofs]


def blobs_of(auth_url, jwt, versioned):
    """engine_getBlobsV2's answer for one blob (geth's txpool_content leaves its blob pool
    out: whether its Engine API serves the blob is how a consensus client sees it)."""
    return engine(auth_url, jwt, "engine_getBlobsV2", [[versioned]]).get("result")


def wait_blob(auth_url, jwt, versioned):
    start = time.time()
    while time.time() - start < WAIT_S and not blobs_of(auth_url, jwt, versioned):
        time.sleep(0.05)
    return bool(blobs_of(auth_url, jwt, versioned)), time.time() - start


def run(a):
    _, genesis_block = result_of(call(a.geth, "eth_getBlockByNumber", ["0x0", False]))
    head = genesis_block["hash"]
    state = {"headBlockHash": head, "safeBlockHash": head, "finalizedBlockHash": head}
    for name, url, jwt in (("geth", a.geth_auth, a.geth_jwt), ("ethrex", a.ours_auth, a.ours_jwt)):
        answer = engine(url, jwt, "engine_forkchoiceUpdatedV3", [state, None])
        status = (answer.get("result") or {}).get("payloadStatus", {}).get("status")
        assert status == "VALID", f"{name}: forkchoiceUpdated to the genesis: {answer}"
    first, second = accounts()[:2]
    failures = []
    for label, acct, to_url, from_name, other_url, other_name in (
            ("ethrex -> geth", first, a.ours, "ethrex", a.geth, "geth"),
            ("geth -> ethrex", second, a.geth, "geth", a.ours, "ethrex")):
        raw, tx_hash = transfer(acct, 0)
        _, sent = result_of(call(to_url, "eth_sendRawTransaction", [raw]))
        assert sent == tx_hash, f"{from_name} answered {sent} for {tx_hash}"
        start = time.time()
        while time.time() - start < WAIT_S and not pooled(other_url, tx_hash):
            time.sleep(0.05)
        took = time.time() - start
        if pooled(other_url, tx_hash):
            print(f"{label}: {tx_hash} sent to {from_name}'s eth_sendRawTransaction is in "
                  f"{other_name}'s pool after {took * 1000:.0f} ms")
        else:
            failures.append(f"{label}: {tx_hash} not in {other_name}'s pool after {WAIT_S} s")
    import ckzg

    setup = ckzg.load_trusted_setup(a.trusted_setup, 8)  # precomputed tables: cell proofs in ~1 s
    third, fourth = accounts()[2:]
    blobs = []
    for label, acct, seed, to_url, from_name, other_auth, other_jwt, other_name in (
            ("blob ethrex -> geth", third, 7, a.ours, "ethrex", a.geth_auth, a.geth_jwt, "geth"),
            ("blob geth -> ethrex", fourth, 9, a.geth, "geth", a.ours_auth, a.ours_jwt, "ethrex")):
        raw, tx_hash, versioned, blob, proofs = blob_transaction(acct, 0, seed, setup)
        answer = call(to_url, "eth_sendRawTransaction", [raw])
        _, sent = result_of(answer)
        assert sent == tx_hash, f"{from_name} answered {answer} for {tx_hash}"
        there, took = wait_blob(other_auth, other_jwt, versioned)
        if not there:
            failures.append(f"{label}: {tx_hash}'s blob not served by {other_name} after {WAIT_S} s")
            continue
        print(f"{label}: {tx_hash}'s blob is served by {other_name}'s engine_getBlobsV2 "
              f"after {took * 1000:.0f} ms")
        for name, url, jwt in (("geth", a.geth_auth, a.geth_jwt), ("ethrex", a.ours_auth, a.ours_jwt)):
            got = engine(url, jwt, "engine_getBlobsV2", [[versioned]]).get("result")
            if not got or got[0]["blob"] != blob or got[0]["proofs"] != proofs:
                failures.append(f"{label}: {name}'s engine_getBlobsV2 answered otherwise: "
                                f"{str(got)[:200]}")
        blobs.append(versioned)
    if len(blobs) == 2:
        print("engine_getBlobsV2: both nodes return both blobs with the same 128 cell proofs")

    # The consensus client's turn: ethrex builds from its pool, geth and ethrex import it.
    attributes = {"timestamp": hex(int(genesis_block["timestamp"], 16) + 12),
                  "prevRandao": "0x" + "11" * 32, "suggestedFeeRecipient": "0x" + "fe" * 20,
                  "withdrawals": [], "parentBeaconBlockRoot": "0x" + "22" * 32, "slotNumber": "0x1"}
    answer = engine(a.ours_auth, a.ours_jwt, "engine_forkchoiceUpdatedV4", [state, attributes])
    payload_id = (answer.get("result") or {}).get("payloadId")
    assert payload_id, f"ethrex: forkchoiceUpdated with attributes: {answer}"
    time.sleep(1.0)  # let the builder take what arrived since (it improves until getPayload)
    envelope = engine(a.ours_auth, a.ours_jwt, "engine_getPayloadV6", [payload_id]).get("result")
    assert envelope, "ethrex: getPayloadV6 answered no payload"
    payload = envelope["executionPayload"]
    count = len(payload["transactions"])
    bundle = len(envelope["blobsBundle"]["blobs"])
    print(f"ethrex built block {int(payload['blockNumber'], 16)} from its pool: {count} transactions,"
          f" {bundle} blobs, value {int(envelope['blockValue'], 16)} wei")
    if count != 4 or bundle != 2:
        failures.append(f"the payload carries {count} transactions and {bundle} blobs, not 4 and 2")
    # The blob versioned hashes in block order, as a consensus client takes them.
    import rlp
    versioned = [("0x" + h.hex()) for raw in payload["transactions"] if raw.startswith("0x03")
                 for h in rlp.decode(bytes.fromhex(raw[4:]))[10]]
    params = [payload, versioned, attributes["parentBeaconBlockRoot"], envelope["executionRequests"]]
    for name, url, jwt in (("geth", a.geth_auth, a.geth_jwt), ("ethrex", a.ours_auth, a.ours_jwt)):
        status = engine(url, jwt, "engine_newPayloadV5", params).get("result") or {}
        if status.get("status") != "VALID":
            failures.append(f"{name}: newPayloadV5 of ethrex's payload: {status}")
            continue
        head = {"headBlockHash": payload["blockHash"], "safeBlockHash": state["safeBlockHash"],
                "finalizedBlockHash": state["finalizedBlockHash"]}
        engine(url, jwt, "engine_forkchoiceUpdatedV4", [head, None])
    roots = {}
    for name, url in (("geth", a.geth), ("ethrex", a.ours)):
        _, block = result_of(call(url, "eth_getBlockByNumber", ["latest", False]))
        roots[name] = (block["hash"], block["stateRoot"])
    if roots["geth"] != roots["ethrex"] or roots["geth"][0] != payload["blockHash"]:
        failures.append(f"heads differ: {roots}")
    else:
        print(f"geth imported ethrex's payload: VALID, head {roots['geth'][0]}, "
              f"state root {roots['geth'][1]} on both")
    for f in failures:
        print("!!", f)
    verdict = "every check passed" if not failures else f"{len(failures)} checks failed"
    print(f"geth-txpool: {verdict} (2 transfers and 2 blob transactions crossed, getBlobsV2 "
          f"alike on both, ethrex's payload from its pool VALID on geth and ethrex)")
    return 1 if failures else 0


def main():
    import argparse

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("genesis")
    g.add_argument("out")
    g.add_argument("system_from")
    r = sub.add_parser("run")
    for arg in ("--ours", "--ours-auth", "--ours-jwt", "--geth", "--geth-auth", "--geth-jwt",
                "--trusted-setup"):
        r.add_argument(arg, required=True)
    args = p.parse_args()
    return genesis(args.out, args.system_from) if args.cmd == "genesis" else run(args)


if __name__ == "__main__":
    sys.exit(main())
