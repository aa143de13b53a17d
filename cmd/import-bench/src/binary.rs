//! `--state-scheme binary`: every mode's database also keeps an EIP-7864 binary trie
//! (`ethrex-bintrie`, nodes in the `extension` table of the same database), updated
//! after each block from the changes execution produced, beside the MPT, whose root is
//! still computed and checked against every header (the headers carry MPT roots).
//! `--reads trie`: execution reads the parent's accounts and storage through that trie
//! instead of the flat tables (`ethrex_vm::StateSource`).

use alloy_primitives::{B256, U256};
use anyhow::{bail, Context};
use ethrex_bintrie::kv::KvNodeStore;
use ethrex_bintrie::{BinaryTrie, NodeStore, GROUP_DEPTHS};
use ethrex_blockchain::StateChanges;
use ethrex_common::KECCAK_EMPTY;
use ethrex_storage::{KvBackend, Store};
use ethrex_vm::{StateSource, StoreDbError};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Which state commitments each mode keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StateScheme {
    /// The MPT alone: the client as it is.
    #[default]
    Mpt,
    /// The MPT (checked against every header) and an EIP-7864 binary trie stored in
    /// groups of `group_depth` levels.
    Binary {
        /// Binary levels per stored node, 1..=8.
        group_depth: u8,
    },
}

/// geth's default group depth.
pub const DEFAULT_GROUP_DEPTH: u8 = 5;

impl StateScheme {
    /// The scheme named by `--state-scheme` with `--group-depth`: a depth needs `binary`
    /// and must be in 1..=8 (`binary` alone: [`DEFAULT_GROUP_DEPTH`]).
    pub fn parse(scheme: &str, group_depth: Option<u8>) -> anyhow::Result<Self> {
        match (scheme, group_depth) {
            ("mpt", None) => Ok(StateScheme::Mpt),
            ("mpt", Some(_)) => {
                bail!("--group-depth applies to the binary trie: give --state-scheme binary")
            }
            ("binary", depth) => {
                let group_depth = depth.unwrap_or(DEFAULT_GROUP_DEPTH);
                if !GROUP_DEPTHS.contains(&group_depth) {
                    bail!("--group-depth must be 1..=8, got {group_depth}");
                }
                Ok(StateScheme::Binary { group_depth })
            }
            (other, _) => bail!("unknown state scheme '{other}' (expected mpt or binary)"),
        }
    }

    /// The binary trie's group depth, if it keeps one.
    pub fn group_depth(self) -> Option<u8> {
        match self {
            StateScheme::Mpt => None,
            StateScheme::Binary { group_depth } => Some(group_depth),
        }
    }
}

/// Where execution reads the parent's accounts and storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reads {
    /// The store's flat tables (the client as it is).
    #[default]
    Flat,
    /// The binary trie of the parent state (`--state-scheme binary` only). Code still
    /// comes from the code table.
    Trie,
}

impl std::str::FromStr for Reads {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "flat" => Ok(Reads::Flat),
            "trie" => Ok(Reads::Trie),
            other => Err(format!("unknown --reads '{other}' (expected flat or trie)")),
        }
    }
}

pub use ethrex_bintrie::kv::dump_state as dump;

/// Where the genesis database records its binary trie: depth byte, then root. Node keys
/// are at most 32 bytes (31 bytes of stem path and its length), so this longer key
/// cannot be a node's.
const GENESIS_ROOT_KEY: &[u8] = b"ethrex-import-bench:genesis-binary-root";

/// The binary trie of the genesis state in `store`'s database (`backend`, the same one),
/// built from the flat state and committed, or found there from an earlier run (with the
/// same depth; another depth is an error). Returns the root.
pub(crate) fn genesis_trie(
    store: &Store,
    backend: Arc<dyn KvBackend>,
    group_depth: u8,
) -> anyhow::Result<B256> {
    let nodes = KvNodeStore::new(backend);
    if let Some(found) = nodes.get(GENESIS_ROOT_KEY)? {
        anyhow::ensure!(found.len() == 33, "the genesis database's binary-trie record is corrupt");
        if found[0] != group_depth {
            bail!(
                "the genesis database holds a binary trie of group depth {}, not {group_depth}: \
                 use another --genesis-db for this depth",
                found[0]
            );
        }
        return Ok(B256::from_slice(&found[1..]));
    }
    let state = dump(store)?;
    let mut trie = BinaryTrie::new(&nodes, group_depth)?;
    state.apply(&mut trie)?;
    let root = trie.commit()?;
    let mut record = vec![group_depth];
    record.extend_from_slice(root.as_slice());
    nodes.write(ethrex_bintrie::NodeBatch {
        puts: vec![(GENESIS_ROOT_KEY.to_vec(), record)],
        deletes: Vec::new(),
    })?;
    Ok(root)
}

