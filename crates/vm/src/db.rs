//! The store seen as a revm database: the flat state of the parent block, plus block
//! hashes along the parent's chain for BLOCKHASH.

use alloy_primitives::{Address, B256, U256};
use ethrex_storage::{Store, StoreError};
use revm::database_interface::{DBErrorMarker, DatabaseRef};
use revm::state::{AccountInfo, Bytecode};

#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct StoreDbError(pub String);

impl DBErrorMarker for StoreDbError {}

impl From<StoreError> for StoreDbError {
    fn from(e: StoreError) -> Self {
        StoreDbError(e.to_string())
    }
}

/// Reads state from the store. The store's flat tables must hold the parent's state.
#[derive(Clone)]
pub struct StoreDb {
    pub store: Store,
    pub parent_hash: B256,
    pub parent_number: u64,
}

impl StoreDb {
    pub fn new(store: Store, parent_hash: B256, parent_number: u64) -> Self {
        Self { store, parent_hash, parent_number }
    }
}

impl DatabaseRef for StoreDb {
    type Error = StoreDbError;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
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
            Some(code) => Ok(Bytecode::new_raw(code)),
            None if code_hash == ethrex_common::KECCAK_EMPTY => Ok(Bytecode::default()),
            None => Err(StoreDbError(format!("code {code_hash} missing from store"))),
        }
    }

    fn storage_ref(&self, address: Address, index: U256) -> Result<U256, Self::Error> {
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
            let header = self
                .store
                .header(&hash)?
                .ok_or_else(|| StoreDbError(format!("ancestor header {hash} missing")))?;
            hash = header.parent_hash;
            current -= 1;
        }
        Ok(hash)
    }
}
