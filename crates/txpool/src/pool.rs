//! The pool: transactions by hash and by sender and nonce. A sender's transactions from
//! its account nonce on without a gap are pending (executable in order); the rest are
//! queued until the gap fills. Which is which is decided against the head's accounts
//! when asked, so a new head needs no re-sorting, only `on_new_head`'s clean-up.

use crate::blob_store::BlobStore;
use crate::blobs::{check_sidecar, split_sidecar, verify_sidecar, with_sidecar, Sidecar};
use crate::config::PoolConfig;
use crate::error::{Added, PoolError};
use crate::validate::{check_transaction, effective_tip, max_cost, Account, AccountSource, Head};
use alloy_consensus::transaction::SignerRecoverable as _;
use alloy_consensus::Transaction as _;
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, B256, U256};
use ethrex_common::{Fork, Transaction};
use parking_lot::RwLock;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// A pooled transaction with what was worked out once on entry.
#[derive(Debug, Clone)]
pub struct PooledTx {
    /// The transaction (consensus form: a blob transaction's sidecar is in the blob store).
    pub tx: Arc<Transaction>,
    /// Its hash.
    pub hash: B256,
    /// Its sender, recovered on entry.
    pub sender: Address,
    /// Its encoded size in the network form (EIP-2718, a blob transaction with its
    /// sidecar): what an announcement carries.
    pub size: usize,
    /// Arrival order: breaks ties between equal tips (first come, first served).
    pub seq: u64,
    /// The accounts its EIP-7702 authorizations name (recovered on entry; those whose
    /// signature recovers no account are left out: the block would skip them too).
    pub authorities: Vec<Address>,
}

impl PooledTx {
    fn nonce(&self) -> u64 {
        self.tx.nonce()
    }

    /// The bytes it takes in the pool's memory (a sidecar counts against the blob store).
    fn mem_size(&self) -> usize {
        if self.tx.is_eip4844() {
            self.tx.encode_2718_len()
        } else {
            self.size
        }
    }
}

#[derive(Default)]
struct Inner {
    by_hash: HashMap<B256, PooledTx>,
    by_sender: HashMap<Address, BTreeMap<u64, B256>>,
    /// How many pooled transactions' authorizations name each account.
    authorized: HashMap<Address, usize>,
    /// Every sender's last transaction by price (at `key_base_fee`): what eviction takes
    /// from, cheapest first, without a walk over the pool.
    lasts: BTreeSet<(PriceKey, B256)>,
    /// The base fee the prices in `lasts` are at (the head's next block's).
    key_base_fee: u64,
    bytes: usize,
    seq: u64,
}

impl Inner {
    /// The sender's last transaction with its price.
    fn last_entry(&self, sender: &Address) -> Option<(PriceKey, B256)> {
        let hash = *self.by_sender.get(sender)?.values().next_back()?;
        let pooled = &self.by_hash[&hash];
        Some((price_key(&pooled.tx, self.key_base_fee, pooled.seq), hash))
    }

    /// Runs `change` on the sender's transactions and keeps `lasts` in step.
    fn with_last<R>(&mut self, sender: Address, change: impl FnOnce(&mut Self) -> R) -> R {
        let before = self.last_entry(&sender);
        let result = change(self);
        let after = self.last_entry(&sender);
        if before != after {
            if let Some(entry) = before {
                self.lasts.remove(&entry);
            }
            if let Some(entry) = after {
                self.lasts.insert(entry);
            }
        }
        result
    }

    /// Prices every sender's last transaction at `base_fee` (a new head's).
    fn reprice(&mut self, base_fee: u64) {
        self.key_base_fee = base_fee;
        let senders: Vec<Address> = self.by_sender.keys().copied().collect();
        self.lasts = senders.iter().filter_map(|s| self.last_entry(s)).collect();
    }

    fn insert(&mut self, pooled: PooledTx) {
        self.with_last(pooled.sender, |inner| inner.insert_unindexed(pooled));
    }

