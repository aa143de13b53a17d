//! The workload's contracts: compiled bytecode (from `contracts/out`, rebuilt by
//! `contracts/build.sh` from `contracts/src/*.sol`), their fixed addresses, their storage
//! layouts (so the genesis allocation can write balances, reserves and allowances
//! directly) and calldata encoders.
//!
//! Storage layouts, as solc lays out the sources (mapping value at
//! keccak256(pad32(key) ++ pad32(slot))):
//!   Token:   0 balanceOf[address], 1 allowance[owner][spender], 2 totalSupply
//!   Pool:    0 token0, 1 token1, 2 reserve0, 3 reserve1
//!   Router:  no storage (holds dust token balances and allowances in the tokens)
//!   Nft:     0 totalMinted, 1 ownerOf[uint256], 2 balanceOf[address]
//!   Factory: 0 deployed
//!   Writer:  raw slots (write(start, n, seed) sets slot start+i to seed+i)
//!   Burner:  0 last
//!   Delegate (runs in the delegating EOA's storage): 0 pings
//!   SloadRandom (hand-written, `SLOAD_RANDOM_RUNTIME`): the state filler's slots, the
//!           entries of a mapping(address => uint256) at slot 0 (as Token's balanceOf)
//! `workload::tests` checks them against the compiled code by running blocks (pool
//! reserves equal the pools' token balances, the router keeps its dust, counters advance).

use alloy_primitives::{hex, keccak256, Address, Bytes, B256, U256};
use std::sync::LazyLock;

fn code(hex_text: &str) -> Bytes {
    Bytes::from(hex::decode(hex_text.trim()).expect("contracts/out holds valid hex"))
}

pub(crate) static TOKEN_RUNTIME: LazyLock<Bytes> =
    LazyLock::new(|| code(include_str!("../../contracts/out/Token.bin-runtime")));
/// Creation code; the constructor takes `uint256 supply` (ABI-encoded after the code).
pub(crate) static TOKEN_CREATION: LazyLock<Bytes> =
    LazyLock::new(|| code(include_str!("../../contracts/out/Token.bin")));
pub(crate) static POOL_RUNTIME: LazyLock<Bytes> =
    LazyLock::new(|| code(include_str!("../../contracts/out/Pool.bin-runtime")));
pub(crate) static ROUTER_RUNTIME: LazyLock<Bytes> =
    LazyLock::new(|| code(include_str!("../../contracts/out/Router.bin-runtime")));
pub(crate) static NFT_RUNTIME: LazyLock<Bytes> =
    LazyLock::new(|| code(include_str!("../../contracts/out/Nft.bin-runtime")));
pub(crate) static FACTORY_RUNTIME: LazyLock<Bytes> =
    LazyLock::new(|| code(include_str!("../../contracts/out/Factory.bin-runtime")));
/// Creation code; the constructor takes `uint256 v`.
pub(crate) static CHILD_CREATION: LazyLock<Bytes> =
    LazyLock::new(|| code(include_str!("../../contracts/out/Child.bin")));
pub(crate) static CHILD_RUNTIME: LazyLock<Bytes> =
    LazyLock::new(|| code(include_str!("../../contracts/out/Child.bin-runtime")));
pub(crate) static WRITER_RUNTIME: LazyLock<Bytes> =
    LazyLock::new(|| code(include_str!("../../contracts/out/Writer.bin-runtime")));
pub(crate) static BURNER_RUNTIME: LazyLock<Bytes> =
    LazyLock::new(|| code(include_str!("../../contracts/out/Burner.bin-runtime")));
pub(crate) static DELEGATE_RUNTIME: LazyLock<Bytes> =
    LazyLock::new(|| code(include_str!("../../contracts/out/Delegate.bin-runtime")));

