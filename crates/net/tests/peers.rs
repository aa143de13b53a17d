//! The running network against peers over loopback: an honest sync between two of our
//! nodes, scripted fake peers that break the protocol or lie (each must be dropped, and
//! the sync must still finish from the honest peer with nothing wrong stored), and the
//! serving limits.

use alloy_eips::eip2124::{ForkHash, ForkId, Head};
use alloy_primitives::B256;
use ethrex_blockchain::{Blockchain, ImportOptions};
use ethrex_chaingen::adversarial::{
    generate_chain, parallel_options, snapshot, ChainGenerator, Scenario,
};
use ethrex_common::BlockWithBal;
use ethrex_net::eth::{
    codes, fork_id, resolve_header_request, BlockAccessLists, BlockBodies, BlockHeaders,
    BlockRangeUpdate, EthMessage, GetBlockAccessLists, GetBlockHeaders, GetReceipts, HashOrNumber,
    Status, SUPPORTED_VERSIONS,
};
use ethrex_net::network::MAX_INFLIGHT_PER_PEER;
use ethrex_net::network::{MAX_STALLS, REQUEST_TIMEOUT};
use ethrex_net::rlpx::{
    Capability, DisconnectReason, Hello, RlpxError, Session, SessionReader, SessionWriter,
    P2P_VERSION,
};
use ethrex_net::{ChainHost, Network, NetworkConfig, NodeId, NodeRecord, SyncConfig, SyncOutcome};
use ethrex_storage::Store;
use rand::RngCore;
use secp256k1::SecretKey;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};

/// The deadlock guard of a test (none of them should come near it).
const LIMIT: Duration = Duration::from_secs(60);
/// Blocks of the served chain: two sync chunks (32 + 8).
const BLOCKS: usize = 40;

async fn guarded<T>(limit: Duration, test: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, test).await.expect("test timed out (deadlock guard)")
}

fn random_key() -> SecretKey {
    SecretKey::new(&mut rand::rng())
}

// ------------------------------------------------------------------------------------
// Chains and nodes.
// ------------------------------------------------------------------------------------

/// The generated chain (Amsterdam blocks with their BALs), made once per test binary.
fn blocks() -> &'static [BlockWithBal] {
    static BLOCKS_CELL: OnceLock<Vec<BlockWithBal>> = OnceLock::new();
    BLOCKS_CELL.get_or_init(|| generate_chain(0x5eed, BLOCKS).blocks)
}

/// A chain holding the generated blocks: what the honest node A serves.
fn full_chain() -> Arc<Blockchain> {
    let scenario = Scenario::new();
    let chain = scenario.chain(scenario.memory_store(), ImportOptions::default());
    for block in blocks() {
        chain.import_block(block.clone()).expect("a generated block imports");
    }
    Arc::new(chain)
}

/// A chain holding only the genesis, importing on the parallel path whenever a block
/// comes with a BAL: the syncing node B.
fn fresh_chain() -> Arc<Blockchain> {
    let scenario = Scenario::new();
    Arc::new(scenario.chain(scenario.memory_store(), parallel_options()))
}

async fn start(chain: Arc<Blockchain>) -> Network {
    start_with(chain, SyncConfig::default()).await
}

async fn start_with(chain: Arc<Blockchain>, sync: SyncConfig) -> Network {
    let mut config = NetworkConfig::new(random_key(), "127.0.0.1:0".parse().unwrap());
    config.sync = sync;
    let host: Arc<dyn ChainHost> = chain;
    Network::start(config, host).await.expect("the network starts")
}

fn head_hash(store: &Store) -> B256 {
    store.head().unwrap().expect("a head")
}

fn lists(net: &Network, id: NodeId) -> bool {
    net.peers().iter().any(|p| p.id == id)
}

