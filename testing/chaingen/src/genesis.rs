//! Genesis: an allocation with the system contracts, written into a fresh store.

use alloy_primitives::Address;
use ethrex_blockchain::genesis::{alloc_state_root, init_genesis, GenesisAccount};
use ethrex_blockchain::system_contracts::system_contracts;
use ethrex_blockchain::BlockError;
use ethrex_common::{Block, BlockBody, Header};
use ethrex_storage::Store;
use std::collections::BTreeMap;

/// `alloc` with the EIP-2935/4788/7002/7251 predeploys added (they replace any account of
/// `alloc` at their addresses).
pub fn with_system_contracts(
    mut alloc: BTreeMap<Address, GenesisAccount>,
) -> BTreeMap<Address, GenesisAccount> {
    alloc.extend(system_contracts());
    alloc
}

/// A fresh in-memory store holding the genesis whose header `header(state_root)` returns
/// (the state root is that of `alloc`), and the genesis block.
pub fn in_memory(
    alloc: &BTreeMap<Address, GenesisAccount>,
    header: impl FnOnce(alloy_primitives::B256) -> Header,
) -> Result<(Store, Block), BlockError> {
    let header = header(alloc_state_root(alloc)?);
    let store = Store::in_memory();
    init_genesis(&store, header.clone(), alloc)?;
    let body =
        BlockBody { transactions: vec![], ommers: vec![], withdrawals: Some(Default::default()) };
    Ok((store, Block { header, body }))
}
