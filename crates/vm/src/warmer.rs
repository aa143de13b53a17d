//! Prefetches everything the BAL names (accounts, their code, every slot read or written)
//! from the store into the shared cache, in parallel, so execution workers rarely wait on
//! the database.

use alloy_primitives::{Address, U256};
use ethrex_common::{BlockAccessList, KECCAK_EMPTY};
use rayon::prelude::*;
use revm::database_interface::DatabaseRef;

/// Reads every account (with its code) and every slot `bal` names through `db`, on the
/// current rayon pool (run it inside an I/O-sized pool's `install` to keep more reads in
/// flight than there are cores). Every read is its own task, so an account with
/// thousands of slots spreads over the pool. The error is the first failed read's.
pub fn warm_from_bal<DB: DatabaseRef + Sync>(
    db: &DB,
    bal: &BlockAccessList,
) -> Result<(), DB::Error>
where
    DB::Error: Send,
{
    warm_keys(db, bal, |account| {
        let changed = account.storage_changes.par_iter().map(|s| s.slot);
        (account.address, changed.chain(account.storage_reads.par_iter().copied()))
    })
}

/// As `warm_from_bal`, for any list of accounts: `keys` gives each entry's address and
/// the slots to read under it (accounts are read with their code).
pub fn warm_keys<'a, DB, T, S>(
    db: &DB,
    entries: &'a [T],
    keys: impl Fn(&'a T) -> (Address, S) + Sync,
) -> Result<(), DB::Error>
where
    DB: DatabaseRef + Sync,
    DB::Error: Send,
    T: Sync,
    S: ParallelIterator<Item = U256>,
{
    let accounts = || {
        entries.par_iter().try_for_each(|entry| {
            let (address, _) = keys(entry);
            if let Some(info) = db.basic_ref(address)? {
                if info.code_hash != KECCAK_EMPTY {
                    db.code_by_hash_ref(info.code_hash)?;
                }
            }
            Ok(())
        })
    };
    let slots = || {
        entries.par_iter().try_for_each(|entry| {
            let (address, slots) = keys(entry);
            slots.try_for_each(|slot| db.storage_ref(address, slot).map(drop))
        })
    };
    let (accounts, slots) = rayon::join(accounts, slots);
    accounts.and(slots)
}
