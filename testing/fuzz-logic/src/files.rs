//! The chain-file reader target: what `ethrex import` reads, from real files.

use ethrex_blockchain::chain_file::{read_chain, write_bals, write_blocks};
use std::path::PathBuf;
use std::sync::OnceLock;

/// A directory of this process's own, for the files the target reads.
fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir =
            std::env::temp_dir().join(format!("ethrex-fuzz-chain-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        dir
    })
}

/// `chain_file::read_chain` on a blocks file and a BAL file: bytes 0-1 (big-endian) say
/// how many of the remaining bytes are the blocks file; the rest is the BAL file (none
/// when empty).
///
/// Asserts no panic (a bad file is an error that names file, item and offset); a chain
/// that reads, written back with `write_blocks` / `write_bals`, reads back equal.
pub fn chain_file(data: &[u8]) {
    let [hi, lo, rest @ ..] = data else { return };
    let split = usize::from(u16::from_be_bytes([*hi, *lo])).min(rest.len());
    let (blocks, bals) = rest.split_at(split);
    let dir = scratch();
    let (blocks_path, bals_path) = (dir.join("in.rlp"), dir.join("in.bal.rlp"));
    std::fs::write(&blocks_path, blocks).expect("a scratch file");
    std::fs::write(&bals_path, bals).expect("a scratch file");
    let bal_file = (!bals.is_empty()).then_some(bals_path.as_path());
    let chain = match read_chain(&blocks_path, bal_file) {
        Ok(chain) => chain,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    let (out_blocks, out_bals) = (dir.join("out.rlp"), dir.join("out.bal.rlp"));
    write_blocks(&out_blocks, &chain).expect("a chain that read is written");
    if bal_file.is_some() {
        write_bals(&out_bals, &chain).expect("every block read with a BAL file has one");
    }
    let again = read_chain(&out_blocks, bal_file.map(|_| out_bals.as_path()))
        .unwrap_or_else(|e| panic!("a written chain does not read back: {e}"));
    assert_eq!(again.len(), chain.len(), "chain file round trip: block count");
    for (a, b) in again.iter().zip(&chain) {
        assert!(a.block == b.block && a.bal == b.bal, "chain file round trip");
    }
}
