//! Prefetches everything the BAL names (accounts, their code, every slot read or written)
//! from the store into the shared cache, in parallel, so execution workers rarely wait on
//! the database.

use ethrex_common::{BlockAccessList, KECCAK_EMPTY};
use rayon::prelude::*;
use revm::database_interface::DatabaseRef;

/// Reads every account (with its code) and every slot `bal` names through `db`, on the
/// rayon pool. The error is the first failed read's message.
pub fn warm_from_bal<DB: DatabaseRef + Sync>(
    db: &DB,
    bal: &BlockAccessList,
) -> Result<(), DB::Error>
where
    DB::Error: Send,
{
    bal.par_iter().try_for_each(|account| {
        let info = db.basic_ref(account.address)?;
        if let Some(info) = info {
            if info.code_hash != KECCAK_EMPTY {
                db.code_by_hash_ref(info.code_hash)?;
            }
        }
        let slots = account
            .storage_changes
            .iter()
            .map(|s| s.slot)
            .chain(account.storage_reads.iter().copied());
        for slot in slots {
            db.storage_ref(account.address, slot)?;
        }
        Ok(())
    })
}
