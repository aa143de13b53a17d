"""Building blocks of the Docker-free consume-engine runner (see ../consume_engine.py).

rlp      - RLP encoder/decoder
keccak   - pure-Python keccak256 (tests only: checks BAL hashes)
bal      - EIP-7928 block access list JSON -> RLP
fixtures - fixture discovery, fork schedules, genesis.json
payload  - fixture block -> engine_newPayloadVn call
jwt      - HS256 tokens for the Engine API
rpc      - JSON-RPC over HTTP with timeouts
node     - start/probe/stop one `ethrex node`
runner   - the per-test sequence and its verdict
"""
