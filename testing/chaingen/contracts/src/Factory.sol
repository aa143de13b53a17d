// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity ^0.8.20;

/// What the factory deploys: a small contract whose constructor writes two fresh slots.
///   slot 0: address owner, slot 1: uint256 value
contract Child {
    address public owner;
    uint256 public value;

    constructor(uint256 v) {
        owner = msg.sender;
        value = v;
    }

    function set(uint256 v) external {
        value = v;
    }
}

/// Deploys Child contracts by CREATE (address from the factory's nonce) and CREATE2
/// (address from the salt; a salt must not be reused or the CREATE2 fails).
///
/// Storage layout: slot 0: uint256 deployed (a counter every deployment writes)
contract Factory {
    uint256 public deployed;

    event Deployed(address indexed child, bytes32 salt);

    function deploy(uint256 v) external returns (address child) {
        child = address(new Child(v));
        deployed += 1;
        emit Deployed(child, bytes32(0));
    }

    function deploy2(bytes32 salt, uint256 v) external returns (address child) {
        child = address(new Child{salt: salt}(v));
        deployed += 1;
        emit Deployed(child, salt);
    }
}
