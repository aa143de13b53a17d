//! The study's workloads, the state they run on, and the gas charged for them.
//!
//! **State** (`--entries N`): N token holders, each an externally owned account and a
//! balance in an ERC-20 contract (Solidity layout: `balances` at slot 0, `allowances` at
//! slot 1, so every key is Keccak-scattered), plus a synthetic contract holding N
//! consecutive slots `0..N` (the sequential keys). 3N values in all.
//!
//! **Workloads**, each a block of `--txs K` transactions per run, with fresh random keys
//! every run (the same keys for every configuration):
//! - `erc20-balanceof`: `balanceOf(holder)`: reads the holder's balance slot.
//! - `erc20-approve`: `approve(spender, amount)` from a holder: reads the sender's account
//!   and the (new) allowance slot, writes both (nonce + 1 and the fee; the allowance).
//! - `erc20-mixed`: the two alternating.
//! - `sload-seq` / `sstore-seq`: K consecutive slots of the synthetic contract from a
//!   random start, read / overwritten (100 slots per transaction).
//!
//! **Gas** is not measured by executing bytecode: each transaction is charged what the
//! EVM charges for it under the current (Prague/Osaka) schedule, derived below from the
//! schedule's constants, with the Solidity dispatch and ABI overhead estimated (marked
//! "estimate"). The gas of a run is a constant per workload, so Mgas/s ranks the
//! configurations exactly as the time does; only the absolute figure leans on the model.

use alloy_primitives::{keccak256, Address, B256, U256};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Transaction intrinsic gas.
const TX_BASE: u64 = 21_000;
/// EIP-2929 cold SLOAD.
const COLD_SLOAD: u64 = 2_100;
/// EIP-2200/2929: SSTORE of a zero slot to non-zero, cold (20,000 + 2,100).
const SSTORE_SET_COLD: u64 = 22_100;
/// EIP-2200/2929: SSTORE of a non-zero slot to another non-zero value, cold (2,900 + 2,100).
const SSTORE_RESET_COLD: u64 = 5_000;
/// EIP-2028 calldata of `balanceOf(address)`: 4 selector bytes and 20 address bytes at 16,
/// 12 zero bytes at 4.
const BALANCE_OF_CALLDATA: u64 = 24 * 16 + 12 * 4;
/// Calldata of `approve(address,uint256)` with a 4-byte amount: 28 non-zero bytes at 16,
/// 40 zero bytes at 4.
const APPROVE_CALLDATA: u64 = 28 * 16 + 40 * 4;
/// LOG3 (`Approval`) with 32 bytes of data: 375 + 3 x 375 topics + 8 x 32 bytes.
const APPROVAL_LOG: u64 = 375 + 3 * 375 + 8 * 32;
/// Estimate: selector dispatch, ABI decoding, the mapping's Keccak-256, return of a
/// Solidity `balanceOf` (about 530 gas besides the SLOAD).
const BALANCE_OF_OVERHEAD: u64 = 530;
/// Estimate: the same for `approve`, with two mapping hashes and the zero-address checks.
const APPROVE_OVERHEAD: u64 = 700;
/// Per slot of the synthetic loops: PUSH, DUP, ADD, JUMPI and friends (estimate).
const LOOP_OVERHEAD: u64 = 8;
/// Slots per synthetic transaction.
pub const SLOTS_PER_TX: usize = 100;

/// Gas of one `balanceOf` transaction.
pub const BALANCE_OF_GAS: u64 = TX_BASE + BALANCE_OF_CALLDATA + COLD_SLOAD + BALANCE_OF_OVERHEAD;
/// Gas of one first-time `approve` (allowance zero to non-zero).
pub const APPROVE_GAS: u64 =
    TX_BASE + APPROVE_CALLDATA + SSTORE_SET_COLD + APPROVAL_LOG + APPROVE_OVERHEAD;
/// Gas of one synthetic transaction reading `SLOTS_PER_TX` slots.
pub const SLOAD_SEQ_TX_GAS: u64 = TX_BASE + SLOTS_PER_TX as u64 * (COLD_SLOAD + LOOP_OVERHEAD);
/// Gas of one synthetic transaction overwriting `SLOTS_PER_TX` non-zero slots.
pub const SSTORE_SEQ_TX_GAS: u64 =
    TX_BASE + SLOTS_PER_TX as u64 * (SSTORE_RESET_COLD + LOOP_OVERHEAD);
/// The fee an `approve` sender pays (balance debit), in wei.
pub const FEE_WEI: u64 = APPROVE_GAS * 1_000_000_000;

