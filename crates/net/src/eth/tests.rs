//! Tests of the eth module: fork ids against EIP-2124's mainnet vectors and geth 1.17.10,
//! wire encodings against geth's, round trips, serving limits and decoder robustness.

use super::*;
use alloy_consensus::{Eip658Value, Receipt as ConsensusReceipt, ReceiptEnvelope};
use alloy_eips::eip2124::{ForkFilterKey, ForkHash, ForkId, Head, ValidationError};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{b256, hex, Address, Bytes, Log, B256};
use alloy_rlp::{Decodable, Encodable};
use ethrex_common::{Block, BlockBody, Header};

fn head(number: u64, timestamp: u64) -> Head {
    Head { number, timestamp, ..Default::default() }
}

fn id(hash: u32, next: u64) -> ForkId {
    ForkId { hash: ForkHash(hash.to_be_bytes()), next }
}

// ---------------------------------------------------------------- fork ids

const MAINNET_GENESIS: B256 =
    b256!("d4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3");

/// Mainnet's fork schedule, by hand (`timed` false leaves out the timestamp forks, as
/// geth's "legacy" validation config does).
fn mainnet(timed: bool) -> alloy_genesis::ChainConfig {
    let t = |v: u64| timed.then_some(v);
    alloy_genesis::ChainConfig {
        chain_id: 1,
        homestead_block: Some(1_150_000),
        dao_fork_block: Some(1_920_000),
        dao_fork_support: true,
        eip150_block: Some(2_463_000),
        eip155_block: Some(2_675_000),
        eip158_block: Some(2_675_000),
        byzantium_block: Some(4_370_000),
        constantinople_block: Some(7_280_000),
        petersburg_block: Some(7_280_000),
        istanbul_block: Some(9_069_000),
        muir_glacier_block: Some(9_200_000),
        berlin_block: Some(12_244_000),
        london_block: Some(12_965_000),
        arrow_glacier_block: Some(13_773_000),
        gray_glacier_block: Some(15_050_000),
        shanghai_time: t(1_681_338_455),
        cancun_time: t(1_710_338_135),
        prague_time: t(1_746_612_311),
        osaka_time: t(1_764_798_551),
        bpo1_time: t(1_765_290_071),
        bpo2_time: t(1_767_747_671),
        ..Default::default()
    }
}

/// EIP-2124's mainnet vectors (block-numbered part, from the EIP text), extended with the
/// timestamp forks through BPO2 (the same table as geth's `core/forkid` tests).
#[test]
fn mainnet_fork_ids() {
    let config = mainnet(true);
    let cases: &[(u64, u64, u32, u64)] = &[
        (0, 0, 0xfc64ec04, 1_150_000),
        (1_149_999, 0, 0xfc64ec04, 1_150_000),
        (1_150_000, 0, 0x97c2c34c, 1_920_000),
        (1_919_999, 0, 0x97c2c34c, 1_920_000),
        (1_920_000, 0, 0x91d1f948, 2_463_000),
        (2_462_999, 0, 0x91d1f948, 2_463_000),
        (2_463_000, 0, 0x7a64da13, 2_675_000),
        (2_674_999, 0, 0x7a64da13, 2_675_000),
        (2_675_000, 0, 0x3edd5b10, 4_370_000),
        (4_369_999, 0, 0x3edd5b10, 4_370_000),
        (4_370_000, 0, 0xa00bc324, 7_280_000),
        (7_279_999, 0, 0xa00bc324, 7_280_000),
        (7_280_000, 0, 0x668db0af, 9_069_000),
        (7_987_396, 0, 0x668db0af, 9_069_000),
        (9_069_000, 0, 0x879d6e30, 9_200_000),
        (9_199_999, 0, 0x879d6e30, 9_200_000),
        (9_200_000, 0, 0xe029e991, 12_244_000),
        (12_243_999, 0, 0xe029e991, 12_244_000),
        (12_244_000, 0, 0x0eb440f6, 12_965_000),
        (12_964_999, 0, 0x0eb440f6, 12_965_000),
        (12_965_000, 0, 0xb715077d, 13_773_000),
        (13_772_999, 0, 0xb715077d, 13_773_000),
        (13_773_000, 0, 0x20c327fc, 15_050_000),
        (15_049_999, 0, 0x20c327fc, 15_050_000),
        (15_050_000, 0, 0xf0afd0e3, 1_681_338_455),
        (20_000_000, 1_681_338_454, 0xf0afd0e3, 1_681_338_455),
        (20_000_000, 1_681_338_455, 0xdce96c2d, 1_710_338_135),
        (30_000_000, 1_710_338_134, 0xdce96c2d, 1_710_338_135),
        (30_000_000, 1_710_338_135, 0x9f3d2254, 1_746_612_311),
        (30_000_000, 1_746_612_311, 0xc376cf8b, 1_764_798_551),
        (30_000_000, 1_764_798_551, 0x5167e2a6, 1_765_290_071),
        (30_000_000, 1_765_290_071, 0xcba2a1c0, 1_767_747_671),
        (30_000_000, 1_767_747_671, 0x07c9462e, 0),
        (50_000_000, 2_000_000_000, 0x07c9462e, 0),
    ];
    for &(number, time, hash, next) in cases {
        assert_eq!(
            fork_id(&config, MAINNET_GENESIS, 0, head(number, time)),
            id(hash, next),
            "head {number} time {time}"
        );
    }
}

