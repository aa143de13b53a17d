//! The in-memory pre-state of the tests comparing the parallel executor with the
//! sequential one, and what they compare.

use crate::common::{sender, SYSTEM_CONTRACTS};
use alloy_primitives::{keccak256, Address, Bytes, U256};
use ethrex_common::{BlockAccessList, Receipt};
use ethrex_vm::{AccountChange, BlockExecutionOutput};
use revm::database::{CacheDB, EmptyDB};
use revm::state::{AccountInfo, Bytecode};

pub(crate) const COUNTER: Address = Address::repeat_byte(0x55);
/// slot 0 += 1
pub(crate) const COUNTER_CODE: &[u8] =
    &[0x60, 0x01, 0x60, 0x00, 0x54, 0x01, 0x60, 0x00, 0x55, 0x00];

/// Three funded senders, the counter, and system contracts that only STOP.
pub(crate) fn pre_state() -> CacheDB<EmptyDB> {
    let mut db = CacheDB::new(EmptyDB::default());
    for i in 0..3 {
        db.insert_account_info(
            sender(i),
            AccountInfo { balance: U256::from(10u64).pow(U256::from(18u64)), ..Default::default() },
        );
    }
    let code = |bytes: &[u8]| {
        let bytecode = Bytecode::new_raw_checked(Bytes::copy_from_slice(bytes)).unwrap();
        AccountInfo { code_hash: keccak256(bytes), code: Some(bytecode), ..Default::default() }
    };
    db.insert_account_info(COUNTER, code(COUNTER_CODE));
    for system in SYSTEM_CONTRACTS {
        db.insert_account_info(system, code(&[0x00]));
    }
    db
}

/// What the two paths are compared on: everything the import checks against the header.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Output {
    pub(crate) gas_used: u64,
    pub(crate) receipts: Vec<Receipt>,
    pub(crate) bal: Option<BlockAccessList>,
    pub(crate) accounts: Vec<AccountChange>,
}

impl From<BlockExecutionOutput> for Output {
    fn from(o: BlockExecutionOutput) -> Self {
        Output { gas_used: o.gas_used, receipts: o.receipts, bal: o.bal, accounts: o.accounts }
    }
}