    fn insert_unindexed(&mut self, pooled: PooledTx) {
        for authority in &pooled.authorities {
            *self.authorized.entry(*authority).or_default() += 1;
        }
        self.bytes += pooled.mem_size();
        self.by_sender.entry(pooled.sender).or_default().insert(pooled.nonce(), pooled.hash);
        self.by_hash.insert(pooled.hash, pooled);
    }

    fn remove(&mut self, hash: &B256) -> Option<PooledTx> {
        let sender = self.by_hash.get(hash)?.sender;
        self.with_last(sender, |inner| inner.remove_unindexed(hash))
    }

    fn remove_unindexed(&mut self, hash: &B256) -> Option<PooledTx> {
        let pooled = self.by_hash.remove(hash)?;
        for authority in &pooled.authorities {
            if let Some(n) = self.authorized.get_mut(authority) {
                *n -= 1;
                if *n == 0 {
                    self.authorized.remove(authority);
                }
            }
        }
        self.bytes -= pooled.mem_size();
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
    /// among blob or among non-blob transactions, by blob fee cap (blob transactions),
    /// then effective tip at the head's next base fee, then latest arrival. Non-blob
    /// transactions have no blob fee cap, so they sort before every blob transaction.
    fn cheapest_last(&self, blob: bool) -> Option<&PooledTx> {
        let first = if blob {
            let from = ((1, 0, std::cmp::Reverse(u64::MAX)), B256::ZERO);
            self.lasts.range(from..).next()
        } else {
            self.lasts.iter().next().filter(|((blob_fee_cap, _, _), _)| *blob_fee_cap == 0)
        };
        first.map(|(_, hash)| &self.by_hash[hash])
    }

    /// The sender's pooled transactions whose kind (blob or not) is not `blob`'s.
    fn holds_other_kind(&self, sender: &Address, blob: bool) -> bool {
        self.by_sender
            .get(sender)
            .is_some_and(|txs| txs.values().any(|h| self.by_hash[h].tx.is_eip4844() != blob))
    }
}

/// EIP-7702's limit (geth's rule): a sender with a delegation, or named by a pooled
/// authorization, has at most one executable transaction in flight: its next nonce, or
/// a replacement of the one it has.
fn check_delegation(
    inner: &Inner,
    tx: &Transaction,
    sender: Address,
    account: Account,
) -> Result<(), PoolError> {
    if !account.has_code && !inner.authorized.contains_key(&sender) {
        return Ok(());
    }
    let pending: Vec<u64> = inner.contiguous(&sender, account.nonce).map(|p| p.nonce()).collect();
    if pending.is_empty() {
        return if tx.nonce() == account.nonce { Ok(()) } else { Err(PoolError::DelegatedGap) };
    }
    if pending.contains(&tx.nonce()) {
        return Ok(());
    }
    Err(PoolError::DelegatedInFlight)
}

/// What eviction orders by: the blob fee cap, then the effective tip, then arrival (the
/// later goes first).
type PriceKey = (u128, u128, std::cmp::Reverse<u64>);

fn price_key(tx: &Transaction, base_fee: u64, seq: u64) -> PriceKey {
    let blob_fee_cap = tx.max_fee_per_blob_gas().unwrap_or_default();
    (blob_fee_cap, effective_tip(tx, base_fee), std::cmp::Reverse(seq))
}

/// The transaction pool. Cheap to share: every method takes `&self`.
pub struct TxPool {
    config: PoolConfig,
    head: RwLock<Head>,
    inner: RwLock<Inner>,
    blobs: BlobStore,
}

impl TxPool {
    /// An empty pool at `head`, its sidecars in memory.
    pub fn new(config: PoolConfig, head: Head) -> Self {
        Self::with_blob_store(config, head, BlobStore::in_memory())
    }

