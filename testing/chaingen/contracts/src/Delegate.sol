// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity ^0.8.20;

interface IToken {
    function transfer(address to, uint256 value) external returns (bool);
}

/// EIP-7702 delegation target: EOAs delegate to this code, and it then runs in the EOA's
/// own storage. No access control: this is a benchmark, not a wallet.
///
/// Storage layout (the delegating EOA's storage): slot 0: uint256 pings
contract Delegate {
    uint256 public pings;

    event Ping(address indexed caller, uint256 count);

    /// Delegated EOAs keep accepting plain ether transfers.
    receive() external payable {}

    function ping() external {
        uint256 n = pings + 1;
        pings = n;
        emit Ping(msg.sender, n);
    }

    /// Moves the delegating EOA's own tokens (smart-account style batched call).
    function forward(address token, address to, uint256 amount) external {
        require(IToken(token).transfer(to, amount), "transfer");
        pings += 1;
    }
}