/// The ERC-20 contract.
pub const TOKEN: Address = Address::new([0x70; 20]);
/// The synthetic contract with sequential slots.
pub const SEQ: Address = Address::new([0x5e; 20]);

/// One of the study's workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Workload {
    /// `balanceOf`: reads.
    Erc20BalanceOf,
    /// `approve`: writes.
    Erc20Approve,
    /// The two alternating.
    Erc20Mixed,
    /// Sequential reads.
    SloadSeq,
    /// Sequential writes.
    SstoreSeq,
}

impl Workload {
    /// Every workload, in the order they run.
    pub const ALL: [Workload; 5] = [
        Workload::Erc20BalanceOf,
        Workload::Erc20Approve,
        Workload::Erc20Mixed,
        Workload::SloadSeq,
        Workload::SstoreSeq,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Erc20BalanceOf => "erc20-balanceof",
            Workload::Erc20Approve => "erc20-approve",
            Workload::Erc20Mixed => "erc20-mixed",
            Workload::SloadSeq => "sload-seq",
            Workload::SstoreSeq => "sstore-seq",
        }
    }

    /// Whether the workload writes.
    pub fn writes(self) -> bool {
        !matches!(self, Workload::Erc20BalanceOf | Workload::SloadSeq)
    }

    /// Gas charged for a run of `txs` (for the synthetic ones: `txs` slots).
    pub fn gas(self, txs: usize) -> u64 {
        let txs = txs as u64;
        let synthetic_txs = txs.div_ceil(SLOTS_PER_TX as u64);
        match self {
            Workload::Erc20BalanceOf => txs * BALANCE_OF_GAS,
            Workload::Erc20Approve => txs * APPROVE_GAS,
            Workload::Erc20Mixed => txs.div_ceil(2) * BALANCE_OF_GAS + txs / 2 * APPROVE_GAS,
            Workload::SloadSeq => synthetic_txs * TX_BASE + txs * (COLD_SLOAD + LOOP_OVERHEAD),
            Workload::SstoreSeq => {
                synthetic_txs * TX_BASE + txs * (SSTORE_RESET_COLD + LOOP_OVERHEAD)
            }
        }
    }
}

impl std::str::FromStr for Workload {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Workload::ALL.into_iter().find(|w| w.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Workload::ALL.iter().map(|w| w.name()).collect();
            format!("unknown workload '{s}' (expected one of {})", names.join(", "))
        })
    }
}

/// Holder `i`'s address.
pub fn holder(i: u64) -> Address {
    let mut seed = *b"trie-bench holder\0\0\0\0\0\0\0\0";
    seed[17..].copy_from_slice(&i.to_be_bytes());
    Address::from_slice(&keccak256(seed)[12..])
}

/// Holder `i`'s nonce and balance in the prefilled state.
pub fn holder_account(i: u64) -> (u64, U256) {
    (i % 7 + 1, U256::from(10u128.pow(18) + u128::from(i) * 1_000_003))
}

/// Holder `i`'s token balance in the prefilled state (never zero).
pub fn holder_tokens(i: u64) -> U256 {
    U256::from(1_000 + i * 13)
}

/// The value of synthetic slot `s` in the prefilled state (never zero).
pub fn seq_value(s: u64) -> U256 {
    U256::from(s + 1)
}

/// Solidity's slot of `mapping(address => _)` at `base`, key `key`.
fn mapping_slot(key: &[u8; 32], base: U256) -> U256 {
    let mut buf = [0u8; 64];
    buf[..32].copy_from_slice(key);
    buf[32..].copy_from_slice(&base.to_be_bytes::<32>());
    U256::from_be_bytes(keccak256(buf).0)
}

/// `balances[holder]` (slot 0).
pub fn balance_slot(holder: &Address) -> U256 {
    mapping_slot(&B256::left_padding_from(holder.as_slice()).0, U256::ZERO)
}

/// `allowances[owner][spender]` (slot 1).
pub fn allowance_slot(owner: &Address, spender: &Address) -> U256 {
    let inner = mapping_slot(&B256::left_padding_from(owner.as_slice()).0, U256::from(1));
    mapping_slot(&B256::left_padding_from(spender.as_slice()).0, inner)
}

