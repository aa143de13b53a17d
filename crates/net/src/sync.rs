//! Full sync: from a target block hash (the consensus client's head, or `--sync.target`),
//! headers back to a block we have, then bodies and (from eth/71 peers) BALs in pipelined
//! chunks spread over the peers, imported in order through the node's import pipeline:
//! blocks with a verified BAL from the wire on the parallel path, the others sequentially
//! (which builds and checks their BAL).
//!
//! What a peer sends is checked before it is used: headers must chain back from the
//! target by hash, a body must hash to its header's transaction, ommers and withdrawals
//! roots, a BAL to its header's `block_access_list_hash`. A peer that fails a check is
//! dropped and banned, and the request goes to another peer. A BAL answer may be partial
//! (peers truncate long answers): what came is used, the rest is asked again, and a block
//! whose BAL no peer gives is imported without one. A block that the import pipeline
//! rejects stops the sync at its parent; nothing of it is stored.
//!
//! Memory: the headers from the target back to our chain are held while the sync runs
//! (about 600 bytes a block); bodies and BALs at most `SyncConfig::max_blocks_ahead`
//! blocks ahead of the import.

use crate::eth::HashOrNumber;
use crate::network::{Inner, Offence, Peer, RequestError};
use crate::rlpx::DisconnectReason;
use crate::NodeId;
use alloy_consensus::proofs::{calculate_ommers_root, calculate_withdrawals_root};
use alloy_primitives::B256;
use ethrex_blockchain::ExecutionPath;
use ethrex_common::{
    compute_block_access_list_hash, BlockAccessList, BlockBody, BlockWithBal, Header,
};
use futures::StreamExt;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Headers asked for in one request while walking back from the target.
pub const HEADERS_PER_REQUEST: u64 = 192;
/// Blocks whose bodies (and BALs) one download task fetches, by default.
pub const CHUNK: usize = 32;
/// Bodies asked for in one request (a chunk asks for its parts at once). Sixteen
/// 60M-gas blocks' bodies fit a 2 MB answer.
pub const BODIES_PER_REQUEST: usize = 16;
/// BALs asked for in one request: on the stress chain 32 of them passed geth's 2 MB
/// answer limit.
pub const BALS_PER_REQUEST: usize = 8;
/// How long a sync runs before it gives way to a newer target.
pub const RETARGET_AFTER: Duration = Duration::from_secs(60);
/// How often the sync logs its progress.
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(5);

/// The sync's settings.
#[derive(Debug, Clone)]
pub struct SyncConfig {
    /// Ask eth/71 peers for the BALs of Amsterdam blocks (so they run on the parallel path).
    pub fetch_bals: bool,
    /// The most blocks downloaded ahead of the import (bodies and BALs in memory).
    pub max_blocks_ahead: usize,
    /// Blocks imported together as one mega block (1: one at a time).
    pub batch: usize,
    /// Blocks whose bodies and BALs one download task fetches.
    pub chunk: usize,
}

impl Default for SyncConfig {
    fn default() -> Self {
        Self { fetch_bals: true, max_blocks_ahead: 512, batch: 1, chunk: CHUNK }
    }
}

/// Progress of a running sync (`eth_syncing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncProgress {
    /// Our head when the sync started.
    pub starting: u64,
    /// The last block imported.
    pub current: u64,
    /// The target's number.
    pub highest: u64,
}

/// How the last sync ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncOutcome {
    /// No sync has run.
    NotStarted,
    /// The target is the head.
    Reached {
        /// The target.
        hash: B256,
        /// Its number.
        number: u64,
        /// Blocks imported by this run.
        imported: u64,
        /// Of them, executed on the parallel path with a BAL from the wire.
        parallel_with_wire_bal: u64,
    },
    /// A block of the target's chain is invalid; the sync stopped at its parent.
    Invalid {
        /// The invalid block.
        hash: B256,
        /// Why.
        reason: String,
    },
    /// The node failed (storage); nothing is known about the blocks.
    Failed(String),
}

/// The sync's shared state: the target, progress, and the last outcome.
pub(crate) struct Syncer {
    config: SyncConfig,
    /// The latest target and its generation (bumped on every `set_target`).
    target: watch::Sender<(u64, Option<B256>)>,
    /// The generation the last finished run started from, and its outcome.
    done: watch::Sender<(u64, SyncOutcome)>,
    progress: Mutex<Option<SyncProgress>>,
}

