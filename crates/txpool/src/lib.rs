//! The transaction pool: what a node holds of the transactions it was sent, until a block
//! includes them.
//!
//! - `validate`: the checks on entry, against the head's next block and the sender's
//!   account (geth's rules and error strings);
//! - `pool`: transactions by hash and by sender and nonce, pending (gapless from the
//!   account nonce) or queued, replacement by price bump, limits and eviction of the
//!   cheapest, and the clean-up on a new head (`on_new_head`);
//! - `best`: the pending transactions best first, for the block builder;
//! - `config`, `error`: limits and prices; why a transaction was refused.
//!
//! Blob transactions are refused: the blob pool (sidecars, KZG checks) is not built yet.

mod best;
mod config;
mod error;
mod pool;
mod validate;

pub use best::BestTransactions;
pub use config::PoolConfig;
pub use error::{Added, PoolError};
pub use pool::{Content, PooledTx, TxPool};
pub use validate::{effective_tip, max_cost, Account, AccountSource, Head};
