//! `ethrex node` (also the default command), `ethrex import`, `ethrex export`.

use anyhow::{bail, Context};
use clap::Args;
use ethrex_blockchain::chain_file::{
    parse_genesis, read_chain, read_genesis, write_bals, write_blocks, Genesis,
};
use ethrex_blockchain::genesis::{genesis_header, geth_alloc, open_genesis};
use ethrex_blockchain::{Blockchain, Cores, ImportOptions, Prefetch, Threshold};
use ethrex_common::ChainConfig;
use ethrex_rpc::jwt::JwtSecret;
use ethrex_rpc::Node;
use ethrex_storage::{DbKind, Store};
use ethrex_vm::Schedule;
use indicatif::{ProgressBar, ProgressStyle};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Options every command that opens a database shares.
#[derive(Args, Clone)]
pub(crate) struct DbArgs {
    /// Data directory.
    #[arg(long)]
    pub(crate) datadir: PathBuf,
    /// mdbx or rocksdb.
    #[arg(long, default_value = "rocksdb")]
    pub(crate) db: String,
    #[command(flatten)]
    pub(crate) trie_memory: TrieMemoryArgs,
}

/// How much of the state tries stays decoded in memory between blocks (node, import and
/// import-bench share it).
#[derive(Args, Debug, Clone, Copy)]
pub(crate) struct TrieMemoryArgs {
    /// MiB of decoded account trie nodes (the trie's upper levels) kept in memory from one
    /// block to the next, so a block's state root reads the database only below them; the
    /// upper levels of the storage tries recent blocks changed get as much again, at most
    /// 1/16 of it per trie (import-bench: per mode, and kept through --cold: it is the
    /// node's own memory, not a cache of the database).
    #[arg(long, value_name = "MIB", default_value_t = ethrex_storage::TRIE_MEMORY_BYTES >> 20)]
    pub(crate) trie_memory_mb: usize,
}

impl TrieMemoryArgs {
    /// The budget in bytes.
    pub(crate) fn bytes(self) -> usize {
        self.trie_memory_mb << 20
    }
}

impl DbArgs {
    fn open(&self) -> anyhow::Result<Store> {
        let kind: DbKind = self.db.parse().map_err(anyhow::Error::msg)?;
        if kind == DbKind::Memory {
            bail!("--db must be mdbx or rocksdb for a node");
        }
        // One directory per backend, so switching --db never reads the other's files.
        let path = self.datadir.join(&self.db);
        let store = Store::open(kind, Some(&path))
            .with_context(|| format!("opening the {} database in {}", self.db, path.display()))?;
        store.set_trie_memory(self.trie_memory.bytes());
        Ok(store)
    }
}

/// Tuning of the parallel BAL path, shared by every command that imports blocks.
#[derive(Args, Clone)]
pub(crate) struct ParallelTuning {
    /// Blocks with fewer transactions are executed sequentially (0: every block with a
    /// BAL). Default: a cost model decides per block from the transactions' gas limits
    /// and the thread count whether the parallel path pays.
    #[arg(long)]
    pub(crate) parallel_threshold: Option<usize>,
    /// The order the parallel workers take a block's transactions in: longest-first
    /// (largest gas limit first, the critical path started first) or block-order.
    #[arg(long, default_value = "longest-first", value_parser = ["longest-first", "block-order"])]
    pub(crate) schedule: String,
    /// Prefetch BAL-named state into the block's cache alongside parallel execution. Off
    /// by default: with the store's in-memory caches it costs more CPU than it saves.
    #[arg(long)]
    pub(crate) bal_warmer: bool,
    /// Compute the state root after execution instead of from the BAL alongside it.
    #[arg(long)]
    pub(crate) no_bal_parallel_trie: bool,
}

impl ParallelTuning {
    pub(crate) fn options(&self, cores: Cores) -> ImportOptions {
        ImportOptions {
            cores,
            threshold: match self.parallel_threshold {
                Some(min) => Threshold::MinTxs(min),
                None => Threshold::CostModel,
            },
            prefetch: if self.bal_warmer { Prefetch::Beside } else { Prefetch::Off },
            parallel_trie: !self.no_bal_parallel_trie,
            schedule: if self.schedule == "block-order" {
                Schedule::BlockOrder
            } else {
                Schedule::LongestFirst
            },
        }
    }
}

