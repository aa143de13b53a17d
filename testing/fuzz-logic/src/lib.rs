//! The logic of the cargo-fuzz targets in `fuzz/`, one function per target.
//!
//! Each function takes arbitrary bytes, feeds them to decoders that face untrusted input
//! and panics only when an invariant breaks (a decoder panicking, or a value that does
//! not survive encode → decode). The fuzz targets call these functions under libFuzzer;
//! `tests/corpus.rs` replays every file of `fuzz/corpus/<target>/` and
//! `fuzz/regressions/<target>/` through the same functions on stable, so CI checks the
//! corpus and every crash ever found.

use alloy_consensus::proofs::{calculate_transaction_root, calculate_withdrawals_root};
use alloy_primitives::{keccak256, B256};
use alloy_rlp::{Decodable, Encodable};
use ethrex_blockchain::genesis::{alloc_state_root, genesis_header, geth_alloc};
use ethrex_blockchain::validation::{
    account_order_violation, validate_bal_form, validate_bal_hash, validate_body,
    validate_header_fields,
};
use ethrex_chaingen::adversarial::{parallel_options, sequential_options, Scenario};
use ethrex_common::{
    compute_block_access_list_hash, Block, BlockAccessList, BlockWithBal, ChainConfig, Fork, Header,
};
use ethrex_net::discv4::enr::{Enr, MAX_ENR_SIZE};
use ethrex_net::discv4::packet::{self, HEADER_SIZE, MAX_PACKET_SIZE};
use ethrex_net::eth::EthMessage;
use ethrex_net::rlpx::{DisconnectReason, Hello};
use ethrex_trie::{NodeReader, NodeRlp, Trie, TrieError};
use secp256k1::SecretKey;
use std::sync::OnceLock;

mod designs;
mod engine;
mod files;
mod rlpx;
mod txs;

pub use designs::bal_design;
pub use engine::{engine_api, engine_methods};
pub use files::chain_file;
pub use rlpx::{rlpx_frame, rlpx_handshake};
pub use txs::{pooled_transactions, FUZZ_CHAIN_ID};

/// A target's logic: called with one input, panics on a broken invariant.
pub type Target = fn(&[u8]);

/// The targets, by name: what `fuzz/fuzz_targets/<name>.rs` runs and the corpus test
/// replays from `fuzz/corpus/<name>/` and `fuzz/regressions/<name>/`.
pub const TARGETS: &[(&str, Target)] = &[
    ("eth_message", eth_message),
    ("rlpx_p2p", rlpx_p2p),
    ("discv4_packet", discv4_packet),
    ("block_rlp", block_rlp),
    ("block_import", block_import),
    ("trie_node", trie_node),
    ("genesis_json", genesis_json),
    ("rlpx_handshake", rlpx_handshake),
    ("rlpx_frame", rlpx_frame),
    ("engine_api", engine_api),
    ("chain_file", chain_file),
    ("bal_design", bal_design),
    ("pooled_transactions", pooled_transactions),
];

/// The eth protocol version an input's first byte selects (69, 70 or 71).
pub fn eth_version(selector: u8) -> u32 {
    69 + u32::from(selector % 3)
}

/// `EthMessage::decode` for eth/69-71 and every message id: byte 0 picks the version
/// ([`eth_version`]), byte 1 the id (its low 5 bits: 0x00-0x1f, which covers every
/// defined id and some undefined ones), the rest is the payload.
///
/// Asserts no panic and, when the payload decodes, that the message encodes under the
/// same id and decodes back to the same value.
pub fn eth_message(data: &[u8]) {
    let [selector, id, payload @ ..] = data else { return };
    let version = eth_version(*selector);
    let code = u64::from(*id & 0x1f);
    let Ok(message) = EthMessage::decode(version, code, payload) else { return };
    assert_eq!(message.code(), code, "decoded as a message of another id");
    let (encoded_code, encoded) = message.encode(version);
    assert_eq!(encoded_code, code, "encodes under another id");
    let again = EthMessage::decode(version, encoded_code, &encoded)
        .unwrap_or_else(|e| panic!("re-encoded {message:?} does not decode: {e}"));
    assert_eq!(again, message, "decode(encode(m)) != m");
}

