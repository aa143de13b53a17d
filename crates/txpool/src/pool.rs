//! The pool: transactions by hash and by sender and nonce. A sender's transactions from
//! its account nonce on without a gap are pending (executable in order); the rest are
//! queued until the gap fills. Which is which is decided against the head's accounts
//! when asked, so a new head needs no re-sorting, only `on_new_head`'s clean-up.

use crate::config::PoolConfig;
use crate::error::{Added, PoolError};
use crate::validate::{check_transaction, effective_tip, max_cost, Account, AccountSource, Head};
use alloy_consensus::transaction::SignerRecoverable as _;
use alloy_consensus::Transaction as _;
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, B256, U256};
use ethrex_common::Transaction;
use parking_lot::RwLock;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// A pooled transaction with what was worked out once on entry.
#[derive(Debug, Clone)]
pub struct PooledTx {
    /// The transaction (consensus form).
    pub tx: Arc<Transaction>,
    /// Its hash.
    pub hash: B256,
    /// Its sender, recovered on entry.
    pub sender: Address,
    /// Its encoded size (EIP-2718).
    pub size: usize,
    /// Arrival order: breaks ties between equal tips (first come, first served).
    pub seq: u64,
}

impl PooledTx {
    fn nonce(&self) -> u64 {
        self.tx.nonce()
    }
}

#[derive(Default)]
struct Inner {
    by_hash: HashMap<B256, PooledTx>,
    by_sender: HashMap<Address, BTreeMap<u64, B256>>,
    bytes: usize,
    seq: u64,
}

impl Inner {
    fn insert(&mut self, pooled: PooledTx) {
        self.bytes += pooled.size;
        self.by_sender.entry(pooled.sender).or_default().insert(pooled.nonce(), pooled.hash);
        self.by_hash.insert(pooled.hash, pooled);
    }

    fn remove(&mut self, hash: &B256) -> Option<PooledTx> {
        let pooled = self.by_hash.remove(hash)?;
        self.bytes -= pooled.size;
        if let Some(txs) = self.by_sender.get_mut(&pooled.sender) {
            if txs.get(&pooled.nonce()) == Some(hash) {
                txs.remove(&pooled.nonce());
            }
            if txs.is_empty() {
                self.by_sender.remove(&pooled.sender);
            }
        }
        Some(pooled)
    }

    /// The sender's transactions from `nonce` on without a gap.
    fn contiguous(&self, sender: &Address, nonce: u64) -> impl Iterator<Item = &PooledTx> {
        let txs = self.by_sender.get(sender);
        (nonce..).map_while(move |n| txs.and_then(|t| t.get(&n))).map(|h| &self.by_hash[h])
    }

    /// The cheapest transaction that is its sender's last (evicting it leaves no gap),
    /// by effective tip at `base_fee`, then latest arrival.
    fn cheapest_last(&self, base_fee: u64) -> Option<&PooledTx> {
        self.by_sender
            .values()
            .filter_map(|txs| txs.values().next_back())
            .map(|h| &self.by_hash[h])
            .min_by_key(|p| (effective_tip(&p.tx, base_fee), std::cmp::Reverse(p.seq)))
    }
}

/// The transaction pool. Cheap to share: every method takes `&self`.
pub struct TxPool {
    config: PoolConfig,
    head: RwLock<Head>,
    inner: RwLock<Inner>,
}

impl TxPool {
    /// An empty pool at `head`.
    pub fn new(config: PoolConfig, head: Head) -> Self {
        Self { config, head: RwLock::new(head), inner: RwLock::default() }
    }

    /// The head the pool validates against.
    pub fn head(&self) -> Head {
        self.head.read().clone()
    }

    /// Decodes a transaction in its network form (EIP-2718) and adds it.
    pub fn add_raw(&self, raw: &[u8], state: &dyn AccountSource) -> Result<Added, PoolError> {
        let mut buf = raw;
        let tx = <Transaction as alloy_eips::eip2718::Decodable2718>::decode_2718(&mut buf)
            .map_err(|e| PoolError::Decode(e.to_string()))?;
        if !buf.is_empty() {
            return Err(PoolError::Decode("input too long".into()));
        }
        self.add(tx, state)
    }