/// Execution options of the node and the import command.
#[derive(Args, Clone)]
pub(crate) struct ExecArgs {
    /// Import every block on one thread: sender recovery, execution (sequential even with
    /// a BAL) and merkleization. (Old spelling: --no-bal-parallel-exec.)
    #[arg(long, alias = "no-bal-parallel-exec")]
    pub(crate) single_threaded: bool,
    #[command(flatten)]
    pub(crate) tuning: ParallelTuning,
}

impl ExecArgs {
    fn options(&self) -> ImportOptions {
        self.tuning.options(if self.single_threaded { Cores::One } else { Cores::Pool })
    }
}

/// The genesis `--network` names: a built-in network's (`mainnet`, `sepolia`, `hoodi`)
/// or a geth-style genesis file's.
fn network_genesis(network: &str) -> anyhow::Result<Genesis> {
    match ethrex_common::Network::from_name(network) {
        Some(builtin) => Ok(parse_genesis(builtin.genesis_json().as_bytes(), Path::new(network))?),
        None => Ok(read_genesis(Path::new(network))?),
    }
}

/// Opens the store and makes sure it holds the network's genesis (for a built-in network,
/// the one whose hash is published).
fn open_chain(network: &str, db: &DbArgs, exec: &ExecArgs) -> anyhow::Result<Blockchain> {
    open_chain_on(network_genesis(network)?, network, db, exec)
}

/// `open_chain` for a genesis already read (`network` names it, for the published-hash
/// check of a built-in network).
fn open_chain_on(
    genesis: Genesis,
    network: &str,
    db: &DbArgs,
    exec: &ExecArgs,
) -> anyhow::Result<Blockchain> {
    let store = db.open()?;
    let alloc = geth_alloc(&genesis);
    let hash = open_genesis(&store, &alloc, |root| genesis_header(&genesis, root))?;
    if let Some(builtin) = ethrex_common::Network::from_name(network) {
        if hash != builtin.genesis_hash() {
            bail!(
                "{network}'s genesis built as {hash}, not the published {}",
                builtin.genesis_hash()
            );
        }
    }
    tracing::info!(genesis = %hash, db = store.backend_kind(), "chain opened");
    Ok(Blockchain::new(store, ChainConfig::new(genesis.config)).with_options(exec.options()))
}

#[derive(Args, Clone)]
pub(crate) struct NodeArgs {
    /// A built-in network (mainnet, sepolia, hoodi) or a geth-style genesis file (chain
    /// config with every fork, alloc). Not with --dev.
    #[arg(long, required_unless_present = "dev", conflicts_with = "dev")]
    pub(crate) network: Option<String>,
    /// A one-node development chain (Amsterdam from genesis, chain id 1337, the 20
    /// accounts of the "test ... junk" mnemonic funded with 10,000 ether each) that makes
    /// its own blocks from its pool; no peers.
    #[arg(long)]
    pub(crate) dev: bool,
    /// With --dev: seconds between blocks; 0 makes a block whenever a transaction waits.
    #[arg(long = "dev.period", default_value_t = 0, requires = "dev")]
    pub(crate) dev_period: u64,
    #[command(flatten)]
    pub(crate) db: DbArgs,
    #[arg(long = "authrpc.addr", default_value = "127.0.0.1")]
    pub(crate) authrpc_addr: IpAddr,
    #[arg(long = "authrpc.port", default_value_t = 8551)]
    pub(crate) authrpc_port: u16,
    /// Hex JWT secret; created if missing (default: <datadir>/jwt.hex).
    #[arg(long = "authrpc.jwtsecret")]
    pub(crate) jwtsecret: Option<PathBuf>,
    /// Serve the eth API over HTTP on this address.
    #[arg(long = "http.addr")]
    pub(crate) http_addr: Option<IpAddr>,
    #[arg(long = "http.port")]
    pub(crate) http_port: Option<u16>,
    /// Serve the eth API (with eth_subscribe) over WebSocket.
    #[arg(long = "ws")]
    pub(crate) ws: bool,
    /// The WebSocket address (default 127.0.0.1; implies --ws).
    #[arg(long = "ws.addr")]
    pub(crate) ws_addr: Option<IpAddr>,
    /// The WebSocket port (default 8546; implies --ws).
    #[arg(long = "ws.port")]
    pub(crate) ws_port: Option<u16>,
    /// The gas an eth_call, eth_estimateGas or debug_traceCall may use, and all the
    /// calls of one eth_simulateV1 together (geth's --rpc.gascap).
    #[arg(long = "rpc.gascap", default_value_t = ethrex_vm::call::DEFAULT_GAS_CAP)]
    pub(crate) rpc_gascap: u64,
    /// How long those requests may run the EVM, in Go's notation ("5s", "500ms"; "0": no
    /// limit; geth's --rpc.evmtimeout). Traces take their tracer option "timeout".
    #[arg(long = "rpc.evmtimeout", default_value = "5s", value_parser = evm_timeout)]
    pub(crate) rpc_evmtimeout: std::time::Duration,
    /// Serve Prometheus metrics on this port.
    #[arg(long = "metrics.port")]
    pub(crate) metrics_port: Option<u16>,
    #[arg(long = "metrics.addr", default_value = "127.0.0.1")]
    pub(crate) metrics_addr: IpAddr,
    /// How many imported blocks may still be waiting for the disk when
    /// engine_forkchoiceUpdated answers VALID. 0: a head is answered VALID only once it
    /// is written and synced.
    #[arg(long, default_value_t = 0)]
    pub(crate) persistence_lag: u64,
    /// The gas limit the blocks this node builds move toward, by the protocol's largest
    /// step (1/1024 of the parent's) per block.
    #[arg(long = "builder.gaslimit", default_value_t = ethrex_rpc::node::DEFAULT_TARGET_GAS_LIMIT)]
    pub(crate) builder_gas_limit: u64,
    #[command(flatten)]
    pub(crate) exec: ExecArgs,
    #[command(flatten)]
    pub(crate) p2p: P2pArgs,
}