impl Syncer {
    pub(crate) fn new(config: SyncConfig) -> Self {
        Self {
            config,
            target: watch::channel((0, None)).0,
            done: watch::channel((0, SyncOutcome::NotStarted)).0,
            progress: Mutex::new(None),
        }
    }

    /// Sets the target. The same target again is a new request only once the sync is
    /// idle (a consensus client repeats its head while the sync runs).
    pub(crate) fn set_target(&self, hash: B256) {
        let finished = self.done.borrow().0;
        self.target.send_modify(|(generation, target)| {
            if *target != Some(hash) || finished >= *generation {
                *generation += 1;
                *target = Some(hash);
            }
        });
    }

    pub(crate) fn progress(&self) -> Option<SyncProgress> {
        *self.progress.lock()
    }

    pub(crate) async fn idle(&self) -> SyncOutcome {
        let mut done = self.done.subscribe();
        loop {
            let wanted = self.target.borrow().0;
            {
                let current = done.borrow_and_update();
                if current.0 >= wanted {
                    return current.1.clone();
                }
            }
            if done.changed().await.is_err() {
                return SyncOutcome::Failed("sync task ended".into());
            }
        }
    }
}

/// Starts the task that runs a sync whenever a new target is set.
pub(crate) fn spawn(inner: Arc<Inner>) {
    tokio::spawn(async move {
        let mut targets = inner.syncer.target.subscribe();
        loop {
            let (generation, target) = *targets.borrow_and_update();
            if let Some(target) = target {
                let outcome = match run(&inner, target, &mut targets).await {
                    Ok(Some(outcome)) => outcome,
                    // A newer target: start over with it.
                    Ok(None) => continue,
                    Err(e) => SyncOutcome::Failed(e),
                };
                match &outcome {
                    SyncOutcome::Failed(e) => tracing::error!(%e, "sync failed"),
                    SyncOutcome::Invalid { hash, reason } => {
                        tracing::warn!(%hash, %reason, "sync stopped at an invalid block")
                    }
                    _ => {}
                }
                *inner.syncer.progress.lock() = None;
                inner.syncer.done.send_replace((generation, outcome));
            }
            if targets.changed().await.is_err() {
                return;
            }
        }
    });
}

