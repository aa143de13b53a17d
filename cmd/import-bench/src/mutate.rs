//! Mutated blocks for differential testing: one field of a header, the transaction list or
//! the BAL of a valid block is changed and the block re-sealed (its roots and hashes
//! recomputed where the field is not itself the one changed), so that the block is
//! invalid for a semantic reason, not for a stale commitment. The mutated blocks go into
//! one `blockchain_test` beside the valid chain, each just before the valid block it was
//! made from and marked with `expectException`, so another client must reject them too and
//! still import the chain; this client's own verdicts are checked here the same way.

use crate::bench::LoadedFixture;
use crate::ef_fixture::blockchain_test_json;
use alloy_consensus::proofs::{calculate_transaction_root, calculate_withdrawals_root};
use alloy_primitives::{Address, Bloom, Bytes, B256, U256};
use anyhow::Context;
use ethrex_blockchain::genesis::geth_alloc;
use ethrex_blockchain::{BlockError, Blockchain, ImportOptions, Threshold};
use ethrex_common::{compute_block_access_list_hash, Block, BlockBody, BlockWithBal, Fork};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

/// One kind of change to a valid block. Every kind makes any block invalid under the
/// consensus rules (a kind that would leave some blocks valid is not on the list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    /// Header `gasUsed` one higher.
    GasUsed,
    /// Header `stateRoot` replaced.
    StateRoot,
    /// Header `receiptsRoot` replaced.
    ReceiptsRoot,
    /// One bit of the header's logs bloom flipped.
    LogsBloom,
    /// Header `transactionsRoot` replaced.
    TransactionsRoot,
    /// Header `withdrawalsRoot` replaced.
    WithdrawalsRoot,
    /// Header timestamp set to the parent's.
    Timestamp,
    /// Header number one higher.
    Number,
    /// Header base fee one higher.
    BaseFee,
    /// Header gas limit moved by the parent's limit / 1024 (one past the bound).
    GasLimit,
    /// Header extra data 33 bytes long.
    ExtraData,
    /// Header difficulty 1.
    Difficulty,
    /// Header excess blob gas one higher.
    ExcessBlobGas,
    /// Header `parentBeaconBlockRoot` replaced (the EIP-4788 contract then stores
    /// another root: the state root no longer holds).
    ParentBeaconRoot,
    /// Header `blockAccessListHash` replaced.
    BalHash,
    /// Header `requestsHash` replaced.
    RequestsHash,
    /// The last transaction dropped (transactions root and BAL hash recomputed).
    DropTransaction,
    /// The first transaction included twice (its nonce is then reused).
    DuplicateTransaction,
    /// One balance change's post balance one higher (BAL hash recomputed).
    BalBalance,
    /// One account dropped from the BAL (BAL hash recomputed).
    BalDropAccount,
    /// An account execution does not touch added to the BAL, in canonical order.
    BalExtraAccount,
    /// A storage read execution does not make added to an account of the BAL.
    BalExtraRead,
}

impl Mutation {
    /// Every kind, in a fixed order.
    pub const ALL: [Mutation; 22] = [
        Mutation::GasUsed,
        Mutation::StateRoot,
        Mutation::ReceiptsRoot,
        Mutation::LogsBloom,
        Mutation::TransactionsRoot,
        Mutation::WithdrawalsRoot,
        Mutation::Timestamp,
        Mutation::Number,
        Mutation::BaseFee,
        Mutation::GasLimit,
        Mutation::ExtraData,
        Mutation::Difficulty,
        Mutation::ExcessBlobGas,
        Mutation::ParentBeaconRoot,
        Mutation::BalHash,
        Mutation::RequestsHash,
        Mutation::DropTransaction,
        Mutation::DuplicateTransaction,
        Mutation::BalBalance,
        Mutation::BalDropAccount,
        Mutation::BalExtraAccount,
        Mutation::BalExtraRead,
    ];

    /// A short name for reports and test names.
    pub fn name(self) -> String {
        format!("{self:?}")
    }