/// The devp2p network and the sync.
#[derive(Args, Clone)]
pub(crate) struct P2pArgs {
    /// Run without the devp2p network (no peers, no sync).
    #[arg(long = "p2p.disabled")]
    pub(crate) disabled: bool,
    /// RLPx (TCP) and discovery (UDP) port; 0: any free port.
    #[arg(long = "p2p.port", default_value_t = 30303)]
    pub(crate) port: u16,
    /// Address to listen on for peers.
    #[arg(long = "p2p.addr", default_value = "0.0.0.0")]
    pub(crate) addr: IpAddr,
    /// Static peers (enode URLs, comma-separated): dialed at start, kept and redialed.
    #[arg(long, value_delimiter = ',')]
    pub(crate) peers: Vec<String>,
    /// Discovery's entry points (enode URLs, comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub(crate) bootnodes: Vec<String>,
    /// Do not run discovery (discv4): connect only to --peers and admin_addPeer.
    #[arg(long)]
    pub(crate) nodiscover: bool,
    /// The most peers connected at once.
    #[arg(long, default_value_t = 25)]
    pub(crate) maxpeers: usize,
    /// Sync from peers to this block hash at start, without a consensus client (as geth's
    /// --synctarget).
    #[arg(long = "sync.target")]
    pub(crate) sync_target: Option<alloy_primitives::B256>,
    /// Do not ask peers for block access lists (as with peers without eth/71): every
    /// synced block runs on the sequential path.
    #[arg(long = "sync.no-bals")]
    pub(crate) sync_no_bals: bool,
    /// The most blocks the sync downloads ahead of the import (memory bound).
    #[arg(long = "sync.max-blocks-ahead", default_value_t = 512)]
    pub(crate) sync_max_blocks_ahead: usize,
    /// Blocks the sync imports together as one mega block (1: one at a time).
    #[arg(long = "sync.batch", default_value_t = 1)]
    pub(crate) sync_batch: usize,
}

