//! Writes seed corpora for the fuzz targets from real data, by encoding real values with
//! the project's own encoders:
//!
//! - `block_rlp`: blocks of go-ethereum's devp2p test chain (`chain.rlp`), Amsterdam
//!   blocks and their BALs from EF blockchain fixtures;
//! - `eth_message`: eth/69-71 messages built from those blocks and BALs;
//! - `trie_node`: the nodes of small tries built with `ethrex_trie`;
//! - `genesis_json`: the devp2p test chain's genesis and a minimal one;
//! - `rlpx_handshake`: auth and ack bodies (EIP-8 and legacy) with real keys;
//! - `rlpx_frame`: message sequences, and eth messages framed as the p2p layer sends them;
//! - `engine_api`: Engine API and eth requests on generated blocks of the import scenario;
//! - `chain_file`: devp2p test chain blocks, generated blocks with their BALs;
//! - `bal_design`: every design of the BAL lab, derived from generated blocks.
//!
//! (The hex test vectors are extracted by `fuzz/seed/hex_vectors.py`.)
//!
//! ```text
//! cargo run --release -p ethrex-fuzz-logic --example seed_corpus -- \
//!     <go-ethereum>/cmd/devp2p/internal/ethtest/testdata <dir of EF fixture .json files>
//! ```

use alloy_primitives::{Bytes, B256};
use alloy_rlp::Decodable;
use ethrex_common::{Block, BlockAccessList};
use ethrex_net::eth::{
    BlockAccessLists, BlockBodies, BlockHeaders, BlockRangeUpdate, EthMessage, GetBlockAccessLists,
    GetBlockBodies, GetBlockHeaders, GetPooledTransactions, GetReceipts, HashOrNumber,
    NewPooledTransactionHashes, PooledTransactions, Transactions,
};
use ethrex_trie::{NodeReader, NodeRlp, Trie, TrieError};
use std::path::{Path, PathBuf};

/// Seeds larger than this are skipped.
const MAX_SEED: usize = 64 * 1024;

struct Corpus {
    root: PathBuf,
    written: usize,
}

impl Corpus {
    fn write(&mut self, target: &str, name: &str, data: &[u8]) {
        if data.len() > MAX_SEED {
            return;
        }
        let dir = self.root.join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), data).unwrap();
        self.written += 1;
    }

    /// An eth message as the `eth_message` target reads it: version selector, id, payload.
    fn eth(&mut self, name: &str, version: u32, message: &EthMessage) {
        let (code, payload) = message.encode(version);
        let mut data = vec![(version - 69) as u8, code as u8];
        data.extend_from_slice(&payload);
        self.write("eth_message", &format!("{name}-eth{version}"), &data);
    }
}

struct NoNodes;

impl NodeReader for NoNodes {
    fn get_node(&self, _: Option<&B256>, _: &[u8], _: &B256) -> Result<Option<NodeRlp>, TrieError> {
        Ok(None)
    }
}

fn read_chain(path: &Path) -> Vec<Block> {
    let bytes = std::fs::read(path).unwrap();
    let mut rest = bytes.as_slice();
    let mut blocks = Vec::new();
    while !rest.is_empty() {
        blocks.push(Block::decode(&mut rest).unwrap());
    }
    blocks
}