    /// The EF exception the mutation is expected to cause (for the fixture; clients that
    /// only check that the block is rejected, like geth's `evm blocktest`, ignore it).
    fn exception(self) -> &'static str {
        use Mutation as M;
        match self {
            M::GasUsed => "BlockException.INVALID_GAS_USED",
            M::StateRoot | M::ParentBeaconRoot => "BlockException.INVALID_STATE_ROOT",
            M::ReceiptsRoot => "BlockException.INVALID_RECEIPTS_ROOT",
            M::LogsBloom => "BlockException.INVALID_LOG_BLOOM",
            M::TransactionsRoot => "BlockException.INVALID_TRANSACTIONS_ROOT",
            M::WithdrawalsRoot => "BlockException.INVALID_WITHDRAWALS_ROOT",
            M::Timestamp => "BlockException.INVALID_BLOCK_TIMESTAMP_OLDER_THAN_PARENT",
            M::Number => "BlockException.INVALID_BLOCK_NUMBER",
            M::BaseFee => "BlockException.INVALID_BASEFEE_PER_GAS",
            M::GasLimit => "BlockException.INVALID_GASLIMIT",
            M::ExtraData => "BlockException.EXTRA_DATA_TOO_BIG",
            M::Difficulty => "BlockException.INCORRECT_BLOCK_FORMAT",
            M::ExcessBlobGas => "BlockException.INCORRECT_EXCESS_BLOB_GAS",
            M::BalHash => "BlockException.INVALID_BAL_HASH",
            M::RequestsHash => "BlockException.INVALID_REQUESTS",
            M::DropTransaction
            | M::BalBalance
            | M::BalDropAccount
            | M::BalExtraAccount
            | M::BalExtraRead => "BlockException.INVALID_BLOCK_ACCESS_LIST",
            M::DuplicateTransaction => "TransactionException.NONCE_MISMATCH_TOO_LOW",
        }
    }

    /// Applies the mutation to `block` (child of `parent`) and re-seals it. `None` when
    /// the block has nothing to mutate of that kind (no transactions, no BAL, ...).
    fn apply(
        self,
        block: &BlockWithBal,
        parent: &Block,
        rng: &mut ChaCha8Rng,
    ) -> Option<BlockWithBal> {
        use Mutation as M;
        let mut b = block.clone();
        let random = B256::from(rng.random::<[u8; 32]>());
        let h = &mut b.block.header;
        match self {
            M::GasUsed => h.gas_used = h.gas_used.checked_add(1).filter(|g| *g <= h.gas_limit)?,
            M::StateRoot => h.state_root = random,
            M::ReceiptsRoot => h.receipts_root = random,
            M::LogsBloom => {
                let mut bytes = h.logs_bloom.0 .0;
                let bit = rng.random_range(0..2048usize);
                bytes[bit / 8] ^= 1 << (bit % 8);
                h.logs_bloom = Bloom::from(bytes);
            }
            M::TransactionsRoot => h.transactions_root = random,
            M::WithdrawalsRoot => h.withdrawals_root = Some(random),
            M::Timestamp => h.timestamp = parent.header.timestamp,
            M::Number => h.number += 1,
            M::BaseFee => h.base_fee_per_gas = Some(h.base_fee_per_gas? + 1),
            M::GasLimit => h.gas_limit = parent.header.gas_limit + parent.header.gas_limit / 1024,
            M::ExtraData => h.extra_data = Bytes::from(vec![0x42; 33]),
            M::Difficulty => h.difficulty = U256::from(1),
            M::ExcessBlobGas => h.excess_blob_gas = Some(h.excess_blob_gas? + 1),
            M::ParentBeaconRoot => {
                h.parent_beacon_block_root?;
                h.parent_beacon_block_root = Some(random);
            }
            M::BalHash => {
                h.block_access_list_hash?;
                h.block_access_list_hash = Some(random);
            }
            M::RequestsHash => {
                h.requests_hash?;
                h.requests_hash = Some(random);
            }
            M::DropTransaction => {
                b.block.body.transactions.pop()?;
                reseal_body(&mut b.block);
            }
            M::DuplicateTransaction => {
                let first = b.block.body.transactions.first()?.clone();
                b.block.body.transactions.insert(1, first);
                reseal_body(&mut b.block);
            }
            M::BalBalance | M::BalDropAccount | M::BalExtraAccount | M::BalExtraRead => {
                let bal = b.bal.as_mut()?;
                match self {
                    M::BalBalance => {
                        let with: Vec<usize> = (0..bal.len())
                            .filter(|i| !bal[*i].balance_changes.is_empty())
                            .collect();
                        let account =
                            &mut bal[*with.get(rng.random_range(0..with.len().max(1)))?];
                        let change = account.balance_changes.last_mut()?;
                        change.post_balance += U256::from(1);
                    }
                    M::BalDropAccount => {
                        if bal.is_empty() {
                            return None;
                        }
                        bal.remove(rng.random_range(0..bal.len()));
                    }
                    M::BalExtraAccount => {
                        let address = Address::from(rng.random::<[u8; 20]>());
                        let at = bal.partition_point(|a| a.address < address);
                        bal.insert(at, ethrex_common::AccountChanges::new(address));
                    }
                    _ => {
                        let at = rng.random_range(0..bal.len().max(1));
                        let account = bal.get_mut(at)?;
                        let slot = U256::from_be_bytes(random.0);
                        let at = account.storage_reads.partition_point(|s| *s < slot);
                        account.storage_reads.insert(at, slot);
                    }
                }
                let hash = compute_block_access_list_hash(bal);
                b.block.header.block_access_list_hash = Some(hash);
            }
        }
        Some(b)
    }
}

