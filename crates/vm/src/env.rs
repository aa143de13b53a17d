//! Fork rules and environments: `Fork` -> revm `SpecId`, block header -> `BlockEnv` and
//! `CfgEnv`, signed transaction -> `TxEnv`. `evm.rs` builds the EVM from them.

use alloy_consensus::{Transaction as _, Typed2718};
use alloy_primitives::{Address, TxKind, U256};
use ethrex_common::{ChainConfig, Fork, Header, Transaction};
use revm::context::{BlockEnv, CfgEnv, TxEnv};
use revm::context_interface::block::BlobExcessGasAndPrice;
use revm::context_interface::either::Either;
use revm::primitives::hardfork::SpecId;

/// The revm rule set of a fork. revm has one rule set per fork that changed execution:
/// the DAO fork runs Homestead's rules (its state change is `system::apply_dao_fork`),
/// the bomb-delay forks their predecessor's, the blob-parameter-only forks Osaka's, and
/// Constantinople Petersburg's: revm does not implement EIP-1283, which Petersburg
/// removed before mainnet ran it (a chain that schedules Constantinople before
/// Petersburg and runs SSTORE in between would differ from geth; see
/// `docs/forks.md`).
pub fn spec_id(fork: Fork) -> SpecId {
    match fork {
        Fork::Frontier => SpecId::FRONTIER,
        Fork::Homestead | Fork::Dao => SpecId::HOMESTEAD,
        Fork::TangerineWhistle => SpecId::TANGERINE,
        Fork::SpuriousDragon => SpecId::SPURIOUS_DRAGON,
        Fork::Byzantium => SpecId::BYZANTIUM,
        Fork::Constantinople | Fork::Petersburg => SpecId::PETERSBURG,
        Fork::Istanbul | Fork::MuirGlacier => SpecId::ISTANBUL,
        Fork::Berlin => SpecId::BERLIN,
        Fork::London | Fork::ArrowGlacier | Fork::GrayGlacier => SpecId::LONDON,
        Fork::Paris => SpecId::MERGE,
        Fork::Shanghai => SpecId::SHANGHAI,
        Fork::Cancun => SpecId::CANCUN,
        Fork::Prague => SpecId::PRAGUE,
        Fork::Osaka | Fork::Bpo1 | Fork::Bpo2 | Fork::Bpo3 | Fork::Bpo4 | Fork::Bpo5 => {
            SpecId::OSAKA
        }
        Fork::Amsterdam => SpecId::AMSTERDAM,
    }
}

/// Chain id, fork rules and blob limits for the block with this header (of `fork`).
pub(crate) fn cfg_env(config: &ChainConfig, header: &Header, fork: Fork) -> CfgEnv {
    let mut cfg = CfgEnv::default();
    cfg.chain_id = config.chain_id();
    cfg.set_spec_and_mainnet_gas_params(spec_id(fork));
    if let Some(params) = config.blob_params_at(header.timestamp) {
        cfg.max_blobs_per_tx = Some(params.max_blobs_per_tx);
        cfg.blob_base_fee_update_fraction = Some(params.update_fraction as u64);
    }
    cfg
}

/// The block's own values as its transactions see them (number, coinbase, base fee, blob
/// price...).
pub(crate) fn block_env(config: &ChainConfig, header: &Header, fork: Fork) -> BlockEnv {
    let blob = match (header.excess_blob_gas, config.blob_params_at(header.timestamp)) {
        (Some(excess), Some(params)) => {
            Some(BlobExcessGasAndPrice::new(excess, params.update_fraction as u64))
        }
        _ => None,
    };
    BlockEnv {
        number: U256::from(header.number),
        beneficiary: header.beneficiary,
        timestamp: U256::from(header.timestamp),
        gas_limit: header.gas_limit,
        basefee: header.base_fee_per_gas.unwrap_or_default(),
        difficulty: header.difficulty,
        // From the merge on DIFFICULTY reads PREVRANDAO (revm requires it set there).
        prevrandao: (fork >= Fork::Paris).then_some(header.mix_hash),
        blob_excess_gas_and_price: blob,
        slot_num: header.slot_number.unwrap_or_default(),
    }
}

/// A signed transaction as revm executes it, sent by `sender`.
pub(crate) fn tx_env(tx: &Transaction, sender: Address) -> TxEnv {
    let authorization_list = tx
        .authorization_list()
        .map(|list| list.iter().cloned().map(Either::Left).collect())
        .unwrap_or_default();
    TxEnv {
        tx_type: tx.ty(),
        caller: sender,
        gas_limit: tx.gas_limit(),
        gas_price: if tx.is_dynamic_fee() {
            tx.max_fee_per_gas()
        } else {
            tx.gas_price().unwrap_or_default()
        },
        kind: match tx.to() {
            Some(to) => TxKind::Call(to),
            None => TxKind::Create,
        },
        value: tx.value(),
        data: tx.input().clone(),
        nonce: tx.nonce(),
        chain_id: tx.chain_id(),
        access_list: tx.access_list().cloned().unwrap_or_default(),
        gas_priority_fee: tx.max_priority_fee_per_gas(),
        blob_hashes: tx.blob_versioned_hashes().map(|h| h.to_vec()).unwrap_or_default(),
        max_fee_per_blob_gas: tx.max_fee_per_blob_gas().unwrap_or_default(),
        authorization_list,
    }
}

/// A transaction's intrinsic gas under `fork`'s rules, as revm charges it before the
/// first frame (regular plus state gas), and the EIP-7623 calldata floor (0 before
/// Prague): its gas limit must cover both. The EIP-2780 account-dependent part is left
/// out (it needs the state); the transaction pool checks this lower bound on entry.
pub fn intrinsic_gas(tx: &Transaction, sender: Address, fork: Fork) -> (u64, u64) {
    let gas = revm::context_interface::cfg::gas::calculate_initial_tx_gas_for_tx(
        tx_env(tx, sender),
        spec_id(fork),
        None,
    );
    (gas.initial_regular_gas + gas.initial_state_gas, gas.floor_gas)
}
