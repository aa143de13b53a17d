//! State overrides (`eth_simulateV1`, `eth_call`, `eth_estimateGas`): accounts given a
//! balance, nonce, code or storage before the calls run, and precompiles moved to another
//! address or replaced by code. Applied as geth applies them: accounts in address order,
//! `state` replacing the whole storage, `stateDiff` patching it, a moved precompile
//! answering at its new address and no longer at its old one.
//!
//! The overrides are committed into the caller's database as if a transaction had made
//! them, so the state root of a simulated block includes them.

use alloy_primitives::{Address, B256, U256};
use alloy_rpc_types_eth::state::StateOverride;
use revm::bytecode::Bytecode;
use revm::context::{Cfg, ContextTr, JournalTr, LocalContextTr};
use revm::handler::{precompile_output_to_interpreter_result, PrecompileProvider};
use revm::interpreter::{CallInputs, InterpreterResult};
use revm::precompile::{Precompile, PrecompileSpecId, Precompiles};
use revm::primitives::hardfork::SpecId;
use revm::primitives::AddressSet;
use revm::state::{Account, EvmStorageSlot, TransactionId};
use revm::{Database, DatabaseCommit};
use std::collections::HashMap;

/// Why overrides could not be applied (geth's words).
#[derive(Debug, thiserror::Error)]
pub enum OverrideError {
    /// `movePrecompileToAddress` on an account that is no precompile.
    #[error("account {0} is not a precompile")]
    NotAPrecompile(Address),
    /// A precompile moved to an address the same request also overrides.
    #[error("account {0} is already overridden")]
    DestinationOverridden(Address),
    /// An address a precompile was moved to, overridden afterwards.
    #[error("account {0} has already been overridden by a precompile")]
    OverriddenByPrecompile(Address),
    /// Both `state` and `stateDiff` for one account.
    #[error("account {0} has both 'state' and 'stateDiff'")]
    StateAndStateDiff(Address),
    /// Code revm refuses to load (a malformed EIP-7702 designator).
    #[error("invalid code override for {address}: {reason}")]
    InvalidCode {
        /// The account.
        address: Address,
        /// revm's reason.
        reason: String,
    },
    /// The state could not be read.
    #[error("reading state: {0}")]
    State(String),
}

/// The precompiles of one fork, with overrides' moves and removals: what the EVM runs
/// when a call targets an address. revm's own provider holds a shared, fixed set; this
/// one owns its map so a request can change it. The addresses warm at the start of a
/// transaction stay the fork's own (as geth keeps them), wherever the code moved.
#[derive(Clone, Debug)]
pub struct PrecompileSet {
    by_address: HashMap<Address, Precompile>,
    warm: AddressSet,
}

impl PrecompileSet {
    /// The precompiles active under `spec`.
    pub fn new(spec: SpecId) -> Self {
        let fixed = Precompiles::new(PrecompileSpecId::from_spec_id(spec));
        let by_address: HashMap<Address, Precompile> =
            fixed.addresses().filter_map(|a| fixed.get(a).map(|p| (*a, p.clone()))).collect();
        let warm = by_address.keys().copied().collect();
        Self { by_address, warm }
    }

    /// Whether a precompile answers at `address`.
    pub fn contains(&self, address: &Address) -> bool {
        self.by_address.contains_key(address)
    }
}

impl<CTX: ContextTr> PrecompileProvider<CTX> for PrecompileSet {
    type Output = InterpreterResult;

    fn set_spec(&mut self, _spec: <CTX::Cfg as Cfg>::Spec) -> bool {
        // Made for one fork (the EVM's), keeping the request's changes; its warm
        // addresses go into every transaction's journal.
        true
    }

    fn run(
        &mut self,
        context: &mut CTX,
        inputs: &CallInputs,
    ) -> Result<Option<InterpreterResult>, String> {
        let Some(precompile) = self.by_address.get(&inputs.bytecode_address) else {
            return Ok(None);
        };
        let output = precompile
            .execute(&inputs.input.as_bytes(context), inputs.gas_limit, inputs.reservoir)
            .map_err(|e| e.to_string())?;
        if let Some(reason) = output.halt_reason() {
            if !reason.is_oog() && context.journal().depth() == 1 {
                context.local_mut().set_precompile_error_context(reason.to_string());
            }
        }
        Ok(Some(precompile_output_to_interpreter_result(output, inputs.gas_limit)))
    }

    fn warm_addresses(&self) -> &AddressSet {
        &self.warm
    }