/// EIP-2124's validation rules on mainnet without timestamp forks (cases from the EIP's
/// examples, as geth's tests list them).
#[test]
fn mainnet_fork_id_validation() {
    let config = mainnet(false);
    let check = |number: u64, remote: ForkId| {
        fork_filter(&config, MAINNET_GENESIS, 0, head(number, 0)).validate(remote)
    };
    assert_eq!(check(15_050_000, id(0xf0afd0e3, 0)), Ok(()));
    assert_eq!(check(15_050_000, id(0xf0afd0e3, u64::MAX)), Ok(()));
    assert_eq!(check(7_279_999, id(0xa00bc324, 0)), Ok(()));
    assert_eq!(check(7_279_999, id(0xa00bc324, 7_280_000)), Ok(()));
    assert_eq!(check(7_280_000, id(0xa00bc324, 7_280_000)), Ok(()));
    assert_eq!(check(7_987_396, id(0x3edd5b10, 4_370_000)), Ok(()));
    assert_eq!(check(7_279_999, id(0x668db0af, 0)), Ok(()));
    assert_eq!(check(4_369_999, id(0xa00bc324, 0)), Ok(()));
    assert!(matches!(
        check(7_987_396, id(0xa00bc324, 0)),
        Err(ValidationError::RemoteStale { .. })
    ));
    assert!(matches!(
        check(7_987_396, id(0x5cddc0e1, 0)),
        Err(ValidationError::LocalIncompatibleOrStale { .. })
    ));
    // Another chain's genesis.
    assert!(check(7_987_396, id(0xafec6b27, 0)).is_err());
}

/// The `config` section of go-ethereum v1.17.10's
/// `cmd/devp2p/internal/ethtest/testdata/genesis.json` (the eth protocol test chain).
const DEVP2P_TEST_CONFIG: &str = r#"{"chainId": 3503995874084926, "homesteadBlock": 0,
 "eip150Block": 0, "eip155Block": 0, "eip158Block": 0, "byzantiumBlock": 0,
 "constantinopleBlock": 0, "petersburgBlock": 0, "istanbulBlock": 0, "muirGlacierBlock": 0,
 "berlinBlock": 0, "londonBlock": 0, "arrowGlacierBlock": 0, "grayGlacierBlock": 0,
 "mergeNetsplitBlock": 0, "shanghaiTime": 0, "cancunTime": 60, "pragueTime": 120,
 "osakaTime": 180, "bpo1Time": 240, "bpo2Time": 300, "amsterdamTime": 360,
 "terminalTotalDifficulty": 131072,
 "depositContractAddress": "0x0000000000000000000000000000000000000000", "ethash": {},
 "blobSchedule": {
  "cancun": {"target": 3, "max": 6, "baseFeeUpdateFraction": 3338477},
  "prague": {"target": 6, "max": 9, "baseFeeUpdateFraction": 5007716},
  "bpo1": {"target": 10, "max": 15, "baseFeeUpdateFraction": 8346193},
  "bpo2": {"target": 14, "max": 21, "baseFeeUpdateFraction": 11684671}}}"#;

/// The test chain's genesis hash (timestamp 0), as geth 1.17.10 computes it
/// (`core.Genesis.ToBlock().Hash()`).
const DEVP2P_TEST_GENESIS: B256 =
    b256!("1518c33dab6ed4dbb2d0c48239ac2f00acc0e28dc43660bb745a0f127552024c");

fn devp2p_test_config() -> alloy_genesis::ChainConfig {
    serde_json::from_str(DEVP2P_TEST_CONFIG).expect("the test chain's config parses")
}

/// Fork ids of the eth protocol test chain: the expected values were printed by a
/// throwaway program calling go-ethereum v1.17.10's `forkid.NewID(config, genesis, head,
/// time)` on `cmd/devp2p/internal/ethtest/testdata/genesis.json` (Shanghai at genesis,
/// Cancun 60, Prague 120, Osaka 180, BPO1 240, BPO2 300, Amsterdam 360).
#[test]
fn devp2p_test_chain_fork_ids_match_geth() {
    let config = devp2p_test_config();
    let geth: &[(u64, u64, u32, u64)] = &[
        (0, 0, 0x4bca00f5, 60),
        (5, 59, 0x4bca00f5, 60),
        (6, 60, 0x6296ed4a, 120),
        (11, 119, 0x6296ed4a, 120),
        (12, 120, 0xc91beee6, 180),
        (18, 180, 0x321a21a2, 240),
        (24, 240, 0x209135b7, 300),
        (30, 300, 0x7f723d62, 360),
        (35, 359, 0x7f723d62, 360),
        (36, 360, 0x5942bfc2, 0),
        (599, 5990, 0x5942bfc2, 0),
        (600, 6000, 0x5942bfc2, 0),
    ];
    for &(number, time, hash, next) in geth {
        assert_eq!(
            fork_id(&config, DEVP2P_TEST_GENESIS, 0, head(number, time)),
            id(hash, next),
            "head {number} time {time}"
        );
    }
    assert_eq!(
        chain_forks(&config, 0),
        [60, 120, 180, 240, 300, 360].map(ForkFilterKey::Time).to_vec(),
        "forks at block 0 and at genesis time are the genesis rule set"
    );
}