/// Fixture blocks' RLP and BALs, from every `.json` file under `dir`.
fn fixture_blocks(dir: &Path) -> Vec<(String, Vec<u8>, Option<BlockAccessList>)> {
    let mut files: Vec<PathBuf> = walk(dir);
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        for (_, test) in json.as_object().unwrap().iter().take(1) {
            for (i, block) in test["blocks"].as_array().into_iter().flatten().enumerate() {
                let Some(rlp) = block["rlp"].as_str() else { continue };
                let rlp = hex::decode(rlp.trim_start_matches("0x")).unwrap();
                let bal = block
                    .get("blockAccessList")
                    .and_then(|v| serde_json::from_value::<BlockAccessList>(v.clone()).ok());
                out.push((format!("{stem}-{i}"), rlp, bal));
            }
        }
    }
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, devp2p, fixtures] = args.as_slice() else {
        panic!("usage: seed_corpus <devp2p testdata dir> <EF fixtures dir>")
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    let mut corpus = Corpus { root, written: 0 };

    // Blocks of the devp2p test chain: every 20th, and every block with transactions of
    // a type not seen yet.
    let blocks = read_chain(&Path::new(devp2p).join("chain.rlp"));
    let mut seen_types = std::collections::BTreeSet::new();
    let mut picked = Vec::new();
    for block in &blocks {
        let number = block.header.number;
        let new_type = block.body.transactions.iter().any(|tx| seen_types.insert(tx.tx_type()));
        if number % 20 == 0 || new_type {
            picked.push(block);
        }
    }
    for block in &picked {
        let rlp = alloy_rlp::encode(block);
        corpus.write("block_rlp", &format!("devp2p-block-{}", block.header.number), &rlp);
    }

    // Fixture blocks (Amsterdam: header fields through slotNumber) and their BALs.
    let fixtures = fixture_blocks(Path::new(fixtures));
    let mut bals = Vec::new();
    for (name, rlp, bal) in &fixtures {
        corpus.write("block_rlp", &format!("eest-{name}"), rlp);
        if let Some(bal) = bal {
            corpus.write("block_rlp", &format!("eest-bal-{name}"), &alloy_rlp::encode(bal));
            bals.push(bal.clone());
        }
    }

    // eth messages from those blocks, for every version that has them.
    let with_txs: Vec<&Block> =
        picked.iter().copied().filter(|b| !b.body.transactions.is_empty()).take(4).collect();
    let hashes: Vec<B256> = picked.iter().take(8).map(|b| b.header.hash_slow()).collect();
    for version in [69, 70, 71] {
        let headers = picked.iter().take(4).map(|b| b.header.clone()).collect();
        corpus.eth(
            "block-headers",
            version,
            &EthMessage::BlockHeaders(BlockHeaders { request_id: 7, headers }),
        );
        let bodies = with_txs.iter().map(|b| b.body.clone()).collect();
        corpus.eth(
            "block-bodies",
            version,
            &EthMessage::BlockBodies(BlockBodies { request_id: 8, bodies }),
        );
        let raw: Vec<Bytes> = with_txs
            .iter()
            .flat_map(|b| &b.body.transactions)
            .take(16)
            .map(|tx| alloy_rlp::encode(tx).into())
            .collect();
        corpus.eth(
            "transactions",
            version,
            &EthMessage::Transactions(Transactions { transactions: raw.clone() }),
        );
        corpus.eth(
            "pooled-transactions",
            version,
            &EthMessage::PooledTransactions(PooledTransactions {
                request_id: 9,
                transactions: raw.clone(),
            }),
        );
        let txs: Vec<_> = with_txs.iter().flat_map(|b| &b.body.transactions).take(16).collect();
        corpus.eth(
            "new-pooled-transaction-hashes",
            version,
            &EthMessage::NewPooledTransactionHashes(NewPooledTransactionHashes {
                types: txs.iter().map(|tx| tx.tx_type() as u8).collect::<Vec<u8>>().into(),
                sizes: raw.iter().map(|r| r.len() as u64).collect(),
                hashes: txs.iter().map(|tx| *tx.tx_hash()).collect(),
            }),
        );
        corpus.eth(
            "get-pooled-transactions",
            version,
            &EthMessage::GetPooledTransactions(GetPooledTransactions {
                request_id: 10,
                hashes: txs.iter().map(|tx| *tx.tx_hash()).collect(),
            }),
        );
        corpus.eth(
            "get-block-headers-by-number",
            version,
            &EthMessage::GetBlockHeaders(GetBlockHeaders {
                request_id: 1,
                origin: HashOrNumber::Number(100),
                amount: 64,
                skip: 1,
                reverse: true,
            }),
        );
        corpus.eth(
            "get-block-headers-by-hash",
            version,
            &EthMessage::GetBlockHeaders(GetBlockHeaders {
                request_id: 2,
                origin: HashOrNumber::Hash(hashes[0]),
                amount: 1,
                skip: 0,
                reverse: false,
            }),
        );
        corpus.eth(
            "get-block-bodies",
            version,
            &EthMessage::GetBlockBodies(GetBlockBodies { request_id: 3, hashes: hashes.clone() }),
        );
        corpus.eth(
            "get-receipts",
            version,
            &EthMessage::GetReceipts(GetReceipts {
                request_id: 4,
                first_block_receipt_index: if version >= 70 { 2 } else { 0 },
                hashes: hashes.clone(),
            }),
        );
        let last = blocks.last().unwrap();
        corpus.eth(
            "block-range-update",
            version,
            &EthMessage::BlockRangeUpdate(BlockRangeUpdate {
                earliest_block: 0,
                latest_block: last.header.number,
                latest_block_hash: last.header.hash_slow(),
            }),
        );
    }
    corpus.eth(
        "get-block-access-lists",
        71,
        &EthMessage::GetBlockAccessLists(GetBlockAccessLists { request_id: 5, hashes }),
    );
    let mut access_lists: Vec<Option<BlockAccessList>> =
        bals.iter().take(4).cloned().map(Some).collect();
    access_lists.insert(1, None);
    corpus.eth(
        "block-access-lists",
        71,
        &EthMessage::BlockAccessLists(BlockAccessLists { request_id: 6, access_lists }),
    );

    // Trie nodes: every node of a few small tries (leaves, extensions, branches, inline
    // children).
    for (trie_index, (count, value_len)) in
        [(1usize, 4usize), (3, 2), (17, 40), (40, 1)].into_iter().enumerate()
    {
        let mut trie = Trie::new(&NoNodes, ethrex_trie::EMPTY_ROOT_HASH);
        for i in 0..count {
            // Keys sharing prefixes make extensions; short values make inline nodes.
            let mut key = [0u8; 32];
            key[0] = (i % 3) as u8;
            key[31] = i as u8;
            trie.insert(&key, vec![i as u8 + 1; value_len]).unwrap();
        }
        let (_, nodes) = trie.commit().unwrap();
        for (node_index, node) in nodes.nodes.iter().enumerate().take(12) {
            corpus.write("trie_node", &format!("trie{trie_index}-node{node_index}"), &node.rlp);
        }
    }

    // Binary-trie node blobs, prefixed with the group-depth byte (`1 + b % 8`).
    for group_depth in [1u8, 4, 8] {
        let store = ethrex_bintrie::MemoryStore::new();
        let mut trie = ethrex_bintrie::BinaryTrie::new(&store, group_depth).unwrap();
        for i in 0..24u8 {
            let mut key = [i % 4; 32];
            key[31] = i;
            trie.insert(&B256::from(key), B256::repeat_byte(i + 1)).unwrap();
        }
        trie.commit().unwrap();
        for (index, (_, blob)) in store.entries().iter().enumerate().take(6) {
            let mut data = vec![group_depth - 1];
            data.extend_from_slice(blob);
            corpus.write("trie_node", &format!("bintrie-depth{group_depth}-{index}"), &data);
        }
    }

    // Blocks for import: generated blocks on the import scenario's genesis, with their
    // BAL (selector 0: sequential, 2: parallel) and without (selector 0).
    for seed in 0..4u64 {
        let generated = ethrex_chaingen::adversarial::generate_chain(seed, 1);
        let block = &generated.blocks[0];
        let rlp = alloy_rlp::encode(&block.block);
        let bal = block.bal.as_ref().map(alloy_rlp::encode).unwrap_or_default();
        for (name, selector, with_bal) in
            [("seq", 0u8, true), ("par", 2, true), ("nobal", 0, false)]
        {
            let mut data = vec![selector];
            data.extend_from_slice(&rlp);
            if with_bal {
                data.extend_from_slice(&bal);
            }
            corpus.write("block_import", &format!("generated-{seed}-{name}"), &data);
        }
    }

    // Genesis files.
    let genesis = std::fs::read(Path::new(devp2p).join("genesis.json")).unwrap();
    corpus.write("genesis_json", "devp2p-genesis", &genesis);
    corpus.write(
        "genesis_json",
        "minimal-cancun",
        br#"{"config":{"chainId":1337,"homesteadBlock":0,"eip150Block":0,"eip155Block":0,"eip158Block":0,"byzantiumBlock":0,"constantinopleBlock":0,"petersburgBlock":0,"istanbulBlock":0,"berlinBlock":0,"londonBlock":0,"mergeNetsplitBlock":0,"terminalTotalDifficulty":0,"shanghaiTime":0,"cancunTime":0},"gasLimit":"0x1c9c380","difficulty":"0x0","baseFeePerGas":"0x7","alloc":{"0x0000000000000000000000000000000000000aaa":{"balance":"0x1","code":"0x6000","nonce":"0x1","storage":{"0x01":"0x02"}}}}"#,
    );
    handshake_and_frame_seeds(&mut corpus);
    engine_seeds(&mut corpus);
    chain_file_seeds(&mut corpus, &blocks[1..4]);
    bal_design_seeds(&mut corpus);
    println!("wrote {} seeds", corpus.written);
}

