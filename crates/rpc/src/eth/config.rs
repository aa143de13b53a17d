//! `eth_config` (EIP-7910): the fork the chain is in at the head, the next one scheduled
//! and the last one scheduled, each with its activation time, blob schedule, chain id,
//! fork id (EIP-2124), precompiles and system contracts by their EIP-7910 names.
//!
//! Only timestamp-scheduled forks (Shanghai on) are described, as the EIP says. The
//! Amsterdam system contracts of glamsterdam-devnet-8 have no EIP-7910 names yet and are
//! not listed.

use crate::error::{EthApiError, EthResult};
use crate::handler::EthRpc;
use alloy_eips::eip2124::Head;
use alloy_primitives::{address, Address};
use ethrex_common::{ChainConfig, Fork};
use jsonrpsee::proc_macros::rpc;
use serde_json::{json, Map, Value};

/// The `eth_config` method.
#[rpc(server, namespace = "eth")]
pub trait EthConfigApi {
    /// `eth_config`: `{current, next, last}` fork configurations.
    #[method(name = "config", blocking)]
    fn config(&self) -> EthResult<Value>;
}

/// The precompiles and the fork that introduced each.
const PRECOMPILES: [(&str, u16, Fork); 18] = [
    ("ECREC", 0x01, Fork::Frontier),
    ("SHA256", 0x02, Fork::Frontier),
    ("RIPEMD160", 0x03, Fork::Frontier),
    ("ID", 0x04, Fork::Frontier),
    ("MODEXP", 0x05, Fork::Byzantium),
    ("BN254_ADD", 0x06, Fork::Byzantium),
    ("BN254_MUL", 0x07, Fork::Byzantium),
    ("BN254_PAIRING", 0x08, Fork::Byzantium),
    ("BLAKE2F", 0x09, Fork::Istanbul),
    ("KZG_POINT_EVALUATION", 0x0a, Fork::Cancun),
    ("BLS12_G1ADD", 0x0b, Fork::Prague),
    ("BLS12_G1MSM", 0x0c, Fork::Prague),
    ("BLS12_G2ADD", 0x0d, Fork::Prague),
    ("BLS12_G2MSM", 0x0e, Fork::Prague),
    ("BLS12_PAIRING_CHECK", 0x0f, Fork::Prague),
    ("BLS12_MAP_FP_TO_G1", 0x10, Fork::Prague),
    ("BLS12_MAP_FP2_TO_G2", 0x11, Fork::Prague),
    ("P256VERIFY", 0x100, Fork::Osaka),
];

/// The system contracts and the fork that introduced each (the deposit contract comes
/// from the chain configuration).
const SYSTEM_CONTRACTS: [(&str, Address, Fork); 4] = [
    ("BEACON_ROOTS_ADDRESS", address!("0x000F3df6D732807Ef1319fB7B8bB8522d0Beac02"), Fork::Cancun),
    (
        "CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS",
        address!("0x0000BBdDc7CE488642fb579F8B00f3a590007251"),
        Fork::Prague,
    ),
    (
        "HISTORY_STORAGE_ADDRESS",
        address!("0x0000F90827F1C53a10cb7A02335B175320002935"),
        Fork::Prague,
    ),
    (
        "WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS",
        address!("0x00000961Ef480Eb55e80D19ad83579A64c007002"),
        Fork::Prague,
    ),
];

/// The timestamp-scheduled forks of `config`, in order, with their activation times.
fn scheduled(config: &ChainConfig) -> Vec<u64> {
    let c = &config.inner;
    let mut times: Vec<u64> = [
        c.shanghai_time,
        c.cancun_time,
        c.prague_time,
        c.osaka_time,
        c.bpo1_time,
        c.bpo2_time,
        c.bpo3_time,
        c.bpo4_time,
        c.bpo5_time,
        c.amsterdam_time,
    ]
    .into_iter()
    .flatten()
    .collect();
    times.sort_unstable();
    times.dedup();
    times
}

impl EthRpc {
    /// The configuration in force from `time` on.
    fn fork_config(&self, time: u64, genesis: (alloy_primitives::B256, u64), number: u64) -> Value {
        let config = &self.node().chain.config;
        let fork = config.pos_fork_at(time);
        let blob = config.blob_params_at(time).map(|p| {
            json!({"target": p.target_blob_count, "max": p.max_blob_count,
                   "baseFeeUpdateFraction": p.update_fraction as u64})
        });
        let fork_id = ethrex_net::eth::fork_id(
            &config.inner,
            genesis.0,
            genesis.1,
            Head { number, timestamp: time, ..Default::default() },
        );
        let precompiles: Map<String, Value> = PRECOMPILES
            .iter()
            .filter(|(_, _, since)| fork >= *since)
            .map(|(name, at, _)| (name.to_string(), json!(precompile_address(*at))))
            .collect();
        let mut contracts: Map<String, Value> = SYSTEM_CONTRACTS
            .iter()
            .filter(|(_, _, since)| fork >= *since)
            .map(|(name, at, _)| (name.to_string(), json!(at)))
            .collect();
        if fork >= Fork::Prague {
            let deposit = config.inner.deposit_contract_address.unwrap_or_default();
            contracts.insert("DEPOSIT_CONTRACT_ADDRESS".into(), json!(deposit));
        }
        let mut out = Map::new();
        out.insert("activationTime".into(), json!(time));
        out.insert("blobSchedule".into(), blob.unwrap_or(Value::Null));
        out.insert("chainId".into(), json!(format!("{:#x}", config.chain_id())));
        out.insert(
            "forkId".into(),
            json!(format!("0x{}", alloy_primitives::hex::encode(fork_id.hash.0))),
        );
        out.insert("precompiles".into(), Value::Object(sorted(precompiles)));
        out.insert("systemContracts".into(), Value::Object(sorted(contracts)));
        Value::Object(out)
    }
}

/// The address of precompile number `n`.
fn precompile_address(n: u16) -> Address {
    let mut bytes = [0u8; 20];
    bytes[18..].copy_from_slice(&n.to_be_bytes());
    Address::from(bytes)
}

fn sorted(map: Map<String, Value>) -> Map<String, Value> {
    let mut entries: Vec<(String, Value)> = map.into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries.into_iter().collect()
}

impl EthConfigApiServer for EthRpc {
    fn config(&self) -> EthResult<Value> {
        let store = &self.node().chain.store;
        let head = store.head_header()?.ok_or(EthApiError::HeaderNotFound)?;
        let genesis_hash = store.genesis_hash()?.ok_or(EthApiError::HeaderNotFound)?;
        let genesis = store.header(&genesis_hash)?.ok_or(EthApiError::HeaderNotFound)?;
        let times = scheduled(&self.node().chain.config);
        let current = times.iter().rev().find(|t| **t <= head.timestamp).copied();
        let next = times.iter().find(|t| **t > head.timestamp).copied();
        let last = times.last().copied().filter(|t| *t > head.timestamp);
        let describe = |t: Option<u64>| {
            t.map_or(Value::Null, |t| {
                self.fork_config(t, (genesis_hash, genesis.timestamp), head.number)
            })
        };
        let current = current.ok_or_else(|| {
            EthApiError::Unsupported(
                "eth_config describes timestamp-scheduled forks; the chain is before Shanghai"
                    .into(),
            )
        })?;
        Ok(
            json!({"current": describe(Some(current)), "next": describe(next), "last": describe(last)}),
        )
    }
}
