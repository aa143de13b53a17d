"""web3.py against `ethrex node --dev` (see dev-chain.sh): the standard test mnemonic's
accounts derived by web3.py itself must be the funded ones; type-2 transfers signed by
web3.py and sent with eth_sendRawTransaction back to back (nonces from
eth_getTransactionCount(.., "pending")) must be mined within a few block periods: the
sender's nonce advances and the recipient's balance shows them.
Usage: dev_web3.py URL"""
import sys
import time

from eth_account import Account
from web3 import Web3

MNEMONIC = "test test test test test test test test test test test junk"
WAIT_S = 30  # a deadlock guard: with --dev.period 1 the blocks come every second


def main(url):
    w3 = Web3(Web3.HTTPProvider(url, request_kwargs={"timeout": 10}))
    Account.enable_unaudited_hdwallet_features()
    accounts = [Account.from_mnemonic(MNEMONIC, account_path=f"m/44'/60'/0'/0/{i}") for i in range(20)]
    ether = 10**18
    for acct in accounts:
        balance = w3.eth.get_balance(acct.address)
        assert balance == 10_000 * ether, f"{acct.address} holds {balance}, not 10,000 ether"
    sender, recipient = accounts[0], Web3.to_checksum_address("0x" + "ab" * 20)
    chain_id = w3.eth.chain_id
    start_nonce = w3.eth.get_transaction_count(sender.address, "latest")
    values = [1, 2, 3]
    hashes = []
    for value in values:
        nonce = w3.eth.get_transaction_count(sender.address, "pending")
        tx = {
            "type": 2, "chainId": chain_id, "nonce": nonce, "to": recipient, "value": value,
            # Creating the recipient is charged as state gas from Amsterdam on (EIP-8037:
            # 120 bytes at 1,530 gas each), beyond the 21,000 of a plain transfer.
            "gas": 250_000, "maxFeePerGas": 10 * 10**9, "maxPriorityFeePerGas": 10**9,
        }
        signed = sender.sign_transaction(tx)
        hashes.append(w3.eth.send_raw_transaction(signed.raw_transaction))
    assert w3.eth.get_transaction_count(sender.address, "pending") == start_nonce + 3
    # A replayed transaction is refused in geth's words.
    try:
        w3.eth.send_raw_transaction(signed.raw_transaction)
        resent = None
    except Exception as e:  # web3 7 raises ValueError, web3 8 Web3RPCError
        resent = str(e)
    assert resent and "already known" in resent, f"a resent transaction: {resent}"
    deadline = time.time() + WAIT_S
    while time.time() < deadline:
        if w3.eth.get_transaction_count(sender.address, "latest") == start_nonce + 3:
            break
        time.sleep(0.2)
    mined = w3.eth.get_transaction_count(sender.address, "latest") - start_nonce
    balance = w3.eth.get_balance(recipient)
    assert mined == 3, f"{mined} of 3 transactions mined in {WAIT_S} s"
    assert balance == sum(values), f"recipient holds {balance}, want {sum(values)}"
    head = w3.eth.block_number
    print(f"dev-chain: web3.py derived the 20 funded "
          f"accounts; 3 transfers mined, head block {head}, recipient balance {balance}")


if __name__ == "__main__":
    main(sys.argv[1])
