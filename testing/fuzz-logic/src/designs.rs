//! The BAL design lab's decoders (`ethrex_bal::DesignBal::decode`), one per design.

use ethrex_bal::{BalDesign, DesignBal};

/// Byte 0 picks the design (`BalDesign::ALL[b % 8]`), byte 1 the block's transaction
/// count (block access indices = count + 2), the rest is the encoded BAL.
///
/// Asserts no panic, and that a BAL the decoder accepts (it accepts only the canonical
/// encoding) encodes back to exactly the input bytes.
pub fn bal_design(data: &[u8]) {
    let [which, txs, bytes @ ..] = data else { return };
    let design = BalDesign::ALL[usize::from(*which) % BalDesign::ALL.len()];
    let indices = u64::from(*txs) + 2;
    if let Ok(bal) = DesignBal::decode(design, bytes, indices) {
        assert!(bal.encode() == bytes, "a canonical {design:?} BAL encodes to other bytes");
    }
}
