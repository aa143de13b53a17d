// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity ^0.8.20;

/// Storage-heavy batch writer: sets raw slots start .. start+n-1 to seed, seed+1, ...
/// The slot numbers are the raw indices (no mapping hashing), so the workload knows which
/// slots exist: genesis pre-fills slots 0 .. PREFILLED-1 (overwrites), and fresh batches
/// start above them.
contract Writer {
    function write(uint256 start, uint256 n, uint256 seed) external {
        assembly {
            for { let i := 0 } lt(i, n) { i := add(i, 1) } {
                sstore(add(start, i), add(seed, i))
            }
        }
    }
}