/// One sync to `target`; `Ok(None)` when a newer target arrived meanwhile.
async fn run(
    inner: &Arc<Inner>,
    target: B256,
    targets: &mut watch::Receiver<(u64, Option<B256>)>,
) -> Result<Option<SyncOutcome>, String> {
    let store = inner.host.chain().store.clone();
    if let Some(number) = canonical_number(inner, target)? {
        return Ok(Some(SyncOutcome::Reached {
            hash: target,
            number,
            imported: 0,
            parallel_with_wire_bal: 0,
        }));
    }
    tracing::info!(%target, "sync started");
    let start = Instant::now();
    // Headers from the target back to a block on our canonical chain.
    let mut headers: Vec<(B256, Header)> = Vec::new();
    let mut next = target;
    let mut misses = 0u64;
    let ancestor = loop {
        if targets.has_changed().unwrap_or(false) {
            return Ok(None);
        }
        if canonical_number(inner, next)?.is_some() {
            break next;
        }
        // `None`: no peer has it yet; look for a newer target, then ask again.
        let Some(got) = fetch_headers_back(inner, next).await else {
            misses += 1;
            if misses % 15 == 1 {
                tracing::info!(missing = %next, "no peer has the sync target's chain yet");
            }
            continue;
        };
        let mut expected = next;
        let mut reached = None;
        for header in got {
            let hash = header.hash_slow();
            if canonical_number(inner, hash)?.is_some() {
                reached = Some(hash);
                break;
            }
            if header.number == 0 {
                // Chained by hash down to a genesis that is not ours.
                return Ok(Some(SyncOutcome::Failed(format!(
                    "the target {target} descends from genesis {hash}, not ours"
                ))));
            }
            expected = header.parent_hash;
            headers.push((hash, header));
        }
        if let Some(hash) = reached {
            break hash;
        }
        next = expected;
    };
    headers.reverse();
    let Some((_, first)) = headers.first() else {
        return Ok(Some(SyncOutcome::Reached {
            hash: target,
            number: 0,
            imported: 0,
            parallel_with_wire_bal: 0,
        }));
    };
    let head = store.head().map_err(|e| e.to_string())?;
    if head != Some(ancestor) {
        // The target's chain leaves ours below our head: unwind to where it leaves.
        tracing::info!(%ancestor, "sync target is on another branch; unwinding to the fork point");
        let host = inner.host.clone();
        tokio::task::spawn_blocking(move || host.unwind_to(ancestor))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("unwinding to {ancestor}: {e}"))?;
    }
    let starting = first.number.saturating_sub(1);
    let highest = headers.last().map(|(_, h)| h.number).unwrap_or(starting);
    *inner.syncer.progress.lock() = Some(SyncProgress { starting, current: starting, highest });
    tracing::info!(from = starting + 1, to = highest, "sync: headers done, fetching blocks");

    // Bodies and BALs: chunks downloaded by up to `parallel` tasks at once, handed over in
    // order through a bounded channel; together at most `max_blocks_ahead` blocks.
    let chunk_len = inner.syncer.config.chunk.max(1);
    let ahead = inner.syncer.config.max_blocks_ahead.max(chunk_len);
    let parallel = (ahead / chunk_len / 2).clamp(1, 8);
    let capacity = (ahead / chunk_len).saturating_sub(parallel).max(1);
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<Vec<BlockWithBal>, String>>(capacity);
    // The first chunk is one BAL request's worth: the import starts on it while the
    // larger chunks behind it are served.
    let first_len = BALS_PER_REQUEST.min(chunk_len).min(headers.len());
    let (opening, rest) = headers.split_at(first_len);
    let chunks: Vec<Vec<(B256, Header)>> = std::iter::once(opening.to_vec())
        .chain(rest.chunks(chunk_len).map(|c| c.to_vec()))
        .collect();
    drop(headers);
    let fetch_bals = inner.syncer.config.fetch_bals;
    let download = {
        let inner = inner.clone();
        tokio::spawn(async move {
            let mut stream = futures::stream::iter(chunks)
                .map(|chunk| fetch_chunk(inner.clone(), chunk, fetch_bals))
                .buffered(parallel);
            while let Some(chunk) = stream.next().await {
                if tx.send(Ok(chunk)).await.is_err() {
                    return;
                }
            }
        })
    };
    struct AbortOnDrop(tokio::task::JoinHandle<()>);
    impl Drop for AbortOnDrop {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let _download = AbortOnDrop(download);

    let mut stats = Stats::new(starting, highest);
    let mut last_log = Instant::now();
    while let Some(chunk) = rx.recv().await {
        // A consensus client names a new head every slot: the download in flight is not
        // thrown away for each, only once it has run for `RETARGET_AFTER` (a new target on
        // the same chain then continues from what was imported).
        if start.elapsed() > RETARGET_AFTER && targets.has_changed().unwrap_or(false) {
            return Ok(None);
        }
        let chunk = chunk?;
        for batch in chunks_of(chunk, inner.syncer.config.batch.max(1)) {
            let with_bal: Vec<bool> = batch.iter().map(|b| b.bal.is_some()).collect();
            let ids: Vec<(u64, B256, B256)> =
                batch.iter().map(|b| (b.number(), b.hash(), b.block.header.parent_hash)).collect();
            let host = inner.host.clone();
            let imported = tokio::task::spawn_blocking(move || host.import(batch))
                .await
                .map_err(|e| e.to_string())?;
            let outcomes = match imported {
                Ok(outcomes) => outcomes,
                Err(e) => {
                    stats.record(&e.imported, &with_bal);
                    let Some(&(_, bad, parent)) = ids.iter().find(|(n, ..)| *n == e.number) else {
                        return Ok(Some(SyncOutcome::Failed(e.to_string())));
                    };
                    if e.source.is_invalid_block() {
                        let reason = e.source.to_string();
                        inner.host.mark_invalid(bad, parent, reason.clone());
                        return Ok(Some(SyncOutcome::Invalid { hash: bad, reason }));
                    }
                    return Ok(Some(SyncOutcome::Failed(format!(
                        "importing block {}: {}",
                        e.number, e.source
                    ))));
                }
            };
            stats.record(&outcomes, &with_bal);
            if let Some(p) = inner.syncer.progress.lock().as_mut() {
                p.current = stats.current;
            }
            if last_log.elapsed() >= PROGRESS_INTERVAL {
                stats.log_progress();
                last_log = Instant::now();
            }
        }
    }
    if canonical_number(inner, target)?.is_none() {
        return Err("the download ended before the target was imported".into());
    }
    crate::network::announce_head(inner);
    let secs = start.elapsed().as_secs_f64();
    tracing::info!(
        blocks = stats.imported,
        parallel_with_wire_bal = stats.parallel_with_wire_bal,
        with_wire_bal = stats.with_wire_bal,
        sequential = stats.imported - stats.parallel_with_wire_bal,
        secs,
        mgas_per_s = stats.gas as f64 / 1e6 / secs.max(1e-9),
        blocks_per_s = stats.imported as f64 / secs.max(1e-9),
        "sync reached its target {target} (block {highest})"
    );
    Ok(Some(SyncOutcome::Reached {
        hash: target,
        number: highest,
        imported: stats.imported,
        parallel_with_wire_bal: stats.parallel_with_wire_bal,
    }))
}

