//! The chain generator, for the tests and for the bench.
//!
//! One block-building core and two transaction sources:
//! - the core: deterministic keys and signing (`keys`), a genesis from an allocation with
//!   the system contracts (`genesis`), and a builder chain that builds each block from a
//!   list of transactions with the client's own `Blockchain::build_block` (BAL included
//!   from Amsterdam) and imports it, so the next block builds on it (`builder`);
//! - `mainnet`: the bench's deterministic, mainnet-shaped mix (the stress fixture's
//!   transactions: tokens, AMM pools, NFTs, factories, blobs, EIP-7702 delegations);
//! - `forks`: a chain across every fork from Frontier (proof of work with ommers, the
//!   merge, every timestamp fork, reorgs), checked against geth by bench/geth-diff-forks.sh;
//! - `adversarial`: the tests' random mix over hand-assembled contracts aimed at the
//!   corners of parallel execution (shared counters, balance dependencies, reverts,
//!   CREATE2 collisions, selfdestructs, delegations), with a `Model` of the state the
//!   chain must end in and the snapshots the differential tests compare.

pub mod adversarial;
pub mod builder;
pub mod forks;
pub mod genesis;
pub mod keys;
pub mod mainnet;

pub use builder::ChainBuilder;
