//! The proof-of-work era's state changes around a block's transactions: the DAO fork's
//! irregular state change (before the transactions of its block, EIP-779) and the block
//! and ommer rewards (after them, until the merge). Both run on the block's state
//! through the EVM's journal, like the withdrawals after them.

use crate::error::{state_error, ExecutionError};
use alloy_primitives::{Address, U256};
use ethrex_common::{ChainConfig, Fork, Header};
use revm::context::{ContextTr, JournalTr};
use revm::database::State;
use revm::handler::EvmTr;
use revm::{Database, ExecuteCommitEvm};
use std::sync::OnceLock;

use crate::evm::EvmConfig;

/// The contract the DAO fork moved the drained balances to (EIP-779).
pub const DAO_REFUND_CONTRACT: Address =
    alloy_primitives::address!("bf4ed7b27f1d666546e30d74d50d173d20bca754");

/// The accounts the DAO fork drained (EIP-779's list L, in its order), read once from the
/// data file beside this crate's source of truth, `ethrex_common`'s `dao_drain.txt`.
pub fn dao_drain_list() -> &'static [Address] {
    static LIST: OnceLock<Vec<Address>> = OnceLock::new();
    LIST.get_or_init(|| {
        ethrex_common::DAO_DRAIN_LIST
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| l.parse().expect("dao_drain.txt holds addresses"))
            .collect()
    })
}

/// Whether the block with `header` is the DAO fork block of a chain that supports it.
fn is_dao_fork_block(config: &ChainConfig, header: &Header) -> bool {
    config.inner.dao_fork_support && config.inner.dao_fork_block == Some(header.number)
}

/// At the DAO fork block, before its transactions: every drained account's balance moves
/// to the refund contract. An account without balance is left alone (geth would create
/// it empty; every account of mainnet's list existed at the fork).
pub(crate) fn apply_dao_fork<DB: Database>(
    state: &mut State<DB>,
    evm_config: &EvmConfig,
    config: &ChainConfig,
    header: &Header,
) -> Result<(), ExecutionError> {
    if !is_dao_fork_block(config, header) {
        return Ok(());
    }
    let mut evm = evm_config.evm(&mut *state);
    let journal = evm.ctx_mut().journal_mut();
    for address in dao_drain_list() {
        let balance = journal.load_account(*address).map_err(state_error)?.data.info.balance;
        if balance.is_zero() {
            continue;
        }
        if let Some(e) =
            journal.transfer(*address, DAO_REFUND_CONTRACT, balance).map_err(state_error)?
        {
            return Err(ExecutionError::SystemCall {
                address: *address,
                reason: format!("DAO fork transfer: {e:?}"),
            });
        }
    }
    evm.commit_inner();
    Ok(())
}

/// The block and ommer rewards of a proof-of-work block, as `(beneficiary, wei)` in the
/// order they are credited: each ommer's miner `(8 + ommer - block) / 8` of the block
/// reward, then the block's miner the reward plus 1/32 of it per ommer. Nothing from the
/// merge on.
pub fn block_rewards(fork: Fork, header: &Header, ommers: &[Header]) -> Vec<(Address, U256)> {
    let reward = U256::from(fork.block_reward());
    if reward.is_zero() {
        return Vec::new();
    }
    let mut rewards = Vec::with_capacity(ommers.len() + 1);
    let mut miner = reward;
    for ommer in ommers {
        // Validation bounds the depth to 1..=6, so the factor stays within 2..=7.
        let factor = (ommer.number + 8).saturating_sub(header.number);
        rewards.push((ommer.beneficiary, reward * U256::from(factor) / U256::from(8)));
        miner += reward / U256::from(32);
    }
    rewards.push((header.beneficiary, miner));
    rewards
}

/// After the transactions of a proof-of-work block: its rewards credited.
pub(crate) fn apply_rewards<DB: Database>(
    state: &mut State<DB>,
    evm_config: &EvmConfig,
    header: &Header,
    ommers: &[Header],
) -> Result<(), ExecutionError> {
    let rewards = block_rewards(evm_config.fork(), header, ommers);
    if rewards.is_empty() {
        return Ok(());
    }
    let mut evm = evm_config.evm(&mut *state);
    for (beneficiary, amount) in rewards {
        evm.ctx_mut().journal_mut().balance_incr(beneficiary, amount).map_err(state_error)?;
    }
    evm.commit_inner();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(number: u64, beneficiary: u8) -> Header {
        Header { number, beneficiary: Address::repeat_byte(beneficiary), ..Default::default() }
    }

    #[test]
    fn the_drain_list_is_eip_779s_116_accounts_without_the_refund_contract() {
        let list = dao_drain_list();
        assert_eq!(list.len(), 116);
        assert!(!list.contains(&DAO_REFUND_CONTRACT));
        // The DAO itself and its extra balance account close the list.
        assert_eq!(
            list[114],
            alloy_primitives::address!("bb9bc244d798123fde783fcc1c72d3bb8c189413")
        );
    }

    #[test]
    fn ommers_earn_by_depth_and_the_miner_a_32nd_per_ommer() {
        let eth = U256::from(10u128.pow(18));
        let block = header(100, 1);
        let rewards = block_rewards(Fork::Byzantium, &block, &[header(99, 2), header(94, 3)]);
        assert_eq!(
            rewards[0],
            (Address::repeat_byte(2), eth * U256::from(3) * U256::from(7) / U256::from(8))
        );
        assert_eq!(
            rewards[1],
            (Address::repeat_byte(3), eth * U256::from(3) * U256::from(2) / U256::from(8))
        );
        assert_eq!(
            rewards[2],
            (
                Address::repeat_byte(1),
                eth * U256::from(3) + eth * U256::from(3) * U256::from(2) / U256::from(32)
            )
        );
        assert!(block_rewards(Fork::Paris, &block, &[]).is_empty());
        assert_eq!(
            block_rewards(Fork::Frontier, &block, &[]),
            vec![(Address::repeat_byte(1), eth * U256::from(5))]
        );
    }
}