impl P2pArgs {
    fn config(&self, datadir: &Path) -> anyhow::Result<ethrex_net::NetworkConfig> {
        let parse = |urls: &[String], what: &str| -> anyhow::Result<Vec<ethrex_net::NodeRecord>> {
            urls.iter()
                .filter(|u| !u.trim().is_empty())
                .map(|u| u.parse().with_context(|| format!("{what} {u:?}")))
                .collect()
        };
        let key = ethrex_net::load_or_create_node_key(datadir)
            .with_context(|| format!("the node key in {}", datadir.display()))?;
        let mut config = ethrex_net::NetworkConfig::new(key, SocketAddr::new(self.addr, self.port));
        config.static_peers = parse(&self.peers, "--peers")?;
        config.bootnodes = parse(&self.bootnodes, "--bootnodes")?;
        config.discovery = !self.nodiscover;
        config.max_peers = self.maxpeers.max(1);
        config.sync = ethrex_net::SyncConfig {
            fetch_bals: !self.sync_no_bals,
            max_blocks_ahead: self.sync_max_blocks_ahead.max(1),
            batch: self.sync_batch.max(1),
            ..Default::default()
        };
        Ok(config)
    }
}

/// Transactions whose sender the node remembers from the pool: a few full pools' worth.
const SENDER_CACHE_CAPACITY: usize = 65_536;

pub(crate) fn run_node(args: NodeArgs) -> anyhow::Result<ExitCode> {
    let network = args.network.clone().unwrap_or_else(|| "dev".into());
    let chain = if args.dev {
        open_chain_on(crate::dev::genesis()?, &network, &args.db, &args.exec)?
    } else {
        open_chain(&network, &args.db, &args.exec)?
    };
    let secret_path = args.jwtsecret.clone().unwrap_or_else(|| args.db.datadir.join("jwt.hex"));
    let secret = JwtSecret::load_or_create(&secret_path)?;
    // Senders the pool recovers are not recovered again when a block includes them.
    ethrex_vm::install_sender_cache(SENDER_CACHE_CAPACITY);
    let blob_dir = args.db.datadir.join("blobpool");
    let blobs = ethrex_txpool::BlobStore::on_disk(blob_dir.clone(), 64 << 20)
        .with_context(|| format!("the blob pool's directory {}", blob_dir.display()))?;
    let node = Arc::new(
        Node::new(chain)
            .with_blob_store(blobs)
            .with_persistence_lag(args.persistence_lag)
            .with_target_gas_limit(args.builder_gas_limit),
    );
    // The KZG trusted setup takes a few seconds of one core (and ~100 MB) to build: not
    // inside the first blob transaction's time limit, and not while a `--sync.target`
    // sync runs: it is built at idle priority at start, or, with a sync target, once that
    // sync is over or the node follows the chain (it takes peers' transactions only
    // then). Idle priority alone was not enough: a profile of a sync from geth found the
    // setup on 6.8% of the samples (a catching-up node's idle moments are short, and the
    // setup shares the caches). Whatever needs it sooner (a blob transaction sent over
    // RPC, a block calling the point-evaluation precompile) builds it then.
    // Only a node syncing to `--sync.target` over the network waits (see below).
    let waits_for_sync = args.p2p.sync_target.is_some() && !args.p2p.disabled && !args.dev;
    let catching_up_over = Arc::new(std::sync::atomic::AtomicBool::new(!waits_for_sync));
    {
        let node = node.clone();
        let over = catching_up_over.clone();
        std::thread::Builder::new()
            .name("kzg-setup".into())
            .spawn(move || {
                use std::sync::atomic::Ordering::Relaxed;
                idle_priority();
                while !node.following.load(Relaxed) && !over.load(Relaxed) {
                    std::thread::sleep(std::time::Duration::from_millis(250));
                }
                ethrex_txpool::warm_kzg()
            })
            .context("starting the KZG setup's thread")?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        if let Some(port) = args.metrics_port {
            metrics_exporter_prometheus::PrometheusBuilder::new()
                .with_http_listener(SocketAddr::new(args.metrics_addr, port))
                .install()
                .context("starting the metrics endpoint")?;
        }
        let http = match (args.http_addr, args.http_port) {
            (None, None) => None,
            (addr, port) => Some(SocketAddr::new(addr.unwrap_or([127, 0, 0, 1].into()), port.unwrap_or(8545))),
        };
        let auth = SocketAddr::new(args.authrpc_addr, args.authrpc_port);
        let ws = (args.ws || args.ws_addr.is_some() || args.ws_port.is_some()).then(|| {
            SocketAddr::new(args.ws_addr.unwrap_or([127, 0, 0, 1].into()), args.ws_port.unwrap_or(8546))
        });
        let limits = ethrex_rpc::RpcLimits { gas_cap: args.rpc_gascap, evm_timeout: args.rpc_evmtimeout };
        let servers = ethrex_rpc::server::start(node.clone(), auth, secret, http, ws, limits).await?;
        tracing::info!(engine = %servers.auth_addr, http = ?servers.http.as_ref().map(|h| h.1), ws = ?servers.ws.as_ref().map(|h| h.1), jwt = %secret_path.display(), "node started");
        if args.dev {
            let recipient = crate::dev::accounts()?[0];
            node.following.store(true, std::sync::atomic::Ordering::Relaxed);
            tracing::info!(period = args.dev_period, chain_id = crate::dev::CHAIN_ID, mnemonic = crate::dev::MNEMONIC, "dev chain: producing blocks, no peers");
            tokio::spawn(crate::dev::produce(node.clone(), args.dev_period, recipient));
        } else if !args.p2p.disabled {
            let mut config = args.p2p.config(&args.db.datadir)?;
            if let (true, Some(builtin)) =
                (config.bootnodes.is_empty(), ethrex_common::Network::from_name(&network))
            {
                config.bootnodes = builtin
                    .bootnodes()
                    .into_iter()
                    .map(|enode| enode.parse().with_context(|| format!("bootnode {enode}")))
                    .collect::<anyhow::Result<_>>()?;
            }
            let host: Arc<dyn ethrex_net::ChainHost> = node.clone();
            let network = ethrex_net::Network::start(config, host).await?;
            if let Some(target) = args.p2p.sync_target {
                network.sync_to(target);
                let (network, over) = (network.clone(), catching_up_over.clone());
                tokio::spawn(async move {
                    network.sync_idle().await;
                    over.store(true, std::sync::atomic::Ordering::Relaxed);
                });
            }
            let _ = node.network.set(network);
        }
        let head = node.chain.store.head_header()?.map(|h| h.number).unwrap_or_default();
        metrics::gauge!("ethrex_head_number").set(head as f64);
        tracing::info!(head, "serving");
        ethrex_rpc::server::serve(node, servers, async {
            shutdown_signal().await;
            tracing::info!("shutting down");
        })
        .await?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => return ctrl_c.await.unwrap_or_default(),
            };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    ctrl_c.await.unwrap_or_default();
}

