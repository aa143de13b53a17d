//! What executing a block produces, independent of how it was executed, and how both
//! executors build it: receipts, and the final state (revm's bundle) flattened into
//! account changes.

use alloy_consensus::{Eip658Value, Receipt as PlainReceipt, TxType};
use alloy_eips::eip7685::Requests;
use alloy_primitives::{Address, Bytes, Log, B256, U256};
use ethrex_common::{BlockAccessList, Receipt};
use revm::database::states::bundle_state::BundleRetention;
use revm::database::{BundleState, State};

/// The post-block value of an account the block changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountChange {
    /// The account.
    pub address: Address,
    /// `(nonce, balance, code_hash)` after the block; `None`: the account does not exist.
    pub info: Option<(u64, U256, B256)>,
    /// The account's storage before the block no longer applies (destroyed or recreated);
    /// `storage` then lists every slot it has after the block.
    pub storage_wiped: bool,
    /// Slots whose value differs from the pre-block value, with the new value.
    pub storage: Vec<(U256, U256)>,
}

/// Everything executing a block produced.
#[derive(Debug, Clone, Default)]
pub struct BlockExecutionOutput {
    /// One receipt per transaction, in block order.
    pub receipts: Vec<Receipt>,
    /// Block gas used as the header commits to it (EIP-7778 rules from Amsterdam on).
    pub gas_used: u64,
    /// Execution requests (EIP-7685), from Prague on.
    pub requests: Option<Requests>,
    /// The access list execution produced (Amsterdam).
    pub bal: Option<BlockAccessList>,
    /// Changed accounts, sorted by address.
    pub accounts: Vec<AccountChange>,
    /// Bytecode deployed by the block.
    pub codes: Vec<(B256, Bytes)>,
    /// The longest single transaction's execution (reads of the state included): the
    /// block's critical path when transactions run in parallel.
    pub longest_tx: std::time::Duration,
    /// What each transaction accessed (accounts, and under each the slots), in block
    /// order; recorded only when asked for (`execute_block_sequential_recording`, the
    /// pre-transaction path), empty otherwise.
    pub tx_accesses: Vec<TxAccess>,
    /// Where the parallel path's time went (`None` on the sequential path).
    pub profile: Option<crate::profile::ParallelProfile>,
}

/// What one transaction accessed: every account its execution loaded, and under each the
/// slots it loaded (read or written).
pub type TxAccess = std::collections::BTreeMap<Address, std::collections::BTreeSet<U256>>;

/// The accounts and slots a transaction's execution loaded, from its state changes
/// (revm keeps every account and slot a transaction loaded there, changed or not).
pub(crate) fn access_of(state: &revm::state::EvmState) -> TxAccess {
    state
        .iter()
        .map(|(address, account)| (*address, account.storage.keys().copied().collect()))
        .collect()
}

/// A transaction's receipt (its bloom computed here).
pub(crate) fn build_receipt(
    tx_type: u8,
    status: Eip658Value,
    cumulative_gas_used: u64,
    logs: Vec<Log>,
) -> Receipt {
    let receipt = PlainReceipt { status, cumulative_gas_used, logs }.with_bloom();
    let ty = TxType::try_from(tx_type).unwrap_or(TxType::Legacy);
    Receipt::from_typed(ty, receipt)
}

/// The output of a block whose every stage has been committed into `state`: the BAL
/// its builder recorded (if one was installed) and the state changes, with the receipts,
/// gas and requests computed along the way.
pub(crate) fn finish<DB: revm::Database>(
    mut state: State<DB>,
    receipts: Vec<Receipt>,
    gas_used: u64,
    requests: Option<Requests>,
) -> BlockExecutionOutput {
    // `None` when the state built no BAL (before Amsterdam).
    let bal = state.take_built_alloy_bal();
    state.merge_transitions(BundleRetention::PlainState);
    let (accounts, codes) = changes_from_bundle(state.take_bundle());
    BlockExecutionOutput {
        receipts,
        gas_used,
        requests,
        bal,
        accounts,
        codes,
        longest_tx: std::time::Duration::ZERO,
        tx_accesses: Vec::new(),
        profile: None,
    }
}

/// Flattens revm's bundle into account changes sorted by address.
fn changes_from_bundle(bundle: BundleState) -> (Vec<AccountChange>, Vec<(B256, Bytes)>) {
    changes_of_bundle(&bundle)
}

/// As `changes_from_bundle`, leaving the bundle in place (the intermediate state roots of
/// pre-Byzantium receipts read it after every transaction).
pub(crate) fn changes_of_bundle(bundle: &BundleState) -> (Vec<AccountChange>, Vec<(B256, Bytes)>) {
    let mut accounts: Vec<AccountChange> = bundle
        .state
        .iter()
        .filter_map(|(address, account)| {
            let storage_wiped = account.was_destroyed();
            let mut storage: Vec<(U256, U256)> = account
                .storage
                .iter()
                .filter(|(_, slot)| storage_wiped || slot.is_changed())
                .map(|(k, slot)| (*k, slot.present_value))
                .collect();
            storage.sort_unstable_by_key(|(k, _)| *k);
            let info = account.info.as_ref().map(|i| (i.nonce, i.balance, i.code_hash));
            let original =
                account.original_info.as_ref().map(|i| (i.nonce, i.balance, i.code_hash));
            // Touched but left exactly as it was: nothing to write.
            if info == original && storage.is_empty() && !storage_wiped {
                return None;
            }
            Some(AccountChange { address: *address, info, storage_wiped, storage })
        })
        .collect();
    accounts.sort_unstable_by_key(|a| a.address);
    let mut codes: Vec<(B256, Bytes)> = bundle
        .contracts
        .iter()
        .filter(|(hash, _)| **hash != ethrex_common::KECCAK_EMPTY)
        .map(|(hash, code)| (*hash, code.original_bytes()))
        .collect();
    codes.sort_unstable_by_key(|(h, _)| *h);
    (accounts, codes)
}
