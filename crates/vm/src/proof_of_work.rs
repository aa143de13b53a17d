//! The proof-of-work era's state changes around a block's transactions: the DAO fork's
//! irregular state change (before the transactions of its block, EIP-779) and the block
//! and ommer rewards (after them, until the merge). Both run on the block's state
//! through the EVM's journal, like the withdrawals after them.

use crate::error::{state_error, DatabaseError, ExecutionError};
use alloy_primitives::{Address, U256};
use ethrex_common::{ChainConfig, Fork, Header};
use revm::context::{ContextTr, JournalTr};
use revm::database::{State, TransitionAccount};
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
/// to the refund contract, as geth and the spec do it: each account of the list is read
/// through a balance write (geth's `SubBalance`, the spec's `set_account`) and the refund
/// contract is created if missing. Before EIP-161 an account so touched that did not
/// exist is created empty, so on a chain whose DAO fork comes before Spurious Dragon the
/// whole list is in the state afterwards (mainnet's accounts all existed); after it, a
/// drained account left empty (no nonce, no code) is deleted and a missing one stays
/// missing.
///
/// Written on the state's cache rather than through the EVM's journal: before EIP-161
/// revm's journal drops the change of an existing account left empty (it un-touches it
/// so that the database layer will not delete it), and a drained account without nonce
/// or code is exactly that; mainnet's, being contracts, never were.
pub(crate) fn apply_dao_fork<DB: Database>(
    state: &mut State<DB>,
    evm_config: &EvmConfig,
    config: &ChainConfig,
    header: &Header,
) -> Result<(), ExecutionError> {
    if !is_dao_fork_block(config, header) {
        return Ok(());
    }
    let keeps_empty = evm_config.fork() < Fork::SpuriousDragon;
    let db_error = |e: DB::Error| ExecutionError::Database(DatabaseError::message(e.to_string()));
    let mut transitions = Vec::new();
    let mut moved = 0u128;
    for address in dao_drain_list() {
        let account = state.load_cache_account(*address).map_err(db_error)?;
        let Some(info) = account.account_info() else {
            if keeps_empty {
                // `drain_balance` on a missing account writes it, empty.
                transitions.push((*address, no_storage(account.drain_balance().1)));
            }
            continue;
        };
        if info.balance.is_zero() {
            continue;
        }
        let (amount, transition) = account.drain_balance();
        moved += amount;
        transitions.push((*address, no_storage(transition)));
        if !keeps_empty && info.nonce == 0 && info.code_hash == ethrex_common::KECCAK_EMPTY {
            transitions.extend(account.touch_empty_eip161().map(|t| (*address, t)));
        }
    }
    let refund = state.load_cache_account(DAO_REFUND_CONTRACT).map_err(db_error)?;
    if moved > 0 {
        transitions
            .extend(refund.increment_balance(moved).map(|t| (DAO_REFUND_CONTRACT, no_storage(t))));
    } else if keeps_empty && refund.account_info().is_none() {
        transitions.push((DAO_REFUND_CONTRACT, no_storage(refund.drain_balance().1)));
    }
    state.apply_transition(transitions);
    Ok(())
}

/// A balance-only transition in the form `State::apply_transition` takes (no storage).
fn no_storage(
    transition: TransitionAccount,
) -> TransitionAccount<Option<std::borrow::Cow<'static, revm::state::EvmStorage>>> {
    transition.map_storage(|_| None)
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

    /// The DAO fork run on a state where the list's first account is a funded account
    /// without nonce or code, its second a funded contract, the rest missing; returns
    /// each address' account after the fork (`None`: absent).
    fn after_dao_fork(
        spurious_dragon: bool,
        funded: bool,
    ) -> impl Fn(Address) -> Option<revm::state::AccountInfo> {
        use revm::database::states::bundle_state::BundleRetention;
        use revm::database::{CacheDB, EmptyDB};
        use revm::state::{AccountInfo, Bytecode};
        let list = dao_drain_list();
        let mut db = CacheDB::new(EmptyDB::default());
        let balance = U256::from(if funded { 5 } else { 0 });
        db.insert_account_info(list[0], AccountInfo { balance, ..Default::default() });
        let code = Bytecode::new_raw(alloy_primitives::Bytes::from_static(&[0x00]));
        let contract =
            AccountInfo { balance: balance * U256::from(2), ..Default::default() }.with_code(code);
        db.insert_account_info(list[1], contract);
        let fork = if spurious_dragon { Fork::SpuriousDragon } else { Fork::Homestead };
        let mut config = ChainConfig::all_forks_at_genesis(1, fork);
        config.inner.dao_fork_block = Some(3);
        config.inner.dao_fork_support = true;
        let header = Header { number: 3, difficulty: U256::from(1), ..Default::default() };
        let mut state = State::builder().with_database(db).with_bundle_update().build();
        apply_dao_fork(&mut state, &EvmConfig::new(&config, &header), &config, &header).unwrap();
        state.merge_transitions(BundleRetention::PlainState);
        let bundle = state.take_bundle();
        let before = |a: &Address| (a == &list[0] || a == &list[1]).then_some(());
        move |address| match bundle.account(&address) {
            Some(account) => account.info.clone(),
            // Untouched: as before the fork (the two funded accounts keep their balance).
            None => before(&address).map(|_| AccountInfo::default()),
        }
    }

    #[test]
    fn before_spurious_dragon_the_dao_fork_creates_every_missing_account_empty() {
        let list = dao_drain_list();
        let after = after_dao_fork(false, true);
        let refund = after(DAO_REFUND_CONTRACT).expect("the refund contract exists");
        assert_eq!(refund.balance, U256::from(15));
        // Drained, and kept although empty (revm's journal would have kept the balance).
        let drained = after(list[0]).expect("the drained account stays");
        assert!(drained.is_empty());
        let contract = after(list[1]).expect("the drained contract stays");
        assert_eq!((contract.balance, contract.is_empty()), (U256::ZERO, false));
        for address in &list[2..] {
            assert!(after(*address).is_some_and(|a| a.is_empty()), "{address} created empty");
        }
    }

    #[test]
    fn after_spurious_dragon_a_drained_empty_account_is_deleted_and_none_created() {
        let list = dao_drain_list();
        let after = after_dao_fork(true, true);
        assert_eq!(after(DAO_REFUND_CONTRACT).map(|a| a.balance), Some(U256::from(15)));
        assert_eq!(after(list[0]), None, "drained, empty, touched: deleted");
        assert_eq!(after(list[1]).map(|a| a.balance), Some(U256::ZERO));
        assert!(list[2..].iter().all(|a| after(*a).is_none()));
    }

    #[test]
    fn with_nothing_to_move_the_refund_contract_exists_only_before_spurious_dragon() {
        assert!(after_dao_fork(false, false)(DAO_REFUND_CONTRACT).is_some_and(|a| a.is_empty()));
        assert_eq!(after_dao_fork(true, false)(DAO_REFUND_CONTRACT), None);
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