fn rlp_list(items: &[&dyn alloy_rlp::Encodable]) -> Vec<u8> {
    let payload_length = items.iter().map(|i| i.length()).sum();
    let mut out = Vec::new();
    alloy_rlp::Header { list: true, payload_length }.encode(&mut out);
    for item in items {
        item.encode(&mut out);
    }
    out
}

fn handshake_and_frame_seeds(corpus: &mut Corpus) {
    use secp256k1::{PublicKey, SecretKey, SECP256K1};
    let key = SecretKey::from_byte_array([0x11; 32]).unwrap();
    let public = PublicKey::from_secret_key(SECP256K1, &key).serialize_uncompressed();
    let sig = Bytes::from(vec![0x33u8; 65]);
    let pubk = Bytes::copy_from_slice(&public[1..]);
    let nonce = B256::repeat_byte(0x44);
    let auth = rlp_list(&[&sig, &pubk, &nonce, &4u64]);
    let auth_extra = rlp_list(&[&sig, &pubk, &nonce, &5u64, &Bytes::from_static(b"extra")]);
    let ack = rlp_list(&[&pubk, &nonce, &4u64]);
    for (name, selector, body) in [
        ("auth-eip8", 2u8, auth),
        ("auth-eip8-extra", 2, auth_extra),
        ("ack-eip8", 3, ack),
        ("auth-raw", 0, vec![0x01, 0x90, 0x04]),
        ("ack-raw", 1, vec![0x00, 0x80]),
    ] {
        let mut data = vec![selector];
        data.extend_from_slice(&body);
        corpus.write("rlpx_handshake", name, &data);
    }
    let mut legacy_auth = vec![4u8];
    legacy_auth.extend_from_slice(&[0x33; 97]);
    legacy_auth.extend_from_slice(&public[1..]);
    legacy_auth.extend_from_slice(nonce.as_slice());
    corpus.write("rlpx_handshake", "auth-legacy", &legacy_auth);
    let mut legacy_ack = vec![5u8];
    legacy_ack.extend_from_slice(&public[1..]);
    legacy_ack.extend_from_slice(nonce.as_slice());
    corpus.write("rlpx_handshake", "ack-legacy", &legacy_ack);

    // Frames: message sequences (0xff separates messages), with and without a flipped
    // byte or a lowered limit.
    let messages = b"\x80\xff\x01\x02\x03\xffhello frames\xff".to_vec();
    for (name, mode, position) in
        [("plain", 0u8, 5u8), ("flip", 2, 17), ("limit", 4, 4), ("flip-limit", 6, 9)]
    {
        let mut data = vec![mode, position];
        data.extend_from_slice(&messages);
        corpus.write("rlpx_frame", &format!("sequence-{name}"), &data);
    }
    // eth messages as the p2p layer frames them (id + snappy payload), from the eth seeds.
    let eth_dir = corpus.root.join("eth_message");
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&eth_dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    for path in files.iter().take(12) {
        let seed = std::fs::read(path).unwrap();
        let [_, id, payload @ ..] = seed.as_slice() else { continue };
        for snappy in [true, false] {
            let frame =
                ethrex_net::rlpx::fuzzing::encode_message(0x10 + u64::from(*id), payload, snappy);
            let Ok(frame) = frame else { continue };
            let mut data = vec![1u8, 0];
            data.extend_from_slice(&frame);
            let name = path.file_name().unwrap().to_string_lossy();
            corpus.write(
                "rlpx_frame",
                &format!("message-{name}-snappy{}", u8::from(snappy)),
                &data,
            );
        }
    }
}