#[test]
fn chain_forks_dedup_and_genesis_time() {
    let mut config = devp2p_test_config();
    config.homestead_block = Some(5);
    config.eip150_block = Some(5);
    config.cancun_time = Some(100);
    config.prague_time = Some(100);
    // Forks at or before the genesis time are part of the genesis rule set (EIP-6122).
    assert_eq!(
        chain_forks(&config, 100),
        vec![
            ForkFilterKey::Block(5),
            ForkFilterKey::Time(180),
            ForkFilterKey::Time(240),
            ForkFilterKey::Time(300),
            ForkFilterKey::Time(360),
        ]
    );
}

/// The test chain's `chain.rlp` from the Go module cache, when present.
fn devp2p_chain_blocks() -> Option<Vec<(Block, Vec<u8>)>> {
    let home = std::env::var_os("HOME")?;
    let path = std::path::Path::new(&home).join(
        "go/pkg/mod/github.com/ethereum/go-ethereum@v1.17.10/cmd/devp2p/internal/ethtest/testdata/chain.rlp",
    );
    let Ok(bytes) = std::fs::read(&path) else {
        println!("skipping: {} not found", path.display());
        return None;
    };
    let mut buf = &bytes[..];
    let mut blocks = Vec::new();
    while !buf.is_empty() {
        let before = buf;
        let block = Block::decode(&mut buf).expect("chain.rlp block decodes");
        blocks.push((block, before[..before.len() - buf.len()].to_vec()));
    }
    Some(blocks)
}

#[test]
fn devp2p_chain_links_to_geths_genesis_hash() {
    let Some(blocks) = devp2p_chain_blocks() else { return };
    assert_eq!(blocks[0].0.header.number, 1);
    assert_eq!(blocks[0].0.header.parent_hash, DEVP2P_TEST_GENESIS);
}

// ---------------------------------------------------------------- status

fn our_status() -> Status {
    Status {
        version: 69,
        network_id: 3_503_995_874_084_926,
        genesis: DEVP2P_TEST_GENESIS,
        fork_id: id(0x5942bfc2, 0),
        earliest_block: 0,
        latest_block: 600,
        latest_block_hash: B256::repeat_byte(1),
    }
}

/// geth 1.17.10's `rlp.EncodeToBytes(&eth.StatusPacket{...})` for the same values.
const GETH_STATUS_69: &str = "f85645870c72dd9d5e883ea01518c33dab6ed4dbb2d0c48239ac2f00acc0e28dc43660bb745a0f127552024cc6845942bfc28080820258a00101010101010101010101010101010101010101010101010101010101010101";

#[test]
fn status_matches_geths_encoding() {
    let status = our_status();
    assert_eq!(hex::encode(status.encode()), GETH_STATUS_69);
    let decoded = EthMessage::decode(69, codes::STATUS, &hex::decode(GETH_STATUS_69).unwrap());
    assert_eq!(decoded, Ok(EthMessage::Status(status)));
    let range = BlockRangeUpdate {
        earliest_block: 3,
        latest_block: 9,
        latest_block_hash: B256::repeat_byte(7),
    };
    let (code, bytes) = EthMessage::BlockRangeUpdate(range).encode(70);
    assert_eq!(code, 0x11);
    assert_eq!(EthMessage::decode(70, code, &bytes), Ok(EthMessage::BlockRangeUpdate(range)));
}

#[test]
fn status_validation() {
    let config = devp2p_test_config();
    let ours = our_status();
    let filter = fork_filter(&config, DEVP2P_TEST_GENESIS, 0, head(600, 6000));
    assert_eq!(filter.current(), ours.fork_id);
    assert_eq!(validate_status(&ours, &ours, &filter), Ok(()));

    // A peer still syncing (at Prague, aware of what follows) is fine.
    let syncing = Status { fork_id: id(0xc91beee6, 180), latest_block: 12, ..ours };
    assert_eq!(validate_status(&ours, &syncing, &filter), Ok(()));

    let cases = [
        Status { version: 70, ..ours },
        Status { network_id: 1, ..ours },
        Status { genesis: MAINNET_GENESIS, ..ours },
        Status { fork_id: id(0xdeadbeef, 0), ..ours },
        // At Prague but unaware of Osaka: needs a software update.
        Status { fork_id: id(0xc91beee6, 0), ..ours },
        Status { earliest_block: 601, ..ours },
        Status { latest_block_hash: B256::ZERO, ..ours },
    ];
    let errors: Vec<_> = cases.iter().map(|s| validate_status(&ours, s, &filter)).collect();
    assert!(matches!(errors[0], Err(StatusError::VersionMismatch { ours: 69, theirs: 70 })));
    assert!(matches!(errors[1], Err(StatusError::NetworkIdMismatch { .. })));
    assert!(matches!(errors[2], Err(StatusError::GenesisMismatch { .. })));
    assert!(matches!(
        errors[3],
        Err(StatusError::ForkId(ValidationError::LocalIncompatibleOrStale { .. }))
    ));
    assert!(matches!(errors[4], Err(StatusError::ForkId(ValidationError::RemoteStale { .. }))));
    assert!(matches!(
        errors[5],
        Err(StatusError::BlockRange(BlockRangeError::EarliestAfterLatest { .. }))
    ));
    assert!(matches!(errors[6], Err(StatusError::BlockRange(BlockRangeError::ZeroLatestHash))));
}

