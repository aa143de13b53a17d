//! The node's shared state behind the Engine API and the other RPC servers: the
//! blockchain, blocks received on a side branch (not yet executed), verdicts on invalid
//! blocks, built payloads and the transaction pool, which follows every new head.
//!
//! Everything kept in memory here is bounded: a consensus client (or anyone holding the
//! JWT secret) can send any number of side-chain or invalid payloads.

use alloy_primitives::{Bytes, B256};
use alloy_rpc_types_engine::PayloadId;
use ethrex_blockchain::fork_choice::BlockSource;
use ethrex_blockchain::{Blockchain, BuiltBlock};
use ethrex_common::BlockWithBal;
use parking_lot::{Mutex, RwLock};
use quick_cache::unsync::Cache;
use std::sync::Arc;

/// Side-chain blocks kept for a later fork choice. A reorg deeper than this needs sync.
pub(crate) const MAX_SIDE_BLOCKS: usize = 256;
/// Invalid blocks remembered, so their descendants are answered without execution.
pub(crate) const MAX_INVALID_BLOCKS: usize = 512;
/// The gas limit built blocks move toward unless configured (geth's default).
pub const DEFAULT_TARGET_GAS_LIMIT: u64 = 60_000_000;
/// Built payloads kept for `engine_getPayload`.
pub(crate) const MAX_BUILT_PAYLOADS: usize = 64;
/// The longest a transaction waits for the engine before it is admitted anyway.
pub const INTAKE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// A payload built for `engine_getPayload`.
#[derive(Clone)]
pub struct BuiltPayload {
    /// The built block with its BAL (from Amsterdam on).
    pub block: BlockWithBal,
    /// The EIP-7685 requests the header's `requests_hash` commits to (type-prefixed).
    pub requests: Vec<Bytes>,
    /// The sidecars of the block's blob transactions, in block order: the blobs bundle.
    pub sidecars: Vec<Arc<ethrex_txpool::Sidecar>>,
    /// The priority fees the fee recipient earns: `blockValue`.
    pub fees: alloy_primitives::U256,
}

impl BuiltPayload {
    /// Keeps the requests as the Engine API hands them out: ordered by type, without the
    /// types that carry no request data (EIP-7685; `requests_hash` leaves them out too).
    pub fn new(built: BuiltBlock, sidecars: Vec<Arc<ethrex_txpool::Sidecar>>) -> Self {
        let fees = built.fees;
        let requests = built
            .requests
            .map(|r| r.take())
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r.len() > 1)
            .collect();
        Self { block: built.block, requests, sidecars, fees }
    }
}

/// A payload being improved in the background (`build::keep_improving`): what it was
/// built for and what the best one so far pays.
pub(crate) struct Improving {
    pub(crate) attributes: ethrex_blockchain::PayloadAttributes,
    pub(crate) parent: B256,
    pub(crate) pool_version: u64,
    pub(crate) fees: alloy_primitives::U256,
    /// Set by `getPayload`: the consensus client has it; improving stops.
    pub(crate) delivered: std::sync::atomic::AtomicBool,
}

/// Why a block is invalid, and the newest valid block on its chain.
#[derive(Debug, Clone)]
pub(crate) struct InvalidBlock {
    /// The newest valid ancestor: the `latestValidHash` of the INVALID status.
    pub(crate) latest_valid: B256,
    /// The `validationError` text: the EF exception name, `: ` and the details.
    pub(crate) reason: String,
}

/// Blocks whose parent was not the head when they arrived; executed when a fork choice
/// makes their branch canonical. The least recently used are dropped first.
pub(crate) struct SideBlocks(Cache<B256, BlockWithBal>);

impl SideBlocks {
    fn new() -> Self {
        Self(Cache::new(MAX_SIDE_BLOCKS))
    }
    /// Keeps `block` under its hash; a full cache evicts another block to make room.
    pub(crate) fn insert(&mut self, block: BlockWithBal) {
        self.0.insert(block.hash(), block);
    }
    /// Whether a block with this hash is kept.
    pub(crate) fn contains(&self, hash: &B256) -> bool {
        self.0.contains_key(hash)
    }
    /// The block with this hash, if kept.
    pub(crate) fn get(&self, hash: &B256) -> Option<&BlockWithBal> {
        self.0.get(hash)
    }
    /// Drops every block for which `keep` returns false.
    pub(crate) fn retain(&mut self, keep: impl Fn(&B256, &BlockWithBal) -> bool) {
        self.0.retain(|h, b| keep(h, b));
    }
}

