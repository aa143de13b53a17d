//! Consensus checks: the header against its parent (per era, from the rules in
//! `consensus`), the body against the header and the shape of the block-level access list
//! (before execution), and what execution produced against what the header commits to
//! (after it).

use crate::consensus::{dao, london, merge, pow};
use crate::error::{AccountOrderViolation, BalFormError, BalMismatch, InvalidBlock};
use alloy_consensus::proofs::calculate_withdrawals_root;
use alloy_consensus::EMPTY_OMMER_ROOT_HASH;
use alloy_eips::eip2718::Encodable2718;
use alloy_eips::eip7928::{validate_block_access_list, BlockAccessListValidationError, ITEM_COST};
use alloy_primitives::{Address, Bloom, B256, U256};
use ethrex_common::{
    blob_gas_used, compute_block_access_list_hash, Block, BlockAccessList, ChainConfig, Fork,
    Header, Receipt, RecoveredBlock, Transaction,
};
use ethrex_vm::BlockExecutionOutput;

fn require(present: bool, expected: bool, field: &'static str) -> Result<(), InvalidBlock> {
    if present != expected {
        return Err(InvalidBlock::HeaderFieldMismatch(field));
    }
    Ok(())
}

/// Header fields that each fork adds must be present exactly from that fork on, and a
/// proof-of-stake header carries no proof-of-work values.
pub fn validate_header_fields(config: &ChainConfig, header: &Header) -> Result<(), InvalidBlock> {
    let fork = config.fork_of(header);
    require(
        header.base_fee_per_gas.is_some(),
        london::is_london(config, header.number),
        "baseFeePerGas",
    )?;
    require(header.withdrawals_root.is_some(), fork >= Fork::Shanghai, "withdrawalsRoot")?;
    require(header.blob_gas_used.is_some(), fork >= Fork::Cancun, "blobGasUsed")?;
    require(header.excess_blob_gas.is_some(), fork >= Fork::Cancun, "excessBlobGas")?;
    require(
        header.parent_beacon_block_root.is_some(),
        fork >= Fork::Cancun,
        "parentBeaconBlockRoot",
    )?;
    require(header.requests_hash.is_some(), fork >= Fork::Prague, "requestsHash")?;
    require(
        header.block_access_list_hash.is_some(),
        fork >= Fork::Amsterdam,
        "blockAccessListHash",
    )?;
    require(header.slot_number.is_some(), fork >= Fork::Amsterdam, "slotNumber")?;
    if header.extra_data.len() > 32 {
        return Err(InvalidBlock::ExtraDataTooLong(header.extra_data.len()));
    }
    if fork >= Fork::Paris
        && (!header.difficulty.is_zero()
            || !header.nonce.is_zero()
            || header.ommers_hash != EMPTY_OMMER_ROOT_HASH)
    {
        return Err(InvalidBlock::InvalidPowFields);
    }
    Ok(())
}

/// The rules every header obeys against its parent, in every era: number, timestamp,
/// gas limit (with London's transition), gas used and base fee.
fn validate_common(
    config: &ChainConfig,
    header: &Header,
    parent: &Header,
) -> Result<(), InvalidBlock> {
    if header.number != parent.number + 1 {
        return Err(InvalidBlock::InvalidNumber {
            expected: parent.number + 1,
            got: header.number,
        });
    }
    if header.timestamp <= parent.timestamp {
        return Err(InvalidBlock::InvalidTimestamp {
            parent: parent.timestamp,
            got: header.timestamp,
        });
    }
    london::check_gas_limit(config, header, parent)?;
    if header.gas_used > header.gas_limit {
        return Err(InvalidBlock::GasUsedOverLimit {
            used: header.gas_used,
            limit: header.gas_limit,
        });
    }
    london::check_base_fee(config, header, parent)
}

/// A proof-of-work header against its parent, as an ommer is checked too: the fork's
/// fields, the common rules, the difficulty formula and the DAO fork's extra data.
pub fn validate_pow_header(
    config: &ChainConfig,
    header: &Header,
    parent: &Header,
) -> Result<(), InvalidBlock> {
    validate_header_fields(config, header)?;
    validate_common(config, header, parent)?;
    pow::check_difficulty(config, header, parent)?;
    dao::check_dao_extra_data(config, header)
}