/// Polls `condition` every 20 ms (the test's deadlock guard bounds the wait).
async fn until(mut condition: impl FnMut() -> bool) {
    while !condition() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// B's chain holds exactly A's: same head, same state, and for every block of A the same
/// header, body and BAL (so nothing a lying peer sent was kept).
fn assert_same_chain(a: &Blockchain, b: &Blockchain) {
    assert_eq!(head_hash(&b.store), head_hash(&a.store), "B's head is A's");
    for block in blocks() {
        let hash = block.hash();
        assert_eq!(b.store.header(&hash).unwrap(), a.store.header(&hash).unwrap());
        assert_eq!(b.store.body(&hash).unwrap(), a.store.body(&hash).unwrap());
        assert_eq!(b.store.bal(&hash).unwrap(), a.store.bal(&hash).unwrap(), "BAL of {hash}");
    }
    assert!(snapshot(&b.store) == snapshot(&a.store), "B's state is A's, byte for byte");
}

fn assert_reached(outcome: &SyncOutcome, target: B256) -> (u64, u64) {
    match outcome {
        SyncOutcome::Reached { hash, number, imported, parallel_with_wire_bal } => {
            assert_eq!(*hash, target);
            assert_eq!(*number, BLOCKS as u64);
            (*imported, *parallel_with_wire_bal)
        }
        other => panic!("the sync did not reach its target: {other:?}"),
    }
}

// ------------------------------------------------------------------------------------
// The fake peer.
// ------------------------------------------------------------------------------------

fn hello(key: &SecretKey) -> Hello {
    Hello {
        protocol_version: P2P_VERSION,
        client_id: "fake-peer/test".into(),
        capabilities: SUPPORTED_VERSIONS.iter().map(|v| Capability::new("eth", *v)).collect(),
        listen_port: 0,
        id: NodeId::from_secret_key(key),
    }
}

/// The Status a real node on `chain` sends: its genesis, chain id, head and the fork id at
/// the head.
fn status_of(chain: &Blockchain, version: u32) -> Status {
    let store = &chain.store;
    let genesis_hash = store.canonical_hash(0).unwrap().expect("a genesis");
    let genesis = store.header(&genesis_hash).unwrap().expect("the genesis header");
    let head = store.head_header().unwrap().expect("a head");
    Status {
        version,
        network_id: chain.config.chain_id(),
        genesis: genesis_hash,
        fork_id: fork_id(
            &chain.config.inner,
            genesis_hash,
            genesis.timestamp,
            Head { number: head.number, timestamp: head.timestamp, ..Default::default() },
        ),
        earliest_block: 0,
        latest_block: head.number,
        latest_block_hash: head.hash_slow(),
    }
}

/// A fake peer's established eth session.
struct Fake {
    key: SecretKey,
    id: NodeId,
    version: u32,
    reader: SessionReader,
    writer: SessionWriter,
}

/// Dials `addr` (the node `node`, or a proxy in front of it) with `key`, reads the node's
/// Status and answers with `ours(honest status)`.
async fn dial_fake(
    key: SecretKey,
    node: NodeRecord,
    addr: SocketAddr,
    chain: &Blockchain,
    ours: impl FnOnce(Status) -> Status,
) -> Result<Fake, RlpxError> {
    let stream = TcpStream::connect(addr).await?;
    let session = Session::connect(stream, &key, node.id, hello(&key)).await?;
    let version = session.shared_capability("eth").expect("eth is shared");
    let (mut reader, writer) = session.into_split();
    let (code, payload) = reader.recv().await?;
    assert_eq!(code, codes::STATUS, "the node sends its Status first");
    let theirs = Status::decode(&payload).expect("the node's Status decodes");
    assert_eq!(theirs.version, version);
    writer.send(codes::STATUS, &ours(status_of(chain, version)).encode()).await?;
    Ok(Fake { key, id: NodeId::from_secret_key(&key), version, reader, writer })
}

/// A fake peer that passes the Status check of `node`, pretending to hold `chain`.
async fn fake_on(node: &Network, chain: &Blockchain) -> Fake {
    let record = node.node_record();
    let fake = dial_fake(random_key(), record, record.tcp_addr(), chain, |s| s).await.unwrap();
    until(|| lists(node, fake.id)).await;
    fake
}

/// Reads until the session ends; the error it ended with (messages are ignored).
async fn ended(reader: &mut SessionReader) -> RlpxError {
    loop {
        if let Err(e) = reader.recv().await {
            return e;
        }
    }
}

/// The node dropped the fake: it got a Disconnect with `reason` (or saw the connection
/// close), and the node no longer lists it.
async fn assert_dropped(node: &Network, fake: &mut Fake, reason: DisconnectReason) {
    match ended(&mut fake.reader).await {
        RlpxError::Disconnected(r) => assert_eq!(r, reason),
        RlpxError::Closed | RlpxError::Io(_) => {}
        other => panic!("the session ended with {other}, not a Disconnect"),
    }
    until(|| !lists(node, fake.id)).await;
}

/// The node refuses the fake's key now: a new connection with it is disconnected right
/// after the Hello as useless.
async fn assert_banned(node: &Network, key: SecretKey) {
    let record = node.node_record();
    let stream = TcpStream::connect(record.tcp_addr()).await.unwrap();
    let outcome = match Session::connect(stream, &key, record.id, hello(&key)).await {
        Ok(mut session) => session.recv().await.map(|_| ()),
        Err(e) => Err(e),
    };
    match outcome {
        Err(RlpxError::Disconnected(DisconnectReason::UselessPeer)) => {}
        other => panic!("a banned peer was not refused: {other:?}"),
    }
    assert!(!lists(node, NodeId::from_secret_key(&key)));
}

/// How a serving fake peer behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    /// Answers every request; the BAL of the first block asked for lacks an entry.
    LyingBal,
    /// Answers every request; the first body asked for lacks a transaction.
    BadBodies,
    /// Reads requests and never answers.
    Stall,
    /// Answers every request with nothing, as a node that does not have the blocks (yet).
    Empty,
}

