//! Initialising a store from a genesis: the allocation becomes the state, the genesis
//! header becomes block 0 and the head.

use crate::error::{BlockError, InvalidBlock};
use crate::state_root::compute_state_update;
use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use ethrex_common::{Block, BlockBody, Header, KECCAK_EMPTY};
use ethrex_storage::Store;
use ethrex_vm::AccountChange;
use revm::bytecode::Bytecode;
use std::collections::BTreeMap;

/// One genesis account.
#[derive(Debug, Clone, Default)]
pub struct GenesisAccount {
    /// The account's nonce.
    pub nonce: u64,
    /// The account's balance in wei.
    pub balance: U256,
    /// The runtime code (empty for an externally owned account).
    pub code: Bytes,
    /// Non-zero storage slots, slot -> value.
    pub storage: BTreeMap<U256, U256>,
}

/// Computes the state root of an allocation without writing anything.
pub fn alloc_state_root(alloc: &BTreeMap<Address, GenesisAccount>) -> Result<B256, BlockError> {
    let store = Store::in_memory();
    let (changes, codes) = alloc_changes(alloc);
    let (root, _, _) =
        compute_state_update(&store, ethrex_common::EMPTY_ROOT_HASH, &changes, codes)?;
    Ok(root)
}

/// The allocation as account changes on an empty state, with its code.
pub fn alloc_changes(
    alloc: &BTreeMap<Address, GenesisAccount>,
) -> (Vec<AccountChange>, Vec<(B256, Bytes)>) {
    let mut codes = Vec::new();
    let changes = alloc
        .iter()
        .map(|(address, account)| {
            let code_hash = if account.code.is_empty() {
                KECCAK_EMPTY
            } else {
                let h = keccak256(&account.code);
                codes.push((h, account.code.clone()));
                h
            };
            AccountChange {
                address: *address,
                info: Some((account.nonce, account.balance, code_hash)),
                storage_wiped: false,
                storage: account
                    .storage
                    .iter()
                    .filter(|(_, v)| !v.is_zero())
                    .map(|(k, v)| (*k, *v))
                    .collect(),
            }
        })
        .collect();
    (changes, codes)
}

/// Writes the genesis block and state into an empty store. The header's state root must
/// match the allocation. Returns the genesis hash.
pub fn init_genesis(
    store: &Store,
    header: Header,
    alloc: &BTreeMap<Address, GenesisAccount>,
) -> Result<B256, BlockError> {
    check_alloc_code(alloc)?;
    if let Some(existing) = store.genesis_hash()? {
        let hash = header.hash_slow();
        if existing != hash {
            return Err(BlockError::storage(format!(
                "store already holds genesis {existing}, not {hash}: use another data directory"
            )));
        }
        return Ok(hash);
    }
    let (changes, codes) = alloc_changes(alloc);
    let (root, update, _) =
        compute_state_update(store, ethrex_common::EMPTY_ROOT_HASH, &changes, codes)?;
    if root != header.state_root {
        return Err(InvalidBlock::StateRoot { expected: header.state_root, got: root }.into());
    }
    commit_genesis_block(store, header, update)
}

/// Opens `store` on the genesis of `alloc`, whose header `header` builds from the state
/// root: an empty store gets the genesis block and state written (the state computed once,
/// on the store itself); a store that has a genesis must hold this one. Returns the
/// genesis hash.
pub fn open_genesis(
    store: &Store,
    alloc: &BTreeMap<Address, GenesisAccount>,
    header: impl FnOnce(B256) -> Header,
) -> Result<B256, BlockError> {
    if store.genesis_hash()?.is_some() {
        // Computed apart: the store's state is the head's, not an empty one to build on.
        return init_genesis(store, header(alloc_state_root(alloc)?), alloc);
    }
    check_alloc_code(alloc)?;
    let (changes, codes) = alloc_changes(alloc);
    let (root, update, _) =
        compute_state_update(store, ethrex_common::EMPTY_ROOT_HASH, &changes, codes)?;
    commit_genesis_block(store, header(root), update)
}

fn commit_genesis_block(
    store: &Store,
    header: Header,
    update: ethrex_storage::StateUpdate,
) -> Result<B256, BlockError> {
    let hash = header.hash_slow();
    let withdrawals = header.withdrawals_root.map(|_| Default::default());
    let block =
        Block { header, body: BlockBody { transactions: vec![], ommers: vec![], withdrawals } };
    store.commit_genesis(hash, &block, update)?;
    Ok(hash)
}