fn chunks_of(mut blocks: Vec<BlockWithBal>, size: usize) -> Vec<Vec<BlockWithBal>> {
    let mut out = Vec::new();
    while !blocks.is_empty() {
        let rest = blocks.split_off(size.min(blocks.len()));
        out.push(std::mem::replace(&mut blocks, rest));
    }
    out
}

fn canonical_number(inner: &Inner, hash: B256) -> Result<Option<u64>, String> {
    let store = &inner.host.chain().store;
    let Some(number) = store.block_number(&hash).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let canonical = store.canonical_hash(number).map_err(|e| e.to_string())?;
    Ok((canonical == Some(hash)).then_some(number))
}

/// Counts what the sync imported, for the progress line and the summary.
struct Stats {
    started: Instant,
    highest: u64,
    current: u64,
    imported: u64,
    gas: u64,
    with_wire_bal: u64,
    parallel_with_wire_bal: u64,
    interval_gas: u64,
    interval_blocks: u64,
    interval_start: Instant,
}

impl Stats {
    fn new(starting: u64, highest: u64) -> Self {
        Self {
            started: Instant::now(),
            highest,
            current: starting,
            imported: 0,
            gas: 0,
            with_wire_bal: 0,
            parallel_with_wire_bal: 0,
            interval_gas: 0,
            interval_blocks: 0,
            interval_start: Instant::now(),
        }
    }

    fn record(&mut self, outcomes: &[ethrex_blockchain::ImportOutcome], with_bal: &[bool]) {
        for (outcome, had_bal) in outcomes.iter().zip(with_bal) {
            self.current = outcome.number;
            self.imported += 1;
            self.gas += outcome.gas_used;
            self.interval_gas += outcome.gas_used;
            self.interval_blocks += 1;
            if *had_bal {
                self.with_wire_bal += 1;
                if matches!(outcome.path, ExecutionPath::Parallel | ExecutionPath::ParallelBatch) {
                    self.parallel_with_wire_bal += 1;
                }
            }
        }
    }

    fn log_progress(&mut self) {
        let secs = self.interval_start.elapsed().as_secs_f64().max(1e-9);
        let blocks_per_s = self.interval_blocks as f64 / secs;
        let left = self.highest.saturating_sub(self.current);
        let eta = if blocks_per_s > 0.0 { left as f64 / blocks_per_s } else { f64::INFINITY };
        tracing::info!(
            block = self.current,
            target = self.highest,
            left,
            mgas_per_s = format!("{:.1}", self.interval_gas as f64 / 1e6 / secs),
            blocks_per_s = format!("{blocks_per_s:.1}"),
            eta = format!("{eta:.0}s"),
            elapsed = format!("{:.0}s", self.started.elapsed().as_secs_f64()),
            "sync progress"
        );
        self.interval_gas = 0;
        self.interval_blocks = 0;
        self.interval_start = Instant::now();
    }
}

/// How long a sync task waits for a peer with room before it looks afresh.
const PEER_PAUSE: Duration = Duration::from_millis(250);

/// The least busy usable peer not in `tried`, as soon as one has room for a request (a
/// peer joining or a request ending wakes the wait). When every usable peer is in `tried`,
/// `tried` is cleared and they are asked again after a pause.
async fn next_peer(
    inner: &Inner,
    tried: &mut HashSet<NodeId>,
    usable: impl Fn(&Peer) -> bool,
) -> Arc<Peer> {
    for round in 1u64.. {
        let untried = |p: &Peer| usable(p) && !tried.contains(&p.id);
        if let Some(peer) = inner.peers.pick_waiting(untried, PEER_PAUSE).await {
            return peer;
        }
        tried.clear();
        // Every 30 s.
        if round.is_multiple_of(120) {
            tracing::info!(peers = inner.peers.len(), "sync waiting for a peer that can serve");
        }
    }
    unreachable!("the loop above only ends by returning")
}