    /// Validates `tx` against the head and the sender's account, then pools it: as a new
    /// transaction, or replacing the sender's transaction with the same nonce if it pays
    /// `price_bump` percent more on both fee cap and tip. A full pool makes room by
    /// dropping its cheapest transaction if `tx` pays more.
    pub fn add(&self, tx: Transaction, state: &dyn AccountSource) -> Result<Added, PoolError> {
        let hash = *tx.hash();
        if self.inner.read().by_hash.contains_key(&hash) {
            return Err(PoolError::AlreadyKnown);
        }
        let sender = tx.recover_signer().map_err(|_| PoolError::InvalidSender)?;
        let size = tx.encode_2718_len();
        let head = self.head();
        check_transaction(&tx, sender, size, &head, &self.config)?;
        let account = state.account(&sender).unwrap_or_default();
        let nonce = tx.nonce();
        if nonce < account.nonce {
            return Err(PoolError::NonceTooLow { next: account.nonce, got: nonce });
        }
        if nonce > account.nonce + self.config.max_nonce_gap {
            return Err(PoolError::NonceTooHigh { next: account.nonce, got: nonce });
        }

        let mut inner = self.inner.write();
        if inner.by_hash.contains_key(&hash) {
            return Err(PoolError::AlreadyKnown);
        }
        let replaced = inner.by_sender.get(&sender).and_then(|t| t.get(&nonce)).copied();
        if let Some(old) = replaced.map(|h| &inner.by_hash[&h]) {
            if !self.pays_enough_more(&tx, &old.tx) {
                return Err(PoolError::ReplacementUnderpriced);
            }
        }
        // The sender must afford this transaction after its earlier pooled ones.
        let earlier: U256 = inner
            .by_sender
            .get(&sender)
            .map(|txs| {
                txs.range(account.nonce..nonce).map(|(_, h)| max_cost(&inner.by_hash[h].tx)).sum()
            })
            .unwrap_or_default();
        let cost = earlier + max_cost(&tx);
        if cost > account.balance {
            let overshot = cost - account.balance;
            return Err(PoolError::InsufficientFunds { balance: account.balance, cost, overshot });
        }
        let pooled_by_sender = inner.by_sender.get(&sender).map_or(0, |t| t.len());
        if replaced.is_none() && pooled_by_sender >= self.config.max_per_sender {
            return Err(PoolError::AccountLimit(pooled_by_sender));
        }
        if let Some(old) = replaced {
            inner.remove(&old);
        }
        // Room: drop the cheapest (a sender's last) while the pool is over a limit.
        let tip = effective_tip(&tx, head.base_fee);
        while inner.by_hash.len() >= self.config.max_transactions
            || inner.bytes + size > self.config.max_bytes
        {
            let Some(cheapest) = inner.cheapest_last(head.base_fee) else { break };
            if effective_tip(&cheapest.tx, head.base_fee) >= tip {
                return Err(PoolError::PoolFull);
            }
            let cheapest = cheapest.hash;
            inner.remove(&cheapest);
        }
        inner.seq += 1;
        let seq = inner.seq;
        inner.insert(PooledTx { tx: Arc::new(tx), hash, sender, size, seq });
        let gapless = inner.contiguous(&sender, account.nonce).any(|p| p.hash == hash);
        Ok(if gapless { Added::Pending(hash) } else { Added::Queued(hash) })
    }

    /// Whether `new` pays `price_bump` percent more than `old` on fee cap and on tip.
    fn pays_enough_more(&self, new: &Transaction, old: &Transaction) -> bool {
        let bumped = |v: u128| v.saturating_mul(100 + self.config.price_bump) / 100;
        let (new_cap, old_cap) = (new.max_fee_per_gas(), old.max_fee_per_gas());
        let (new_tip, old_tip) = (new.priority_fee_or_price(), old.priority_fee_or_price());
        new_cap > old_cap
            && new_tip > old_tip
            && new_cap >= bumped(old_cap)
            && new_tip >= bumped(old_tip)
    }

    /// The pooled transaction with this hash.
    pub fn get(&self, hash: &B256) -> Option<PooledTx> {
        self.inner.read().by_hash.get(hash).cloned()
    }