/// The public RLPx `p2p` decoders: `Hello::decode` and `DisconnectReason::decode` over
/// the whole input. (The handshake and frame codecs: [`rlpx_handshake`], [`rlpx_frame`].)
///
/// Asserts no panic, and that a decoded Hello or reason encodes and decodes back to the
/// same value.
pub fn rlpx_p2p(data: &[u8]) {
    let reason = DisconnectReason::decode(data);
    assert_eq!(DisconnectReason::decode(&reason.encode()), reason, "disconnect round trip");
    if let Ok(hello) = Hello::decode(data) {
        let again = Hello::decode(&hello.encode())
            .unwrap_or_else(|e| panic!("re-encoded {hello:?} does not decode: {e}"));
        assert_eq!(again, hello, "hello round trip");
    }
}

/// The key the discovery round trips sign with.
fn fuzz_key() -> SecretKey {
    SecretKey::from_byte_array([0x42; 32]).expect("a valid secret key")
}

/// `discv4::packet::decode` over the input as a datagram, and again with its hash
/// fixed up (so that mutations reach the signature and message decoders instead of
/// stopping at the hash check); `discv4::enr::Enr::decode` over the input as a record.
///
/// Asserts no panic; a decoded packet's message, signed again with another key, decodes
/// to the same message (when the re-encoding fits in a datagram); a decoded record,
/// signed again, decodes to the same sequence number and endpoint (when it fits in
/// [`MAX_ENR_SIZE`]).
pub fn discv4_packet(data: &[u8]) {
    let _ = packet::decode(data);
    if data.len() > HEADER_SIZE && data.len() <= MAX_PACKET_SIZE {
        let mut datagram = data.to_vec();
        let hash = keccak256(&datagram[32..]);
        datagram[..32].copy_from_slice(hash.as_slice());
        if let Ok(decoded) = packet::decode(&datagram) {
            assert_eq!(decoded.hash, hash, "the packet hash is not its first 32 bytes");
            let (encoded, encoded_hash) = decoded.message.encode(&fuzz_key());
            if encoded.len() <= MAX_PACKET_SIZE {
                let again = packet::decode(&encoded).unwrap_or_else(|e| {
                    panic!("re-encoded {:?} does not decode: {e}", decoded.message)
                });
                assert_eq!(again.message, decoded.message, "discv4 message round trip");
                assert_eq!(again.hash, encoded_hash);
            }
        }
    }
    if let Ok(enr) = Enr::decode(data) {
        let signed = enr.sign(&fuzz_key());
        if signed.len() <= MAX_ENR_SIZE {
            let again = Enr::decode(&signed)
                .unwrap_or_else(|e| panic!("re-signed {enr:?} does not decode: {e}"));
            assert_eq!(
                (again.seq, again.ip, again.tcp_port, again.udp_port),
                (enr.seq, enr.ip, enr.tcp_port, enr.udp_port),
                "record round trip"
            );
        }
    }
}

/// RLP decoding of a block (`ethrex_common::Block`, alloy's `Decodable`) and of a block
/// access list (`ethrex_common::BlockAccessList`), each over the whole input.
///
/// Asserts no panic; a decoded block or BAL encodes and decodes back to the same value;
/// a decoded block goes through `validate_header_fields` and `validate_body` (under a
/// chain with every fork through Amsterdam active) without panicking; a decoded BAL
/// goes through `account_order_violation` and `validate_bal_form` without panicking and
/// passes `validate_bal_hash` against a header committing to its hash.
pub fn block_rlp(data: &[u8]) {
    if let Ok(block) = Block::decode(&mut &data[..]) {
        let encoded = alloy_rlp::encode(&block);
        assert_eq!(encoded.len(), block.length(), "block length() disagrees with encode");
        let again = Block::decode(&mut encoded.as_slice())
            .unwrap_or_else(|e| panic!("re-encoded block does not decode: {e}"));
        assert_eq!(again, block, "block round trip");
        let config = ChainConfig::all_forks_at_genesis(1, Fork::Amsterdam);
        let _ = validate_header_fields(&config, &block.header);
        let _ = validate_body(&config, &block);
        let _ = block.header.hash_slow();
    }
    if let Ok(bal) = BlockAccessList::decode(&mut &data[..]) {
        let encoded = alloy_rlp::encode(&bal);
        let again = BlockAccessList::decode(&mut encoded.as_slice())
            .unwrap_or_else(|e| panic!("re-encoded BAL does not decode: {e}"));
        assert_eq!(again, bal, "BAL round trip");
        let header = Header {
            gas_limit: 60_000_000,
            block_access_list_hash: Some(compute_block_access_list_hash(&bal)),
            ..Header::default()
        };
        let _ = account_order_violation(&bal);
        let tx_count = usize::from(data.last().copied().unwrap_or_default());
        let _ = validate_bal_form(&header, &bal, tx_count);
        validate_bal_hash(&header, &bal).expect("a BAL matches the hash computed from it");
    }
}