/// Drops and bans `peer` for `offence`.
async fn drop_peer(inner: &Inner, peer: &Peer, offence: Offence) {
    if inner.peers.punish(peer.id, offence) {
        let reason = match offence {
            Offence::Stall => DisconnectReason::PingTimeout,
            _ => DisconnectReason::BreachOfProtocol,
        };
        peer.disconnect(reason).await;
    }
}

/// Handles a failed request: a stall counts against the peer.
async fn request_failed(inner: &Inner, peer: &Peer, error: RequestError) {
    tracing::debug!(peer = %peer.id, %error, "sync request failed");
    if let RequestError::Timeout(_) = error {
        drop_peer(inner, peer, Offence::Stall).await;
    }
}

/// Headers from `from` backwards (newest first), chained by hash (numbers descending by
/// one), from some peer; `None` when a few asks found no peer that has `from`.
async fn fetch_headers_back(inner: &Inner, from: B256) -> Option<Vec<Header>> {
    let mut empty_answers = 0u32;
    let mut tried = HashSet::new();
    while empty_answers < 8 {
        let peer = next_peer(inner, &mut tried, |_| true).await;
        match peer.headers(HashOrNumber::Hash(from), HEADERS_PER_REQUEST, 0, true).await {
            Ok(headers) if headers.is_empty() => {
                // This peer does not have it (yet): ask the others first.
                empty_answers += 1;
                tried.insert(peer.id);
            }
            Ok(headers) => {
                let mut expected = from;
                let mut number = headers[0].number.saturating_add(1);
                let chained = headers.iter().all(|h| {
                    let ok = h.hash_slow() == expected && h.number.checked_add(1) == Some(number);
                    (expected, number) = (h.parent_hash, h.number);
                    ok
                });
                if chained {
                    return Some(headers);
                }
                drop_peer(inner, &peer, Offence::Mismatch).await;
            }
            Err(e) => request_failed(inner, &peer, e).await,
        }
    }
    None
}

/// Whether `body` is the one `header` commits to.
fn body_matches(header: &Header, body: &BlockBody) -> bool {
    ethrex_blockchain::validation::transactions_root(&body.transactions) == header.transactions_root
        && calculate_ommers_root(&body.ommers) == header.ommers_hash
        && body.withdrawals.as_ref().map(|w| calculate_withdrawals_root(w))
            == header.withdrawals_root
}

/// The blocks of `chunk`: bodies from any peer, BALs from eth/71 peers (if `fetch_bals`).
/// All of the chunk's requests go out at once, so that a peer that answers in order (geth
/// does) serves this chunk's BALs before the later chunks' bodies; and each asks for few
/// enough blocks that its answer fits the peer's response limit (geth's 2 MB): the rest
/// of a truncated answer is asked again, and that request queues behind every later
/// chunk's, which kept the import waiting for its first block until the whole download
/// window was served.
async fn fetch_chunk(
    inner: Arc<Inner>,
    chunk: Vec<(B256, Header)>,
    fetch_bals: bool,
) -> Vec<BlockWithBal> {
    let mut bals: Vec<Option<BlockAccessList>> = vec![None; chunk.len()];
    let asked = Instant::now();
    let first = chunk.first().map(|(_, h)| h.number).unwrap_or_default();
    let bodies = async {
        let parts = chunk.chunks(BODIES_PER_REQUEST).map(|part| fetch_bodies(&inner, part));
        let bodies = futures::future::join_all(parts).await.concat();
        tracing::debug!(first, blocks = chunk.len(), took = ?asked.elapsed(), "sync: bodies in");
        bodies
    };
    let bals_in = async {
        if fetch_bals {
            let parts = chunk
                .chunks(BALS_PER_REQUEST)
                .zip(bals.chunks_mut(BALS_PER_REQUEST))
                .map(|(part, into)| fetch_bals_into(&inner, part, into));
            futures::future::join_all(parts).await;
            tracing::debug!(first, blocks = chunk.len(), took = ?asked.elapsed(), "sync: BALs in");
        }
    };
    let (bodies, ()) = futures::join!(bodies, bals_in);
    chunk
        .into_iter()
        .zip(bodies)
        .zip(bals)
        .map(|(((_, header), body), bal)| BlockWithBal {
            block: ethrex_common::Block { header, body },
            bal,
        })
        .collect()
}