/// The eth test suite's BlockRangeUpdate cases: invalid (earliest > latest) disconnects;
/// future and expired-history ranges are accepted.
#[test]
fn block_range_validation() {
    let hash = B256::repeat_byte(9);
    let range = |earliest, latest| BlockRangeUpdate {
        earliest_block: earliest,
        latest_block: latest,
        latest_block_hash: hash,
    };
    assert_eq!(
        validate_block_range(&range(10, 8)),
        Err(BlockRangeError::EarliestAfterLatest { earliest: 10, latest: 8 })
    );
    assert_eq!(validate_block_range(&range(610, 650)), Ok(()));
    assert_eq!(validate_block_range(&range(590, 600)), Ok(()));
    assert_eq!(validate_block_range(&range(5, 5)), Ok(()));
}

// ---------------------------------------------------------------- receipts

/// geth 1.17.10's eth/69 encoding (`eth.NewReceiptList`) of five receipts: legacy success
/// with a log, failed EIP-1559, EIP-4844 with a log, EIP-7702, and a pre-Byzantium legacy
/// receipt with post-state 0x…03.
const GETH_RECEIPTS_69: &str = "f8bff8438001825208f83cf83a9400000000000000000000000000000000000000aae1a0000000000000000000000000000000000000000000000000000000000000000282deadc6028082c350c0f844030183013880f83cf83a9400000000000000000000000000000000000000aae1a0000000000000000000000000000000000000000000000000000000000000000282deadc70401830186a0c0e480a0000000000000000000000000000000000000000000000000000000000000000307c0";

/// The same receipts' consensus (EIP-2718) encodings, with bloom, from geth's
/// `types.Receipt.MarshalBinary`.
const GETH_RECEIPTS_CONSENSUS: [&str; 2] = [
    "f9014501825208b9010004000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000002000000000000000000000000000000000000000000000000000000000000000000000000000400000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000100000008000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000008000000000000000000000f83cf83a9400000000000000000000000000000000000000aae1a0000000000000000000000000000000000000000000000000000000000000000282dead",
    "03f901460183013880b9010004000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000002000000000000000000000000000000000000000000000000000000000000000000000000000400000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000100000008000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000008000000000000000000000f83cf83a9400000000000000000000000000000000000000aae1a0000000000000000000000000000000000000000000000000000000000000000282dead",
];

fn geth_receipts() -> Vec<ReceiptEnvelope> {
    let bytes = hex::decode(GETH_RECEIPTS_69).unwrap();
    let mut buf = &bytes[..];
    let mut budget = super::wire::Budget::new(usize::MAX);
    let list = super::receipts::decode_receipt_list(&mut buf, &mut budget).unwrap();
    assert!(buf.is_empty());
    list
}

#[test]
fn receipts_69_match_geth() {
    let receipts = geth_receipts();
    assert_eq!(receipts.len(), 5);
    let types: Vec<u8> = receipts.iter().map(|r| r.tx_type() as u8).collect();
    assert_eq!(types, [0, 2, 3, 4, 0]);
    assert!(receipts[0].status() && !receipts[1].status());
    assert_eq!(
        receipts[4].as_receipt().unwrap().status,
        Eip658Value::PostState(B256::with_last_byte(3))
    );
    // The recomputed blooms give geth's consensus encodings.
    assert_eq!(hex::encode(receipts[0].encoded_2718()), GETH_RECEIPTS_CONSENSUS[0]);
    assert_eq!(hex::encode(receipts[2].encoded_2718()), GETH_RECEIPTS_CONSENSUS[1]);
    // And back to geth's eth/69 bytes.
    assert_eq!(hex::encode(super::receipts::encode_receipts_69(&receipts)), GETH_RECEIPTS_69);
    let mut one = Vec::new();
    encode_receipt_69(&receipts[1], &mut one);
    assert_eq!(one.len(), receipt_69_length(&receipts[1]));
    assert_eq!(decode_receipt_69(&mut &one[..]), Ok(receipts[1].clone()));
}

#[test]
fn the_store_keeps_receipts_in_geths_eth69_layout() {
    // The receipts table holds a block's receipts as eth/69 sends them, so geth's bytes
    // are the stored bytes, and they read back with geth's blooms.
    let bytes = hex::decode(GETH_RECEIPTS_69).unwrap();
    let receipts = geth_receipts();
    assert_eq!(ethrex_storage::receipts::encode(&receipts), bytes);
    let stored = ethrex_storage::receipts::decode(&bytes).unwrap();
    assert_eq!(stored, receipts);
    assert_eq!(hex::encode(stored[0].encoded_2718()), GETH_RECEIPTS_CONSENSUS[0]);
    assert_eq!(hex::encode(stored[2].encoded_2718()), GETH_RECEIPTS_CONSENSUS[1]);
}