    /// An empty pool at `head` keeping sidecars in `blobs`.
    pub fn with_blob_store(config: PoolConfig, head: Head, blobs: BlobStore) -> Self {
        let inner = Inner { key_base_fee: head.base_fee, ..Inner::default() };
        Self { config, head: RwLock::new(head), inner: RwLock::new(inner), blobs }
    }

    /// The pool's limits and prices.
    pub fn config(&self) -> &PoolConfig {
        &self.config
    }

    /// The sidecars of the pool's blob transactions.
    pub fn blob_store(&self) -> &BlobStore {
        &self.blobs
    }

    /// Removes a transaction and, for a blob transaction, its sidecar.
    fn remove(&self, inner: &mut Inner, hash: &B256) -> Option<PooledTx> {
        let pooled = inner.remove(hash)?;
        if pooled.tx.is_eip4844() {
            self.blobs.remove(hash);
        }
        Some(pooled)
    }

    /// The head the pool validates against.
    pub fn head(&self) -> Head {
        self.head.read().clone()
    }

    /// Decodes a transaction in its network form (EIP-2718) and adds it.
    pub fn add_raw(&self, raw: &[u8], state: &dyn AccountSource) -> Result<Added, PoolError> {
        self.add(decode_network(raw)?, state)
    }

    /// Validates `tx` (in its network form: a blob transaction with its sidecar) against
    /// the head and the sender's account, then pools it: as a new transaction, or
    /// replacing the sender's transaction with the same nonce if it pays `price_bump`
    /// percent more (`blob_price_bump` for blob transactions) on fee cap and tip (and
    /// blob fee cap). A full pool makes room by dropping its cheapest transaction of the
    /// same kind if `tx` pays more.
    pub fn add(&self, tx: Transaction, state: &dyn AccountSource) -> Result<Added, PoolError> {
        let size = tx.encode_2718_len();
        let (tx, sidecar) = split_sidecar(tx);
        let hash = *tx.hash();
        let head = self.head();
        let blob = tx.is_eip4844();
        // A malformed sidecar is its deliverer's fault even for a known hash: checked first.
        if blob && head.fork >= Fork::Cancun {
            check_sidecar(&tx, sidecar.as_ref(), &head)?;
        }
        if self.inner.read().by_hash.contains_key(&hash) {
            return Err(PoolError::AlreadyKnown);
        }
        let sender = tx.recover_signer().map_err(|_| PoolError::InvalidSender)?;
        check_transaction(&tx, sender, size, &head, &self.config)?;
        let account = state.account(&sender).unwrap_or_default();
        let nonce = tx.nonce();
        if nonce < account.nonce {
            return Err(PoolError::NonceTooLow { next: account.nonce, got: nonce });
        }
        if nonce > account.nonce + self.config.max_nonce_gap {
            return Err(PoolError::NonceTooHigh { next: account.nonce, got: nonce });
        }
        let authorities: Vec<Address> = tx
            .authorization_list()
            .unwrap_or_default()
            .iter()
            .filter_map(|auth| auth.recover_authority().ok())
            .collect();
        if blob {
            self.check_blob_slot(&tx, sender, account.nonce)?;
            if let Some(sidecar) = &sidecar {
                verify_sidecar(&tx, sidecar)?;
            }
        }

        let mut inner = self.inner.write();
        if inner.by_hash.contains_key(&hash) {
            return Err(PoolError::AlreadyKnown);
        }
        if inner.holds_other_kind(&sender, blob) {
            return Err(PoolError::AddressReserved);
        }
        check_delegation(&inner, &tx, sender, account)?;
        for authority in &authorities {
            let pooled = inner.by_sender.get(authority);
            let holds_blobs =
                pooled.is_some_and(|txs| txs.values().any(|h| inner.by_hash[h].tx.is_eip4844()));
            if pooled.map_or(0, |t| t.len()) > 1 || holds_blobs {
                return Err(PoolError::AuthorityReserved);
            }
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
            self.remove(&mut inner, &old);
        }
        // Room: drop the cheapest of the same kind (a sender's last) while the pool is
        // over a limit.
        let price = price_key(&tx, head.base_fee, u64::MAX);
        let sidecar_size = size - tx.encode_2718_len();
        let mem_size = if blob { size - sidecar_size } else { size };
        while inner.by_hash.len() >= self.config.max_transactions
            || inner.bytes + mem_size > self.config.max_bytes
            || (blob && self.blobs.bytes() + sidecar_size > self.config.blob_datacap)
        {
            let over_tx_limits = inner.by_hash.len() >= self.config.max_transactions
                || inner.bytes + mem_size > self.config.max_bytes;
            // Over the transaction limits any kind may go; over the datacap only blobs.
            let cheapest = inner.cheapest_last(blob).or_else(|| {
                if over_tx_limits {
                    inner.cheapest_last(!blob)
                } else {
                    None
                }
            });
            let Some(cheapest) = cheapest else { return Err(PoolError::PoolFull) };
            if (price.0, price.1) <= {
                let key = price_key(&cheapest.tx, head.base_fee, cheapest.seq);
                (key.0, key.1)
            } {
                return Err(PoolError::Underpriced);
            }
            let cheapest = cheapest.hash;
            self.remove(&mut inner, &cheapest);
        }
        inner.seq += 1;
        let seq = inner.seq;
        if let Some(sidecar) = sidecar.filter(|_| blob) {
            self.blobs.put(hash, sidecar);
        }
        inner.insert(PooledTx { tx: Arc::new(tx), hash, sender, size, seq, authorities });
        // The block that includes it need not recover its sender again.
        ethrex_vm::remember_sender(hash, sender);
        let gapless = inner.contiguous(&sender, account.nonce).any(|p| p.hash == hash);
        Ok(if gapless { Added::Pending(hash) } else { Added::Queued(hash) })
    }