    fn contains(&self, address: &Address) -> bool {
        self.by_address.contains_key(address)
    }
}

/// Applies `overrides` to `db` (committed as one change) and to `precompiles`.
///
/// # Errors
/// [`OverrideError`] for a contradictory override (nothing is committed then) or a
/// failed read.
pub fn apply_state_overrides<DB>(
    db: &mut DB,
    overrides: &StateOverride,
    precompiles: &mut PrecompileSet,
) -> Result<(), OverrideError>
where
    DB: Database + DatabaseCommit,
    DB::Error: std::fmt::Display,
{
    let read = |e: DB::Error| OverrideError::State(e.to_string());
    let mut addresses: Vec<&Address> = overrides.keys().collect();
    addresses.sort();
    let mut moved_to: Vec<Address> = Vec::new();
    let mut wiped = Vec::new();
    let mut changed: HashMap<Address, Account> = HashMap::new();
    for address in addresses {
        let account = &overrides[address];
        if moved_to.contains(address) {
            return Err(OverrideError::OverriddenByPrecompile(*address));
        }
        let precompile = precompiles.by_address.get(address).cloned();
        if let Some(destination) = account.move_precompile_to {
            let Some(precompile) = precompile.clone() else {
                return Err(OverrideError::NotAPrecompile(*address));
            };
            if overrides.contains_key(&destination) {
                return Err(OverrideError::DestinationOverridden(destination));
            }
            precompiles.by_address.insert(destination, precompile);
            moved_to.push(destination);
        }
        if precompile.is_some() {
            precompiles.by_address.remove(address);
        }
        if account.state.is_some() && account.state_diff.is_some() {
            return Err(OverrideError::StateAndStateDiff(*address));
        }
        let current = db.basic(*address).map_err(read)?;
        let existed = current.is_some();
        let mut info = current.unwrap_or_default();
        if info.code.is_none() && info.code_hash != ethrex_common::KECCAK_EMPTY {
            info.code = Some(db.code_by_hash(info.code_hash).map_err(read)?);
        }
        let original = info.clone();
        if let Some(nonce) = account.nonce {
            info.nonce = nonce;
        }
        if let Some(code) = &account.code {
            let code = Bytecode::new_raw_checked(code.clone()).map_err(|e| {
                OverrideError::InvalidCode { address: *address, reason: e.to_string() }
            })?;
            info.code_hash = code.hash_slow();
            info.code = Some(code);
        }
        if let Some(balance) = account.balance {
            info.balance = balance;
        }
        let mut storage = HashMap::new();
        let replace = account.state.is_some();
        for (slot, value) in account.state.iter().chain(account.state_diff.iter()).flatten() {
            let key = U256::from_be_bytes(slot.0);
            let before =
                if replace { U256::ZERO } else { db.storage(*address, key).map_err(read)? };
            let value = U256::from_be_bytes(B256::from(*value).0);
            storage.insert(key, EvmStorageSlot::new_changed(before, value, TransactionId::ZERO));
        }
        if replace && existed {
            wiped.push((*address, original));
        }
        let mut new = Account::from(info);
        new.storage = storage.into_iter().collect();
        new.mark_touch();
        if replace {
            new.mark_created();
        }
        changed.insert(*address, new);
    }
    // `state` replaces the storage: the old account is destroyed first, so its slots
    // are gone from the state (and from the state root), then recreated.
    if !wiped.is_empty() {
        let destroyed = wiped
            .into_iter()
            .map(|(address, info)| {
                let mut account = Account::from(info);
                account.mark_touch();
                account.mark_selfdestruct();
                (address, account)
            })
            .collect();
        db.commit(destroyed);
    }
    db.commit(changed.into_iter().collect());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::changes_of_bundle;
    use alloy_primitives::{address, map::B256HashMap};
    use alloy_rpc_types_eth::state::AccountOverride;
    use revm::database::states::bundle_state::BundleRetention;
    use revm::database::{CacheDB, EmptyDB, State};
    use revm::primitives::hardfork::SpecId;
    use revm::state::AccountInfo;

    const ACCOUNT: Address = address!("c100000000000000000000000000000000000000");

    /// A state holding `ACCOUNT` (balance 7) with slots 1 and 2 set: a contract's, so
    /// nonce 1 (revm takes an account without nonce and code to have no storage, which
    /// holds on every real chain).
    fn state_with_slots() -> State<CacheDB<EmptyDB>> {
        let mut db = CacheDB::new(EmptyDB::default());
        let info = AccountInfo { balance: U256::from(7), nonce: 1, ..Default::default() };
        db.insert_account_info(ACCOUNT, info);
        db.insert_account_storage(ACCOUNT, U256::from(1), U256::from(1)).unwrap();
        db.insert_account_storage(ACCOUNT, U256::from(2), U256::from(2)).unwrap();
        State::builder().with_database(db).with_bundle_update().build()
    }

    fn slots(values: &[(u64, u64)]) -> B256HashMap<B256> {
        values
            .iter()
            .map(|(k, v)| (B256::from(U256::from(*k)), B256::from(U256::from(*v))))
            .collect()
    }

    fn one(address: Address, account: AccountOverride) -> StateOverride {
        std::iter::once((address, account)).collect()
    }

    #[test]
    fn replacing_the_storage_drops_every_old_slot_from_the_state() {
        let mut state = state_with_slots();
        let overrides =
            one(ACCOUNT, AccountOverride { state: Some(slots(&[(1, 5)])), ..Default::default() });
        let mut precompiles = PrecompileSet::new(SpecId::PRAGUE);
        apply_state_overrides(&mut state, &overrides, &mut precompiles).unwrap();
        assert_eq!(state.storage(ACCOUNT, U256::from(2)).unwrap(), U256::ZERO);
        state.merge_transitions(BundleRetention::PlainState);
        let (changes, _) = changes_of_bundle(&state.bundle_state);
        let change = changes.iter().find(|c| c.address == ACCOUNT).expect("account changed");
        assert!(change.storage_wiped, "the old storage must be wiped");
        assert_eq!(change.storage, vec![(U256::from(1), U256::from(5))]);
        assert_eq!(change.info.map(|(_, balance, _)| balance), Some(U256::from(7)));
    }

    #[test]
    fn a_state_diff_keeps_the_slots_it_does_not_name() {
        let mut state = state_with_slots();
        let overrides = one(
            ACCOUNT,
            AccountOverride { state_diff: Some(slots(&[(1, 5)])), ..Default::default() },
        );
        let mut precompiles = PrecompileSet::new(SpecId::PRAGUE);
        apply_state_overrides(&mut state, &overrides, &mut precompiles).unwrap();
        assert_eq!(state.storage(ACCOUNT, U256::from(1)).unwrap(), U256::from(5));
        assert_eq!(state.storage(ACCOUNT, U256::from(2)).unwrap(), U256::from(2));
    }

    #[test]
    fn a_moved_precompile_answers_at_its_new_address_only() {
        let ecrecover = address!("0000000000000000000000000000000000000001");
        let target = address!("0000000000000000000000000000000000123456");
        let mut state = state_with_slots();
        let overrides = one(
            ecrecover,
            AccountOverride { move_precompile_to: Some(target), ..Default::default() },
        );
        let mut precompiles = PrecompileSet::new(SpecId::PRAGUE);
        apply_state_overrides(&mut state, &overrides, &mut precompiles).unwrap();
        assert!(precompiles.contains(&target));
        assert!(!precompiles.contains(&ecrecover));
    }

    #[test]
    fn moving_an_account_that_is_no_precompile_is_refused() {
        let mut state = state_with_slots();
        let overrides = one(
            ACCOUNT,
            AccountOverride {
                move_precompile_to: Some(Address::repeat_byte(9)),
                ..Default::default()
            },
        );
        let mut precompiles = PrecompileSet::new(SpecId::PRAGUE);
        let err = apply_state_overrides(&mut state, &overrides, &mut precompiles).unwrap_err();
        assert!(matches!(err, OverrideError::NotAPrecompile(a) if a == ACCOUNT), "{err}");
    }

    #[test]
    fn state_and_state_diff_together_are_refused_and_nothing_is_applied() {
        let mut state = state_with_slots();
        let overrides = one(
            ACCOUNT,
            AccountOverride {
                balance: Some(U256::from(99)),
                state: Some(slots(&[(1, 1)])),
                state_diff: Some(slots(&[(2, 2)])),
                ..Default::default()
            },
        );
        let mut precompiles = PrecompileSet::new(SpecId::PRAGUE);
        let err = apply_state_overrides(&mut state, &overrides, &mut precompiles).unwrap_err();
        assert!(matches!(err, OverrideError::StateAndStateDiff(_)), "{err}");
        assert_eq!(state.basic(ACCOUNT).unwrap().map(|a| a.balance), Some(U256::from(7)));
    }
}
