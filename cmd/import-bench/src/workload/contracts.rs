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
//! `workload::tests` checks them against the compiled code by running blocks (pool
//! reserves equal the pools' token balances, the router keeps its dust, counters advance).

use alloy_primitives::{hex, keccak256, Address, Bytes, B256, U256};
use std::sync::LazyLock;

fn code(hex_text: &str) -> Bytes {
    Bytes::from(hex::decode(hex_text.trim()).expect("contracts/out holds valid hex"))
}

pub static TOKEN_RUNTIME: LazyLock<Bytes> = LazyLock::new(|| code(include_str!("../../contracts/out/Token.bin-runtime")));
/// Creation code; the constructor takes `uint256 supply` (ABI-encoded after the code).
pub static TOKEN_CREATION: LazyLock<Bytes> = LazyLock::new(|| code(include_str!("../../contracts/out/Token.bin")));
pub static POOL_RUNTIME: LazyLock<Bytes> = LazyLock::new(|| code(include_str!("../../contracts/out/Pool.bin-runtime")));
pub static ROUTER_RUNTIME: LazyLock<Bytes> = LazyLock::new(|| code(include_str!("../../contracts/out/Router.bin-runtime")));
pub static NFT_RUNTIME: LazyLock<Bytes> = LazyLock::new(|| code(include_str!("../../contracts/out/Nft.bin-runtime")));
pub static FACTORY_RUNTIME: LazyLock<Bytes> = LazyLock::new(|| code(include_str!("../../contracts/out/Factory.bin-runtime")));
/// Creation code; the constructor takes `uint256 v`.
pub static CHILD_CREATION: LazyLock<Bytes> = LazyLock::new(|| code(include_str!("../../contracts/out/Child.bin")));
pub static CHILD_RUNTIME: LazyLock<Bytes> = LazyLock::new(|| code(include_str!("../../contracts/out/Child.bin-runtime")));
pub static WRITER_RUNTIME: LazyLock<Bytes> = LazyLock::new(|| code(include_str!("../../contracts/out/Writer.bin-runtime")));
pub static BURNER_RUNTIME: LazyLock<Bytes> = LazyLock::new(|| code(include_str!("../../contracts/out/Burner.bin-runtime")));
pub static DELEGATE_RUNTIME: LazyLock<Bytes> = LazyLock::new(|| code(include_str!("../../contracts/out/Delegate.bin-runtime")));

/// Number of ERC-20 tokens and AMM pools.
pub const TOKENS: usize = 8;
/// (token0, token1) indices of each pool; pool 0 (the hottest) trades the two most popular
/// tokens, as the biggest mainnet pools do.
pub const POOL_PAIRS: [(usize, usize); 3] = [(0, 1), (0, 2), (1, 3)];
/// Two-hop router paths (poolA, zeroForOneA, poolB, zeroForOneB): the output token of the
/// first hop is the input of the second. All go through the hot pool 0.
pub const ROUTER_PATHS: [(usize, bool, usize, bool); 4] = [
    (0, false, 1, true), // T1 -> T0 -> T2
    (1, false, 0, true), // T2 -> T0 -> T1
    (0, true, 2, true),  // T0 -> T1 -> T3
    (2, false, 0, false), // T3 -> T1 -> T0
];
/// Writer slots 0 .. WRITER_PREFILLED-1 exist at genesis (overwrite batches land there).
pub const WRITER_PREFILLED: u64 = 4096;
/// Fresh writer batches start here and move up, never touching a slot twice.
pub const WRITER_FRESH_BASE: u64 = 1 << 32;

/// Fixed contract addresses: independent of the seed, so logs and traces of different
/// fixtures read alike. Derived from labels so they look like ordinary addresses.
fn fixed(label: &str, index: u64) -> Address {
    super::accounts::derive_address(0, label, index)
}

#[derive(Debug, Clone)]
pub struct Addresses {
    pub tokens: Vec<Address>,
    pub pools: Vec<Address>,
    pub router: Address,
    pub nft: Address,
    pub factory: Address,
    pub writer: Address,
    pub burner: Address,
    pub delegate: Address,
    /// Rollup-style target of blob transactions (an account without code).
    pub blob_inbox: Address,
}