/// The header against its parent (whose total difficulty is `parent_td`): the merge
/// rule decides the era, then that era's rules (proof of work: difficulty, DAO extra
/// data; proof of stake: none of those, the blob gas excess from Cancun on).
pub fn validate_header_against_parent(
    config: &ChainConfig,
    header: &Header,
    parent: &Header,
    parent_td: U256,
) -> Result<(), InvalidBlock> {
    merge::check_merge(config, header, parent, parent_td)?;
    if !header.difficulty.is_zero() {
        return validate_pow_header(config, header, parent);
    }
    validate_header_fields(config, header)?;
    validate_common(config, header, parent)?;
    if let Some(expected) = config.next_excess_blob_gas(parent, header.timestamp) {
        if header.excess_blob_gas != Some(expected) {
            return Err(InvalidBlock::InvalidExcessBlobGas {
                expected,
                got: header.excess_blob_gas,
            });
        }
    }
    Ok(())
}

/// The body must be the one the header commits to.
pub fn validate_body(config: &ChainConfig, block: &Block) -> Result<(), InvalidBlock> {
    let header = &block.header;
    let body = &block.body;
    if !body.ommers.is_empty() && config.fork_of(header) >= Fork::Paris {
        return Err(InvalidBlock::InvalidPowFields);
    }
    let ommers_hash = if body.ommers.is_empty() {
        EMPTY_OMMER_ROOT_HASH
    } else {
        alloy_consensus::proofs::calculate_ommers_root(&body.ommers)
    };
    if ommers_hash != header.ommers_hash {
        return Err(InvalidBlock::OmmersHash { expected: header.ommers_hash, got: ommers_hash });
    }
    let tx_root = transactions_root(&body.transactions);
    if tx_root != header.transactions_root {
        return Err(InvalidBlock::TransactionsRoot {
            expected: header.transactions_root,
            got: tx_root,
        });
    }
    match (&body.withdrawals, header.withdrawals_root) {
        (Some(w), Some(expected)) => {
            let got = calculate_withdrawals_root(w);
            if got != expected {
                return Err(InvalidBlock::WithdrawalsRoot { expected, got });
            }
        }
        (None, None) => {}
        _ => return Err(InvalidBlock::HeaderFieldMismatch("withdrawals")),
    }
    if let Some(params) = config.blob_params_at(header.timestamp) {
        let blob_gas = blob_gas_used(&body.transactions);
        let max = params.max_blob_gas_per_block();
        if blob_gas > max {
            return Err(InvalidBlock::BlobGasOverMax(blob_gas, max));
        }
        if header.blob_gas_used != Some(blob_gas) {
            return Err(InvalidBlock::BlobGasUsed {
                expected: header.blob_gas_used.unwrap_or_default(),
                got: blob_gas,
            });
        }
    }
    Ok(())
}

/// Where the account list of a BAL is not in canonical order (strictly ascending
/// addresses), or `None` when it is.
pub fn account_order_violation(bal: &BlockAccessList) -> Option<AccountOrderViolation> {
    bal.windows(2).find(|w| w[0].address >= w[1].address).map(|w| {
        if w[0].address == w[1].address {
            AccountOrderViolation::Duplicate(w[1].address)
        } else {
            AccountOrderViolation::Descending { earlier: w[0].address, later: w[1].address }
        }
    })
}

/// The BAL is the one the header commits to.
pub fn validate_bal_hash(header: &Header, bal: &BlockAccessList) -> Result<(), InvalidBlock> {
    let expected = header
        .block_access_list_hash
        .ok_or(InvalidBlock::HeaderFieldMismatch("blockAccessListHash"))?;
    let got = compute_block_access_list_hash(bal);
    if got != expected {
        return Err(InvalidBlock::BalHashMismatch { expected, got });
    }
    Ok(())
}

/// The BAL execution built for a block that came without one: within the size cap and
/// the one the header commits to.
pub fn validate_built_bal(header: &Header, built: &BlockAccessList) -> Result<(), InvalidBlock> {
    let items = alloy_eips::eip7928::total_bal_items(built);
    if items.saturating_mul(ITEM_COST as u64) > header.gas_limit {
        return Err(InvalidBlock::BalTooLarge { items, gas_limit: header.gas_limit });
    }
    validate_bal_hash(header, built)
}

/// The BAL's size cap and canonical form (every entry inside an account canonical: slots
/// ordered and unique, indices ordered and within the block): what execution relies on
/// before using it.
///
/// The order of the account list itself is judged after execution (see
/// `validate_execution_output`): a list naming an account execution never touches is an
/// invalid BAL, while a list naming exactly the touched accounts in the wrong order or
/// twice is a malformed one. That is how the reference tests classify the two.
pub fn validate_bal_form(
    header: &Header,
    bal: &BlockAccessList,
    tx_count: usize,
) -> Result<(), InvalidBlock> {
    let items = alloy_eips::eip7928::total_bal_items(bal);
    if items.saturating_mul(ITEM_COST as u64) > header.gas_limit {
        return Err(InvalidBlock::BalTooLarge { items, gas_limit: header.gas_limit });
    }
    let mut per_account: BlockAccessList;
    let checked = if account_order_violation(bal).is_some() {
        per_account = bal.clone();
        per_account.sort_by_key(|a| a.address);
        per_account.dedup_by_key(|a| a.address);
        &per_account
    } else {
        bal
    };
    if let Err(e) = validate_block_access_list(checked, tx_count) {
        return Err(match e {
            BlockAccessListValidationError::DuplicateAccount { .. }
            | BlockAccessListValidationError::AccountsOutOfOrder { .. } => {
                InvalidBlock::BalFormat(BalFormError::Entries(e))
            }
            other => InvalidBlock::BalMismatch(BalMismatch::Entries(other)),
        });
    }
    Ok(())
}

