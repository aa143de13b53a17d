//! Prefetches everything the BAL names (accounts, their code, every slot read or written)
//! from the store into the shared cache, in parallel, so execution workers rarely wait on
//! the database.

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
    let accounts = || {
        bal.par_iter().try_for_each(|account| {
            if let Some(info) = db.basic_ref(account.address)? {
                if info.code_hash != KECCAK_EMPTY {
                    db.code_by_hash_ref(info.code_hash)?;
                }
            }
            Ok(())
        })
    };
    let slots = || {
        bal.par_iter().try_for_each(|account| {
            account
                .storage_changes
                .par_iter()
                .map(|s| s.slot)
                .chain(account.storage_reads.par_iter().copied())
                .try_for_each(|slot| db.storage_ref(account.address, slot).map(drop))
        })
    };
    let (accounts, slots) = rayon::join(accounts, slots);
    accounts.and(slots)
}
