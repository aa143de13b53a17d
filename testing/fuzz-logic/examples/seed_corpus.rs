//! Writes seed corpora for the fuzz targets from real data, by encoding real values with
//! the project's own encoders:
//!
//! - `block_rlp`: blocks of go-ethereum's devp2p test chain (`chain.rlp`), Amsterdam
//!   blocks and their BALs from EF blockchain fixtures;
//! - `eth_message`: eth/69-71 messages built from those blocks and BALs;
//! - `trie_node`: the nodes of small tries built with `ethrex_trie`;
//! - `genesis_json`: the devp2p test chain's genesis and a minimal one.
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
    fn get_node(&self, _: &B256) -> Result<Option<NodeRlp>, TrieError> {
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
        for (node_index, (_, rlp)) in nodes.iter().enumerate().take(12) {
            corpus.write("trie_node", &format!("trie{trie_index}-node{node_index}"), rlp);
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
    println!("wrote {} seeds", corpus.written);
}