impl BlockSource for SideBlocks {
    fn block(&self, hash: &B256) -> Option<BlockWithBal> {
        self.0.peek(hash).cloned()
    }
}

/// Verdicts on blocks found invalid, by hash.
pub(crate) struct InvalidBlocks(Cache<B256, InvalidBlock>);

impl InvalidBlocks {
    fn new() -> Self {
        Self(Cache::new(MAX_INVALID_BLOCKS))
    }
    /// Records the verdict on `hash`; a full cache evicts another verdict to make room.
    pub(crate) fn insert(&mut self, hash: B256, verdict: InvalidBlock) {
        self.0.insert(hash, verdict);
    }
    /// The verdict on `hash`, if remembered.
    pub(crate) fn get(&self, hash: &B256) -> Option<InvalidBlock> {
        self.0.get(hash).cloned()
    }
}

/// The blocks the consensus layer last called safe and finalized.
#[derive(Debug, Clone, Copy, Default)]
pub struct Labels {
    /// The safe block's hash (zero: not named yet).
    pub safe: B256,
    /// The finalized block's hash (zero: not named yet).
    pub finalized: B256,
}

/// What the Engine API handlers share. Every handler that reads or moves the head takes
/// `write_lock` first and each of the other locks only for one statement, never two of
/// them at once: no lock is ever taken while the same thread holds it.
pub struct Node {
    /// The chain: store, configuration and the import pipeline every payload goes through.
    pub chain: Blockchain,
    /// Side-branch blocks not executed yet.
    pub(crate) pending: Mutex<SideBlocks>,
    /// Verdicts on blocks found invalid.
    pub(crate) invalid: Mutex<InvalidBlocks>,
    /// Payloads built for `engine_getPayload`, by payload id; a bounded cache, so an old
    /// payload may have been evicted.
    pub payloads: Mutex<Cache<PayloadId, BuiltPayload>>,
    /// Payloads still being improved in the background (`build::keep_improving`), with
    /// whether `getPayload` has taken them; at most `MAX_IMPROVING`.
    pub(crate) improving: Mutex<std::collections::HashMap<PayloadId, Arc<Improving>>>,
    /// Serialises everything that moves the head or writes blocks.
    pub(crate) write_lock: Mutex<()>,
    /// The engine's priority over transaction intake: `newPayload` and
    /// `forkchoiceUpdated` hold it exclusively while they run, each transaction the pool
    /// admits ([`Node::admit`]) holds it shared. On two cores a stream of incoming
    /// transactions (signature recovery, account reads) would otherwise take a core from
    /// the block a validator is waiting for; this way intake pauses for the length of a
    /// block and the block runs as on an idle node. The lock is fair: a waiting engine
    /// call stops new admissions, so it waits at most for the ones already running.
    pub(crate) intake: RwLock<()>,
    /// The safe and finalized blocks the last valid `forkchoiceUpdated` named (zero
    /// until one names them), for the `safe` and `finalized` block tags.
    pub labels: Mutex<Labels>,
    /// How many committed blocks may still be waiting for the disk when
    /// `forkchoiceUpdated` answers VALID (0: the head is synced to disk first).
    pub(crate) persistence_lag: u64,
    /// The gas limit built blocks move toward (by the protocol's step per block).
    pub target_gas_limit: u64,
    /// The devp2p network, once started: syncs to heads the consensus client names that
    /// the node does not have, and answers `admin_*`.
    pub network: std::sync::OnceLock<ethrex_net::Network>,
    /// The transaction pool: filled by `eth_sendRawTransaction` and peers, drawn from by
    /// payload building, cleaned on every new head.
    pub pool: ethrex_txpool::TxPool,
    /// Whether the node follows the chain (a forkchoiceUpdated made a known head
    /// canonical, or it makes its own blocks): only then are peers' transactions taken.
    pub following: std::sync::atomic::AtomicBool,
    /// The hashes of the transactions the pool took as executable, newest last, for
    /// `newPendingTransactions` subscribers ([`Node::admitted_since`]).
    admitted: Mutex<AdmittedLog>,
}