/// A fake peer serving `store` with `behaviour`, run by its own task.
struct Serving {
    /// The codes of the requests it got, in order.
    requests: mpsc::UnboundedReceiver<u64>,
    /// Told when the fake holds its lie (the first request it will lie to).
    holding: Option<oneshot::Receiver<()>>,
    /// Lets it send the lie.
    release: Option<oneshot::Sender<()>>,
    /// Why its session ended.
    task: tokio::task::JoinHandle<RlpxError>,
}

fn serve(mut fake: Fake, store: Store, behaviour: Behaviour) -> (Serving, SecretKey, NodeId) {
    let (seen, requests) = mpsc::unbounded_channel();
    let (holding_tx, holding) = oneshot::channel();
    let (release, release_rx) = oneshot::channel::<()>();
    let (key, id) = (fake.key, fake.id);
    let task = tokio::spawn(async move {
        let mut hold = Some((holding_tx, release_rx));
        loop {
            let (code, payload) = match fake.reader.recv().await {
                Ok(m) => m,
                Err(e) => return e,
            };
            let message = EthMessage::decode(fake.version, code, &payload)
                .expect("our node's message decodes");
            let _ = seen.send(code);
            if behaviour == Behaviour::Stall {
                continue;
            }
            let lie_here = matches!(
                (behaviour, &message),
                (Behaviour::LyingBal, EthMessage::GetBlockAccessLists(_))
                    | (Behaviour::BadBodies, EthMessage::GetBlockBodies(_))
            );
            let Some(mut answer) = answer(&store, &message) else { continue };
            if behaviour == Behaviour::Empty {
                empty(&mut answer);
            }
            if lie_here {
                if let Some((holding, release)) = hold.take() {
                    let _ = holding.send(());
                    let _ = release.await;
                    lie(&mut answer);
                }
            }
            let (code, payload) = answer.encode(fake.version);
            if let Err(e) = fake.writer.send(code, &payload).await {
                // The node can hang up over a lie while the answer to another request
                // (another chunk's) is on its way: what it said before hanging up is
                // still to be read.
                return loop {
                    match fake.reader.recv().await {
                        Ok(_) => continue,
                        Err(end @ RlpxError::Disconnected(_)) => break end,
                        Err(_) => break e,
                    }
                };
            }
        }
    });
    (Serving { requests, holding: Some(holding), release: Some(release), task }, key, id)
}

/// What an honest node holding `store` answers to `request` (None: not a request).
fn answer(store: &Store, request: &EthMessage) -> Option<EthMessage> {
    Some(match request {
        EthMessage::GetBlockHeaders(r) => EthMessage::BlockHeaders(BlockHeaders {
            request_id: r.request_id,
            headers: resolve_header_request(
                r.origin,
                r.amount,
                r.skip,
                r.reverse,
                |hash| store.header(&hash).unwrap(),
                |number| {
                    store.canonical_hash(number).unwrap().and_then(|h| store.header(&h).unwrap())
                },
            ),
        }),
        EthMessage::GetBlockBodies(r) => EthMessage::BlockBodies(BlockBodies {
            request_id: r.request_id,
            bodies: r.hashes.iter().map_while(|h| store.body(h).unwrap()).collect(),
        }),
        EthMessage::GetBlockAccessLists(r) => EthMessage::BlockAccessLists(BlockAccessLists {
            request_id: r.request_id,
            access_lists: r.hashes.iter().map(|h| store.bal(h).unwrap()).collect(),
        }),
        _ => return None,
    })
}

/// Makes an answer carry no items.
fn empty(answer: &mut EthMessage) {
    match answer {
        EthMessage::BlockHeaders(h) => h.headers.clear(),
        EthMessage::BlockBodies(b) => b.bodies.clear(),
        EthMessage::BlockAccessLists(a) => a.access_lists.clear(),
        _ => {}
    }
}

