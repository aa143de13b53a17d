// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity ^0.8.20;

/// Open-mint NFT collection: a global counter (a hot slot every mint writes) plus an
/// owner mapping (a fresh slot per token).
///
/// Storage layout (see src/workload/contracts.rs):
///   slot 0: uint256 totalMinted              (next token id)
///   slot 1: mapping(uint256 => address) ownerOf   ownerOf[id] at keccak256(pad32(id) ++ pad32(1))
///   slot 2: mapping(address => uint256) balanceOf balanceOf[h] at keccak256(pad32(h) ++ pad32(2))
contract Nft {
    uint256 public totalMinted;
    mapping(uint256 => address) public ownerOf;
    mapping(address => uint256) public balanceOf;

    event Transfer(address indexed from, address indexed to, uint256 indexed id);

    function mint(uint256 count) external {
        uint256 id = totalMinted;
        for (uint256 i = 0; i < count; i++) {
            ownerOf[id] = msg.sender;
            emit Transfer(address(0), msg.sender, id);
            id++;
        }
        totalMinted = id;
        balanceOf[msg.sender] += count;
    }
}