/// An `engine_api` input: the selector of `method`, then `params` as JSON text.
fn engine_input(method: &str, params: &serde_json::Value) -> Vec<u8> {
    let index = ethrex_fuzz_logic::engine_methods().iter().position(|m| m == method).unwrap();
    let mut data = vec![index as u8];
    data.extend_from_slice(params.to_string().as_bytes());
    data
}

fn engine_seeds(corpus: &mut Corpus) {
    use alloy_rpc_types_engine::{ExecutionPayloadV3, ExecutionPayloadV4};
    use serde_json::json;
    let scenario = ethrex_fuzz_logic::import_scenario();
    let genesis = scenario.genesis.hash_slow();
    for seed in 0..3u64 {
        let generated = ethrex_chaingen::adversarial::generate_chain(seed, 1);
        let b = &generated.blocks[0];
        let hash = b.block.header.hash_slow();
        let payload = ExecutionPayloadV4 {
            payload_inner: ExecutionPayloadV3::from_block_unchecked(hash, &b.block),
            block_access_list: alloy_rlp::encode(b.bal.as_ref().unwrap()).into(),
            slot_number: b.block.header.slot_number.unwrap(),
        };
        let params = json!([
            payload,
            Vec::<B256>::new(),
            b.block.header.parent_beacon_block_root.unwrap(),
            Vec::<Bytes>::new()
        ]);
        corpus.write(
            "engine_api",
            &format!("newPayloadV5-{seed}"),
            &engine_input("engine_newPayloadV5", &params),
        );
        let timestamp = b.block.header.timestamp;
        let fcu = json!([
            {"headBlockHash": genesis, "safeBlockHash": B256::ZERO, "finalizedBlockHash": B256::ZERO},
            {
                "timestamp": format!("{:#x}", timestamp),
                "prevRandao": B256::repeat_byte(1),
                "suggestedFeeRecipient": "0x00000000000000000000000000000000000000aa",
                "withdrawals": [],
                "parentBeaconBlockRoot": B256::with_last_byte(1),
                "slotNumber": format!("{:#x}", timestamp)
            }
        ]);
        corpus.write(
            "engine_api",
            &format!("forkchoiceUpdatedV4-build-{seed}"),
            &engine_input("engine_forkchoiceUpdatedV4", &fcu),
        );
        let fcu_head = json!([{"headBlockHash": hash, "safeBlockHash": B256::ZERO, "finalizedBlockHash": B256::ZERO}, null]);
        corpus.write(
            "engine_api",
            &format!("forkchoiceUpdatedV4-unknown-{seed}"),
            &engine_input("engine_forkchoiceUpdatedV4", &fcu_head),
        );
    }
    let zero = format!("{:#x}", 0);
    let sender = scenario.senders[0].address();
    for (name, method, params) in [
        (
            "genesis-head",
            "engine_forkchoiceUpdatedV4",
            json!([{"headBlockHash": genesis, "safeBlockHash": genesis, "finalizedBlockHash": genesis}, null]),
        ),
        ("get-payload", "engine_getPayloadV5", json!(["0x0000000000000001"])),
        ("bodies-by-range", "engine_getPayloadBodiesByRangeV2", json!(["0x1", "0x2"])),
        ("bodies-by-hash", "engine_getPayloadBodiesByHashV2", json!([[genesis]])),
        (
            "capabilities",
            "engine_exchangeCapabilities",
            json!([["engine_newPayloadV5", "engine_forkchoiceUpdatedV4"]]),
        ),
        ("blobs", "engine_getBlobsV1", json!([[B256::repeat_byte(1)]])),
        ("block-by-number", "eth_getBlockByNumber", json!(["latest", true])),
        ("block-by-hash", "eth_getBlockByHash", json!([genesis, false])),
        ("balance", "eth_getBalance", json!([sender, "latest"])),
        ("nonce", "eth_getTransactionCount", json!([sender, zero])),
        ("storage", "eth_getStorageAt", json!([sender, "0x0", "latest"])),
        ("code", "eth_getCode", json!([sender, "latest"])),
        ("chain-id", "eth_chainId", json!([])),
    ] {
        corpus.write("engine_api", name, &engine_input(method, &params));
    }
    let mut raw = vec![0x80u8];
    raw.extend_from_slice(br#"{"jsonrpc":"2.0","id":"x","method":"eth_syncing"}"#);
    corpus.write("engine_api", "raw-request", &raw);
}

/// A `chain_file` input: the blocks file's length (2 bytes), the blocks file, the BAL file.
fn chain_file_seeds(corpus: &mut Corpus, devp2p: &[Block]) {
    let mut blocks = Vec::new();
    for block in devp2p {
        alloy_rlp::Encodable::encode(block, &mut blocks);
    }
    let mut data = (blocks.len() as u16).to_be_bytes().to_vec();
    data.extend_from_slice(&blocks);
    corpus.write("chain_file", "devp2p-blocks", &data);
    let generated = ethrex_chaingen::adversarial::generate_chain(7, 2);
    let (mut blocks, mut bals) = (Vec::new(), Vec::new());
    for b in &generated.blocks {
        alloy_rlp::Encodable::encode(&b.block, &mut blocks);
        alloy_rlp::Encodable::encode(b.bal.as_ref().unwrap(), &mut bals);
    }
    if blocks.len() <= usize::from(u16::MAX) {
        let mut data = (blocks.len() as u16).to_be_bytes().to_vec();
        data.extend_from_slice(&blocks);
        data.extend_from_slice(&bals);
        corpus.write("chain_file", "generated-with-bals", &data);
    }
}

/// Every design of the BAL lab, derived from generated blocks on the import scenario.
fn bal_design_seeds(corpus: &mut Corpus) {
    use ethrex_bal::BalDesign;
    let scenario = ethrex_fuzz_logic::import_scenario();
    for seed in 0..2u64 {
        let generated = ethrex_chaingen::adversarial::generate_chain(seed, 1);
        let block = &generated.blocks[0];
        let chain = scenario
            .chain(scenario.memory_store(), ethrex_chaingen::adversarial::sequential_options());
        let designs = ethrex_bal::derive_designs(&chain, block, &BalDesign::ALL).unwrap();
        let txs = block.block.body.transactions.len();
        let Ok(txs) = u8::try_from(txs) else { continue };
        for (index, design) in designs.iter().enumerate() {
            let mut data = vec![index as u8, txs];
            data.extend_from_slice(&design.encode());
            corpus.write("bal_design", &format!("{}-{seed}", BalDesign::ALL[index].name()), &data);
        }
    }
}