    /// The sender recovered for the pooled transaction with this hash (block import can
    /// skip recovering it again).
    pub fn sender_of(&self, hash: &B256) -> Option<Address> {
        self.inner.read().by_hash.get(hash).map(|p| p.sender)
    }

    /// How many transactions the pool holds.
    pub fn len(&self) -> usize {
        self.inner.read().by_hash.len()
    }

    /// Whether the pool is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The nonce the sender's next transaction would take: its account nonce plus its
    /// pending transactions (what `eth_getTransactionCount(.., "pending")` answers).
    pub fn pending_nonce(&self, sender: &Address, state: &dyn AccountSource) -> u64 {
        let nonce = state.account(sender).unwrap_or_default().nonce;
        nonce + self.inner.read().contiguous(sender, nonce).count() as u64
    }

    /// Every pooled transaction, split into pending and queued, by sender and nonce.
    pub fn content(&self, state: &dyn AccountSource) -> Content {
        let inner = self.inner.read();
        let mut content = Content::default();
        for (sender, txs) in &inner.by_sender {
            let nonce = state.account(sender).unwrap_or_default().nonce;
            let pending = inner.contiguous(sender, nonce).count() as u64;
            for (n, hash) in txs {
                let pooled = inner.by_hash[hash].clone();
                let side = if (nonce..nonce + pending).contains(n) {
                    &mut content.pending
                } else {
                    &mut content.queued
                };
                side.entry(*sender).or_default().insert(*n, pooled);
            }
        }
        content
    }

    /// The pending transactions a block at the head's next base fee can take, best
    /// first: per sender in nonce order, across senders by effective tip, then arrival.
    /// A sender's chain stops at its first transaction whose fee cap is below the base
    /// fee.
    pub fn best(&self, state: &dyn AccountSource) -> crate::BestTransactions {
        let base_fee = self.head.read().base_fee;
        let inner = self.inner.read();
        let chains = inner
            .by_sender
            .keys()
            .map(|sender| {
                let nonce = state.account(sender).unwrap_or_default().nonce;
                inner
                    .contiguous(sender, nonce)
                    .take_while(|p| p.tx.max_fee_per_gas() >= u128::from(base_fee))
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .filter(|chain| !chain.is_empty())
            .collect();
        crate::BestTransactions::new(chains, base_fee)
    }

    /// A new canonical head: the pool validates against it from now on; transactions
    /// whose nonce the head's accounts passed (included, or replaced on chain) are
    /// dropped, as are those their sender can no longer pay for; `reinject` (the
    /// transactions of blocks that left the canonical chain) are added back where still
    /// valid. Returns how many were dropped.
    pub fn on_new_head(
        &self,
        head: Head,
        state: &dyn AccountSource,
        reinject: Vec<Transaction>,
    ) -> usize {
        *self.head.write() = head;
        let mut dropped = 0;
        {
            let mut inner = self.inner.write();
            let senders: Vec<Address> = inner.by_sender.keys().copied().collect();
            for sender in senders {
                let Account { nonce, balance } = state.account(&sender).unwrap_or_default();
                let txs = &inner.by_sender[&sender];
                let stale: Vec<B256> = txs.range(..nonce).map(|(_, h)| *h).collect();
                // From the first pending transaction the sender cannot afford on, all go.
                let mut cost = U256::ZERO;
                let mut unaffordable = Vec::new();
                for (_, h) in txs.range(nonce..) {
                    cost += max_cost(&inner.by_hash[h].tx);
                    if cost > balance || !unaffordable.is_empty() {
                        unaffordable.push(*h);
                    }
                }
                for hash in stale.iter().chain(&unaffordable) {
                    inner.remove(hash);
                    dropped += 1;
                }
            }
        }
        for tx in reinject {
            let _ = self.add(tx, state);
        }
        dropped
    }
}

/// The pool's transactions by sender and nonce: what `txpool_content` shows.
#[derive(Debug, Default)]
pub struct Content {
    /// Executable in nonce order from each sender's account nonce.
    pub pending: BTreeMap<Address, BTreeMap<u64, PooledTx>>,
    /// Behind a nonce gap.
    pub queued: BTreeMap<Address, BTreeMap<u64, PooledTx>>,
}