/// One mode's binary trie, shared between the bench (which applies each block) and, with
/// `--reads trie`, the execution reading through it.
pub(crate) struct BinaryState {
    trie: Mutex<BinaryTrie<KvNodeStore>>,
    /// Account and slot reads execution made through the trie.
    reads: AtomicU64,
}

impl BinaryState {
    /// The trie with root `root` in `backend`'s `extension`, written at `group_depth`.
    pub(crate) fn open(
        backend: Arc<dyn KvBackend>,
        root: B256,
        group_depth: u8,
    ) -> anyhow::Result<Arc<Self>> {
        let trie = BinaryTrie::open(KvNodeStore::new(backend), root, group_depth)?;
        Ok(Arc::new(Self { trie: Mutex::new(trie), reads: AtomicU64::new(0) }))
    }

    fn trie(&self) -> MutexGuard<'_, BinaryTrie<KvNodeStore>> {
        self.trie.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Reads execution made through the trie so far.
    pub(crate) fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Applies one block's executed changes as geth's state commit writes them to a
    /// binary trie, commits to the database and returns the new root:
    /// - a changed account: its basic-data and code-hash leaves (`update_account`, the
    ///   code size from the new code, or the unchanged code's size); new code (in the
    ///   block's deployed code, or from the code table when the account's code hash
    ///   changed to code stored earlier) also as chunks;
    /// - an account that no longer exists but did: its two header leaves zeroed
    ///   (`delete_account`; storage and code chunks stay, as in geth);
    /// - every changed slot written, a cleared one as 32 zero bytes.
    ///
    /// A destroyed or recreated account's earlier slots are not zeroed (geth leaves them
    /// too); since EIP-6780 only an account created in the same transaction is destroyed,
    /// so no such slots exist on post-Cancun chains.
    pub(crate) fn apply(&self, changes: &StateChanges, store: &Store) -> anyhow::Result<B256> {
        let codes: HashMap<B256, &[u8]> =
            changes.codes.iter().map(|(hash, code)| (*hash, code.as_ref())).collect();
        let mut trie = self.trie();
        for change in &changes.accounts {
            let address = &change.address;
            match change.info {
                None => {
                    if trie.get_account(address)?.is_some() {
                        trie.delete_account(address)?;
                    }
                }
                Some((nonce, balance, code_hash)) => {
                    let code_size = if code_hash == KECCAK_EMPTY {
                        0
                    } else if let Some(code) = codes.get(&code_hash) {
                        trie.update_code(address, code)?;
                        code.len()
                    } else {
                        match trie.get_account(address)? {
                            Some(before) if before.code_hash == code_hash => {
                                before.code_size as usize
                            }
                            _ => {
                                let code = store
                                    .code(&code_hash)?
                                    .with_context(|| format!("code {code_hash} missing"))?;
                                trie.update_code(address, &code)?;
                                code.len()
                            }
                        }
                    };
                    trie.update_account(address, nonce, balance, code_size as u32, code_hash)?;
                }
            }
            for (slot, value) in &change.storage {
                trie.update_storage(address, *slot, B256::from(*value))?;
            }
        }
        Ok(trie.commit()?)
    }
}

/// Execution's reads of the parent's accounts and storage, through the binary trie (one
/// lock: with parallel execution, the workers' trie reads take turns).
pub(crate) struct TrieReads(pub(crate) Arc<BinaryState>);

fn source_error(e: ethrex_bintrie::BinTrieError) -> StoreDbError {
    StoreDbError::Source(e.to_string())
}

impl StateSource for TrieReads {
    fn account(
        &self,
        address: &alloy_primitives::Address,
    ) -> Result<Option<(u64, U256, B256)>, StoreDbError> {
        self.0.reads.fetch_add(1, Ordering::Relaxed);
        let account = self.0.trie().get_account(address).map_err(source_error)?;
        Ok(account.map(|a| (a.nonce, a.balance, a.code_hash)))
    }