#[test]
fn receipts_messages_per_version() {
    let receipts = geth_receipts();
    // eth/70 `Receipts` from geth (`ReceiptsPacket70{RequestId: 7, LastBlockIncomplete:
    // true}` with the list above).
    let geth70 = format!("f8c50701f8c1{GETH_RECEIPTS_69}");
    let message = EthMessage::Receipts(Receipts {
        request_id: 7,
        last_block_incomplete: true,
        receipts: vec![receipts.clone()],
    });
    assert_eq!(hex::encode(message.encode(70).1), geth70);
    assert_eq!(EthMessage::decode(70, 0x10, &hex::decode(&geth70).unwrap()), Ok(message));
    // On eth/69 the flag is absent; eth/70 bytes do not decode as eth/69.
    let message69 = EthMessage::Receipts(Receipts {
        request_id: 7,
        last_block_incomplete: false,
        receipts: vec![receipts, vec![]],
    });
    let (code, bytes) = message69.encode(69);
    assert_eq!(EthMessage::decode(69, code, &bytes), Ok(message69));
    assert!(EthMessage::decode(69, 0x10, &hex::decode(&geth70).unwrap()).is_err());

    // eth/70 `GetReceipts` from geth (`GetReceiptsPacket70{RequestId: 9,
    // FirstBlockReceiptIndex: 3, [0x…05]}`).
    let geth_get = "e40903e1a00000000000000000000000000000000000000000000000000000000000000005";
    let get = EthMessage::GetReceipts(GetReceipts {
        request_id: 9,
        first_block_receipt_index: 3,
        hashes: vec![B256::with_last_byte(5)],
    });
    assert_eq!(hex::encode(get.encode(70).1), geth_get);
    assert_eq!(EthMessage::decode(71, 0x0f, &hex::decode(geth_get).unwrap()), Ok(get));
    let get69 = EthMessage::GetReceipts(GetReceipts {
        request_id: 9,
        first_block_receipt_index: 0,
        hashes: vec![B256::with_last_byte(5)],
    });
    let (_, bytes) = get69.encode(69);
    assert_eq!(
        hex::encode(&bytes),
        "e309e1a00000000000000000000000000000000000000000000000000000000000000005"
    );
    assert_eq!(EthMessage::decode(69, 0x0f, &bytes), Ok(get69));
}

#[test]
fn receipt_round_trips_all_types() {
    let log = Log::new_unchecked(
        Address::repeat_byte(0x11),
        vec![B256::repeat_byte(1), B256::repeat_byte(2)],
        Bytes::from_static(&[1, 2, 3]),
    );
    for ty in 0u8..=4 {
        for status in [Eip658Value::Eip658(true), Eip658Value::Eip658(false)] {
            let receipt = ConsensusReceipt {
                status,
                cumulative_gas_used: 1_000_000 + ty as u64,
                logs: vec![log.clone(); ty as usize],
            };
            let envelope =
                ReceiptEnvelope::from_typed(ty.try_into().unwrap(), receipt.clone().with_bloom());
            let mut wire = Vec::new();
            encode_receipt_69(&envelope, &mut wire);
            assert_eq!(decode_receipt_69(&mut &wire[..]), Ok(envelope));
        }
    }
    // An unknown type is rejected.
    let mut wire = Vec::new();
    alloy_rlp::Header { list: true, payload_length: 4 }.encode(&mut wire);
    wire.extend_from_slice(&[0x05, 0x01, 0x80, 0xc0]);
    assert!(decode_receipt_69(&mut &wire[..]).is_err());
}

// ---------------------------------------------------------------- other messages

#[test]
fn get_block_headers_matches_geth() {
    // geth: GetBlockHeadersPacket{RequestId: 3, {Origin: 100, Amount: 5, Skip: 2,
    // Reverse: true}}.
    let geth = hex::decode("c603c464050201").unwrap();
    let message = EthMessage::GetBlockHeaders(GetBlockHeaders {
        request_id: 3,
        origin: HashOrNumber::Number(100),
        amount: 5,
        skip: 2,
        reverse: true,
    });
    assert_eq!(message.encode(69).1, geth);
    assert_eq!(EthMessage::decode(69, 0x03, &geth), Ok(message));
    let by_hash = EthMessage::GetBlockHeaders(GetBlockHeaders {
        request_id: 0,
        origin: HashOrNumber::Hash(B256::repeat_byte(0xab)),
        amount: 1024,
        skip: u64::MAX,
        reverse: false,
    });
    let (code, bytes) = by_hash.encode(71);
    assert_eq!(EthMessage::decode(71, code, &bytes), Ok(by_hash));
}

#[test]
fn block_access_lists_unavailable_vs_empty() {
    // geth: BlockAccessListPacket{RequestId: 1, [0x80, 0xc0]}.
    let geth = hex::decode("c401c280c0").unwrap();
    let message = EthMessage::BlockAccessLists(BlockAccessLists {
        request_id: 1,
        access_lists: vec![None, Some(vec![])],
    });
    assert_eq!(message.encode(71).1, geth);
    assert_eq!(EthMessage::decode(71, 0x13, &geth), Ok(message));
    // Only on eth/71.
    for version in [69, 70] {
        assert!(matches!(
            EthMessage::decode(version, 0x13, &geth),
            Err(EthError::NotInVersion { .. })
        ));
        assert!(matches!(
            EthMessage::decode(version, 0x12, &hex::decode("c301c0").unwrap()),
            Err(EthError::NotInVersion { .. })
        ));
    }
    // Any other string entry is invalid.
    assert!(EthMessage::decode(71, 0x13, &hex::decode("c30101c1").unwrap()).is_err());
    let get = EthMessage::GetBlockAccessLists(GetBlockAccessLists {
        request_id: 5,
        hashes: vec![B256::repeat_byte(3); 3],
    });
    let (code, bytes) = get.encode(71);
    assert_eq!(code, 0x12);
    assert_eq!(EthMessage::decode(71, code, &bytes), Ok(get));
}

