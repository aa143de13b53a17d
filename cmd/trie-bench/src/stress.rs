//! The state after every block of an EF `blockchain_test` (e.g. the stress fixture's
//! `stress.blockchain_test.json`) as [`StateSpec`] JSON, for the geth cross-check
//! (`bench/bintrie-ref/check.sh --stress DIR`).
//!
//! The fixture carries the genesis state (`pre`) and only the state after the last block
//! (`postState`), so the chain is imported with the client's own pipeline
//! (`ethrex_ef_tests::valid_chain`, `Blockchain::import_block`) and the store's flat
//! state dumped after each block. Each dump is checked to be complete: its MPT root,
//! computed from scratch, must be the block header's state root.

use alloy_primitives::{keccak256, B256};
use anyhow::Context;
use ethrex_bintrie::StateSpec;
use ethrex_common::{AccountState, EMPTY_ROOT_HASH};
use ethrex_ef_tests::fixture::BlockchainTest;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use ethrex_bintrie::kv::dump_state as dump;

/// The MPT state root of `state`, from scratch (`alloy_trie`'s builder).
pub fn mpt_root(state: &StateSpec) -> B256 {
    ethrex_trie::root_from_scratch(state.accounts.iter().map(|a| {
        let storage_root =
            ethrex_trie::root_from_scratch(a.storage.iter().map(|(slot, value)| {
                (keccak256(slot.to_be_bytes::<32>()), alloy_rlp::encode(value))
            }));
        let account = AccountState {
            nonce: a.nonce,
            balance: a.balance,
            storage_root: if a.storage.is_empty() { EMPTY_ROOT_HASH } else { storage_root },
            code_hash: keccak256(&a.code),
        };
        (keccak256(a.address), alloy_rlp::encode(account))
    }))
}

/// Writes `<test>-block-<n>.json` into `out` for the genesis (n = 0) and after every
/// valid block of every `blockchain_test` in `fixture`; returns the files written.
pub fn write_states(fixture: &Path, out: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let text = std::fs::read_to_string(fixture)
        .with_context(|| format!("reading {}", fixture.display()))?;
    let cases: BTreeMap<String, serde_json::Value> = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a blockchain_test fixture file", fixture.display()))?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut files = Vec::new();
    for (name, value) in cases {
        if !ethrex_ef_tests::runner::is_blockchain_test(&value) {
            continue;
        }
        let test: BlockchainTest =
            serde_json::from_value(value).with_context(|| format!("{name} is malformed"))?;
        let (chain, blocks) =
            ethrex_ef_tests::valid_chain(&test).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
        let stem: String =
            name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
        let mut save = |n: u64, expected_root: B256| -> anyhow::Result<()> {
            let state = dump(&chain.store)?;
            let root = mpt_root(&state);
            anyhow::ensure!(
                root == expected_root,
                "{name}: the dump after block {n} hashes to {root}, the header says \
                 {expected_root}: the dump is incomplete"
            );
            let path = out.join(format!("{stem}-block-{n}.json"));
            std::fs::write(&path, state.to_json()?)
                .with_context(|| format!("writing {}", path.display()))?;
            eprintln!(
                "{}: {} accounts (MPT root matches block {n})",
                path.display(),
                state.accounts.len()
            );
            files.push(path);
            Ok(())
        };
        let genesis = chain.store.head_header()?.context("no genesis header")?;
        save(0, genesis.state_root)?;
        for block in blocks {
            let (number, root) = (block.block.header.number, block.block.header.state_root);
            chain
                .import_block(block)
                .map_err(|e| anyhow::anyhow!("{name}: block {number}: {e}"))?;
            save(number, root)?;
        }
    }
    anyhow::ensure!(!files.is_empty(), "{} holds no blockchain_test", fixture.display());
    Ok(files)
}