/// The genesis `block_import` imports onto (`ethrex_chaingen`'s adversarial scenario:
/// every fork through Amsterdam, funded senders, a few contracts, the system contracts).
pub fn import_scenario() -> &'static Scenario {
    static SCENARIO: OnceLock<Scenario> = OnceLock::new();
    SCENARIO.get_or_init(Scenario::new)
}

/// Block import, structure-aware: byte 0 is a selector, then a block's RLP, then
/// optionally its BAL's RLP. The block is imported with `Blockchain::import_block` twice,
/// each time on a fresh in-memory store holding [`import_scenario`]'s genesis: once with
/// the sequential import options and once with the parallel ones. Selector bit 0 clear:
/// the block's parent hash is replaced by the genesis hash (so mutated blocks reach
/// execution instead of stopping at an unknown parent). Bit 1 set: the block is re-sealed
/// (its header's transactions and withdrawals roots recomputed from its body and, with a
/// BAL, its `block_access_list_hash` from the BAL), so mutations of the body and the BAL
/// get past the body checks to execution and the BAL checks.
///
/// Asserts no panic; an imported block is reported under its hash; both paths give the
/// same verdict (imported, leaving byte-identical stores; or rejected as invalid; or a
/// fault);
/// a rejected block leaves the store's content (every table, every byte) unchanged.
pub fn block_import(data: &[u8]) {
    let [selector, rest @ ..] = data else { return };
    let mut rest: &[u8] = rest;
    let Ok(mut block) = Block::decode(&mut rest) else { return };
    let bal = if rest.is_empty() {
        None
    } else {
        match BlockAccessList::decode(&mut rest) {
            Ok(bal) if rest.is_empty() => Some(bal),
            _ => return,
        }
    };
    let scenario = import_scenario();
    if selector & 1 == 0 {
        block.header.parent_hash = scenario.genesis.hash_slow();
    }
    if selector & 2 != 0 {
        reseal(&mut block, bal.as_ref());
    }
    let hash = block.header.hash_slow();
    let verdicts = [sequential_options(), parallel_options()].map(|options| {
        let store = scenario.memory_store();
        let before = store.all_entries().expect("the store reads its entries");
        let chain = scenario.chain(store, options);
        match chain.import_block(BlockWithBal { block: block.clone(), bal: bal.clone() }) {
            Ok(outcome) => {
                assert_eq!(outcome.hash, hash, "imported under another hash");
                chain.store.flush().expect("the in-memory store writes");
                Verdict::Imported(chain.store.all_entries().expect("the store reads its entries"))
            }
            Err(e) => {
                let after = chain.store.all_entries().expect("the store reads its entries");
                assert!(after == before, "a rejected block changed the store: {e}");
                if e.is_invalid_block() {
                    Verdict::Invalid
                } else {
                    Verdict::Fault
                }
            }
        }
    });
    assert!(
        verdicts[0] == verdicts[1],
        "the sequential and parallel paths disagree: {} vs {}",
        verdicts[0].name(),
        verdicts[1].name()
    );
}

/// What an import concluded, compared between the two paths.
#[derive(PartialEq, Eq)]
enum Verdict {
    /// Imported: the store's whole content afterwards.
    Imported(Vec<(ethrex_storage::Table, ethrex_storage::backend::Entries)>),
    Invalid,
    Fault,
}

impl Verdict {
    fn name(&self) -> &'static str {
        match self {
            Verdict::Imported(_) => "imported",
            Verdict::Invalid => "invalid",
            Verdict::Fault => "fault",
        }
    }
}

/// Recomputes the header's body commitments (and the BAL hash, with a BAL) from the body.
fn reseal(block: &mut Block, bal: Option<&BlockAccessList>) {
    block.header.transactions_root = calculate_transaction_root(&block.body.transactions);
    if let Some(withdrawals) = &block.body.withdrawals {
        block.header.withdrawals_root = Some(calculate_withdrawals_root(withdrawals));
    }
    if let Some(bal) = bal {
        block.header.block_access_list_hash = Some(compute_block_access_list_hash(bal));
    }
}