    /// A blob transaction's place among its sender's: no nonce gap (blob transactions
    /// are pooled in order) and at most `max_blob_txs_per_sender` of them.
    fn check_blob_slot(
        &self,
        tx: &Transaction,
        sender: Address,
        account_nonce: u64,
    ) -> Result<(), PoolError> {
        let inner = self.inner.read();
        let next = account_nonce + inner.contiguous(&sender, account_nonce).count() as u64;
        if tx.nonce() > next {
            return Err(PoolError::BlobNonceGap { next, got: tx.nonce() });
        }
        let pooled = inner.by_sender.get(&sender).map_or(0, |t| t.len());
        if tx.nonce() == next && pooled >= self.config.max_blob_txs_per_sender {
            return Err(PoolError::AccountLimit(pooled));
        }
        Ok(())
    }

    /// Whether `new` pays the bump more than `old` on fee cap and on tip, and for blob
    /// transactions on the blob fee cap too (strictly more, and at least the bump).
    fn pays_enough_more(&self, new: &Transaction, old: &Transaction) -> bool {
        let bump = if new.is_eip4844() || old.is_eip4844() {
            self.config.blob_price_bump
        } else {
            self.config.price_bump
        };
        let enough =
            |new: u128, old: u128| new > old && new >= old.saturating_mul(100 + bump) / 100;
        let blob_fee = |tx: &Transaction| tx.max_fee_per_blob_gas().unwrap_or_default();
        enough(new.max_fee_per_gas(), old.max_fee_per_gas())
            && enough(new.priority_fee_or_price(), old.priority_fee_or_price())
            && (!new.is_eip4844() || enough(blob_fee(new), blob_fee(old)))
    }

    /// The sidecar of the pooled blob transaction with this hash (or of one a recent
    /// block included).
    pub fn sidecar(&self, hash: &B256) -> Option<Arc<Sidecar>> {
        self.blobs.get(hash)
    }