#[derive(Args)]
pub(crate) struct ImportArgs {
    /// A built-in network (mainnet, sepolia, hoodi) or a geth-style genesis file.
    #[arg(long)]
    network: String,
    #[command(flatten)]
    db: DbArgs,
    /// Concatenated RLP BALs, one per block (optional: without them an Amsterdam block is
    /// executed sequentially and the BAL it builds is checked against its header).
    #[arg(long)]
    bal: Option<PathBuf>,
    #[command(flatten)]
    exec: ExecArgs,
    /// Chain files: RLP blocks, concatenated (geth's `export` format), imported in order.
    /// Each block becomes the head, as with geth's `import`: a block whose parent is not
    /// the head but is known starts a side branch (the head moves back to that parent).
    #[arg(required = true, num_args = 1..)]
    files: Vec<PathBuf>,
}

/// Every block of `files`, in order (with the BALs of `bal`, which needs a single file).
fn read_chains(
    files: &[PathBuf],
    bal: Option<&std::path::Path>,
) -> anyhow::Result<Vec<ethrex_common::BlockWithBal>> {
    anyhow::ensure!(
        bal.is_none() || files.len() == 1,
        "--bal goes with a single chain file ({} given)",
        files.len()
    );
    let mut blocks = Vec::new();
    for file in files {
        blocks
            .extend(read_chain(file, bal).with_context(|| format!("reading {}", file.display()))?);
    }
    Ok(blocks)
}