/// How many admitted transaction hashes are kept for subscribers: one who falls further
/// behind misses the oldest (a subscription is a notification, not a log).
pub const ADMITTED_KEPT: usize = 4096;

/// The most recent executable admissions, numbered.
#[derive(Debug, Default)]
struct AdmittedLog {
    /// The number the next admission gets.
    next: u64,
    /// The last [`ADMITTED_KEPT`] hashes, the newest last.
    recent: std::collections::VecDeque<B256>,
}

/// The head's accounts as the pool reads them (a store read that fails counts as a
/// missing account: the transaction is then refused, never wrongly admitted on balance).
pub struct HeadAccounts<'a>(pub &'a ethrex_storage::Store);

impl ethrex_txpool::AccountSource for HeadAccounts<'_> {
    fn account(&self, address: &alloy_primitives::Address) -> Option<ethrex_txpool::Account> {
        let account = self.0.account(address).ok()??;
        Some(ethrex_txpool::Account {
            nonce: account.nonce,
            balance: account.balance,
            has_code: account.code_hash != ethrex_common::KECCAK_EMPTY,
        })
    }
}

/// What the pool validates against: the head and the rules of the block after it.
pub fn pool_head(chain: &Blockchain) -> ethrex_txpool::Head {
    let head = chain.store.head_header().ok().flatten().unwrap_or_default();
    let config = &chain.config;
    // The next block comes at least a second later; a timestamp fork due then applies.
    let fork = if config.fork_of(&head) >= ethrex_common::Fork::Paris {
        config.pos_fork_at(head.timestamp + 1)
    } else {
        config.fork_at(head.number + 1, head.timestamp + 1)
    };
    let base_fee = head
        .next_block_base_fee(alloy_eips::eip1559::BaseFeeParams::ethereum())
        .unwrap_or_default();
    let next_time = head.timestamp + 1;
    let blob_params =
        (fork >= ethrex_common::Fork::Cancun).then(|| config.blob_params_at(next_time)).flatten();
    let blob_base_fee = blob_params
        .zip(config.next_excess_blob_gas(&head, next_time))
        .map_or(0, |(params, excess)| params.calc_blob_fee(excess));
    ethrex_txpool::Head {
        hash: head.hash_slow(),
        number: head.number,
        chain_id: config.chain_id(),
        fork,
        base_fee,
        gas_limit: head.gas_limit,
        blob_base_fee,
        max_blobs_per_tx: blob_params.map_or(0, |p| p.max_blobs_per_tx as usize),
        max_blobs_per_block: blob_params.map_or(0, |p| p.max_blob_count as usize),
    }
}

impl Node {
    /// Node state over `chain` with empty caches and a persistence lag of 0.
    pub fn new(chain: Blockchain) -> Self {
        let pool = ethrex_txpool::TxPool::new(Default::default(), pool_head(&chain));
        Self {
            pool,
            following: std::sync::atomic::AtomicBool::new(false),
            chain,
            pending: Mutex::new(SideBlocks::new()),
            invalid: Mutex::new(InvalidBlocks::new()),
            payloads: Mutex::new(Cache::new(MAX_BUILT_PAYLOADS)),
            improving: Mutex::default(),
            write_lock: Mutex::new(()),
            intake: RwLock::new(()),
            labels: Mutex::default(),
            persistence_lag: 0,
            target_gas_limit: DEFAULT_TARGET_GAS_LIMIT,
            network: std::sync::OnceLock::new(),
            admitted: Mutex::default(),
        }
    }

    /// The hashes of the transactions admitted as executable since admission number
    /// `from` (at most the last [`ADMITTED_KEPT`]), and the number to ask from next.
    pub fn admitted_since(&self, from: u64) -> (Vec<B256>, u64) {
        let log = self.admitted.lock();
        let oldest = log.next - log.recent.len() as u64;
        let skip = from.max(oldest) - oldest;
        (log.recent.iter().skip(skip as usize).copied().collect(), log.next)
    }