/// Number of ERC-20 tokens and AMM pools.
pub(crate) const TOKENS: usize = 8;
/// (token0, token1) indices of each pool; pool 0 (the hottest) trades the two most popular
/// tokens, as the biggest mainnet pools do.
pub(crate) const POOL_PAIRS: [(usize, usize); 3] = [(0, 1), (0, 2), (1, 3)];
/// Two-hop router paths (poolA, zeroForOneA, poolB, zeroForOneB): the output token of the
/// first hop is the input of the second. All go through the hot pool 0.
pub(crate) const ROUTER_PATHS: [(usize, bool, usize, bool); 4] = [
    (0, false, 1, true),  // T1 -> T0 -> T2
    (1, false, 0, true),  // T2 -> T0 -> T1
    (0, true, 2, true),   // T0 -> T1 -> T3
    (2, false, 0, false), // T3 -> T1 -> T0
];
/// Writer slots 0 .. WRITER_PREFILLED-1 exist at genesis (overwrite batches land there).
pub(crate) const WRITER_PREFILLED: u64 = 4096;
/// Fresh writer batches start here and move up, never touching a slot twice.
pub(crate) const WRITER_FRESH_BASE: u64 = 1 << 32;

/// Fixed contract addresses: independent of the seed, so logs and traces of different
/// fixtures read alike. Derived from labels so they look like ordinary addresses.
fn fixed(label: &str, index: u64) -> Address {
    crate::keys::derive_address(0, label, index)
}

#[derive(Debug, Clone)]
pub(crate) struct Addresses {
    pub(crate) tokens: Vec<Address>,
    pub(crate) pools: Vec<Address>,
    pub(crate) router: Address,
    pub(crate) nft: Address,
    pub(crate) factory: Address,
    pub(crate) writer: Address,
    pub(crate) burner: Address,
    pub(crate) delegate: Address,
    /// Rollup-style target of blob transactions (an account without code).
    pub(crate) blob_inbox: Address,
    /// A contract that self-destructs to its caller (`CALLER SELFDESTRUCT`); created at
    /// genesis, so EIP-6780 only moves its balance.
    pub(crate) destructor: Address,
    /// The hand-written contract reading random filler slots (`SLOAD_RANDOM_RUNTIME`);
    /// in the genesis only with a state filler.
    pub(crate) sload_random: Address,
}

impl Addresses {
    pub(crate) fn new() -> Self {
        Self {
            tokens: (0..TOKENS as u64).map(|i| fixed("import-bench/token", i)).collect(),
            pools: (0..POOL_PAIRS.len() as u64).map(|i| fixed("import-bench/pool", i)).collect(),
            router: fixed("import-bench/router", 0),
            nft: fixed("import-bench/nft", 0),
            factory: fixed("import-bench/factory", 0),
            writer: fixed("import-bench/writer", 0),
            burner: fixed("import-bench/burner", 0),
            delegate: fixed("import-bench/delegate", 0),
            blob_inbox: fixed("import-bench/blob-inbox", 0),
            destructor: fixed("import-bench/destructor", 0),
            sload_random: fixed("import-bench/sload-random", 0),
        }
    }
}

impl Default for Addresses {
    fn default() -> Self {
        Self::new()
    }
}

/// Slot of `mapping[key]` for a mapping whose own slot is `slot` (for nested mappings,
/// `slot` is the outer mapping's value slot).
pub(crate) fn mapping_slot(key: B256, slot: U256) -> U256 {
    let mut buf = [0u8; 64];
    buf[..32].copy_from_slice(key.as_slice());
    buf[32..].copy_from_slice(&slot.to_be_bytes::<32>());
    U256::from_be_bytes(keccak256(buf).0)
}

pub(crate) fn token_balance_slot(holder: Address) -> U256 {
    mapping_slot(holder.into_word(), U256::from(0))
}

pub(crate) fn token_allowance_slot(owner: Address, spender: Address) -> U256 {
    mapping_slot(spender.into_word(), mapping_slot(owner.into_word(), U256::from(1)))
}

#[cfg(test)]
pub(crate) fn nft_owner_slot(id: u64) -> U256 {
    mapping_slot(word_u64(id), U256::from(1))
}

pub(crate) const TOKEN_TOTAL_SUPPLY_SLOT: u64 = 2;
pub(crate) const POOL_TOKEN0_SLOT: u64 = 0;
pub(crate) const POOL_TOKEN1_SLOT: u64 = 1;
pub(crate) const POOL_RESERVE0_SLOT: u64 = 2;
pub(crate) const POOL_RESERVE1_SLOT: u64 = 3;
pub(crate) const NFT_TOTAL_MINTED_SLOT: u64 = 0;
pub(crate) const BURNER_LAST_SLOT: u64 = 0;

