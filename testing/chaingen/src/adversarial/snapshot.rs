//! Store snapshots and comparisons: what the differential tests compare between import
//! paths.

use alloy_primitives::{Address, Bytes, B256, U256};
use ethrex_common::{AccountState, BlockAccessList, Header, Receipt, KECCAK_EMPTY};
use ethrex_storage::Store;

/// One account as the snapshot sees it: record, slots, code.
pub type AccountSnapshot = (Address, AccountState, Vec<(U256, U256)>, Option<Bytes>);

/// The whole flat state of a store: every account with its storage and code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateSnapshot {
    /// The head block hash.
    pub head: Option<B256>,
    /// Every account, in the store's order.
    pub accounts: Vec<AccountSnapshot>,
}

/// Reads the whole flat state of `store`.
pub fn snapshot(store: &Store) -> StateSnapshot {
    let accounts = store
        .all_accounts()
        .expect("all accounts")
        .into_iter()
        .map(|(address, account)| {
            let storage = store.storage_entries(&address).expect("storage entries");
            let code = (account.code_hash != KECCAK_EMPTY).then(|| {
                store
                    .code(&account.code_hash)
                    .expect("code read")
                    .expect("code of an account is stored")
            });
            (address, account, storage, code)
        })
        .collect();
    StateSnapshot { head: store.head().expect("head"), accounts }
}

/// What a store keeps about one block.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockRecord {
    /// The stored header.
    pub header: Header,
    /// The stored receipts.
    pub receipts: Vec<Receipt>,
    /// The stored BAL, if any.
    pub bal: Option<BlockAccessList>,
}

/// What `store` keeps about the block `hash`; panics if it is not there.
pub fn block_record(store: &Store, hash: &B256) -> BlockRecord {
    BlockRecord {
        header: store.header(hash).expect("header read").expect("imported block has a header"),
        receipts: store
            .receipts(hash)
            .expect("receipts read")
            .expect("imported block has receipts"),
        bal: store.bal(hash).expect("bal read"),
    }
}

/// Asserts that the store holds no trace of a block.
pub fn assert_no_trace(store: &Store, hash: &B256, what: &str) {
    assert!(store.header(hash).unwrap().is_none(), "{what}: rejected block's header was stored");
    assert!(
        store.receipts(hash).unwrap().is_none(),
        "{what}: rejected block's receipts were stored"
    );
    assert!(store.bal(hash).unwrap().is_none(), "{what}: rejected block's BAL was stored");
    assert!(store.body(hash).unwrap().is_none(), "{what}: rejected block's body was stored");
}