/// Block access lists from the EEST Amsterdam fixtures' shape: a non-empty BAL round trips
/// and keeps its hash.
#[test]
fn block_access_list_round_trip() {
    use alloy_eips::eip7928::{AccountChanges, BalanceChange, SlotChanges, StorageChange};
    let bal = vec![AccountChanges {
        address: Address::repeat_byte(0x42),
        storage_changes: vec![SlotChanges {
            slot: alloy_primitives::U256::from(1),
            changes: vec![StorageChange {
                block_access_index: alloy_eips::eip7928::BlockAccessIndex(1),
                new_value: alloy_primitives::U256::from(7),
            }],
        }],
        storage_reads: vec![alloy_primitives::U256::from(9)],
        balance_changes: vec![BalanceChange {
            block_access_index: alloy_eips::eip7928::BlockAccessIndex(1),
            post_balance: alloy_primitives::U256::from(100),
        }],
        nonce_changes: vec![],
        code_changes: vec![],
    }];
    let message = EthMessage::BlockAccessLists(BlockAccessLists {
        request_id: 2,
        access_lists: vec![Some(bal.clone()), None, Some(vec![])],
    });
    let (code, bytes) = message.encode(71);
    assert_eq!(EthMessage::decode(71, code, &bytes), Ok(message));
}

/// The capability's message-id space, as geth's `protocolLengths` (18 on eth/69 and 70, 20
/// on eth/71).
#[test]
fn message_id_spaces() {
    assert_eq!(message_id_space(69), 18);
    assert_eq!(message_id_space(70), 18);
    assert_eq!(message_id_space(71), 20);
}

#[test]
fn removed_and_unknown_messages() {
    for version in [69, 70, 71] {
        for code in [codes::NEW_BLOCK_HASHES, codes::NEW_BLOCK] {
            assert!(matches!(
                EthMessage::decode(version, code, &[0xc0]),
                Err(EthError::NotInVersion { .. })
            ));
        }
        for code in [0x0b, 0x0c, 0x0d, 0x0e, 0x14, 0x15, u64::MAX] {
            assert_eq!(
                EthMessage::decode(version, code, &[0xc0]),
                Err(EthError::UnknownMessage { code })
            );
        }
    }
    assert_eq!(EthMessage::decode(68, 0, &[0xc0]), Err(EthError::UnsupportedVersion(68)));
    assert_eq!(EthMessage::decode(72, 0, &[0xc0]), Err(EthError::UnsupportedVersion(72)));
}

#[test]
fn transaction_messages_stay_raw() {
    let raw = vec![
        Bytes::from(hex::decode("c3010203").unwrap()),
        Bytes::from(hex::decode("8402c10101").unwrap()),
    ];
    let txs = EthMessage::Transactions(Transactions { transactions: raw.clone() });
    let (code, bytes) = txs.encode(69);
    assert_eq!(code, 0x02);
    assert_eq!(hex::encode(&bytes), "c9c30102038402c10101");
    assert_eq!(EthMessage::decode(69, code, &bytes), Ok(txs));
    let pooled =
        EthMessage::PooledTransactions(PooledTransactions { request_id: 4, transactions: raw });
    let (code, bytes) = pooled.encode(70);
    assert_eq!(EthMessage::decode(70, code, &bytes), Ok(pooled));
    let announce = EthMessage::NewPooledTransactionHashes(NewPooledTransactionHashes {
        types: Bytes::from_static(&[0, 2]),
        sizes: vec![100, 200],
        hashes: vec![B256::repeat_byte(1), B256::repeat_byte(2)],
    });
    let (code, bytes) = announce.encode(71);
    assert_eq!(EthMessage::decode(71, code, &bytes), Ok(announce));
    // Mismatched lengths are rejected.
    let bad = EthMessage::NewPooledTransactionHashes(NewPooledTransactionHashes {
        types: Bytes::from_static(&[0]),
        sizes: vec![100, 200],
        hashes: vec![B256::repeat_byte(1), B256::repeat_byte(2)],
    });
    let (code, bytes) = bad.encode(71);
    assert!(EthMessage::decode(71, code, &bytes).is_err());
    let get = EthMessage::GetPooledTransactions(GetPooledTransactions {
        request_id: 1,
        hashes: vec![B256::ZERO],
    });
    let (code, bytes) = get.encode(69);
    assert_eq!(EthMessage::decode(69, code, &bytes), Ok(get));
}

/// Bodies and headers of the real test chain (600 blocks made by geth, Amsterdam from
/// block 36): a body's encoding is the block's RLP minus the header (typed transactions
/// as byte strings, withdrawals, no access list), and the messages round trip.
#[test]
fn devp2p_chain_bodies_and_headers_round_trip() {
    let Some(blocks) = devp2p_chain_blocks() else { return };
    assert_eq!(blocks.len(), 600);
    let mut typed = 0;
    for (block, raw) in &blocks {
        let body = BlockBody {
            transactions: block.body.transactions.clone(),
            ommers: block.body.ommers.clone(),
            withdrawals: block.body.withdrawals.clone(),
        };
        typed += body.transactions.iter().filter(|t| !t.is_legacy()).count();
        // raw = list header || header || body fields; the body is the same fields in a list.
        let mut block_fields = &raw[..];
        let header = alloy_rlp::Header::decode(&mut block_fields).unwrap();
        assert!(header.list);
        let header_len = block.header.length();
        let body_fields = &block_fields[header_len..];
        let mut expected = Vec::new();
        alloy_rlp::Header { list: true, payload_length: body_fields.len() }.encode(&mut expected);
        expected.extend_from_slice(body_fields);
        assert_eq!(alloy_rlp::encode(&body), expected, "block {}", block.header.number);
    }
    assert!(typed > 0, "the chain has typed transactions");

    for chunk in blocks.chunks(100) {
        let bodies = chunk.iter().map(|(b, _)| b.body.clone()).collect::<Vec<_>>();
        let message = EthMessage::BlockBodies(BlockBodies { request_id: 11, bodies });
        let (code, bytes) = message.encode(71);
        assert_eq!(EthMessage::decode(71, code, &bytes), Ok(message));
    }
    let headers: Vec<Header> = blocks.iter().map(|(b, _)| b.header.clone()).collect();
    let message = EthMessage::BlockHeaders(BlockHeaders { request_id: 1, headers });
    let (code, bytes) = message.encode(69);
    assert_eq!(EthMessage::decode(69, code, &bytes), Ok(message));
}

