"""Transactions between ethrex and geth 1.17.10 as peers on loopback (see geth-txpool.sh).

  geth_txpool.py genesis OUT                 writes the two nodes' genesis (every fork to
                                              Amsterdam at 0; the test mnemonic's first two
                                              accounts funded)
  geth_txpool.py run --ours URL --ours-auth URL --ours-jwt F --geth URL --geth-auth URL
                     --geth-jwt F             the round trip: both nodes get a forkchoice
                                              naming the genesis (they take peers'
                                              transactions only while following a chain);
                                              a transfer signed with web3.py's eth_account
                                              and sent to ethrex must reach geth's pool, one
                                              sent to geth must reach ours."""
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
    return [Account.from_mnemonic(MNEMONIC, account_path=f"m/44'/60'/0'/0/{i}") for i in range(2)]


def genesis(out):
    forks = ["homestead", "eip150", "eip155", "eip158", "byzantium", "constantinople", "petersburg",
             "istanbul", "berlin", "london"]
    config = {"chainId": CHAIN_ID, **{f"{f}Block": 0 for f in forks},
              "terminalTotalDifficulty": 0,
              **{f"{f}Time": 0 for f in ["shanghai", "cancun", "prague", "osaka", "amsterdam"]},
              "depositContractAddress": "0x0000000000000000000000000000000000000000",
              "blobSchedule": {
                  "cancun": {"target": 3, "max": 6, "baseFeeUpdateFraction": 3338477},
                  "prague": {"target": 6, "max": 9, "baseFeeUpdateFraction": 5007716},
                  "osaka": {"target": 6, "max": 9, "baseFeeUpdateFraction": 5007716},
                  "amsterdam": {"target": 14, "max": 21, "baseFeeUpdateFraction": 11684671}}}
    alloc = {a.address: {"balance": hex(10**24)} for a in accounts()}
    doc = {"config": config, "gasLimit": hex(60_000_000), "difficulty": "0x0",
           "baseFeePerGas": hex(10**9), "alloc": alloc}
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


def run(a):
    _, genesis_block = result_of(call(a.geth, "eth_getBlockByNumber", ["0x0", False]))
    head = genesis_block["hash"]
    state = {"headBlockHash": head, "safeBlockHash": head, "finalizedBlockHash": head}
    for name, url, jwt in (("geth", a.geth_auth, a.geth_jwt), ("ethrex", a.ours_auth, a.ours_jwt)):
        answer = engine(url, jwt, "engine_forkchoiceUpdatedV3", [state, None])
        status = (answer.get("result") or {}).get("payloadStatus", {}).get("status")
        assert status == "VALID", f"{name}: forkchoiceUpdated to the genesis: {answer}"
    first, second = accounts()
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
    for f in failures:
        print("!!", f)
    print(f"geth-txpool: {2 - len(failures)} of 2 transactions crossed between the pools")
    return 1 if failures else 0


def main():
    import argparse

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("genesis")
    g.add_argument("out")
    r = sub.add_parser("run")
    for arg in ("--ours", "--ours-auth", "--ours-jwt", "--geth", "--geth-auth", "--geth-jwt"):
        r.add_argument(arg, required=True)
    args = p.parse_args()
    return genesis(args.out) if args.cmd == "genesis" else run(args)


if __name__ == "__main__":
    sys.exit(main())
