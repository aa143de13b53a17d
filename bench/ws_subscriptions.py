"""eth_subscribe over WebSocket, the same checks against any node (ethrex or geth, both
`--dev` with `--ws`; see ws-subscriptions.sh): subscribe to newHeads, logs (by topic)
and newPendingTransactions, send a contract creation that emits one log (signed with the
standard test mnemonic's first account, funded from the node's dev account first when
it has nothing, as on geth), then wait for the three notifications and check each
against the node's own answers: the pending hash is the transaction's, the log equals
eth_getLogs' entry for it, the new head equals eth_getBlockByNumber's block without
transactions, uncles, withdrawals and size, the header fields its fork lacks as null
(geth's header form). Unsubscribing answers
true. Prints one line; exits 1 on a failed check.
Usage: ws_subscriptions.py WS_URL NAME"""
import asyncio
import json
import sys
import time

import websockets
from eth_account import Account

MNEMONIC = "test test test test test test test test test test test junk"
TOPIC = "0x" + "5e" * 32
# Init code that logs one word (0x2a) under TOPIC and deploys nothing.
INIT_CODE = "0x602a6000527f" + TOPIC[2:] + "60206000a100"
WAIT_S = 30
HEADER_ONLY = ("transactions", "uncles", "withdrawals", "size")
OPTIONAL = ("baseFeePerGas", "withdrawalsRoot", "blobGasUsed", "excessBlobGas", "parentBeaconBlockRoot",
            "requestsHash", "blockAccessListHash", "slotNumber")


class Node:
    def __init__(self, ws):
        self.ws, self.next_id, self.notes = ws, 100, []

    async def call(self, method, params):
        self.next_id += 1
        want = self.next_id
        await self.ws.send(json.dumps({"jsonrpc": "2.0", "id": want, "method": method, "params": params}))
        while True:
            msg = json.loads(await asyncio.wait_for(self.ws.recv(), WAIT_S))
            if msg.get("id") == want:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]
            self.notes.append(msg)

    async def note(self, timeout):
        if self.notes:
            return self.notes.pop(0)
        return json.loads(await asyncio.wait_for(self.ws.recv(), timeout))


async def wait_mined(node, tx_hash):
    deadline = time.time() + WAIT_S
    while time.time() < deadline:
        receipt = await node.call("eth_getTransactionReceipt", [tx_hash])
        if receipt:
            return receipt
        await asyncio.sleep(0.2)
    raise RuntimeError(f"{tx_hash} not mined in {WAIT_S} s")


async def main(url, name):
    Account.enable_unaudited_hdwallet_features()
    sender = Account.from_mnemonic(MNEMONIC, account_path="m/44'/60'/0'/0/0")
    async with websockets.connect(url, max_size=2**24) as ws:
        node = Node(ws)
        if int(await node.call("eth_getBalance", [sender.address, "latest"]), 16) == 0:
            dev = (await node.call("eth_accounts", []))[0]
            funding = await node.call("eth_sendTransaction", [{"from": dev, "to": sender.address, "value": hex(10**20)}])
            await wait_mined(node, funding)
        subs = {}
        for kind, params in [("newHeads", []), ("logs", [{"topics": [TOPIC]}]), ("newPendingTransactions", [])]:
            subs[await node.call("eth_subscribe", [kind] + params)] = kind
        chain_id = int(await node.call("eth_chainId", []), 16)
        nonce = int(await node.call("eth_getTransactionCount", [sender.address, "pending"]), 16)
        tx = {"type": 2, "chainId": chain_id, "nonce": nonce, "to": None, "value": 0, "data": INIT_CODE,
              "gas": 1_000_000, "maxFeePerGas": 10 * 10**9, "maxPriorityFeePerGas": 10**9}
        tx.pop("to")
        raw = sender.sign_transaction(tx).raw_transaction
        tx_hash = await node.call("eth_sendRawTransaction", ["0x" + raw.hex().removeprefix("0x")])
        got = {"newHeads": [], "logs": [], "newPendingTransactions": []}
        mined_block = None
        deadline = time.time() + WAIT_S
        while time.time() < deadline:
            try:
                msg = await node.note(max(0.1, deadline - time.time()))
            except asyncio.TimeoutError:
                break
            params = msg.get("params", {})
            kind = subs.get(params.get("subscription"))
            if msg.get("method") != "eth_subscription" or kind is None:
                continue
            got[kind].append(params["result"])
            logs = [l for l in got["logs"] if l["transactionHash"] == tx_hash]
            if logs and mined_block is None:
                mined_block = logs[0]["blockNumber"]
            heads = [h for h in got["newHeads"] if mined_block and h["number"] == mined_block]
            if tx_hash in got["newPendingTransactions"] and logs and heads:
                break
        failures = []
        if tx_hash not in got["newPendingTransactions"]:
            failures.append(f"no newPendingTransactions notification for {tx_hash}")
        logs = [l for l in got["logs"] if l["transactionHash"] == tx_hash]
        if len(logs) != 1:
            failures.append(f"{len(logs)} log notifications for {tx_hash}, want 1")
        else:
            expected = await node.call("eth_getLogs", [{"blockHash": logs[0]["blockHash"], "topics": [TOPIC]}])
            if [logs[0]] != expected:
                failures.append(f"log notification {logs[0]} differs from eth_getLogs {expected}")
        heads = [h for h in got["newHeads"] if mined_block and h["number"] == mined_block]
        if len(heads) != 1:
            failures.append(f"{len(heads)} newHeads notifications for block {mined_block}, want 1")
        else:
            block = await node.call("eth_getBlockByNumber", [mined_block, False])
            header = {k: v for k, v in block.items() if k not in HEADER_ONLY}
            header.update({k: None for k in OPTIONAL if k not in header})
            if heads[0] != header:
                diff = {k: (heads[0].get(k, "absent"), header.get(k, "absent"))
                        for k in set(heads[0]) | set(header) if heads[0].get(k, "absent") != header.get(k, "absent")}
                failures.append(f"newHeads differs from the block's header (notified, block): {diff}")
        numbers = [int(h["number"], 16) for h in got["newHeads"]]
        if numbers != list(range(numbers[0], numbers[0] + len(numbers))) if numbers else True:
            failures.append(f"newHeads skipped or repeated blocks: {numbers}")
        for sub in subs:
            if await node.call("eth_unsubscribe", [sub]) is not True:
                failures.append(f"eth_unsubscribe {sub} did not answer true")
        if failures:
            print(f"ws-subscriptions {name}: FAILED\n  " + "\n  ".join(failures))
            sys.exit(1)
        print(f"ws-subscriptions {name}: pending hash, log and head of block {int(mined_block, 16)} "
              f"notified as the node answers them ({len(numbers)} heads in a row)")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