/// Recomputes the body's commitments in the header after the body changed.
fn reseal_body(block: &mut Block) {
    let BlockBody { transactions, withdrawals, .. } = &block.body;
    block.header.transactions_root = calculate_transaction_root(transactions);
    if let Some(w) = withdrawals {
        block.header.withdrawals_root = Some(calculate_withdrawals_root(w));
    }
}

/// One mutation and this client's verdict on it.
#[derive(Debug, Clone)]
pub struct MutationOutcome {
    /// Which block (number) was mutated.
    pub block: u64,
    /// What was changed.
    pub mutation: Mutation,
    /// This client's rejection (`Ok`) or the block's acceptance (`Err`).
    pub verdict: Result<BlockError, String>,
}

/// Builds `count` mutations of the fixture's blocks (kinds and blocks drawn from `seed`)
/// and imports the chain on a fresh store with each mutated block tried just before the
/// valid block it was made from: every mutated block must be rejected and leave no trace,
/// since the valid block and the rest of the chain must then import on top. Returns every
/// verdict and a one-test `blockchain_test` file (as JSON) holding the same sequence, the
/// mutated blocks marked with `expectException`, for another client to replay.
pub fn mutations(
    fixture: &LoadedFixture,
    fork: Fork,
    count: usize,
    seed: u64,
) -> anyhow::Result<(Vec<MutationOutcome>, Value)> {
    anyhow::ensure!(!fixture.blocks.is_empty(), "the chain has no blocks to mutate");
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6d75_7461_7465);
    let alloc = geth_alloc(&fixture.genesis);
    let (store, genesis) = crate::generate::genesis_in_memory(&fixture.genesis, &alloc)?;
    // Both paths see the mutations: the parallel one wherever a BAL is present.
    let options = ImportOptions { threshold: Threshold::MinTxs(0), ..ImportOptions::default() };
    let chain = Blockchain::new(store, fixture.config.clone()).with_options(options);

    // Which mutations go before which block.
    let mut planned: Vec<Vec<Mutation>> = vec![Vec::new(); fixture.blocks.len()];
    for _ in 0..count {
        let k = rng.random_range(0..fixture.blocks.len());
        planned[k].push(Mutation::ALL[rng.random_range(0..Mutation::ALL.len())]);
    }
    let mut outcomes = Vec::with_capacity(count);
    let mut sequence: Vec<BlockWithBal> = Vec::new();
    let mut mutated_at: Vec<(usize, Mutation)> = Vec::new();
    for (k, valid) in fixture.blocks.iter().enumerate() {
        let parent = if k == 0 { &genesis } else { &fixture.blocks[k - 1].block };
        for &wanted in &planned[k] {
            // A kind the block offers nothing to (no transactions, ...) is replaced by the
            // next kind that applies.
            let start = Mutation::ALL.iter().position(|m| *m == wanted).unwrap_or(0);
            let Some((mutation, mutated)) = (0..Mutation::ALL.len())
                .map(|j| Mutation::ALL[(start + j) % Mutation::ALL.len()])
                .find_map(|m| m.apply(valid, parent, &mut rng).map(|b| (m, b)))
            else {
                continue;
            };
            let verdict = match chain.import_block(mutated.clone()) {
                Ok(_) => Err("accepted".to_string()),
                Err(e) if e.is_invalid_block() => Ok(e),
                Err(e) => Err(format!("node fault instead of a verdict: {e}")),
            };
            let accepted = verdict.is_err();
            outcomes.push(MutationOutcome { block: valid.block.header.number, mutation, verdict });
            anyhow::ensure!(
                !accepted,
                "block {} with mutation {mutation:?} was not rejected: {:?}",
                valid.block.header.number,
                outcomes.last().map(|o| &o.verdict)
            );
            mutated_at.push((sequence.len(), mutation));
            sequence.push(mutated);
        }
        chain.import_block(valid.clone()).with_context(|| {
            format!("valid block {} after its mutations", valid.block.header.number)
        })?;
        sequence.push(valid.clone());
    }

    let name = format!("ethrex_mutations_{}_seed{seed}_{count}", fork.name().to_lowercase());
    let mut test = blockchain_test_json(
        &name,
        fork,
        &fixture.config,
        &genesis,
        &alloc,
        &sequence,
        &chain.store,
    )?;
    let blocks = test[&name]["blocks"].as_array_mut().context("fixture blocks")?;
    // A mutated block carries only what a client must decode, and the expected rejection.
    for (at, mutation) in mutated_at {
        let entry = &mut blocks[at];
        let mut replaced = serde_json::json!({
            "rlp": entry["rlp"].clone(),
            "expectException": mutation.exception(),
        });
        if let Some(bal) = entry.get("blockAccessList") {
            replaced["blockAccessList"] = bal.clone();
        }
        *entry = replaced;
    }
    Ok((outcomes, test))
}
