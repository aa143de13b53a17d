//! Gas limits for the workload's transactions.
//!
//! Every limit is an upper estimate of what the transaction uses at its position, so the
//! block builder never sees an out-of-gas failure it would have to tolerate. The limits
//! are computed from the fork's prices of the operations a transaction performs (from
//! Amsterdam on, as of glamsterdam-devnet-8: state growth priced as state gas, EIP-8037;
//! state access repriced, EIP-8038; calldata and access-list floors rise, EIP-7976/7981),
//! plus a margin. `workload::tests` checks every transaction succeeds and
//! prints used/limit per kind.

use ethrex_common::Fork;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Costs {
    /// Cold account access (EIP-2929; EIP-8038 from Amsterdam on).
    pub(crate) cold_account: u64,
    /// Cold storage slot access.
    pub(crate) cold_slot: u64,
    /// Cold SSTORE zero -> non-zero (regular + state gas).
    pub(crate) slot_new: u64,
    /// Cold SSTORE non-zero -> non-zero.
    pub(crate) slot_update: u64,
    /// Creating an account (value transfer to an empty account).
    pub(crate) new_account: u64,
    /// CREATE/CREATE2 base cost, including the new account.
    pub(crate) create: u64,
    /// Code deposit per byte (including hashing).
    pub(crate) code_byte: u64,
    /// Intrinsic cost per EIP-7702 authorization (charged as if the authority were empty).
    pub(crate) auth: u64,
    /// Calldata floor per byte (EIP-7623 / EIP-7976), for the worst case of non-zero bytes.
    pub(crate) floor_byte: u64,
    /// Access-list intrinsic costs per address and per storage key.
    pub(crate) al_address: u64,
    pub(crate) al_key: u64,
    /// Intrinsic gas of a call carrying no value (before calldata): 21000, and from
    /// Amsterdam EIP-2780's 12000 base plus the recipient's cold access (3000).
    pub(crate) call_intrinsic: u64,
}

impl Costs {
    pub(crate) fn for_fork(fork: Fork) -> Self {
        if fork >= Fork::Amsterdam {
            // EIP-8037: state gas = bytes * 1530 (cost per state byte), on top of the
            // regular part; EIP-8038: cold account 3000, cold slot 2100 (in total), a
            // slot's first write 10000, an account's 9000, CREATE's access 12000;
            // EIP-7702 authorizations 7816 regular plus the account write and state gas.
            const CPSB: u64 = 1530;
            Costs {
                cold_account: 3_000,
                cold_slot: 2_100,
                slot_new: 2_100 + 10_000 + 64 * CPSB,
                slot_update: 2_100 + 10_000,
                new_account: 9_000 + 120 * CPSB,
                create: 12_000 + 120 * CPSB,
                code_byte: CPSB + 1,
                auth: 7_816 + 9_000 + (120 + 23) * CPSB,
                floor_byte: 64,
                al_address: 2_900 + 20 * 64,
                al_key: 2_000 + 32 * 64,
                call_intrinsic: 12_000 + 3_000,
            }
        } else {
            Costs {
                cold_account: 2_600,
                cold_slot: 2_100,
                slot_new: 22_100,
                slot_update: 5_000,
                new_account: 25_000,
                create: 32_000,
                code_byte: 201,
                auth: 25_000,
                floor_byte: 40,
                al_address: 2_400,
                al_key: 1_900,
                call_intrinsic: 21_000,
            }
        }
    }

    /// Limit for a transaction with `data_len` bytes of calldata whose execution (beyond
    /// the intrinsic 21000 + calldata + `extra_intrinsic`) costs at most `exec`: the larger
    /// of the standard charge and the calldata floor, plus a 20% margin.
    pub(crate) fn limit(&self, data_len: usize, extra_intrinsic: u64, exec: u64) -> u64 {
        let data = data_len as u64;
        let standard = 21_000 + 16 * data + extra_intrinsic + exec;
        let floor = 21_000 + self.floor_byte * data + extra_intrinsic;
        let used = standard.max(floor);
        used + used / 5 + 1_000
    }

    /// Intrinsic cost of a contract-creation transaction beyond 21000 + calldata.
    pub(crate) fn create_tx_intrinsic(&self, initcode_len: usize) -> u64 {
        self.create + 2 * (initcode_len as u64).div_ceil(32)
    }
}
