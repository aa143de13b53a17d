//! Gas accounting of a block: what the receipts count and what the header commits to.

use crate::error::{BlockGasDimension, ExecutionError};
use ethrex_common::Fork;
use revm::context_interface::result::ResultGas;
use revm::primitives::eip7825::TX_GAS_LIMIT_CAP;

/// Running gas totals of a block: receipts count transaction gas (after refunds), the
/// header counts block gas (from Amsterdam on, EIP-7778: before refunds).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct GasCounter {
    /// Gas of the transactions so far as the receipts count it (cumulative gas used).
    pub(crate) cumulative_tx_gas: u64,
    /// Regular block gas so far (Amsterdam).
    pub(crate) regular: u64,
    /// State block gas so far (Amsterdam).
    pub(crate) state: u64,
}

impl GasCounter {
    /// The block's gas used so far as the header counts it.
    pub(crate) fn block_gas(&self, fork: Fork) -> u64 {
        if fork >= Fork::Amsterdam {
            self.regular.max(self.state)
        } else {
            self.cumulative_tx_gas
        }
    }

    /// The rule checked before each transaction: it must fit in what is left of the block.
    ///
    /// Before Amsterdam: `tx.gas <= gas_limit - gas_used`. From Amsterdam on (EIP-8037,
    /// two block gas dimensions) each dimension reserves the transaction's whole gas
    /// limit, the regular one capped at EIP-7825's per-transaction maximum (a transaction
    /// cannot spend more regular gas than that), with no intrinsic gas subtracted:
    /// `min(tx.gas, 2^24) <= gas_limit - regular_used` and
    /// `tx.gas <= gas_limit - state_used`. This is the execution specs' rule for both
    /// bal-devnet-7 and glamsterdam-devnet-8 (`check_transaction` / the block gas capacity
    /// check of `forks/amsterdam`), and the fixtures' `GAS_ALLOWANCE_EXCEEDED`.
    pub(crate) fn check_fits(
        &self,
        fork: Fork,
        gas_limit: u64,
        index: usize,
        tx_gas_limit: u64,
    ) -> Result<(), ExecutionError> {
        let fits = |dimension, reserved: u64, used: u64| {
            let available = gas_limit.saturating_sub(used);
            if reserved > available {
                return Err(ExecutionError::BlockGasOverflow {
                    index,
                    dimension,
                    gas_limit: reserved,
                    available,
                });
            }
            Ok(())
        };
        if fork >= Fork::Amsterdam {
            fits(BlockGasDimension::Regular, tx_gas_limit.min(TX_GAS_LIMIT_CAP), self.regular)?;
            fits(BlockGasDimension::State, tx_gas_limit, self.state)
        } else {
            fits(BlockGasDimension::Total, tx_gas_limit, self.cumulative_tx_gas)
        }
    }

    /// Counts one executed transaction.
    pub(crate) fn add(&mut self, gas: &ResultGas) {
        self.cumulative_tx_gas += gas.tx_gas_used();
        self.regular += gas.block_regular_gas_used();
        self.state += gas.block_state_gas_used();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: u64 = 60_000_000;

    fn counter(regular: u64, state: u64) -> GasCounter {
        GasCounter { cumulative_tx_gas: regular.max(state), regular, state }
    }

    fn fits(c: GasCounter, fork: Fork, tx_gas: u64) -> Result<(), BlockGasDimension> {
        c.check_fits(fork, LIMIT, 3, tx_gas).map_err(|e| match e {
            ExecutionError::BlockGasOverflow { dimension, index: 3, .. } => dimension,
            other => panic!("unexpected error {other}"),
        })
    }

    #[test]
    fn amsterdam_caps_the_regular_reservation_at_the_transaction_maximum() {
        // 20M regular gas left, 50M state gas left: a 30M transaction reserves 2^24 of
        // regular gas and 30M of state gas, so it fits (the rule of max(regular, state)
        // would have rejected it: 30M > 60M - 40M).
        assert_eq!(fits(counter(40_000_000, 10_000_000), Fork::Amsterdam, 30_000_000), Ok(()));
        // A transaction with the whole block's gas limit after one plain transfer.
        assert_eq!(fits(counter(21_000, 0), Fork::Amsterdam, LIMIT), Ok(()));
    }

    #[test]
    fn amsterdam_checks_each_dimension_at_its_boundary() {
        let c = counter(LIMIT - TX_GAS_LIMIT_CAP, LIMIT - 30_000_000);
        assert_eq!(fits(c, Fork::Amsterdam, 30_000_000), Ok(()));
        assert_eq!(fits(c, Fork::Amsterdam, 30_000_001), Err(BlockGasDimension::State));
        let c = counter(LIMIT - 1_000_000, 0);
        assert_eq!(fits(c, Fork::Amsterdam, 1_000_000), Ok(()));
        assert_eq!(fits(c, Fork::Amsterdam, 1_000_001), Err(BlockGasDimension::Regular));
        // Above the cap the regular reservation stays at the cap.
        let c = counter(LIMIT - TX_GAS_LIMIT_CAP + 1, 0);
        assert_eq!(fits(c, Fork::Amsterdam, TX_GAS_LIMIT_CAP + 5), Err(BlockGasDimension::Regular));
    }

    #[test]
    fn before_amsterdam_the_whole_gas_limit_must_fit_in_what_is_left() {
        let c = counter(40_000_000, 0);
        assert_eq!(fits(c, Fork::Prague, 20_000_000), Ok(()));
        assert_eq!(fits(c, Fork::Prague, 20_000_001), Err(BlockGasDimension::Total));
    }
}