// ---- calldata ----

pub(crate) fn selector(signature: &str) -> [u8; 4] {
    keccak256(signature.as_bytes())[..4].try_into().unwrap()
}

/// ABI-encodes a call of `signature` with static (one-word) arguments.
pub(crate) fn call(signature: &str, words: &[B256]) -> Bytes {
    let mut data = Vec::with_capacity(4 + 32 * words.len());
    data.extend_from_slice(&selector(signature));
    for w in words {
        data.extend_from_slice(w.as_slice());
    }
    data.into()
}

pub(crate) fn word_u256(v: U256) -> B256 {
    B256::from(v.to_be_bytes::<32>())
}

pub(crate) fn word_u64(v: u64) -> B256 {
    word_u256(U256::from(v))
}

pub(crate) fn word_addr(a: Address) -> B256 {
    a.into_word()
}

pub(crate) fn word_bool(b: bool) -> B256 {
    word_u64(b as u64)
}

pub(crate) fn token_transfer(to: Address, amount: U256) -> Bytes {
    call("transfer(address,uint256)", &[word_addr(to), word_u256(amount)])
}

pub(crate) fn pool_swap(zero_for_one: bool, amount_in: U256, min_out: U256) -> Bytes {
    call(
        "swap(bool,uint256,uint256)",
        &[word_bool(zero_for_one), word_u256(amount_in), word_u256(min_out)],
    )
}

pub(crate) fn router_swap2(
    pool_a: Address,
    zero_for_one_a: bool,
    pool_b: Address,
    zero_for_one_b: bool,
    amount_in: U256,
) -> Bytes {
    call(
        "swap2(address,bool,address,bool,uint256,uint256)",
        &[
            word_addr(pool_a),
            word_bool(zero_for_one_a),
            word_addr(pool_b),
            word_bool(zero_for_one_b),
            word_u256(amount_in),
            B256::ZERO,
        ],
    )
}

pub(crate) fn nft_mint(count: u64) -> Bytes {
    call("mint(uint256)", &[word_u64(count)])
}

pub(crate) fn factory_deploy(v: u64) -> Bytes {
    call("deploy(uint256)", &[word_u64(v)])
}

pub(crate) fn factory_deploy2(salt: B256, v: u64) -> Bytes {
    call("deploy2(bytes32,uint256)", &[salt, word_u64(v)])
}

pub(crate) fn writer_write(start: u64, n: u64, seed: u64) -> Bytes {
    call("write(uint256,uint256,uint256)", &[word_u64(start), word_u64(n), word_u64(seed)])
}

pub(crate) fn burner_burn(rounds: u64) -> Bytes {
    call("burn(uint256)", &[word_u64(rounds)])
}

pub(crate) fn delegate_ping() -> Bytes {
    call("ping()", &[])
}

pub(crate) fn delegate_forward(token: Address, to: Address, amount: U256) -> Bytes {
    call("forward(address,address,uint256)", &[word_addr(token), word_addr(to), word_u256(amount)])
}

/// Creation transaction input: creation code followed by one ABI-encoded uint256
/// constructor argument.
pub(crate) fn creation_with_arg(creation: &Bytes, arg: U256) -> Bytes {
    let mut data = creation.to_vec();
    data.extend_from_slice(&arg.to_be_bytes::<32>());
    data.into()
}

/// `CALLER SELFDESTRUCT`: as runtime code it sends the contract's balance to its caller; as
/// init code the new contract is created and destroyed in the same transaction (EIP-6780).
pub(crate) const SELFDESTRUCT_TO_CALLER: [u8; 2] = [0x33, 0xff];

// ---- the I/O worst case: random reads of filled storage ----