/// The token's runtime code: 2,400 deterministic bytes (an ERC-20's typical size), only
/// written into the state (code is not read by the workloads).
pub fn token_code() -> Vec<u8> {
    (0..2_400u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect()
}

/// The synthetic contract's code (a stub).
pub fn seq_code() -> Vec<u8> {
    vec![0x60, 0x00, 0x54, 0x00]
}

/// One transaction of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tx {
    /// Read `balances[holder]`.
    BalanceOf {
        /// The holder index.
        holder: u64,
    },
    /// Set `allowances[owner][spender] = amount` from `owner`.
    Approve {
        /// The sender (holder index).
        owner: u64,
        /// The spender (holder index).
        spender: u64,
        /// The new allowance (non-zero).
        amount: U256,
    },
    /// Read synthetic slot `slot`.
    Sload {
        /// The slot.
        slot: u64,
    },
    /// Write synthetic slot `slot`.
    Sstore {
        /// The slot.
        slot: u64,
        /// The new value (non-zero).
        value: U256,
    },
}

/// The transactions of run `run` of `workload` over `entries` holders: `txs` of them
/// (synthetic: `txs` slot operations), the same for every configuration.
pub fn transactions(
    workload: Workload,
    run: usize,
    txs: usize,
    entries: u64,
    seed: u64,
) -> Vec<Tx> {
    let mut rng = ChaCha8Rng::seed_from_u64(
        seed ^ (workload as u64) << 48 ^ (run as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
    );
    let approve = |rng: &mut ChaCha8Rng| Tx::Approve {
        owner: rng.random_range(0..entries),
        spender: rng.random_range(0..entries),
        // A fresh amount each run keeps writes changing values.
        amount: U256::from(rng.random_range(1u64..u32::MAX as u64)),
    };
    match workload {
        Workload::Erc20BalanceOf => {
            (0..txs).map(|_| Tx::BalanceOf { holder: rng.random_range(0..entries) }).collect()
        }
        Workload::Erc20Approve => (0..txs).map(|_| approve(&mut rng)).collect(),
        Workload::Erc20Mixed => (0..txs)
            .map(|i| {
                if i % 2 == 0 {
                    Tx::BalanceOf { holder: rng.random_range(0..entries) }
                } else {
                    approve(&mut rng)
                }
            })
            .collect(),
        Workload::SloadSeq | Workload::SstoreSeq => {
            let span = (txs as u64).min(entries);
            let start = rng.random_range(0..=entries - span);
            (start..start + span)
                .map(|slot| {
                    if workload == Workload::SloadSeq {
                        Tx::Sload { slot }
                    } else {
                        Tx::Sstore { slot, value: U256::from(rng.random_range(1u64..u64::MAX)) }
                    }
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gas_follows_the_schedule() {
        assert_eq!(BALANCE_OF_GAS, 21_000 + 432 + 2_100 + 530);
        assert_eq!(APPROVE_GAS, 21_000 + 608 + 22_100 + 1_756 + 700);
        assert_eq!(Workload::Erc20Mixed.gas(4), 2 * BALANCE_OF_GAS + 2 * APPROVE_GAS);
        assert_eq!(Workload::SloadSeq.gas(200), 2 * 21_000 + 200 * 2_108);
        assert_eq!(Workload::SstoreSeq.gas(150), 2 * 21_000 + 150 * 5_008);
    }

    #[test]
    fn names_parse_and_unknown_ones_are_refused() {
        for w in Workload::ALL {
            assert_eq!(w.name().parse::<Workload>(), Ok(w));
        }
        let err = "erc20-transfer".parse::<Workload>().unwrap_err();
        assert!(err.contains("unknown workload 'erc20-transfer'"), "{err}");
        assert!(err.contains("sload-seq"), "{err}");
    }

    #[test]
    fn solidity_mapping_slots() {
        // balances[0x00..01] at slot 0: keccak256(pad32(1) ++ pad32(0)).
        let one = Address::with_last_byte(1);
        let mut buf = [0u8; 64];
        buf[31] = 1;
        assert_eq!(balance_slot(&one), U256::from_be_bytes(keccak256(buf).0));
        assert_ne!(allowance_slot(&one, &holder(2)), allowance_slot(&holder(2), &one));
    }

    #[test]
    fn runs_are_deterministic_and_differ_between_runs() {
        let a = transactions(Workload::Erc20Mixed, 3, 50, 1_000, 7);
        assert_eq!(a, transactions(Workload::Erc20Mixed, 3, 50, 1_000, 7));
        assert_ne!(a, transactions(Workload::Erc20Mixed, 4, 50, 1_000, 7));
        assert!(matches!(a[0], Tx::BalanceOf { .. }) && matches!(a[1], Tx::Approve { .. }));
        let seq = transactions(Workload::SloadSeq, 1, 300, 1_000, 7);
        assert_eq!(seq.len(), 300);
        let Tx::Sload { slot: first } = seq[0] else { panic!() };
        assert!(seq.iter().enumerate().all(|(i, t)| *t == Tx::Sload { slot: first + i as u64 }));
        assert!(first + 300 <= 1_000);
    }
}