// ---------------------------------------------------------------- serving

fn chain(n: u64) -> Vec<Header> {
    let mut headers: Vec<Header> = Vec::new();
    for number in 0..n {
        let parent_hash = headers.last().map(|h| h.hash_slow()).unwrap_or_default();
        headers.push(Header { number, parent_hash, gas_limit: 30_000_000, ..Default::default() });
    }
    headers
}

fn resolve(
    headers: &[Header],
    origin: HashOrNumber,
    amount: u64,
    skip: u64,
    reverse: bool,
) -> Vec<u64> {
    resolve_header_request(
        origin,
        amount,
        skip,
        reverse,
        |hash| headers.iter().find(|h| h.hash_slow() == hash).cloned(),
        |number| headers.get(usize::try_from(number).ok()?).cloned(),
    )
    .iter()
    .map(|h| h.number)
    .collect()
}

#[test]
fn header_request_resolution() {
    let headers = chain(50);
    let n = HashOrNumber::Number;
    assert_eq!(resolve(&headers, n(10), 3, 0, false), [10, 11, 12]);
    assert_eq!(resolve(&headers, n(10), 3, 2, false), [10, 13, 16]);
    assert_eq!(resolve(&headers, n(10), 3, 4, true), [10, 5, 0]);
    assert_eq!(resolve(&headers, n(10), 5, 4, true), [10, 5, 0]);
    assert_eq!(resolve(&headers, n(48), 5, 0, false), [48, 49], "stops at the first missing");
    assert_eq!(resolve(&headers, n(60), 5, 0, false), Vec::<u64>::new());
    assert_eq!(resolve(&headers, n(10), 0, 0, false), Vec::<u64>::new());
    // Adversarial skips and origins never overflow.
    assert_eq!(resolve(&headers, n(10), 5, u64::MAX, false), [10]);
    assert_eq!(resolve(&headers, n(10), 5, u64::MAX, true), [10]);
    assert_eq!(resolve(&headers, n(10), 5, u64::MAX - 1, false), [10]);
    assert_eq!(resolve(&headers, n(u64::MAX), u64::MAX, 0, false), Vec::<u64>::new());
    let big = chain(1500);
    assert_eq!(resolve(&big, n(0), u64::MAX, 0, false).len(), MAX_REQUEST_ITEMS);
    // By hash: forward on the canonical chain, reverse by parents.
    let h = |i: usize| HashOrNumber::Hash(headers[i].hash_slow());
    assert_eq!(resolve(&headers, h(20), 3, 1, false), [20, 22, 24]);
    assert_eq!(resolve(&headers, h(2), 5, 0, true), [2, 1, 0]);
    assert_eq!(resolve(&headers, h(20), 2, 9, true), [20, 10]);
    assert_eq!(resolve(&headers, HashOrNumber::Hash(B256::ZERO), 2, 0, true), Vec::<u64>::new());
    // A side-chain origin, going forward, gives only itself.
    let side =
        Header { number: 30, extra_data: Bytes::from_static(b"side"), ..headers[30].clone() };
    let side_hash = side.hash_slow();
    let got = resolve_header_request(
        HashOrNumber::Hash(side_hash),
        5,
        0,
        false,
        |hash| (hash == side_hash).then(|| side.clone()),
        |number| headers.get(number as usize).cloned(),
    );
    assert_eq!(got, vec![side]);
}

#[test]
fn fill_response_limits() {
    let small = fill_response(0..5000u32, |_| 10);
    assert_eq!(small.len(), MAX_REQUEST_ITEMS);
    // The item that crosses the soft limit is kept, the rest dropped.
    let big = fill_response(0..100u32, |_| 1024 * 1024);
    assert_eq!(big, [0, 1]);
    let stop_at_missing =
        fill_response([Some(1), Some(2), None, Some(4)].into_iter().map_while(|x| x), |_| 1);
    assert_eq!(stop_at_missing, [1, 2]);
    let skip_missing = fill_response([Some(1), None, Some(3)].into_iter().flatten(), |_| 1);
    assert_eq!(skip_missing, [1, 3]);
}

// ---------------------------------------------------------------- robustness

