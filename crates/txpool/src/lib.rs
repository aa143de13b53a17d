//! The transaction pool: what a node holds of the transactions it was sent, until a block
//! includes them.
//!
//! - `validate`: the checks on entry, against the head's next block and the sender's
//!   account (geth's rules and error strings);
//! - `pool`: transactions by hash and by sender and nonce, pending (gapless from the
//!   account nonce) or queued, replacement by price bump, limits and eviction of the
//!   cheapest, and the clean-up on a new head (`on_new_head`);
//! - `best`: the pending transactions best first, for the block builder;
//! - `blobs`: a blob transaction's sidecar rules (format by fork, versioned hashes, KZG);
//! - `blob_store`: the sidecars, on disk with a memory cap, by transaction and by
//!   versioned hash (what `engine_getBlobs*` reads);
//! - `config`, `error`: limits and prices; why a transaction was refused.
//!
//! Blob transactions live beside the others with stricter rules (geth's blobpool): no
//! nonce gaps, a 100% price bump that includes the blob fee cap, 16 per sender, a sender
//! holds blob or non-blob transactions, not both, and their sidecars count against a
//! separate byte cap.

mod best;
mod blob_store;
mod blobs;
mod config;
mod error;
mod pool;
mod validate;

pub use best::BestTransactions;
pub use blob_store::BlobStore;
pub use blobs::{split_sidecar, warm_kzg, with_sidecar, Sidecar};
pub use config::PoolConfig;
pub use error::{Added, PoolError};
pub use pool::{decode_network, Content, PooledTx, TxPool};
pub use validate::{blob_count, effective_tip, max_cost, Account, AccountSource, Head};
