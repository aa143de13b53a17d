// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity ^0.8.20;

interface IToken {
    function transfer(address to, uint256 value) external returns (bool);
    function transferFrom(address from, address to, uint256 value) external returns (bool);
}

interface IPool {
    function token0() external view returns (address);
    function token1() external view returns (address);
    function swap(bool zeroForOne, uint256 amountIn, uint256 minOut) external returns (uint256);
}

/// Two-hop swap router, the way most mainnet swaps arrive: pulls the input token from the
/// caller, swaps through two pools (the router is the pools' caller, so it holds the
/// intermediate token between the hops) and sends the output to the caller.
///
/// No storage of its own. It needs (written by the genesis allocation):
///   - callers' allowances to the router for the input tokens,
///   - the router's allowances to the pools for every pool token,
///   - a dust balance of every pool token (so its balance slots are updated, never created
///     and cleared, in every swap).
contract Router {
    function swap2(address poolA, bool zeroForOneA, address poolB, bool zeroForOneB, uint256 amountIn, uint256 minOut)
        external
        returns (uint256 amountOut)
    {
        address tokenIn = zeroForOneA ? IPool(poolA).token0() : IPool(poolA).token1();
        address tokenOut = zeroForOneB ? IPool(poolB).token1() : IPool(poolB).token0();
        require(IToken(tokenIn).transferFrom(msg.sender, address(this), amountIn), "pull");
        uint256 mid = IPool(poolA).swap(zeroForOneA, amountIn, 0);
        amountOut = IPool(poolB).swap(zeroForOneB, mid, minOut);
        require(IToken(tokenOut).transfer(msg.sender, amountOut), "push");
    }
}