    fn storage(
        &self,
        address: &alloy_primitives::Address,
        slot: &U256,
    ) -> Result<U256, StoreDbError> {
        self.0.reads.fetch_add(1, Ordering::Relaxed);
        let value = self.0.trie().get_storage(address, *slot).map_err(source_error)?;
        Ok(value.map(|v| U256::from_be_bytes(v.0)).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{keccak256, Address, Bytes};
    use ethrex_bintrie::{AccountSpec, MemoryStore, StateSpec};
    use ethrex_vm::AccountChange;

    /// Cleared slots are zero writes, a destroyed account's header is zeroed, an account
    /// that never existed is not written, unchanged code keeps its size; the trie reads
    /// back what the flat state would say.
    #[test]
    fn applies_executed_changes_with_geth_semantics() {
        let (a, b, c, ghost) = (
            Address::repeat_byte(0xa),
            Address::repeat_byte(0xb),
            Address::repeat_byte(0xc),
            Address::repeat_byte(0xd),
        );
        let code = Bytes::from(vec![0x60u8; 70]);
        let genesis = StateSpec {
            accounts: vec![
                AccountSpec {
                    address: a,
                    nonce: 1,
                    balance: U256::from(10),
                    code: code.clone(),
                    storage: [(U256::from(1), U256::from(5)), (U256::from(300), U256::from(7))]
                        .into(),
                },
                AccountSpec { address: b, balance: U256::from(3), ..Default::default() },
            ],
        };
        let backend: Arc<dyn KvBackend> = Arc::new(ethrex_storage::memory::MemoryBackend::new());
        let genesis_root = {
            let mut trie = BinaryTrie::new(KvNodeStore::new(backend.clone()), 5).unwrap();
            genesis.apply(&mut trie).unwrap();
            trie.commit().unwrap()
        };
        let state = BinaryState::open(backend, genesis_root, 5).unwrap();
        let new_code = Bytes::from(vec![0x5bu8; 40]);
        let changes = StateChanges {
            accounts: vec![
                AccountChange {
                    address: a,
                    info: Some((1, U256::from(11), keccak256(&code))),
                    storage_wiped: false,
                    storage: vec![(U256::from(1), U256::ZERO)],
                },
                AccountChange { address: b, info: None, storage_wiped: true, storage: vec![] },
                AccountChange {
                    address: c,
                    info: Some((1, U256::ZERO, keccak256(&new_code))),
                    storage_wiped: false,
                    storage: vec![(U256::from(2), U256::from(9))],
                },
                AccountChange { address: ghost, info: None, storage_wiped: false, storage: vec![] },
            ],
            codes: vec![(keccak256(&new_code), new_code.clone())],
        };
        // The code table is not consulted: every code is unchanged or in the block.
        let root = state.apply(&changes, &Store::in_memory()).unwrap();

        let expected = {
            let store = MemoryStore::new();
            let mut trie = BinaryTrie::new(&store, 5).unwrap();
            genesis.apply(&mut trie).unwrap();
            trie.update_account(&a, 1, U256::from(11), 70, keccak256(&code)).unwrap();
            trie.delete_storage(&a, U256::from(1)).unwrap();
            trie.delete_account(&b).unwrap();
            trie.update_account(&c, 1, U256::ZERO, 40, keccak256(&new_code)).unwrap();
            trie.update_code(&c, &new_code).unwrap();
            trie.update_storage(&c, U256::from(2), B256::from(U256::from(9))).unwrap();
            trie.commit().unwrap()
        };
        assert_eq!(root, expected);

        let reads = TrieReads(state.clone());
        assert_eq!(reads.account(&a).unwrap(), Some((1, U256::from(11), keccak256(&code))));
        assert_eq!(reads.account(&b).unwrap(), None);
        assert_eq!(reads.account(&ghost).unwrap(), None);
        assert_eq!(reads.storage(&a, &U256::from(1)).unwrap(), U256::ZERO);
        assert_eq!(reads.storage(&a, &U256::from(300)).unwrap(), U256::from(7));
        assert_eq!(reads.storage(&c, &U256::from(2)).unwrap(), U256::from(9));
        assert_eq!(state.reads(), 6);
    }

    #[test]
    fn scheme_arguments() {
        assert_eq!(StateScheme::parse("mpt", None).unwrap(), StateScheme::Mpt);
        assert_eq!(
            StateScheme::parse("binary", None).unwrap(),
            StateScheme::Binary { group_depth: 5 }
        );
        assert_eq!(
            StateScheme::parse("binary", Some(8)).unwrap(),
            StateScheme::Binary { group_depth: 8 }
        );
        for (scheme, depth, message) in [
            ("binary", Some(0), "must be 1..=8"),
            ("binary", Some(9), "must be 1..=8"),
            ("mpt", Some(5), "give --state-scheme binary"),
            ("verkle", None, "unknown state scheme"),
        ] {
            let err = StateScheme::parse(scheme, depth).unwrap_err().to_string();
            assert!(err.contains(message), "{scheme} {depth:?}: {err}");
        }
        assert_eq!("trie".parse(), Ok(Reads::Trie));
        assert!("mpt".parse::<Reads>().is_err());
    }
}