/// Rejects an allocation with code revm cannot load (an EIP-7702 designator, `0xef01..`,
/// of the wrong length or version): stored unchecked, it would fail (or, through revm's
/// `Bytecode::new_raw`, panic) the first time a block reads it.
fn check_alloc_code(alloc: &BTreeMap<Address, GenesisAccount>) -> Result<(), BlockError> {
    for (address, account) in alloc {
        if let Err(e) = Bytecode::new_raw_checked(account.code.clone()) {
            return Err(InvalidBlock::MalformedGenesisCode { address: *address, reason: e }.into());
        }
    }
    Ok(())
}

/// A genesis header for a geth-style genesis file, with the fields the genesis' own
/// forks require (as geth builds it: a base fee from London on, 1 gwei unless the file
/// names one; a withdrawals root from Shanghai on; blob fields and the beacon root from
/// Cancun on; and so on), so that its hash is geth's.
pub fn genesis_header(genesis: &alloy_genesis::Genesis, state_root: B256) -> Header {
    let config = ethrex_common::ChainConfig::new(genesis.config.clone());
    let number = genesis.number.unwrap_or_default();
    let fork = config.fork_at(number, genesis.timestamp);
    use ethrex_common::Fork;
    Header {
        parent_hash: genesis.parent_hash.unwrap_or_default(),
        ommers_hash: alloy_consensus::EMPTY_OMMER_ROOT_HASH,
        beneficiary: genesis.coinbase,
        state_root,
        transactions_root: ethrex_common::EMPTY_ROOT_HASH,
        receipts_root: ethrex_common::EMPTY_ROOT_HASH,
        logs_bloom: Default::default(),
        difficulty: genesis.difficulty,
        number,
        gas_limit: genesis.gas_limit,
        gas_used: 0,
        timestamp: genesis.timestamp,
        extra_data: genesis.extra_data.clone(),
        mix_hash: genesis.mix_hash,
        nonce: genesis.nonce.into(),
        base_fee_per_gas: crate::consensus::london::genesis_base_fee(
            &config,
            number,
            genesis.base_fee_per_gas,
        ),
        withdrawals_root: (fork >= Fork::Shanghai).then_some(ethrex_common::EMPTY_ROOT_HASH),
        blob_gas_used: (fork >= Fork::Cancun).then_some(genesis.blob_gas_used.unwrap_or_default()),
        excess_blob_gas: (fork >= Fork::Cancun)
            .then_some(genesis.excess_blob_gas.unwrap_or_default()),
        parent_beacon_block_root: (fork >= Fork::Cancun).then_some(B256::ZERO),
        requests_hash: (fork >= Fork::Prague).then_some(alloy_eips::eip7685::EMPTY_REQUESTS_HASH),
        block_access_list_hash: (fork >= Fork::Amsterdam).then_some(ethrex_common::EMPTY_BAL_HASH),
        slot_number: (fork >= Fork::Amsterdam).then_some(0),
    }
}

/// The genesis header under `config` for a genesis that sets only its gas limit and base
/// fee (everything else zero or empty), at the fork `config` runs at time 0.
pub fn genesis_header_at(
    config: &ethrex_common::ChainConfig,
    gas_limit: u64,
    base_fee_per_gas: u64,
    state_root: B256,
) -> Header {
    let genesis = alloy_genesis::Genesis {
        config: config.inner.clone(),
        gas_limit,
        base_fee_per_gas: Some(base_fee_per_gas.into()),
        ..Default::default()
    };
    genesis_header(&genesis, state_root)
}

/// The allocation of a geth-style genesis file.
pub fn geth_alloc(genesis: &alloy_genesis::Genesis) -> BTreeMap<Address, GenesisAccount> {
    genesis
        .alloc
        .iter()
        .map(|(address, a)| {
            let storage = a
                .storage
                .as_ref()
                .map(|s| {
                    s.iter()
                        .map(|(k, v)| (U256::from_be_bytes(k.0), U256::from_be_bytes(v.0)))
                        .collect()
                })
                .unwrap_or_default();
            (
                *address,
                GenesisAccount {
                    nonce: a.nonce.unwrap_or_default(),
                    balance: a.balance,
                    code: a.code.clone().unwrap_or_default(),
                    storage,
                },
            )
        })
        .collect()
}