/// Corrupts the first item of an answer.
fn lie(answer: &mut EthMessage) {
    match answer {
        EthMessage::BlockAccessLists(a) => {
            let bal = a.access_lists[0].as_mut().expect("the first block has a BAL");
            assert!(bal.pop().is_some(), "a BAL with an entry to remove");
        }
        EthMessage::BlockBodies(b) => {
            assert!(b.bodies[0].transactions.pop().is_some(), "a body with a transaction");
        }
        other => panic!("no lie for {other:?}"),
    }
}

// ------------------------------------------------------------------------------------
// 1. The honest sync.
// ------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honest_sync_reaches_the_servers_head_with_its_state_and_wire_bals() {
    guarded(LIMIT, async {
        let a_chain = full_chain();
        let b_chain = fresh_chain();
        let a = start(a_chain.clone()).await;
        let b = start(b_chain.clone()).await;
        b.add_peer(a.node_record());
        until(|| lists(&b, a.node_record().id)).await;
        let peer = b.peers().into_iter().find(|p| p.id == a.node_record().id).unwrap();
        assert_eq!(peer.eth_version, 71, "both speak eth/71");
        assert_eq!(peer.head, (BLOCKS as u64, head_hash(&a_chain.store)));

        let target = head_hash(&a_chain.store);
        b.sync_to(target);
        let outcome = b.sync_idle().await;
        let (imported, with_wire_bal) = assert_reached(&outcome, target);
        assert_eq!(imported, BLOCKS as u64);
        assert_eq!(with_wire_bal, BLOCKS as u64, "every block ran with a BAL from the wire");
        assert_same_chain(&a_chain, &b_chain);
        // A second sync to the same target has nothing to do.
        b.sync_to(target);
        assert_eq!(
            b.sync_idle().await,
            SyncOutcome::Reached {
                hash: target,
                number: BLOCKS as u64,
                imported: 0,
                parallel_with_wire_bal: 0
            }
        );
    })
    .await;
}

/// Blocks per chunk for the test below: the served chain's 40 blocks make 20 chunks, the
/// download runs 8 at once, and each asks its bodies and BALs together, so the requests
/// wanted (16) are twice what one peer may have in flight.
const SMALL_CHUNK: usize = 2;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_that_wants_more_requests_than_one_peer_may_have_in_flight_still_gets_every_bal() {
    // Eight chunks at once, a bodies and a BALs request each: more than the peer may have.
    const { assert!(2 * 8 > MAX_INFLIGHT_PER_PEER, "the test must saturate the peer") };
    guarded(LIMIT, async {
        let a_chain = full_chain();
        let b_chain = fresh_chain();
        let a = start(a_chain.clone()).await;
        let sync = SyncConfig { chunk: SMALL_CHUNK, ..SyncConfig::default() };
        let b = start_with(b_chain.clone(), sync).await;
        b.add_peer(a.node_record());
        until(|| lists(&b, a.node_record().id)).await;
        let target = head_hash(&a_chain.store);
        b.sync_to(target);
        let (imported, with_wire_bal) = assert_reached(&b.sync_idle().await, target);
        assert_eq!(imported, BLOCKS as u64);
        assert_eq!(with_wire_bal, BLOCKS as u64, "no chunk went without its BALs");
        assert_same_chain(&a_chain, &b_chain);
    })
    .await;
}

// ------------------------------------------------------------------------------------
// 2. Bad peers on the transport and in the handshake.
// ------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_instead_of_a_handshake_is_dropped() {
    guarded(LIMIT, async {
        let node = start(fresh_chain()).await;
        let mut stream = TcpStream::connect(node.node_record().tcp_addr()).await.unwrap();
        // An EIP-8 size prefix (256 bytes) and 256 random bytes: not an auth packet.
        let mut garbage = vec![0u8; 258];
        rand::rng().fill_bytes(&mut garbage[2..]);
        garbage[..2].copy_from_slice(&256u16.to_be_bytes());
        stream.write_all(&garbage).await.unwrap();
        let mut buf = [0u8; 1024];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        assert!(node.peers().is_empty());
    })
    .await;
}