/// Reads `n` of the state filler's slots of its own storage (see
/// `ethrex_state_filler`) and nothing else; written by hand. Calldata is five raw
/// words (no selector): `prefix, start, stride, n, m`. Read `i` (0-based) is filler key
/// `j = (start + i * stride) mod m`, i.e. the slot `keccak256(pad32(a) ++ pad32(0))` of
/// address `a = low 20 bytes of keccak256(prefix ++ pad32(j))`: the contract recomputes
/// `StateFiller::slot(k, j)` from `prefix = StateFiller::account_prefix()`. With `stride`
/// coprime to `m` and `n <= m` the `n` keys are distinct, so every read is cold. The
/// values are discarded; the contract never reverts, and stops at once for `n = 0`.
///
/// ```text
///  0 PUSH0 CALLDATALOAD PUSH0 MSTORE      mem[0..32] = prefix
///  4 PUSH1 0x80 CALLDATALOAD              m
///  7 PUSH1 0x40 CALLDATALOAD              m stride
/// 10 PUSH1 0x20 CALLDATALOAD              m stride j
/// 13 PUSH1 0x60 CALLDATALOAD              m stride j n
/// 16 DUP1 ISZERO PUSH2 62 JUMPI           n = 0: done
/// 22 JUMPDEST                             loop:
/// 23 DUP2 PUSH1 0x20 MSTORE               mem[32..64] = j
/// 27 PUSH1 0x40 PUSH0 KECCAK256           h = keccak256(prefix ++ j)
/// 31 PUSH1 0x60 SHL PUSH1 0x60 SHR        a = h mod 2^160
/// 37 PUSH1 0x40 MSTORE                    mem[64..96] = a (mem[96..128] stays 0)
/// 40 PUSH1 0x40 PUSH1 0x40 KECCAK256      slot = keccak256(pad32(a) ++ pad32(0))
/// 45 SLOAD POP
/// 47 DUP4 DUP4 DUP4 ADDMOD SWAP2 POP      j = (j + stride) mod m
/// 53 PUSH1 1 SWAP1 SUB                    n = n - 1
/// 57 DUP1 PUSH2 22 JUMPI                  n != 0: loop
/// 62 JUMPDEST STOP
/// ```
pub(crate) static SLOAD_RANDOM_RUNTIME: LazyLock<Bytes> = LazyLock::new(|| {
    #[rustfmt::skip]
    let code: [u8; 64] = [
        0x5f, 0x35, 0x5f, 0x52,
        0x60, 0x80, 0x35,
        0x60, 0x40, 0x35,
        0x60, 0x20, 0x35,
        0x60, 0x60, 0x35,
        0x80, 0x15, 0x61, 0x00, 62, 0x57,
        0x5b,
        0x81, 0x60, 0x20, 0x52,
        0x60, 0x40, 0x5f, 0x20,
        0x60, 0x60, 0x1b, 0x60, 0x60, 0x1c,
        0x60, 0x40, 0x52,
        0x60, 0x40, 0x60, 0x40, 0x20,
        0x54, 0x50,
        0x83, 0x83, 0x83, 0x08, 0x91, 0x50,
        0x60, 0x01, 0x90, 0x03,
        0x80, 0x61, 0x00, 22, 0x57,
        0x5b, 0x00,
    ];
    Bytes::copy_from_slice(&code)
});

/// Gas of one iteration of SloadRandom's loop, counted from the code above: 2,100 for
/// the cold SLOAD (EIP-2929; EIP-8038 keeps it at 2,100 in total), 84 for the two
/// 64-byte KECCAK256s, 88 for the other 26 opcodes. Recount after changing the code
/// (`workload::tests` checks it against executed transactions to the gas).
pub(crate) const SLOAD_RANDOM_GAS_PER_READ: u64 = 2_272;
/// Gas of SloadRandom outside the loop: the calldata loads, the n = 0 check, the final
/// JUMPDEST and 4 words of memory.
pub(crate) const SLOAD_RANDOM_SETUP_GAS: u64 = 66;

/// Calldata of a SloadRandom call (see `SLOAD_RANDOM_RUNTIME`).
pub(crate) fn sload_random(prefix: B256, start: u64, stride: u64, n: u64, m: u64) -> Bytes {
    let mut data = Vec::with_capacity(5 * 32);
    data.extend_from_slice(prefix.as_slice());
    for w in [start, stride, n, m] {
        data.extend_from_slice(word_u64(w).as_slice());
    }
    data.into()
}