    /// The pooled transaction with this hash in its network form (a blob transaction
    /// with its sidecar): what a peer asking for it is sent.
    pub fn get_network(&self, hash: &B256) -> Option<Transaction> {
        let pooled = self.get(hash)?;
        if !pooled.tx.is_eip4844() {
            return Some((*pooled.tx).clone());
        }
        let sidecar = self.blobs.get(hash)?;
        Some(with_sidecar(&pooled.tx, (*sidecar).clone()))
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

    /// A number that grows with every transaction the pool takes: a builder that saw
    /// it unchanged has nothing new to build from.
    pub fn version(&self) -> u64 {
        self.inner.read().seq
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

    /// How many transactions are pending and how many queued (`txpool_status`): counted,
    /// nothing copied; one account read per sender.
    pub fn status(&self, state: &dyn AccountSource) -> (usize, usize) {
        let inner = self.inner.read();
        let pending: usize = inner
            .by_sender
            .keys()
            .map(|sender| {
                let nonce = state.account(sender).unwrap_or_default().nonce;
                inner.contiguous(sender, nonce).count()
            })
            .sum();
        (pending, inner.by_hash.len() - pending)
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
    /// fee, or whose blob fee cap is below the blob base fee.
    pub fn best(&self, state: &dyn AccountSource) -> crate::BestTransactions {
        let (base_fee, blob_base_fee) = {
            let head = self.head.read();
            (head.base_fee, head.blob_base_fee)
        };
        let inner = self.inner.read();
        let chains = inner
            .by_sender
            .keys()
            .map(|sender| {
                let nonce = state.account(sender).unwrap_or_default().nonce;
                inner
                    .contiguous(sender, nonce)
                    .take_while(|p| {
                        p.tx.max_fee_per_gas() >= u128::from(base_fee)
                            && p.tx.max_fee_per_blob_gas().is_none_or(|cap| cap >= blob_base_fee)
                    })
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
        let number = head.number;
        let base_fee = head.base_fee;
        *self.head.write() = head;
        let mut dropped = 0;
        {
            let mut inner = self.inner.write();
            inner.reprice(base_fee);
            let senders: Vec<Address> = inner.by_sender.keys().copied().collect();
            for sender in senders {
                let Account { nonce, balance, .. } = state.account(&sender).unwrap_or_default();
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
                // Below the account nonce: included (or replaced on chain). A blob
                // transaction's sidecar stays a while, for a reorg to bring it back.
                for hash in &stale {
                    if inner.remove(hash).is_some_and(|p| p.tx.is_eip4844()) {
                        self.blobs.retire(hash, number);
                    }
                    dropped += 1;
                }
                for hash in &unaffordable {
                    self.remove(&mut inner, hash);
                    dropped += 1;
                }
            }
        }
        for tx in reinject {
            // A blob transaction comes back only with the sidecar the store kept.
            let tx = match self.blobs.get(tx.tx_hash()) {
                Some(sidecar) if tx.is_eip4844() => with_sidecar(&tx, (*sidecar).clone()),
                _ if tx.is_eip4844() => continue,
                _ => tx,
            };
            let hash = *tx.tx_hash();
            if self.add(tx, state).is_ok() {
                self.blobs.revive(&hash);
            }
        }
        self.blobs.prune(number);
        dropped
    }
}

/// Decodes one transaction in its network form (EIP-2718; a blob transaction with its
/// sidecar), as `eth_sendRawTransaction` takes it: nothing may follow it.
pub fn decode_network(raw: &[u8]) -> Result<Transaction, PoolError> {
    // geth's words for what is not a transaction of a known type.
    match raw {
        [ty] if *ty < 0x80 => return Err(PoolError::TooShort),
        [ty, ..] if (5..0x80).contains(ty) => return Err(PoolError::UnknownType),
        _ => {}
    }
    let mut buf = raw;
    let tx = <Transaction as alloy_eips::eip2718::Decodable2718>::decode_2718(&mut buf)
        .map_err(|e| PoolError::Decode(e.to_string()))?;
    if !buf.is_empty() {
        return Err(PoolError::Decode("input contains more than one value".into()));
    }
    Ok(tx)
}

/// The pool's transactions by sender and nonce: what `txpool_content` shows.
#[derive(Debug, Default)]
pub struct Content {
    /// Executable in nonce order from each sender's account nonce.
    pub pending: BTreeMap<Address, BTreeMap<u64, PooledTx>>,
    /// Behind a nonce gap.
    pub queued: BTreeMap<Address, BTreeMap<u64, PooledTx>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_consensus::{SignableTransaction, TxEip1559, TxEip4844};
    use alloy_primitives::Signature;

    fn pooled(
        sender: u8,
        nonce: u64,
        fee_cap: u128,
        tip: u128,
        blob_fee_cap: u128,
        seq: u64,
    ) -> PooledTx {
        let sig = Signature::new(U256::from(1), U256::from(2), false);
        let tx: Transaction = if blob_fee_cap == 0 {
            // The value makes every transaction's hash its own: the made-up signature
            // would otherwise give two senders' equal transactions one hash, which a
            // real pool cannot see (a hash fixes its sender).
            let tx = TxEip1559 {
                nonce,
                max_fee_per_gas: fee_cap,
                max_priority_fee_per_gas: tip,
                value: U256::from(seq),
                ..Default::default()
            };
            tx.into_signed(sig).into()
        } else {
            let tx = TxEip4844 {
                nonce,
                max_fee_per_gas: fee_cap,
                max_priority_fee_per_gas: tip,
                max_fee_per_blob_gas: blob_fee_cap,
                blob_versioned_hashes: vec![B256::repeat_byte(seq as u8)],
                value: U256::from(seq),
                ..Default::default()
            };
            Transaction::Eip4844(tx.into_signed(sig).into())
        };
        let hash = *tx.tx_hash();
        PooledTx {
            tx: Arc::new(tx),
            hash,
            sender: Address::repeat_byte(sender),
            size: 100,
            seq,
            authorities: vec![],
        }
    }

    /// What the index must answer: a scan over every sender's last transaction.
    fn scan(inner: &Inner, blob: bool) -> Option<B256> {
        inner
            .by_sender
            .values()
            .filter_map(|txs| txs.values().next_back())
            .map(|h| &inner.by_hash[h])
            .filter(|p| p.tx.is_eip4844() == blob)
            .min_by_key(|p| price_key(&p.tx, inner.key_base_fee, p.seq))
            .map(|p| p.hash)
    }

    #[test]
    fn the_eviction_index_agrees_with_a_scan_through_inserts_removals_and_new_base_fees() {
        let mut inner = Inner { key_base_fee: 7, ..Inner::default() };
        // A small deterministic generator: the same sequence on every run.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for seq in 1..3_000u64 {
            match next(10) {
                0..=5 => {
                    let sender = next(12) as u8 + 1;
                    let nonce = next(6);
                    let blob_fee_cap = if sender.is_multiple_of(3) { next(50) + 1 } else { 0 };
                    let (fee_cap, tip) = (u128::from(next(100) + 1), u128::from(next(20)));
                    let p = pooled(sender, nonce, fee_cap, tip, u128::from(blob_fee_cap), seq);
                    // A transaction at a taken nonce replaces the one there.
                    let old = inner.by_sender.get(&p.sender).and_then(|t| t.get(&nonce)).copied();
                    if let Some(old) = old {
                        inner.remove(&old);
                    }
                    inner.insert(p);
                }
                6..=8 => {
                    let mut hashes: Vec<B256> = inner.by_hash.keys().copied().collect();
                    hashes.sort(); // the map's order differs between runs
                    if !hashes.is_empty() {
                        let victim = hashes[next(hashes.len() as u64) as usize];
                        inner.remove(&victim);
                    }
                }
                _ => inner.reprice(next(60)),
            }
            for blob in [false, true] {
                assert_eq!(
                    inner.cheapest_last(blob).map(|p| p.hash),
                    scan(&inner, blob),
                    "step {seq}"
                );
            }
            assert_eq!(inner.lasts.len(), inner.by_sender.len());
        }
    }
}
