// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity ^0.8.20;

interface IToken {
    function transfer(address to, uint256 value) external returns (bool);
    function transferFrom(address from, address to, uint256 value) external returns (bool);
}

/// Constant-product pool (x * y = k, 0.3% fee) over two Token contracts. Every swap reads
/// and writes both reserves, so swaps on the same pool conflict with each other.
///
/// Storage layout (written by the genesis allocation, see src/workload/contracts.rs):
///   slot 0: address token0
///   slot 1: address token1   (two addresses do not fit one slot, so no packing)
///   slot 2: uint256 reserve0
///   slot 3: uint256 reserve1
/// The pool's own token balances (Token.balanceOf[pool]) must equal the reserves.
contract Pool {
    address public token0;
    address public token1;
    uint256 public reserve0;
    uint256 public reserve1;

    event Swap(address indexed sender, bool zeroForOne, uint256 amountIn, uint256 amountOut);

    /// Pulls `amountIn` of the input token from the caller (needs an allowance) and sends
    /// the output token back.
    function swap(bool zeroForOne, uint256 amountIn, uint256 minOut) external returns (uint256 amountOut) {
        (address tokenIn, address tokenOut, uint256 reserveIn, uint256 reserveOut) =
            zeroForOne ? (token0, token1, reserve0, reserve1) : (token1, token0, reserve1, reserve0);
        require(IToken(tokenIn).transferFrom(msg.sender, address(this), amountIn), "pull");
        uint256 inWithFee = amountIn * 997;
        amountOut = (inWithFee * reserveOut) / (reserveIn * 1000 + inWithFee);
        require(amountOut >= minOut, "slippage");
        require(IToken(tokenOut).transfer(msg.sender, amountOut), "push");
        if (zeroForOne) {
            reserve0 = reserveIn + amountIn;
            reserve1 = reserveOut - amountOut;
        } else {
            reserve1 = reserveIn + amountIn;
            reserve0 = reserveOut - amountOut;
        }
        emit Swap(msg.sender, zeroForOne, amountIn, amountOut);
    }
}
