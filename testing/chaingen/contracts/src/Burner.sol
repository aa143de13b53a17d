// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity ^0.8.20;

/// Compute-heavy transaction: a keccak chain of `rounds` hashes, seeded from and stored
/// back into slot 0 (so consecutive burns depend on each other).
///
/// Storage layout: slot 0: bytes32 last (pre-filled non-zero by genesis)
contract Burner {
    bytes32 public last;

    function burn(uint256 rounds) external returns (bytes32 h) {
        h = last;
        assembly {
            for { let i := 0 } lt(i, rounds) { i := add(i, 1) } {
                mstore(0, h)
                h := keccak256(0, 32)
            }
        }
        last = h;
    }
}