impl Addresses {
    pub fn new() -> Self {
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
pub fn mapping_slot(key: B256, slot: U256) -> U256 {
    let mut buf = [0u8; 64];
    buf[..32].copy_from_slice(key.as_slice());
    buf[32..].copy_from_slice(&slot.to_be_bytes::<32>());
    U256::from_be_bytes(keccak256(buf).0)
}

pub fn token_balance_slot(holder: Address) -> U256 {
    mapping_slot(holder.into_word(), U256::from(0))
}

pub fn token_allowance_slot(owner: Address, spender: Address) -> U256 {
    mapping_slot(spender.into_word(), mapping_slot(owner.into_word(), U256::from(1)))
}

pub fn nft_owner_slot(id: u64) -> U256 {
    mapping_slot(word_u64(id), U256::from(1))
}

pub const TOKEN_TOTAL_SUPPLY_SLOT: u64 = 2;
pub const POOL_TOKEN0_SLOT: u64 = 0;
pub const POOL_TOKEN1_SLOT: u64 = 1;
pub const POOL_RESERVE0_SLOT: u64 = 2;
pub const POOL_RESERVE1_SLOT: u64 = 3;
pub const NFT_TOTAL_MINTED_SLOT: u64 = 0;
pub const BURNER_LAST_SLOT: u64 = 0;
pub const DELEGATE_PINGS_SLOT: u64 = 0;

// ---- calldata ----

pub fn selector(signature: &str) -> [u8; 4] {
    keccak256(signature.as_bytes())[..4].try_into().unwrap()
}

/// ABI-encodes a call of `signature` with static (one-word) arguments.
pub fn call(signature: &str, words: &[B256]) -> Bytes {
    let mut data = Vec::with_capacity(4 + 32 * words.len());
    data.extend_from_slice(&selector(signature));
    for w in words {
        data.extend_from_slice(w.as_slice());
    }
    data.into()
}

pub fn word_u256(v: U256) -> B256 {
    B256::from(v.to_be_bytes::<32>())
}

pub fn word_u64(v: u64) -> B256 {
    word_u256(U256::from(v))
}

pub fn word_addr(a: Address) -> B256 {
    a.into_word()
}

pub fn word_bool(b: bool) -> B256 {
    word_u64(b as u64)
}

pub fn token_transfer(to: Address, amount: U256) -> Bytes {
    call("transfer(address,uint256)", &[word_addr(to), word_u256(amount)])
}

pub fn pool_swap(zero_for_one: bool, amount_in: U256, min_out: U256) -> Bytes {
    call("swap(bool,uint256,uint256)", &[word_bool(zero_for_one), word_u256(amount_in), word_u256(min_out)])
}

pub fn router_swap2(pool_a: Address, zero_for_one_a: bool, pool_b: Address, zero_for_one_b: bool, amount_in: U256) -> Bytes {
    call(
        "swap2(address,bool,address,bool,uint256,uint256)",
        &[word_addr(pool_a), word_bool(zero_for_one_a), word_addr(pool_b), word_bool(zero_for_one_b), word_u256(amount_in), B256::ZERO],
    )
}

pub fn nft_mint(count: u64) -> Bytes {
    call("mint(uint256)", &[word_u64(count)])
}

pub fn factory_deploy(v: u64) -> Bytes {
    call("deploy(uint256)", &[word_u64(v)])
}

pub fn factory_deploy2(salt: B256, v: u64) -> Bytes {
    call("deploy2(bytes32,uint256)", &[salt, word_u64(v)])
}

pub fn writer_write(start: u64, n: u64, seed: u64) -> Bytes {
    call("write(uint256,uint256,uint256)", &[word_u64(start), word_u64(n), word_u64(seed)])
}

pub fn burner_burn(rounds: u64) -> Bytes {
    call("burn(uint256)", &[word_u64(rounds)])
}

pub fn delegate_ping() -> Bytes {
    call("ping()", &[])
}

pub fn delegate_forward(token: Address, to: Address, amount: U256) -> Bytes {
    call("forward(address,address,uint256)", &[word_addr(token), word_addr(to), word_u256(amount)])
}

/// Creation transaction input: creation code followed by one ABI-encoded uint256
/// constructor argument.
pub fn creation_with_arg(creation: &Bytes, arg: U256) -> Bytes {
    let mut data = creation.to_vec();
    data.extend_from_slice(&arg.to_be_bytes::<32>());
    data.into()
}
