// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity ^0.8.20;

/// Minimal ERC-20 used by the import-bench workload.
///
/// Storage layout (the genesis allocation writes these slots directly, see
/// src/workload/contracts.rs; keep both in sync):
///   slot 0: mapping(address => uint256) balanceOf
///           balanceOf[h]    at keccak256(pad32(h) ++ pad32(0))
///   slot 1: mapping(address => mapping(address => uint256)) allowance
///           allowance[o][s] at keccak256(pad32(s) ++ keccak256(pad32(o) ++ pad32(1)))
///   slot 2: uint256 totalSupply
contract Token {
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;
    uint256 public totalSupply;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    /// Used by plain contract-creation transactions: the deployer gets the supply.
    constructor(uint256 supply) {
        balanceOf[msg.sender] = supply;
        totalSupply = supply;
        emit Transfer(address(0), msg.sender, supply);
    }

    function transfer(address to, uint256 value) external returns (bool) {
        _move(msg.sender, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    /// An allowance of 2^256-1 is never decremented (the common "infinite approval"), so
    /// AMM swaps do not write the allowance slot.
    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        if (allowed != type(uint256).max) {
            require(allowed >= value, "allowance");
            unchecked {
                allowance[from][msg.sender] = allowed - value;
            }
        }
        _move(from, to, value);
        return true;
    }

    function _move(address from, address to, uint256 value) internal {
        uint256 balance = balanceOf[from];
        require(balance >= value, "balance");
        unchecked {
            balanceOf[from] = balance - value;
        }
        balanceOf[to] += value;
        emit Transfer(from, to, value);
    }
}