/// The transactions root: the ordered trie of the transactions' EIP-2718 encodings
/// (`alloy_consensus::proofs::calculate_transaction_root`, with batched hashing).
pub fn transactions_root(transactions: &[Transaction]) -> B256 {
    ethrex_trie::ordered_root(&transactions.iter().map(|tx| tx.encoded_2718()).collect::<Vec<_>>())
}

/// The receipts root: the ordered trie of the receipts' EIP-2718 encodings
/// (`alloy_consensus::proofs::calculate_receipt_root`, with batched hashing).
pub fn receipts_root(receipts: &[Receipt]) -> B256 {
    ethrex_trie::ordered_root(&receipts.iter().map(|r| r.encoded_2718()).collect::<Vec<_>>())
}

/// What the header commits to about the receipts.
pub struct ReceiptsCommitment {
    /// The receipts trie root.
    pub root: B256,
    /// The union of the receipts' log blooms.
    pub bloom: Bloom,
}

impl ReceiptsCommitment {
    /// Hashes and folds `receipts`.
    pub fn of(receipts: &[Receipt]) -> Self {
        Self {
            root: receipts_root(receipts),
            bloom: receipts.iter().fold(Bloom::ZERO, |acc, r| acc | *r.logs_bloom()),
        }
    }
}

/// Where two access lists that differ first differ, for the rejection.
pub fn first_bal_difference(expected: &BlockAccessList, got: &BlockAccessList) -> BalMismatch {
    for (index, (e, g)) in expected.iter().zip(got.iter()).enumerate() {
        if e != g {
            return if e.address != g.address {
                BalMismatch::Account { index, header: e.address, execution: g.address }
            } else {
                BalMismatch::Changes {
                    address: e.address,
                    header: Box::new(e.clone()),
                    execution: Box::new(g.clone()),
                }
            };
        }
    }
    match (expected.get(got.len()), got.get(expected.len())) {
        (Some(extra), _) => BalMismatch::Extra(extra.address),
        (_, Some(unlisted)) => BalMismatch::Unlisted(unlisted.address),
        // Only lists that differ are compared; equal ones name no account.
        (None, None) => BalMismatch::NotBuilt,
    }
}

/// Checks what execution produced against what the header commits to.
/// `receipts` must be the commitment of `output.receipts`.
pub fn validate_execution_output(
    config: &ChainConfig,
    block: &RecoveredBlock,
    output: &BlockExecutionOutput,
    receipts: &ReceiptsCommitment,
) -> Result<(), InvalidBlock> {
    let header = &block.block.header;
    if output.gas_used != header.gas_used {
        return Err(InvalidBlock::GasUsed { expected: header.gas_used, got: output.gas_used });
    }
    if receipts.root != header.receipts_root {
        return Err(InvalidBlock::ReceiptsRoot {
            expected: header.receipts_root,
            got: receipts.root,
        });
    }
    if receipts.bloom != header.logs_bloom {
        return Err(InvalidBlock::LogsBloom);
    }
    if config.fork_of(header) >= Fork::Prague {
        let got = output.requests.as_ref().map(|r| r.requests_hash()).unwrap_or_default();
        if header.requests_hash != Some(got) {
            return Err(InvalidBlock::RequestsHash { expected: header.requests_hash, got });
        }
    }
    if let Some(expected) = &block.bal {
        let got = output.bal.as_ref().ok_or(InvalidBlock::BalMismatch(BalMismatch::NotBuilt))?;
        if let Some(violation) = account_order_violation(expected) {
            let mut named: Vec<Address> = expected.iter().map(|a| a.address).collect();
            named.sort_unstable();
            named.dedup();
            let touched: Vec<Address> = got.iter().map(|a| a.address).collect();
            return Err(if named == touched {
                InvalidBlock::BalFormat(BalFormError::AccountOrder(violation))
            } else {
                InvalidBlock::BalMismatch(BalMismatch::OrderAndAccounts(violation))
            });
        }
        if got != expected {
            return Err(InvalidBlock::BalMismatch(first_bal_difference(expected, got)));
        }
    }
    Ok(())
}
