//! `KvNodeStore`: a [`NodeStore`] over the client's key-value backends (MDBX, RocksDB,
//! memory), in their `extension` table (feature `kv`).
//!
//! It lives here, behind a feature, so the benches that keep a binary trie in a client
//! database (`ethrex-trie-bench`, `ethrex-import-bench`) share one adapter while
//! `ethrex-storage` does not depend on this crate for a research-only table. No cache of
//! its own: every load goes to the backend (and through its caches).

use crate::store::{NodeBatch, NodeStore};
use ethrex_storage::{KvBackend, StoreError, Table, WriteBatch};
use std::sync::Arc;

/// The binary trie's node table (`extension`) of a backend.
#[derive(Clone)]
pub struct KvNodeStore {
    backend: Arc<dyn KvBackend>,
}

impl std::fmt::Debug for KvNodeStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KvNodeStore").field("backend", &self.backend.kind()).finish()
    }
}

impl KvNodeStore {
    /// The `extension` table of `backend`.
    pub fn new(backend: Arc<dyn KvBackend>) -> Self {
        Self { backend }
    }

    /// The backend the nodes live in.
    pub fn backend(&self) -> &Arc<dyn KvBackend> {
        &self.backend
    }
}

impl NodeStore for KvNodeStore {
    type Error = StoreError;

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        self.backend.get(Table::Extension, key)
    }

    fn write(&self, batch: NodeBatch) -> Result<(), StoreError> {
        let mut out = WriteBatch::with_capacity(batch.puts.len() + batch.deletes.len());
        // `NodeBatch` never puts and deletes one key, so the order between them is free.
        for key in batch.deletes {
            out.delete(Table::Extension, key);
        }
        for (key, blob) in batch.puts {
            out.put(Table::Extension, key, blob);
        }
        self.backend.write_batch(&out)
    }
}

/// The head's full flat state of `store`: every account, its non-zero slots and its code,
/// as the state description a binary trie is built from (`StateSpec::apply`) and the geth
/// cross-check reads.
pub fn dump_state(store: &ethrex_storage::Store) -> Result<crate::StateSpec, StoreError> {
    let mut accounts = Vec::new();
    for (address, account) in store.all_accounts()? {
        let code = if account.code_hash == alloy_primitives::KECCAK256_EMPTY {
            Default::default()
        } else {
            store.code(&account.code_hash)?.ok_or_else(|| {
                StoreError::Invalid(format!("code {} of {address} missing", account.code_hash))
            })?
        };
        let storage = store.storage_entries(&address)?.into_iter().collect();
        accounts.push(crate::AccountSpec {
            address,
            nonce: account.nonce,
            balance: account.balance,
            code,
            storage,
        });
    }
    Ok(crate::StateSpec { accounts })
}