#[test]
fn request_list_limits() {
    let at_limit = EthMessage::GetBlockBodies(GetBlockBodies {
        request_id: 1,
        hashes: vec![B256::ZERO; MAX_REQUEST_ITEMS],
    });
    let (code, bytes) = at_limit.encode(69);
    assert!(EthMessage::decode(69, code, &bytes).is_ok());
    for message in [
        EthMessage::GetBlockBodies(GetBlockBodies {
            request_id: 1,
            hashes: vec![B256::ZERO; MAX_REQUEST_ITEMS + 1],
        }),
        EthMessage::GetReceipts(GetReceipts {
            request_id: 1,
            first_block_receipt_index: 0,
            hashes: vec![B256::ZERO; MAX_REQUEST_ITEMS + 1],
        }),
        EthMessage::GetBlockAccessLists(GetBlockAccessLists {
            request_id: 1,
            hashes: vec![B256::ZERO; MAX_REQUEST_ITEMS + 1],
        }),
        // Pooled transactions are asked for by announcement: up to one's worth.
        EthMessage::GetPooledTransactions(GetPooledTransactions {
            request_id: 1,
            hashes: vec![B256::ZERO; MAX_ANNOUNCED_HASHES + 1],
        }),
        EthMessage::BlockAccessLists(BlockAccessLists {
            request_id: 1,
            access_lists: vec![None; MAX_RESPONSE_ITEMS + 1],
        }),
    ] {
        let (code, bytes) = message.encode(71);
        assert!(matches!(EthMessage::decode(71, code, &bytes), Err(EthError::TooManyItems { .. })));
    }
    // Too many receipts in total.
    let receipt = ReceiptEnvelope::Legacy(
        ConsensusReceipt {
            status: Eip658Value::Eip658(true),
            cumulative_gas_used: 1,
            logs: vec![],
        }
        .with_bloom(),
    );
    let per_block = MAX_RECEIPTS_PER_MESSAGE / 64 + 1;
    let message = EthMessage::Receipts(Receipts {
        request_id: 1,
        last_block_incomplete: false,
        receipts: vec![vec![receipt; per_block]; 64],
    });
    let (code, bytes) = message.encode(70);
    assert_eq!(
        EthMessage::decode(70, code, &bytes),
        Err(EthError::TooManyItems { max: MAX_RECEIPTS_PER_MESSAGE })
    );
    // Oversized payloads are rejected before decoding.
    let huge = vec![0u8; MAX_MESSAGE_SIZE + 1];
    assert_eq!(
        EthMessage::decode(69, codes::GET_BLOCK_HEADERS, &huge),
        Err(EthError::MessageTooLarge(MAX_MESSAGE_SIZE + 1))
    );
    // Trailing bytes after the message.
    let (code, mut bytes) = EthMessage::BlockRangeUpdate(BlockRangeUpdate {
        earliest_block: 1,
        latest_block: 2,
        latest_block_hash: B256::repeat_byte(1),
    })
    .encode(69);
    bytes.push(0x80);
    assert!(EthMessage::decode(69, code, &bytes).is_err());
}

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn sample_messages() -> Vec<(u32, Vec<u8>)> {
    let mut samples: Vec<(u32, EthMessage)> = vec![
        (69, EthMessage::Status(our_status())),
        (
            71,
            EthMessage::GetBlockHeaders(GetBlockHeaders {
                request_id: 1,
                origin: HashOrNumber::Hash(B256::repeat_byte(5)),
                amount: 3,
                skip: 1,
                reverse: false,
            }),
        ),
        (
            70,
            EthMessage::Receipts(Receipts {
                request_id: 1,
                last_block_incomplete: true,
                receipts: vec![geth_receipts()],
            }),
        ),
        (
            71,
            EthMessage::BlockAccessLists(BlockAccessLists {
                request_id: 1,
                access_lists: vec![None, Some(vec![])],
            }),
        ),
    ];
    if let Some(blocks) = devp2p_chain_blocks() {
        let (block, _) = &blocks[40];
        samples.push((
            71,
            EthMessage::BlockBodies(BlockBodies {
                request_id: 1,
                bodies: vec![block.body.clone()],
            }),
        ));
        samples.push((
            69,
            EthMessage::BlockHeaders(BlockHeaders {
                request_id: 1,
                headers: vec![block.header.clone()],
            }),
        ));
    }
    samples.into_iter().map(|(v, m)| (v, m.encode(v).1)).collect()
}

/// Random bytes, truncations and byte flips of valid messages, fed to every decoder on
/// every version: errors are fine, panics are not.
#[test]
fn decoders_never_panic_on_garbage() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let all_codes: Vec<u64> = (0..=0x14).collect();
    let decode_all = |bytes: &[u8]| {
        for version in [69, 70, 71] {
            for &code in &all_codes {
                let _ = EthMessage::decode(version, code, bytes);
            }
        }
        let _ = decode_receipt_69(&mut &bytes[..]);
    };
    for _ in 0..3000 {
        let len = rng.below(120);
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        // Bias towards list/string headers so decoding gets past the first byte.
        if !bytes.is_empty() && rng.below(2) == 0 {
            bytes[0] = 0xc0 + (len.saturating_sub(1).min(55)) as u8;
        }
        decode_all(&bytes);
    }
    for (_, valid) in sample_messages() {
        for cut in 0..valid.len().min(400) {
            decode_all(&valid[..cut]);
        }
        for _ in 0..300 {
            let mut mutated = valid.clone();
            let at = rng.below(mutated.len());
            mutated[at] = rng.next() as u8;
            decode_all(&mutated);
        }
    }
    // Headers claiming huge lengths.
    for bytes in [
        vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
        vec![0xfb, 0xff, 0xff, 0xff, 0xff],
        vec![0xbf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
        vec![0xc2, 0xc1],
    ] {
        decode_all(&bytes);
    }
}