pub(crate) fn run_import(args: ImportArgs) -> anyhow::Result<ExitCode> {
    // The chain files are read and decoded while the store opens and the genesis is built.
    let (chain, blocks) = rayon::join(
        || open_chain(&args.network, &args.db, &args.exec),
        || read_chains(&args.files, args.bal.as_deref()),
    );
    let (chain, blocks) = (chain?, blocks?);
    let bar = ProgressBar::new(blocks.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("importing [{bar:40}] {pos}/{len} blocks ({per_sec}, {eta})")
            .unwrap(),
    );
    let (mut imported, mut skipped, mut side_branches) = (0usize, 0usize, 0usize);
    let result = blocks.into_iter().try_for_each(|block| {
        let number = block.number();
        let hash = block.hash();
        // Resume: blocks already on the canonical chain were committed by an earlier run.
        if chain.store.canonical_hash(number)? == Some(hash) {
            skipped += 1;
            bar.inc(1);
            return anyhow::Ok(());
        }
        // A side branch: the head moves back to the block's (known) parent first.
        let parent = block.block.header.parent_hash;
        if chain.store.head()? != Some(parent) && chain.store.header(&parent)?.is_some() {
            chain
                .set_head(parent, &std::collections::HashMap::new())
                .with_context(|| format!("moving the head to block {number}'s parent {parent}"))?;
            side_branches += 1;
        }
        chain.import_block(block).with_context(|| format!("block {number} ({hash})"))?;
        imported += 1;
        bar.inc(1);
        Ok(())
    });
    bar.finish_and_clear();
    // Blocks reach the disk in the background: wait for them, even after a bad block, so
    // everything imported before it is kept.
    chain.store.flush().context("writing the imported blocks to the database")?;
    result?;
    let head = chain.store.head_header()?.context("the database holds no chain")?;
    let branches = match side_branches {
        0 => String::new(),
        n => format!(", {n} side branches followed"),
    };
    eprintln!(
        "imported {imported} blocks ({skipped} already present{branches}); head is block {} {} (state root {})",
        head.number,
        head.hash_slow(),
        head.state_root
    );
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
pub(crate) struct ExportArgs {
    #[command(flatten)]
    db: DbArgs,
    /// Also write the blocks' BALs (concatenated RLP) to this file.
    #[arg(long)]
    bal: Option<PathBuf>,
    /// Output chain file.
    file: PathBuf,
}

pub(crate) fn run_export(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let store = args.db.open()?;
    let head = store.head_header()?.context("the database holds no chain")?.number;
    let bar = ProgressBar::new(head);
    let mut blocks = Vec::with_capacity(head as usize);
    for number in 1..=head {
        let hash = store
            .canonical_hash(number)?
            .with_context(|| format!("canonical block {number} missing"))?;
        let block = store.block(&hash)?.with_context(|| format!("block {number} data missing"))?;
        blocks.push(ethrex_common::BlockWithBal { bal: store.bal(&hash)?, block });
        bar.inc(1);
    }
    bar.finish_and_clear();
    write_blocks(&args.file, &blocks)?;
    if let Some(bal) = &args.bal {
        write_bals(bal, &blocks)?;
    }
    eprintln!("exported blocks 1..={head} to {}", args.file.display());
    Ok(ExitCode::SUCCESS)
}

#[derive(Args)]
pub(crate) struct VerifyDbArgs {
    #[command(flatten)]
    db: DbArgs,
}

/// Recomputes the head's state root from the flat state and compares it with the header.
pub(crate) fn run_verify_db(args: VerifyDbArgs) -> anyhow::Result<ExitCode> {
    let store = args.db.open()?;
    let Some(head) = store.head_header()? else {
        // Genesis is committed atomically: before it there is nothing to be inconsistent.
        println!("the database holds no chain yet: consistent");
        return Ok(ExitCode::SUCCESS);
    };
    match ethrex_blockchain::state_root::verify_head_state(&store) {
        Ok(root) => {
            println!("head block {} state root {root}: consistent", head.number);
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            println!("head block {}: INCONSISTENT: {e}", head.number);
            Ok(ExitCode::FAILURE)
        }
    }
}

/// `--rpc.evmtimeout` in Go's notation, as geth reads it.
fn evm_timeout(text: &str) -> Result<std::time::Duration, String> {
    ethrex_vm::deadline::parse_go_duration(text)
}

/// Moves the calling thread to the idle scheduling class (Linux `SCHED_IDLE`): it runs
/// only on a core no other thread wants. Elsewhere, or if refused, it stays as it is.
fn idle_priority() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } != 0 {
            tracing::debug!(
                error = %std::io::Error::last_os_error(),
                "the KZG setup's thread keeps its priority"
            );
        }
    }
}
