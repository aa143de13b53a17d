//! Building a block on top of the head: the same executor and state-root code the import
//! pipeline uses, run in the other direction (execution fills in the header instead of
//! being checked against it). Used by the stress-fixture generator, tests, and payload
//! building.

use crate::error::{BlockError, NodeFault};
use crate::import::{recover_senders, Blockchain};
use crate::state_root::compute_state_root;
use crate::validation::ReceiptsCommitment;
use alloy_consensus::proofs::{calculate_transaction_root, calculate_withdrawals_root};
use alloy_consensus::EMPTY_OMMER_ROOT_HASH;
use alloy_eips::eip1559::BaseFeeParams;
use alloy_eips::eip7685::Requests;
use alloy_primitives::{Address, Bytes, B256};
use ethrex_common::{
    compute_block_access_list_hash, Block, BlockBody, BlockWithBal, Fork, Header, RecoveredBlock,
    Transaction, Withdrawal,
};
use ethrex_vm::{execute_block_sequential, StoreDb};

/// What the consensus layer decides about a new block.
#[derive(Debug, Clone)]
pub struct PayloadAttributes {
    /// The block's timestamp (seconds); must be after the parent's.
    pub timestamp: u64,
    /// Who receives the priority fees (the header's beneficiary).
    pub fee_recipient: Address,
    /// The beacon chain's randomness for this slot (the header's `mix_hash`).
    pub prev_randao: B256,
    /// The gas limit to build under (within the parent's bound).
    pub gas_limit: u64,
    /// Withdrawals to credit after the transactions (Shanghai on).
    pub withdrawals: Vec<Withdrawal>,
    /// The parent beacon block root the EIP-4788 system call stores (Cancun on).
    pub parent_beacon_block_root: B256,
    /// The beacon slot number the header carries (Amsterdam on).
    pub slot_number: u64,
    /// The header's extra data (at most 32 bytes).
    pub extra_data: Bytes,
}

/// A built block with the execution requests its header's `requests_hash` commits to
/// (from Prague on; the Engine API hands them out beside the payload).
#[derive(Debug, Clone)]
pub struct BuiltBlock {
    /// The sealed block with the BAL execution built for it.
    pub block: BlockWithBal,
    /// The execution requests (Prague on); `None` before Prague.
    pub requests: Option<Requests>,
}

impl Blockchain {
    /// Builds a block with exactly `transactions` on top of the current head. Fails if any
    /// transaction is invalid there. Nothing is written.
    pub fn build_block(
        &self,
        attributes: &PayloadAttributes,
        transactions: Vec<Transaction>,
    ) -> Result<BlockWithBal, BlockError> {
        self.build_payload(attributes, transactions).map(|built| built.block)
    }

    /// `build_block`, also returning the block's execution requests.
    pub fn build_payload(
        &self,
        attributes: &PayloadAttributes,
        transactions: Vec<Transaction>,
    ) -> Result<BuiltBlock, BlockError> {
        let parent_hash =
            self.store.head()?.ok_or_else(|| BlockError::storage("store has no head"))?;
        let parent = self
            .store
            .header(&parent_hash)?
            .ok_or(BlockError::from(NodeFault::UnknownParent(parent_hash)))?;
        let timestamp = attributes.timestamp;
        let fork = self.config.pos_fork_at(timestamp);
        let blob_gas_used = ethrex_common::blob_gas_used(&transactions);
        let withdrawals = (fork >= Fork::Shanghai).then(|| attributes.withdrawals.clone().into());
        let header = Header {
            parent_hash,
            ommers_hash: EMPTY_OMMER_ROOT_HASH,
            beneficiary: attributes.fee_recipient,
            transactions_root: calculate_transaction_root(&transactions),
            withdrawals_root: (fork >= Fork::Shanghai)
                .then(|| calculate_withdrawals_root(&attributes.withdrawals)),
            number: parent.number + 1,
            gas_limit: attributes.gas_limit,
            timestamp,
            extra_data: attributes.extra_data.clone(),
            mix_hash: attributes.prev_randao,
            base_fee_per_gas: parent.next_block_base_fee(BaseFeeParams::ethereum()),
            blob_gas_used: (fork >= Fork::Cancun).then_some(blob_gas_used),
            excess_blob_gas: self.config.next_excess_blob_gas(&parent, timestamp),
            parent_beacon_block_root: (fork >= Fork::Cancun)
                .then_some(attributes.parent_beacon_block_root),
            slot_number: (fork >= Fork::Amsterdam).then_some(attributes.slot_number),
            // Filled in below from execution.
            requests_hash: None,
            block_access_list_hash: None,
            ..Default::default()
        };
        let block = Block { header, body: BlockBody { transactions, ommers: vec![], withdrawals } };
        let senders = recover_senders(&block)?;
        let mut recovered = RecoveredBlock { hash: B256::ZERO, block, senders, bal: None };
        let db = StoreDb::new(self.store.clone(), parent_hash, parent.number);
        let output =
            execute_block_sequential(db, &recovered.block, &recovered.senders, &self.config)?;

        let header = &mut recovered.block.header;
        header.gas_used = output.gas_used;
        let receipts = ReceiptsCommitment::of(&output.receipts);
        header.receipts_root = receipts.root;
        header.logs_bloom = receipts.bloom;
        header.requests_hash = output.requests.as_ref().map(|r| r.requests_hash());
        header.block_access_list_hash = output.bal.as_deref().map(compute_block_access_list_hash);
        header.state_root =
            compute_state_root(&self.store, parent.state_root, &output.accounts, output.codes)?;
        Ok(BuiltBlock {
            block: BlockWithBal { block: recovered.block, bal: output.bal },
            requests: output.requests,
        })
    }
}