/// A node store holding one node, the fuzz input, under its hash.
struct OneNode {
    hash: B256,
    rlp: NodeRlp,
}

impl NodeReader for OneNode {
    fn get_node(
        &self,
        _owner: Option<&B256>,
        _path: &[u8],
        hash: &B256,
    ) -> Result<Option<NodeRlp>, TrieError> {
        Ok((*hash == self.hash).then(|| self.rlp.clone()))
    }
}

/// A binary-trie node store answering every key with the same blob, the fuzz input.
struct OneBlob(Vec<u8>);

impl ethrex_bintrie::NodeStore for OneBlob {
    type Error = std::convert::Infallible;

    fn get(&self, _key: &[u8]) -> Result<Option<Vec<u8>>, Self::Error> {
        Ok(Some(self.0.clone()))
    }

    fn write(&self, _batch: ethrex_bintrie::NodeBatch) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// The node decoders of both tries, each reached through its public trie type:
///
/// - MPT (`ethrex_trie`, decoder private): the whole input is stored as the root node
///   under its hash, then `Trie::get` at a few keys, `insert`, `remove`, `root_hash`;
/// - binary trie (`ethrex_bintrie`, codec private): byte 0 picks the group depth
///   (`1 + b % 8`), the rest is the blob the store returns for every node path;
///   `BinaryTrie::open`, then `get` at a few keys, `insert`, `root_hash`.
///
/// Asserts no panic (a malformed node must be an error), and that after a successful
/// insert the key reads back the inserted value.
pub fn trie_node(data: &[u8]) {
    mpt_node(data);
    bintrie_node(data);
}

fn bintrie_node(data: &[u8]) {
    let [depth, blob @ ..] = data else { return };
    let group_depth = 1 + depth % 8;
    let store = OneBlob(blob.to_vec());
    let Ok(mut trie) =
        ethrex_bintrie::BinaryTrie::open(store, B256::repeat_byte(0x11), group_depth)
    else {
        return;
    };
    let mut from_input = [0u8; 32];
    let n = blob.len().min(32);
    from_input[..n].copy_from_slice(&blob[..n]);
    for key in [B256::ZERO, B256::repeat_byte(0xff), B256::from(from_input)] {
        let _ = trie.get(&key);
    }
    let key = keccak256(from_input);
    let value = B256::repeat_byte(0x42);
    if trie.insert(&key, value).is_ok() {
        let read = trie.get(&key).expect("the inserted key's path is in memory");
        assert_eq!(read, Some(value), "an inserted binary-trie key does not read back");
        let _ = trie.root_hash();
    }
}

fn mpt_node(data: &[u8]) {
    let hash = keccak256(data);
    let reader = OneNode { hash, rlp: NodeRlp::from(data) };
    let mut from_input = [0u8; 32];
    let n = data.len().min(32);
    from_input[..n].copy_from_slice(&data[..n]);
    let keys = [[0u8; 32], [0xff; 32], from_input, hash.0];
    let mut trie = Trie::new(&reader, hash);
    for key in &keys {
        let _ = trie.get(key);
    }
    let key = keccak256(from_input);
    let value = b"fuzz".to_vec();
    let mut trie = Trie::new(&reader, hash);
    if trie.insert(key.as_slice(), value.clone()).is_ok() {
        let read = trie.get(key.as_slice()).expect("the inserted key's path is in memory");
        assert_eq!(read, Some(value), "an inserted key does not read back");
        let _ = trie.root_hash();
    }
    let mut trie = Trie::new(&reader, hash);
    let _ = trie.remove(from_input.as_slice()).map(|()| trie.root_hash());
}

/// A geth-style genesis file: `serde_json` into `alloy_genesis::Genesis` (what
/// `ethrex_blockchain::chain_file::read_genesis` does with a file's bytes), then
/// `geth_alloc`, `alloc_state_root` and `genesis_header` on it.
///
/// Asserts no panic.
pub fn genesis_json(data: &[u8]) {
    let Ok(genesis) = serde_json::from_slice::<alloy_genesis::Genesis>(data) else { return };
    let alloc = geth_alloc(&genesis);
    if let Ok(root) = alloc_state_root(&alloc) {
        let header = genesis_header(&genesis, root);
        let _ = header.hash_slow();
    }
}