    /// Offers `tx` to the pool against the head's accounts, after any `newPayload` or
    /// `forkchoiceUpdated` running or waiting (see `intake`). A wait longer than
    /// [`INTAKE_WAIT`] (a block that takes that long) admits anyway: intake is slowed by
    /// the engine, never stopped.
    ///
    /// # Errors
    /// The pool's refusal.
    pub fn admit(
        &self,
        tx: ethrex_common::Transaction,
    ) -> Result<ethrex_txpool::Added, ethrex_txpool::PoolError> {
        let _turn = self.intake.try_read_for(INTAKE_WAIT);
        let added = self.pool.add(tx, &HeadAccounts(&self.chain.store))?;
        if let ethrex_txpool::Added::Pending(hash) = added {
            let mut log = self.admitted.lock();
            if log.recent.len() == ADMITTED_KEPT {
                log.recent.pop_front();
            }
            log.recent.push_back(hash);
            log.next += 1;
        }
        Ok(added)
    }

    /// Keeps the pool's sidecars in `store` (a directory under the datadir for a node;
    /// the pool starts in memory). Call before any transaction arrives: the pool is
    /// replaced.
    pub fn with_blob_store(mut self, store: ethrex_txpool::BlobStore) -> Self {
        let head = pool_head(&self.chain);
        self.pool = ethrex_txpool::TxPool::with_blob_store(Default::default(), head, store);
        self
    }

    /// Builds blocks whose gas limit moves toward `target`.
    pub fn with_target_gas_limit(mut self, target: u64) -> Self {
        self.target_gas_limit = target;
        self
    }

    /// Lets `forkchoiceUpdated` answer VALID while up to `lag` blocks are not yet on disk.
    pub fn with_persistence_lag(mut self, lag: u64) -> Self {
        self.persistence_lag = lag;
        self
    }

    /// The verdict on `hash`, if it is known invalid.
    pub(crate) fn invalid_verdict(&self, hash: &B256) -> Option<InvalidBlock> {
        self.invalid.lock().get(hash)
    }

    /// Tells the pool the head moved: it validates against the new head, drops what the
    /// head's accounts made stale and takes back `unwound` (transactions of blocks that
    /// left the canonical chain).
    pub fn pool_on_new_head(&self, unwound: Vec<ethrex_common::Transaction>) {
        let head = pool_head(&self.chain);
        if head.hash == self.pool.head().hash && unwound.is_empty() {
            return;
        }
        self.pool.on_new_head(head, &HeadAccounts(&self.chain.store), unwound);
    }

    /// Remembers that `hash` is invalid, and why.
    pub(crate) fn mark_invalid(&self, hash: B256, verdict: InvalidBlock) {
        self.invalid.lock().insert(hash, verdict);
    }
}

/// The sync imports through the node, so its writes are serialised with the Engine API's
/// (`write_lock`), and the blocks it finds invalid are answered INVALID to the consensus
/// client.
impl ethrex_net::ChainHost for Node {
    fn chain(&self) -> &Blockchain {
        &self.chain
    }

    fn import(
        &self,
        blocks: Vec<BlockWithBal>,
    ) -> Result<Vec<ethrex_blockchain::ImportOutcome>, ethrex_blockchain::BatchError> {
        let _guard = self.write_lock.lock();
        ethrex_net::host::import_on(&self.chain, blocks)
    }

    fn unwind_to(&self, hash: B256) -> Result<(), ethrex_blockchain::fork_choice::ForkChoiceError> {
        let _guard = self.write_lock.lock();
        self.chain.set_head(hash, &std::collections::HashMap::new())
    }

    fn mark_invalid(&self, hash: B256, latest_valid: B256, reason: String) {
        self.mark_invalid(hash, InvalidBlock { latest_valid, reason });
    }

    fn accepts_transactions(&self) -> bool {
        self.following.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn add_transactions(
        &self,
        txs: Vec<ethrex_common::Transaction>,
    ) -> Vec<Result<ethrex_txpool::Added, ethrex_txpool::PoolError>> {
        txs.into_iter().map(|tx| self.admit(tx)).collect()
    }

    fn has_transaction(&self, hash: &B256) -> bool {
        self.pool.get(hash).is_some()
    }

    fn pooled_transaction(&self, hash: &B256) -> Option<ethrex_common::Transaction> {
        self.pool.get_network(hash)
    }
}