/// The bodies of `chunk`, each checked against its header, from whichever peers have them.
async fn fetch_bodies(inner: &Inner, chunk: &[(B256, Header)]) -> Vec<BlockBody> {
    let n = chunk.len();
    let mut bodies: Vec<BlockBody> = Vec::with_capacity(n);
    let mut tried = HashSet::new();
    // Prefer peers whose announced head covers the chunk.
    let last = chunk.last().map(|(_, h)| h.number).unwrap_or_default();
    while bodies.len() < n {
        let next = bodies.len();
        let covering = inner.peers.pick(|p| p.range().latest >= last && !tried.contains(&p.id));
        let peer = match covering {
            Some(peer) => peer,
            None => next_peer(inner, &mut tried, |_| true).await,
        };
        let hashes: Vec<B256> = chunk[next..].iter().map(|(h, _)| *h).collect();
        match peer.bodies(hashes).await {
            // It does not have them (yet): ask the others first.
            Ok(got) if got.is_empty() => {
                tried.insert(peer.id);
            }
            Ok(got) if got.len() > n - next => drop_peer(inner, &peer, Offence::Mismatch).await,
            Ok(got) => {
                let answered = got.len();
                for body in got {
                    if !body_matches(&chunk[bodies.len()].1, &body) {
                        break;
                    }
                    bodies.push(body);
                }
                // A shorter answer is allowed (peers truncate); a body that is not its
                // header's is a lie.
                if bodies.len() - next < answered {
                    drop_peer(inner, &peer, Offence::Mismatch).await;
                }
            }
            Err(e) => request_failed(inner, &peer, e).await,
        }
    }
    bodies
}

/// Fills `bals` for the chunk's Amsterdam blocks from eth/71 peers. A BAL that does not
/// hash to its header's `block_access_list_hash` gets its peer dropped. A peer that does
/// not have a BAL (`0x80`) is not asked for it again; another peer is; a BAL no eth/71
/// peer has stays `None` (its block is imported without one). A truncated answer is used
/// as far as it goes, and the same peer is asked for the rest.
async fn fetch_bals_into(
    inner: &Inner,
    chunk: &[(B256, Header)],
    bals: &mut [Option<BlockAccessList>],
) {
    let mut wanted: Vec<usize> =
        (0..chunk.len()).filter(|&i| chunk[i].1.block_access_list_hash.is_some()).collect();
    // Peers with nothing more to give for this chunk, and (block, peer) pairs declined.
    let mut done_with: HashSet<NodeId> = HashSet::new();
    let mut declined: HashSet<(usize, NodeId)> = HashSet::new();
    while !wanted.is_empty() {
        // Stop only when no connected peer is left to ask; one that is busy (at its
        // in-flight bound, as when every chunk asks at once) is waited for.
        let left = |p: &Peer| p.serves_bals() && !done_with.contains(&p.id);
        if !inner.peers.any(left) {
            return;
        }
        let Some(peer) = inner.peers.pick_waiting(left, PEER_PAUSE).await else {
            continue;
        };
        let ask: Vec<usize> =
            wanted.iter().copied().filter(|&i| !declined.contains(&(i, peer.id))).collect();
        if ask.is_empty() {
            done_with.insert(peer.id);
            continue;
        }
        let hashes: Vec<B256> = ask.iter().map(|&i| chunk[i].0).collect();
        let answer = match peer.bals(hashes).await {
            Ok(answer) => answer,
            Err(e) => {
                done_with.insert(peer.id);
                request_failed(inner, &peer, e).await;
                continue;
            }
        };
        if answer.len() > ask.len() {
            done_with.insert(peer.id);
            drop_peer(inner, &peer, Offence::Mismatch).await;
            continue;
        }
        let mut gave = false;
        for (k, entry) in answer.into_iter().enumerate() {
            let index = ask[k];
            let Some(bal) = entry else {
                declined.insert((index, peer.id));
                continue;
            };
            if Some(compute_block_access_list_hash(&bal)) != chunk[index].1.block_access_list_hash {
                done_with.insert(peer.id);
                drop_peer(inner, &peer, Offence::LyingBal).await;
                break;
            }
            bals[index] = Some(bal);
            gave = true;
        }
        if !gave {
            tracing::debug!(peer = %peer.id, asked = ask.len(), "the peer has none of the BALs asked for");
            done_with.insert(peer.id);
        }
        wanted.retain(|&i| bals[i].is_none());
    }
}
