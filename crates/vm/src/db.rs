//! The store seen as a revm database: the flat state of the parent block, plus block
//! hashes along the parent's chain for BLOCKHASH.

use alloy_primitives::{Address, B256, U256};
use ethrex_storage::{Store, StoreError};
use revm::database_interface::{DBErrorMarker, DatabaseRef};
use revm::state::{AccountInfo, Bytecode};
use std::sync::Arc;

/// Why [`StoreDb`] could not answer a read.
#[derive(Debug, thiserror::Error)]
pub enum StoreDbError {
    /// The store itself failed.
    #[error("store read failed: {0}")]
    Store(#[from] StoreError),
    /// An account's code hash names code the store does not hold.
    #[error("code {0} missing from store")]
    MissingCode(B256),
    /// The store holds code under the hash that revm cannot load (e.g. an EIP-7702
    /// designator, `0xef01..`, of the wrong length or version).
    #[error("code {hash} in the store is malformed: {error}")]
    MalformedCode {
        /// The code's hash.
        hash: B256,
        /// Why revm rejects it.
        #[source]
        error: revm::bytecode::BytecodeDecodeError,
    },
    /// A header on the parent's chain, needed for BLOCKHASH, is missing.
    #[error("ancestor header {0} missing")]
    MissingAncestor(B256),
    /// A [`StateSource`] other than the flat tables failed.
    #[error("state source read failed: {0}")]
    Source(String),
}

/// Where a [`StoreDb`] reads the parent's accounts and storage when not from the store's
/// flat tables (`StoreDb::with_source`): another state commitment read instead of the
/// flat state. Code and block hashes still come from the store. It must hold exactly the
/// parent's state.
pub trait StateSource: Send + Sync {
    /// The account's `(nonce, balance, code_hash)`, `None` if it does not exist.
    fn account(&self, address: &Address) -> Result<Option<(u64, U256, B256)>, StoreDbError>;

    /// The slot's value, zero if unset.
    fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StoreDbError>;
}

impl DBErrorMarker for StoreDbError {}

/// Reads state from the store. The store's flat tables must hold the parent's state.
#[derive(Clone)]
pub struct StoreDb {
    store: Store,
    parent_hash: B256,
    parent_number: u64,
    /// Accounts and storage from here instead of the flat tables; `None` (the node's
    /// path): the flat tables.
    source: Option<Arc<dyn StateSource>>,
}

impl StoreDb {
    /// A view of `store` as the state after block `parent_number` (hash `parent_hash`).
    pub fn new(store: Store, parent_hash: B256, parent_number: u64) -> Self {
        Self { store, parent_hash, parent_number, source: None }
    }

    /// The same view reading accounts and storage from `source` (`None`: the flat tables).
    pub fn with_source(mut self, source: Option<Arc<dyn StateSource>>) -> Self {
        self.source = source;
        self
    }
}

impl DatabaseRef for StoreDb {
    type Error = StoreDbError;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        if let Some(source) = &self.source {
            return Ok(source.account(&address)?.map(|(nonce, balance, code_hash)| AccountInfo {
                balance,
                nonce,
                code_hash,
                code: None,
                account_id: None,
            }));
        }
        Ok(self.store.account(&address)?.map(|a| AccountInfo {
            balance: a.balance,
            nonce: a.nonce,
            code_hash: a.code_hash,
            code: None,
            account_id: None,
        }))
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        match self.store.code(&code_hash)? {
            // Checked: revm's `new_raw` panics on malformed `0xef01` code.
            Some(code) => Bytecode::new_raw_checked(code)
                .map_err(|error| StoreDbError::MalformedCode { hash: code_hash, error }),
            None if code_hash == ethrex_common::KECCAK_EMPTY => Ok(Bytecode::default()),
            None => Err(StoreDbError::MissingCode(code_hash)),
        }
    }

    fn storage_ref(&self, address: Address, index: U256) -> Result<U256, Self::Error> {
        if let Some(source) = &self.source {
            return source.storage(&address, &index);
        }
        Ok(self.store.storage(&address, &index)?)
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, Self::Error> {
        if number > self.parent_number {
            return Ok(B256::ZERO);
        }
        // Fast path: the parent is canonical, so its ancestors are too.
        if self.store.canonical_hash(self.parent_number)? == Some(self.parent_hash) {
            return Ok(self.store.canonical_hash(number)?.unwrap_or_default());
        }
        let mut hash = self.parent_hash;
        let mut current = self.parent_number;
        while current > number {
            let header = self.store.header(&hash)?.ok_or(StoreDbError::MissingAncestor(hash))?;
            hash = header.parent_hash;
            current -= 1;
        }
        Ok(hash)
    }
}