/// A TCP proxy to `target`; when `corrupt` is set it flips the last byte (a MAC byte) of
/// the next chunk it forwards from the dialer to the node.
async fn corrupting_proxy(target: SocketAddr, corrupt: Arc<AtomicBool>) -> SocketAddr {
    let front = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = front.local_addr().unwrap();
    tokio::spawn(async move {
        let (inbound, _) = front.accept().await.unwrap();
        let outbound = TcpStream::connect(target).await.unwrap();
        let (mut in_read, mut in_write) = inbound.into_split();
        let (mut out_read, mut out_write) = outbound.into_split();
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut out_read, &mut in_write).await;
            let _ = in_write.shutdown().await;
        });
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = match in_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if corrupt.swap(false, Ordering::SeqCst) {
                buf[n - 1] ^= 0x01;
            }
            if out_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = out_write.shutdown().await;
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_with_a_wrong_mac_gets_the_peer_dropped_and_banned() {
    guarded(LIMIT, async {
        let chain = fresh_chain();
        let node = start(chain.clone()).await;
        let corrupt = Arc::new(AtomicBool::new(false));
        let record = node.node_record();
        let front = corrupting_proxy(record.tcp_addr(), corrupt.clone()).await;
        let mut fake = dial_fake(random_key(), record, front, &chain, |s| s).await.unwrap();
        until(|| lists(&node, fake.id)).await;
        // A valid message, its frame MAC broken on the way.
        corrupt.store(true, Ordering::SeqCst);
        let update = BlockRangeUpdate {
            earliest_block: 0,
            latest_block: 0,
            latest_block_hash: head_hash(&chain.store),
        };
        fake.writer.send(codes::BLOCK_RANGE_UPDATE, &update.encode()).await.unwrap();
        assert_dropped(&node, &mut fake, DisconnectReason::BreachOfProtocol).await;
        assert_banned(&node, fake.key).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_of_another_chain_is_refused() {
    guarded(LIMIT, async {
        let chain = fresh_chain();
        let node = start(chain.clone()).await;
        let record = node.node_record();
        type Tamper = fn(Status) -> Status;
        let cases: [(&str, Tamper); 3] = [
            ("genesis", |s| Status { genesis: B256::repeat_byte(0x42), ..s }),
            ("fork id", |s| Status {
                fork_id: ForkId { hash: ForkHash([0xde, 0xad, 0xbe, 0xef]), next: 0 },
                ..s
            }),
            ("network id", |s| Status { network_id: s.network_id + 1, ..s }),
        ];
        for (what, tamper) in cases {
            let mut fake = dial_fake(random_key(), record, record.tcp_addr(), &chain, tamper)
                .await
                .unwrap_or_else(|e| panic!("wrong {what}: the session failed before Status: {e}"));
            match ended(&mut fake.reader).await {
                RlpxError::Disconnected(DisconnectReason::SubprotocolError) => {}
                other => panic!("wrong {what}: ended with {other}, not SubprotocolError"),
            }
            assert!(!lists(&node, fake.id), "wrong {what}: the peer is listed");
        }
        assert!(node.peers().is_empty());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsolicited_response_gets_the_peer_dropped_and_banned() {
    guarded(LIMIT, async {
        let chain = fresh_chain();
        let node = start(chain.clone()).await;
        let mut fake = fake_on(&node, &chain).await;
        let unasked =
            EthMessage::BlockHeaders(BlockHeaders { request_id: 0xdead, headers: vec![] });
        let (code, payload) = unasked.encode(fake.version);
        fake.writer.send(code, &payload).await.unwrap();
        assert_dropped(&node, &mut fake, DisconnectReason::BreachOfProtocol).await;
        assert_banned(&node, fake.key).await;
    })
    .await;
}

// ------------------------------------------------------------------------------------
// 2. Lying and stalling peers during a sync.
// ------------------------------------------------------------------------------------

/// B syncs from a fake peer (its only peer at first) that lies with `behaviour` to the
/// first request of a kind; while the fake holds that answer the honest A joins. The fake
/// must be dropped and banned, and the sync must reach A's head with A's chain and state.
async fn lie_during_sync(behaviour: Behaviour, reason: DisconnectReason) -> (u64, u64) {
    let a_chain = full_chain();
    let b_chain = fresh_chain();
    let a = start(a_chain.clone()).await;
    let b = start(b_chain.clone()).await;
    let fake = fake_on(&b, &a_chain).await;
    let (mut serving, key, id) = serve(fake, a_chain.store.clone(), behaviour);

    let target = head_hash(&a_chain.store);
    b.sync_to(target);
    serving.holding.take().unwrap().await.expect("the fake got the request it lies to");
    b.add_peer(a.node_record());
    until(|| lists(&b, a.node_record().id)).await;
    serving.release.take().unwrap().send(()).unwrap();

    let why = serving.task.await.unwrap();
    assert!(
        matches!(&why, RlpxError::Disconnected(r) if *r == reason),
        "the liar ended with {why}, not a Disconnect({reason:?})"
    );
    until(|| !lists(&b, id)).await;
    assert_banned(&b, key).await;
    let outcome = b.sync_idle().await;
    let counts = assert_reached(&outcome, target);
    assert_same_chain(&a_chain, &b_chain);
    let mut codes_seen = Vec::new();
    while let Ok(code) = serving.requests.try_recv() {
        codes_seen.push(code);
    }
    assert_eq!(codes_seen.first(), Some(&codes::GET_BLOCK_HEADERS), "the fake served the headers");
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_serving_a_lying_bal_is_banned_and_the_sync_finishes_from_the_honest_one() {
    guarded(LIMIT, async {
        let (imported, with_wire_bal) =
            lie_during_sync(Behaviour::LyingBal, DisconnectReason::BreachOfProtocol).await;
        assert_eq!(imported, BLOCKS as u64);
        // The lied-about BAL was asked again from A: every block still had one.
        assert_eq!(with_wire_bal, BLOCKS as u64);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_serving_bodies_that_miss_their_roots_is_banned_and_the_sync_finishes() {
    guarded(LIMIT, async {
        let (imported, _) =
            lie_during_sync(Behaviour::BadBodies, DisconnectReason::BreachOfProtocol).await;
        assert_eq!(imported, BLOCKS as u64);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalling_peer_is_dropped_after_max_stalls_and_the_sync_finishes_from_another() {
    // MAX_STALLS request timeouts, then the sync.
    let limit = REQUEST_TIMEOUT * MAX_STALLS + LIMIT;
    guarded(limit, async {
        let a_chain = full_chain();
        let b_chain = fresh_chain();
        let a = start(a_chain.clone()).await;
        let b = start(b_chain.clone()).await;
        let fake = fake_on(&b, &a_chain).await;
        let (mut serving, key, id) = serve(fake, a_chain.store.clone(), Behaviour::Stall);

        let target = head_hash(&a_chain.store);
        b.sync_to(target);
        // The staller is B's only peer: every request goes to it and times out.
        let why = serving.task.await.unwrap();
        assert!(
            matches!(why, RlpxError::Disconnected(DisconnectReason::PingTimeout)),
            "the staller ended with {why}"
        );
        let mut asked = 0;
        while let Ok(code) = serving.requests.try_recv() {
            assert_eq!(code, codes::GET_BLOCK_HEADERS);
            asked += 1;
        }
        assert_eq!(asked, MAX_STALLS, "dropped at its MAX_STALLS-th unanswered request");
        assert!(!lists(&b, id));
        assert_banned(&b, key).await;
        assert_eq!(b_chain.store.head_header().unwrap().unwrap().number, 0, "nothing imported yet");

        // The sync kept going: an honest peer finishes it.
        b.add_peer(a.node_record());
        let outcome = b.sync_idle().await;
        let (imported, with_wire_bal) = assert_reached(&outcome, target);
        assert_eq!((imported, with_wire_bal), (BLOCKS as u64, BLOCKS as u64));
        assert_same_chain(&a_chain, &b_chain);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_that_lack_the_target_do_not_keep_the_sync_from_an_honest_one() {
    guarded(Duration::from_secs(30), async {
        let a_chain = full_chain();
        let b_chain = fresh_chain();
        let a = start(a_chain.clone()).await;
        let b = start(b_chain.clone()).await;
        // Three peers still at the genesis (honest, only behind), then A.
        let genesis = fresh_chain();
        let mut behind = Vec::new();
        for _ in 0..3 {
            let fake = fake_on(&b, &genesis).await;
            behind.push(serve(fake, genesis.store.clone(), Behaviour::Empty));
        }
        b.add_peer(a.node_record());
        until(|| lists(&b, a.node_record().id)).await;
        let target = head_hash(&a_chain.store);
        b.sync_to(target);
        let outcome = b.sync_idle().await;
        assert_reached(&outcome, target);
        assert_same_chain(&a_chain, &b_chain);
    })
    .await;
}

// ------------------------------------------------------------------------------------
// 3. Serving limits.
// ------------------------------------------------------------------------------------

/// A chain of `n` empty blocks.
fn empty_chain(n: usize) -> Arc<Blockchain> {
    let mut generator = ChainGenerator::new(1);
    for _ in 0..n {
        generator.build(Vec::new(), Vec::new());
    }
    Arc::new(generator.builder.chain)
}

async fn request(fake: &mut Fake, message: EthMessage) -> (u64, Vec<u8>) {
    let (code, payload) = message.encode(fake.version);
    fake.writer.send(code, &payload).await.unwrap();
    let (code, payload) = fake.reader.recv().await.unwrap();
    (code, payload.to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serving_caps_headers_at_1024_and_answers_unknown_bals_with_empty_entries() {
    guarded(LIMIT * 2, async {
        let chain = tokio::task::spawn_blocking(|| empty_chain(1030)).await.unwrap();
        let node = start(chain.clone()).await;
        let mut fake = fake_on(&node, &chain).await;

        let ask = GetBlockHeaders {
            request_id: 7,
            origin: HashOrNumber::Number(0),
            amount: 2000,
            skip: 0,
            reverse: false,
        };
        let (code, payload) = request(&mut fake, EthMessage::GetBlockHeaders(ask)).await;
        let Ok(EthMessage::BlockHeaders(answer)) = EthMessage::decode(fake.version, code, &payload)
        else {
            panic!("not BlockHeaders: code {code:#x}");
        };
        assert_eq!(answer.request_id, 7);
        assert_eq!(answer.headers.len(), 1024, "at most 1024 headers");
        assert!(answer.headers.iter().enumerate().all(|(i, h)| h.number == i as u64));

        // Unknown blocks: one empty string (0x80) each, in order.
        let unknown: Vec<B256> = (1..=3u8).map(B256::repeat_byte).collect();
        let ask = GetBlockAccessLists { request_id: 8, hashes: unknown.clone() };
        let (code, payload) = request(&mut fake, EthMessage::GetBlockAccessLists(ask)).await;
        assert_eq!(code, codes::BLOCK_ACCESS_LISTS);
        assert!(payload.ends_with(&[0xc3, 0x80, 0x80, 0x80]), "payload {}", hex::encode(&payload));

        // Mixed with a known block: its BAL in its place.
        let known = head_hash(&chain.store);
        let hashes = vec![unknown[0], known, unknown[1]];
        let ask = GetBlockAccessLists { request_id: 9, hashes };
        let (code, payload) = request(&mut fake, EthMessage::GetBlockAccessLists(ask)).await;
        let Ok(EthMessage::BlockAccessLists(answer)) =
            EthMessage::decode(fake.version, code, &payload)
        else {
            panic!("not BlockAccessLists: code {code:#x}");
        };
        assert_eq!(answer.request_id, 9);
        let expected = chain.store.bal(&known).unwrap();
        assert!(expected.is_some(), "the head has a BAL");
        assert_eq!(answer.access_lists, vec![None, expected, None]);
        assert!(lists(&node, fake.id), "well-formed requests keep the peer");
    })
    .await;
}

/// The execution-apis RPC test chain (made by geth: proof of work from genesis, receipts
/// with intermediate state roots before Byzantium, typed receipts after Berlin, the merge,
/// Shanghai to BPO2) imported from `$EXECUTION_APIS_FIXTURES`; `None` without it.
fn execution_apis_chain() -> Option<Arc<Blockchain>> {
    use ethrex_blockchain::chain_file::{read_blocks, read_genesis};
    use ethrex_blockchain::genesis::{genesis_header, geth_alloc, open_genesis};
    let dir = std::path::PathBuf::from(std::env::var_os("EXECUTION_APIS_FIXTURES")?);
    let genesis = read_genesis(&dir.join("genesis.json")).unwrap();
    let store = Store::in_memory();
    open_genesis(&store, &geth_alloc(&genesis), |root| genesis_header(&genesis, root)).unwrap();
    let config = ethrex_common::ChainConfig::new(genesis.config.clone());
    let chain = Blockchain::new(store, config);
    for block in read_blocks(&dir.join("chain.rlp")).unwrap() {
        chain.import_block(BlockWithBal { block, bal: None }).unwrap();
    }
    Some(Arc::new(chain))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn receipts_of_every_era_served_on_the_wire_hash_to_the_roots_geth_sealed() {
    let Some(chain) = tokio::task::spawn_blocking(execution_apis_chain).await.unwrap() else {
        eprintln!("skipped: set EXECUTION_APIS_FIXTURES (scripts/test.sh does)");
        return;
    };
    guarded(LIMIT, async {
        let node = start(chain.clone()).await;
        let mut fake = fake_on(&node, &chain).await;
        let head = chain.store.head_header().unwrap().unwrap().number;
        let headers: Vec<_> = (1..=head)
            .map(|n| {
                let hash = chain.store.canonical_hash(n).unwrap().unwrap();
                chain.store.header(&hash).unwrap().unwrap()
            })
            .collect();
        let hashes: Vec<B256> = headers.iter().map(|h| h.hash_slow()).collect();
        // Asked for all at once; a server may answer a prefix (eth/70+: the last list
        // itself partial), so the rest is asked for until every block's list is whole.
        // `next`: the first block whose list is not whole (its part is last in `lists_got`
        // when `partial`).
        let mut lists_got: Vec<Vec<ethrex_common::Receipt>> = Vec::new();
        let (mut next, mut partial, mut requests) = (0usize, false, 0u64);
        while next < hashes.len() {
            requests += 1;
            let first_block_receipt_index =
                if partial { lists_got.last().map_or(0, |l| l.len() as u64) } else { 0 };
            let ask = GetReceipts {
                request_id: requests,
                first_block_receipt_index,
                hashes: hashes[next..].to_vec(),
            };
            let (code, payload) = request(&mut fake, EthMessage::GetReceipts(ask)).await;
            let Ok(EthMessage::Receipts(answer)) = EthMessage::decode(fake.version, code, &payload)
            else {
                panic!("not Receipts: code {code:#x}");
            };
            assert_eq!(answer.request_id, requests);
            assert!(!answer.receipts.is_empty() && requests < 200, "the server makes progress");
            let mut got = answer.receipts.into_iter();
            if partial {
                // The rest of the block left partial comes first.
                lists_got.last_mut().unwrap().extend(got.next().unwrap());
            }
            lists_got.extend(got);
            partial = answer.last_block_incomplete;
            next = lists_got.len() - usize::from(partial);
        }
        assert_eq!(lists_got.len(), headers.len(), "one list per block");
        let mut post_state = 0;
        for (header, receipts) in headers.iter().zip(&lists_got) {
            let served = ethrex_blockchain::validation::ReceiptsCommitment::of(receipts);
            assert_eq!(served.root, header.receipts_root, "block {}", header.number);
            assert_eq!(served.bloom, header.logs_bloom, "block {}", header.number);
            use alloy_consensus::{Eip658Value, TxReceipt};
            post_state += receipts
                .iter()
                .filter(|r| matches!(r.status_or_post_state(), Eip658Value::PostState(_)))
                .count();
        }
        assert!(post_state > 0, "the chain has pre-Byzantium receipts");
        assert!(lists(&node, fake.id), "well-formed requests keep the peer");
    })
    .await;
}

// ------------------------------------------------------------------------------------
// 5. What a dropped peer reads last. On a one-thread runtime: a task the node spawns runs
//    whenever the test's task waits, so "the node's read loop has started" is an event
//    the test can wait for (the node lists the peer, then the test waits once), not a
//    guess about timing. The keepalive's own schedule is checked on tokio's paused clock
//    in `network::peer`'s unit tests.
// ------------------------------------------------------------------------------------

/// The next message `fake` reads, raw: (wire id, payload), Pings and Pongs included.
async fn next_on_the_wire(fake: &mut Fake) -> (u64, Vec<u8>) {
    let (id, payload) = fake.reader.recv_wire().await.expect("a message, not the end");
    (id, payload.to_vec())
}

/// The fake sends an invalid BlockRangeUpdate (earliest after latest); the very next
/// message it reads must be a Disconnect for it, and nothing may follow.
async fn invalid_range_then_disconnect_first(node: &Network, mut fake: Fake) {
    let bad =
        BlockRangeUpdate { earliest_block: 9, latest_block: 1, latest_block_hash: B256::ZERO };
    let (code, payload) = EthMessage::BlockRangeUpdate(bad).encode(fake.version);
    fake.writer.send(code, &payload).await.unwrap();
    let (id, payload) = next_on_the_wire(&mut fake).await;
    assert_eq!(id, ethrex_net::rlpx::p2p::DISCONNECT, "the first message after the offence");
    assert_eq!(DisconnectReason::decode(&payload), DisconnectReason::SubprotocolError);
    match fake.reader.recv_wire().await {
        Err(RlpxError::Closed | RlpxError::Io(_)) => {}
        other => panic!("something followed the Disconnect: {other:?}"),
    }
    until(|| !lists(node, fake.id)).await;
}

#[tokio::test]
async fn a_peer_that_offends_right_after_status_reads_a_disconnect_and_no_ping_first() {
    guarded(LIMIT, async {
        let chain = fresh_chain();
        let node = start(chain.clone()).await;
        let record = node.node_record();
        let fake = dial_fake(random_key(), record, record.tcp_addr(), &chain, |s| s).await;
        invalid_range_then_disconnect_first(&node, fake.unwrap()).await;
    })
    .await;
}

#[tokio::test]
async fn a_peer_that_offends_once_its_session_runs_reads_a_disconnect_and_no_ping_first() {
    guarded(LIMIT, async {
        let chain = fresh_chain();
        let node = start(chain.clone()).await;
        // Listed: the node spawned the peer's read loop, which has run by the time this
        // wait ends (a Ping due at once would be on the wire now).
        let fake = fake_on(&node, &chain).await;
        tokio::task::yield_now().await;
        invalid_range_then_disconnect_first(&node, fake).await;
    })
    .await;
}
