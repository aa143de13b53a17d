//! Building a block on top of the head: the same executor and state-root code the import
//! pipeline uses, run in the other direction (execution fills in the header instead of
//! being checked against it). Used by the chain generators, tests, and payload
//! building: `build_payload` for a proof-of-stake block (what the consensus layer asks
//! for), `build_pow_block` for a proof-of-work one (what a miner would seal; the seal's
//! nonce and mix hash are the caller's, as no client checks the ethash seal any more).

use crate::consensus::london::expected_base_fee;
use crate::consensus::pow::expected_difficulty;
use crate::error::{BlockError, InvalidBlock, NodeFault};
use crate::import::{recover_senders, Blockchain};
use crate::state_root::compute_state_root;
use crate::validation::ReceiptsCommitment;
use alloy_consensus::proofs::calculate_ommers_root;
use alloy_consensus::proofs::{calculate_transaction_root, calculate_withdrawals_root};
use alloy_consensus::EMPTY_OMMER_ROOT_HASH;
use alloy_eips::eip1559::BaseFeeParams;
use alloy_eips::eip7685::Requests;
use alloy_primitives::{Address, Bytes, B256, B64, U256};
use ethrex_common::{
    compute_block_access_list_hash, Block, BlockBody, BlockWithBal, Fork, Header, RecoveredBlock,
    Transaction, Withdrawal,
};
use ethrex_vm::{execute_block_sequential_with_roots, AccountChange, StoreDb};

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

/// What a miner decides about a new proof-of-work block.
#[derive(Debug, Clone, Default)]
pub struct PowAttributes {
    /// The block's timestamp (seconds); must be after the parent's. With the parent's, it
    /// sets the difficulty.
    pub timestamp: u64,
    /// Who receives the block reward and the fees.
    pub beneficiary: Address,
    /// The gas limit (within the parent's bound).
    pub gas_limit: u64,
    /// The header's extra data (at most 32 bytes; `dao-hard-fork` where the DAO fork
    /// requires it).
    pub extra_data: Bytes,
    /// The ommer headers to include (at most two, each a recent block's sibling).
    pub ommers: Vec<Header>,
    /// The seal's nonce.
    pub nonce: B64,
    /// The seal's mix hash.
    pub mix_hash: B256,
}

/// A built block with the execution requests its header's `requests_hash` commits to
/// (from Prague on; the Engine API hands them out beside the payload).
#[derive(Debug, Clone)]
pub struct BuiltBlock {
    /// The sealed block with the BAL execution built for it.
    pub block: BlockWithBal,
    /// The execution requests (Prague on); `None` before Prague.
    pub requests: Option<Requests>,
    /// What the fee recipient earns in priority fees (wei): each transaction's gas used
    /// times its effective tip. The Engine API's `blockValue`.
    pub fees: U256,
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
        let (parent_hash, parent) = self.head_to_build_on()?;
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
        self.fill_from_execution(block, &parent)
    }

    /// Builds a proof-of-work block with exactly `transactions` on the current head, which
    /// must come before the merge: the difficulty from the parent and the timestamp under
    /// the block's fork, a base fee from London on, the ommers given. Nothing is written.
    pub fn build_pow_block(
        &self,
        attributes: &PowAttributes,
        transactions: Vec<Transaction>,
    ) -> Result<BlockWithBal, BlockError> {
        let (parent_hash, parent) = self.head_to_build_on()?;
        let parent_td = self.store.total_difficulty(&parent_hash)?.unwrap_or_default();
        if crate::consensus::merge::after_merge(&self.config, &parent, parent_td) {
            let terminal = self.config.inner.terminal_total_difficulty.unwrap_or_default();
            return Err(InvalidBlock::PowBlockAfterMerge { parent_td, terminal }.into());
        }
        let number = parent.number + 1;
        let fork = self.config.fork_at(number, attributes.timestamp).min(Fork::GrayGlacier);
        let header = Header {
            parent_hash,
            ommers_hash: if attributes.ommers.is_empty() {
                EMPTY_OMMER_ROOT_HASH
            } else {
                calculate_ommers_root(&attributes.ommers)
            },
            beneficiary: attributes.beneficiary,
            transactions_root: calculate_transaction_root(&transactions),
            difficulty: expected_difficulty(fork, &parent, attributes.timestamp),
            number,
            gas_limit: attributes.gas_limit,
            timestamp: attributes.timestamp,
            extra_data: attributes.extra_data.clone(),
            mix_hash: attributes.mix_hash,
            nonce: attributes.nonce,
            base_fee_per_gas: expected_base_fee(&self.config, number, &parent)?,
            ..Default::default()
        };
        let body = BlockBody { transactions, ommers: attributes.ommers.clone(), withdrawals: None };
        Ok(self.fill_from_execution(Block { header, body }, &parent)?.block)
    }

    /// The head's hash and header: what a new block is built on.
    fn head_to_build_on(&self) -> Result<(B256, Header), BlockError> {
        let hash = self.store.head()?.ok_or_else(|| BlockError::storage("store has no head"))?;
        let header =
            self.store.header(&hash)?.ok_or(BlockError::from(NodeFault::UnknownParent(hash)))?;
        Ok((hash, header))
    }

    /// Executes `block` on `parent` (the head) and fills in what execution decides: gas
    /// used, receipts root and bloom (with each receipt's intermediate state root before
    /// Byzantium), requests hash, BAL hash and state root.
    fn fill_from_execution(&self, block: Block, parent: &Header) -> Result<BuiltBlock, BlockError> {
        let parent_hash = block.header.parent_hash;
        let senders = recover_senders(&block)?;
        let mut recovered = RecoveredBlock { hash: B256::ZERO, block, senders, bal: None };
        let db = StoreDb::new(self.store.clone(), parent_hash, parent.number);
        let roots = |changes: &[AccountChange], codes: &[(B256, Bytes)]| {
            compute_state_root(&self.store, parent.state_root, changes, codes.to_vec())
                .map_err(ethrex_vm::error::DatabaseError::new)
        };
        let output = execute_block_sequential_with_roots(
            db,
            &recovered.block,
            &recovered.senders,
            &self.config,
            &roots,
        )?;

        let header = &mut recovered.block.header;
        header.gas_used = output.gas_used;
        let receipts = ReceiptsCommitment::of(&output.receipts);
        header.receipts_root = receipts.root;
        header.logs_bloom = receipts.bloom;
        header.requests_hash = output.requests.as_ref().map(|r| r.requests_hash());
        header.block_access_list_hash = output.bal.as_deref().map(compute_block_access_list_hash);
        header.state_root =
            compute_state_root(&self.store, parent.state_root, &output.accounts, output.codes)?;
        let base_fee = recovered.block.header.base_fee_per_gas.unwrap_or_default();
        let mut previous = 0;
        let mut fees = U256::ZERO;
        for (tx, receipt) in recovered.block.body.transactions.iter().zip(&output.receipts) {
            let cumulative = alloy_consensus::TxReceipt::cumulative_gas_used(receipt);
            let tip = alloy_consensus::Transaction::effective_tip_per_gas(tx, base_fee);
            fees += U256::from(cumulative - previous) * U256::from(tip.unwrap_or_default());
            previous = cumulative;
        }
        Ok(BuiltBlock {
            block: BlockWithBal { block: recovered.block, bal: output.bal },
            requests: output.requests,
            fees,
        })
    }
}
