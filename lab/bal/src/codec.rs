//! The RLP layout of each design, in the EIP-7928 style: a list of accounts sorted by
//! address, each a list of fields; slots sorted and unique; indices are EIP-7928 block
//! access indices (0 pre-block system calls, `i + 1` transaction `i`, `n + 1` post-block).
//!
//! ```text
//! pre        = [] | [nonce, balance, code_hash]            (an account before the block)
//! changes    = [storage_changes, balance_changes, nonce_changes, code_changes] as in EIP-7928
//! type1      = [[address, [slot, ...]], ...]
//! type2      = EIP-7928: [[address, storage_changes, storage_reads, balance_changes,
//!                          nonce_changes, code_changes], ...]
//! parallel-io= type2 with empty storage_reads and only accounts that changed
//! type3      = [[address, [[slot, pre_value], ...]], ...]
//! type4      = [[address, pre, [[slot, pre_value], ...]], ...]
//! type5      = [[address, [[slot, pre_value, [[index, value], ...]], ...],
//!                balance_changes, nonce_changes, code_changes], ...]
//! full       = [[address, pre, [[slot, pre_value, [[index, value], ...]], ...],
//!                balance_changes, nonce_changes, code_changes], ...]
//! type6      = [[address, [[index, pre, code], ...], [[slot, [[index, value], ...]], ...]], ...]
//! ```
//!
//! Type 5 and full merge each slot's pre-value with its changes (a slot without changes
//! is one only read). Type 6 lists an account or slot value at a transaction's index only
//! when that transaction accesses it (reads or writes) and it differs from the previous
//! entry; `code` is the
//! account's code when an earlier index of the block changed it, else empty.

use crate::model::{AccountValue, DesignAccount, DesignBal, DesignSlot, PreTxAccount, PreTxSlot};
use crate::{BalDesign, DesignBalError};
use alloy_eips::eip7928::{
    AccountChanges, BalanceChange, BlockAccessList, CodeChange, NonceChange, SlotChanges,
    StorageChange,
};
use alloy_primitives::{keccak256, Address, Bytes, U256};
use alloy_rlp::{Decodable, Encodable, Header};
use ethrex_common::KECCAK_EMPTY;

fn list(out: &mut Vec<u8>, f: impl FnOnce(&mut Vec<u8>)) {
    let mut payload = Vec::new();
    f(&mut payload);
    Header { list: true, payload_length: payload.len() }.encode(out);
    out.extend_from_slice(&payload);
}

fn list_of<T>(out: &mut Vec<u8>, items: &[T], mut f: impl FnMut(&T, &mut Vec<u8>)) {
    list(out, |out| items.iter().for_each(|item| f(item, out)));
}

fn encode_pre(pre: &Option<AccountValue>, out: &mut Vec<u8>) {
    list(out, |out| {
        if let Some(a) = pre {
            a.nonce.encode(out);
            a.balance.encode(out);
            a.code_hash.encode(out);
        }
    });
}

fn encode_changes(changes: &[StorageChange], out: &mut Vec<u8>) {
    list_of(out, changes, |c, out| c.encode(out));
}

fn encode_account_diffs(a: &DesignAccount, out: &mut Vec<u8>) {
    list_of(out, &a.balance_changes, |c, out| c.encode(out));
    list_of(out, &a.nonce_changes, |c, out| c.encode(out));
    list_of(out, &a.code_changes, |c, out| c.encode(out));
}

impl DesignBal {
    /// The RLP encoding in the design's layout.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if matches!(self.design, BalDesign::Type2 | BalDesign::ParallelIo) {
            self.to_eip7928().encode(&mut out);
            return out;
        }
        list_of(&mut out, &self.accounts, |a, out| {
            list(out, |out| encode_account(self.design, a, out));
        });
        out
    }

    /// The EIP-7928 BAL this design carries (its diffs, and for Type 2, Type 5 and full
    /// its reads too). Designs without diffs give their keys only.
    pub fn to_eip7928(&self) -> BlockAccessList {
        self.accounts
            .iter()
            .map(|a| AccountChanges {
                address: a.address,
                storage_changes: a
                    .slots
                    .iter()
                    .filter(|s| !s.changes.is_empty())
                    .map(|s| SlotChanges { slot: s.slot, changes: s.changes.clone() })
                    .collect(),
                storage_reads: a
                    .slots
                    .iter()
                    .filter(|s| s.changes.is_empty())
                    .map(|s| s.slot)
                    .collect(),
                balance_changes: a.balance_changes.clone(),
                nonce_changes: a.nonce_changes.clone(),
                code_changes: a.code_changes.clone(),
            })
            .collect()
    }
}

fn encode_account(design: BalDesign, a: &DesignAccount, out: &mut Vec<u8>) {
    a.address.encode(out);
    let pre_slot = |s: &DesignSlot| s.pre.unwrap_or_default();
    match design {
        BalDesign::Type1 => list_of(out, &a.slots, |s, out| s.slot.encode(out)),
        BalDesign::Type3 => list_of(out, &a.slots, |s, out| {
            list(out, |out| {
                s.slot.encode(out);
                pre_slot(s).encode(out);
            })
        }),
        BalDesign::Type4 => {
            encode_pre(&a.pre.unwrap_or_default(), out);
            list_of(out, &a.slots, |s, out| {
                list(out, |out| {
                    s.slot.encode(out);
                    pre_slot(s).encode(out);
                })
            });
        }
        BalDesign::Type5 | BalDesign::Full => {
            if design == BalDesign::Full {
                encode_pre(&a.pre.unwrap_or_default(), out);
            }
            list_of(out, &a.slots, |s, out| {
                list(out, |out| {
                    s.slot.encode(out);
                    pre_slot(s).encode(out);
                    encode_changes(&s.changes, out);
                })
            });
            encode_account_diffs(a, out);
        }
        BalDesign::Type6 => {
            list_of(out, &a.pre_tx, |e, out| {
                list(out, |out| {
                    e.index.encode(out);
                    encode_pre(&e.value, out);
                    e.code.encode(out);
                })
            });
            list_of(out, &a.slots, |s, out| {
                list(out, |out| {
                    s.slot.encode(out);
                    list_of(out, &s.pre_tx, |e, out| {
                        list(out, |out| {
                            e.index.encode(out);
                            e.value.encode(out);
                        })
                    });
                })
            });
        }
        BalDesign::Type2 | BalDesign::ParallelIo => unreachable!("encoded as EIP-7928"),
    }
}

// ---- decoding -------------------------------------------------------------------------

type Res<T> = Result<T, String>;

fn take_list<'a>(buf: &mut &'a [u8]) -> Res<&'a [u8]> {
    let header = Header::decode(buf).map_err(|e| e.to_string())?;
    if !header.list {
        return Err("expected a list, found a string".into());
    }
    if buf.len() < header.payload_length {
        return Err("list runs past the end of the input".into());
    }
    let (payload, rest) = buf.split_at(header.payload_length);
    *buf = rest;
    Ok(payload)
}

fn items<'a, T>(
    mut payload: &'a [u8],
    mut item: impl FnMut(&mut &'a [u8]) -> Res<T>,
) -> Res<Vec<T>> {
    let mut out = Vec::new();
    while !payload.is_empty() {
        out.push(item(&mut payload)?);
    }
    Ok(out)
}

fn value<T: Decodable>(buf: &mut &[u8]) -> Res<T> {
    T::decode(buf).map_err(|e| e.to_string())
}

/// A list whose fields are read by `fields`, which must read all of them.
fn record<'a, T>(buf: &mut &'a [u8], fields: impl FnOnce(&mut &'a [u8]) -> Res<T>) -> Res<T> {
    let mut payload = take_list(buf)?;
    let out = fields(&mut payload)?;
    if !payload.is_empty() {
        return Err("list has more fields than the layout".into());
    }
    Ok(out)
}

fn decode_pre(buf: &mut &[u8]) -> Res<Option<AccountValue>> {
    record(buf, |p| {
        if p.is_empty() {
            return Ok(None);
        }
        Ok(Some(AccountValue { nonce: value(p)?, balance: value(p)?, code_hash: value(p)? }))
    })
}

fn decode_slot_pre(buf: &mut &[u8], with_changes: bool) -> Res<DesignSlot> {
    record(buf, |p| {
        let slot = value(p)?;
        let pre = Some(value(p)?);
        let changes = if with_changes { items(take_list(p)?, value)? } else { Vec::new() };
        Ok(DesignSlot { slot, pre, changes, pre_tx: Vec::new() })
    })
}

fn decode_account_diffs(p: &mut &[u8], a: &mut DesignAccount) -> Res<()> {
    a.balance_changes = items(take_list(p)?, value::<BalanceChange>)?;
    a.nonce_changes = items(take_list(p)?, value::<NonceChange>)?;
    a.code_changes = items(take_list(p)?, value::<CodeChange>)?;
    Ok(())
}

fn decode_account(design: BalDesign, buf: &mut &[u8]) -> Res<DesignAccount> {
    record(buf, |p| {
        let mut a = DesignAccount { address: value::<Address>(p)?, ..Default::default() };
        match design {
            BalDesign::Type1 => {
                a.slots = items(take_list(p)?, |b| {
                    Ok(DesignSlot { slot: value(b)?, ..Default::default() })
                })?;
            }
            BalDesign::Type3 | BalDesign::Type4 => {
                if design == BalDesign::Type4 {
                    a.pre = Some(decode_pre(p)?);
                }
                a.slots = items(take_list(p)?, |b| decode_slot_pre(b, false))?;
            }
            BalDesign::Type5 | BalDesign::Full => {
                if design == BalDesign::Full {
                    a.pre = Some(decode_pre(p)?);
                }
                a.slots = items(take_list(p)?, |b| decode_slot_pre(b, true))?;
                decode_account_diffs(p, &mut a)?;
            }
            BalDesign::Type6 => {
                a.pre_tx = items(take_list(p)?, |b| {
                    record(b, |e| {
                        Ok(PreTxAccount {
                            index: value(e)?,
                            value: decode_pre(e)?,
                            code: value::<Bytes>(e)?,
                        })
                    })
                })?;
                a.slots = items(take_list(p)?, |b| {
                    record(b, |s| {
                        let slot = value(s)?;
                        let pre_tx = items(take_list(s)?, |e| {
                            record(e, |e| Ok(PreTxSlot { index: value(e)?, value: value(e)? }))
                        })?;
                        Ok(DesignSlot { slot, pre_tx, ..Default::default() })
                    })
                })?;
            }
            BalDesign::Type2 | BalDesign::ParallelIo => unreachable!("decoded as EIP-7928"),
        }
        Ok(a)
    })
}

/// The EIP-7928 lists of one account as the merged form; the two slot lists must each
/// ascend strictly (checked here, before merging hides their order).
fn from_eip7928_account(a: AccountChanges) -> Res<DesignAccount> {
    strictly_ascending("changed slot", a.storage_changes.iter().map(|s| s.slot))?;
    strictly_ascending("read slot", a.storage_reads.iter().copied())?;
    if let Some(s) = a.storage_changes.iter().find(|s| s.changes.is_empty()) {
        return Err(format!("account {}: changed slot {:#x} without a change", a.address, s.slot));
    }
    let mut slots: Vec<DesignSlot> = a
        .storage_changes
        .into_iter()
        .map(|s| DesignSlot { slot: s.slot, changes: s.changes, ..Default::default() })
        .chain(a.storage_reads.into_iter().map(|slot| DesignSlot { slot, ..Default::default() }))
        .collect();
    slots.sort_by_key(|s| s.slot);
    if let Some(w) = slots.windows(2).find(|w| w[0].slot == w[1].slot) {
        return Err(format!("account {}: slot {:#x} both changed and read", a.address, w[0].slot));
    }
    Ok(DesignAccount {
        address: a.address,
        slots,
        balance_changes: a.balance_changes,
        nonce_changes: a.nonce_changes,
        code_changes: a.code_changes,
        ..Default::default()
    })
}

impl DesignBal {
    /// Decodes `bytes` as a `design` BAL of a block with `indices` block access indices
    /// (transactions + 2), refusing anything but the one canonical encoding: bytes left
    /// over, non-minimal integers, unsorted or repeated accounts, slots or indices,
    /// indices out of range, empty or redundant entries.
    pub fn decode(design: BalDesign, bytes: &[u8], indices: u64) -> Result<Self, DesignBalError> {
        let rlp = |reason| DesignBalError::Rlp { design, reason };
        let mut buf = bytes;
        let accounts = if matches!(design, BalDesign::Type2 | BalDesign::ParallelIo) {
            let list = take_list(&mut buf).map_err(rlp)?;
            let accounts = items(list, value::<AccountChanges>).map_err(rlp)?;
            accounts
                .into_iter()
                .map(from_eip7928_account)
                .collect::<Res<Vec<_>>>()
                .map_err(|reason| DesignBalError::NotCanonical { design, reason })?
        } else {
            let list = take_list(&mut buf).map_err(rlp)?;
            items(list, |b| decode_account(design, b)).map_err(rlp)?
        };
        if !buf.is_empty() {
            return Err(rlp(format!("{} bytes after the list", buf.len())));
        }
        let bal = DesignBal { design, accounts };
        bal.check_canonical(indices)
            .map_err(|reason| DesignBalError::NotCanonical { design, reason })?;
        Ok(bal)
    }

    /// Whether the value is in its design's canonical form for a block with `indices`
    /// block access indices; the first violation otherwise.
    pub fn check_canonical(&self, indices: u64) -> Result<(), String> {
        strictly_ascending_by("account", self.accounts.iter().map(|a| a.address), |a| {
            a.to_string()
        })?;
        for a in &self.accounts {
            check_account(self.design, a, indices)
                .map_err(|e| format!("account {}: {e}", a.address))?;
        }
        Ok(())
    }
}

fn check_account(design: BalDesign, a: &DesignAccount, indices: u64) -> Res<()> {
    strictly_ascending("slot", a.slots.iter().map(|s| s.slot))?;
    let in_block = |what: &str, list: &mut dyn Iterator<Item = u64>| -> Res<()> {
        let list: Vec<u64> = list.collect();
        strictly_ascending_by(what, list.iter().copied(), |i| i.to_string())?;
        match list.last() {
            Some(&last) if last >= indices => Err(format!(
                "{what} at index {last}, past the block's last index {}",
                indices.saturating_sub(1)
            )),
            _ => Ok(()),
        }
    };
    in_block("balance change", &mut a.balance_changes.iter().map(|c| c.block_access_index.0))?;
    in_block("nonce change", &mut a.nonce_changes.iter().map(|c| c.block_access_index.0))?;
    in_block("code change", &mut a.code_changes.iter().map(|c| c.block_access_index.0))?;
    for s in &a.slots {
        in_block(
            &format!("slot {:#x} change", s.slot),
            &mut s.changes.iter().map(|c| c.block_access_index.0),
        )?;
    }
    if design == BalDesign::ParallelIo {
        if let Some(s) = a.slots.iter().find(|s| s.changes.is_empty()) {
            return Err(format!("slot {:#x} only read (parallel-io carries diffs only)", s.slot));
        }
        if !a.changed() {
            return Err("no diff (parallel-io carries changed accounts only)".into());
        }
    }
    if design == BalDesign::Type6 {
        // Pre-transaction entries belong to transactions: indices 1..=n.
        let tx_index = |what: &str, list: &mut dyn Iterator<Item = u64>| -> Res<()> {
            let list: Vec<u64> = list.collect();
            if list.first() == Some(&0) {
                return Err(format!("{what} at index 0, which is no transaction"));
            }
            in_block(what, &mut list.iter().copied())?;
            match list.last() {
                Some(&last) if last + 1 >= indices => {
                    Err(format!("{what} at index {last}, which is no transaction"))
                }
                _ => Ok(()),
            }
        };
        tx_index("account entry", &mut a.pre_tx.iter().map(|e| e.index))?;
        if let Some(w) =
            a.pre_tx.windows(2).find(|w| w[0].value == w[1].value && w[1].code == w[0].code)
        {
            return Err(format!("account entry at index {} repeats the previous one", w[1].index));
        }
        for e in &a.pre_tx {
            let carried = !e.code.is_empty();
            match e.value {
                Some(v) if carried && keccak256(&e.code) != v.code_hash => {
                    return Err(format!(
                        "entry at index {}: code does not hash to its code hash",
                        e.index
                    ));
                }
                None if carried => {
                    return Err(format!("entry at index {}: code for an absent account", e.index));
                }
                _ => {}
            }
        }
        for s in &a.slots {
            tx_index(&format!("slot {:#x} entry", s.slot), &mut s.pre_tx.iter().map(|e| e.index))?;
            if let Some(w) = s.pre_tx.windows(2).find(|w| w[0].value == w[1].value) {
                return Err(format!(
                    "slot {:#x} entry at index {} repeats the previous value",
                    s.slot, w[1].index
                ));
            }
        }
    }
    Ok(())
}

fn strictly_ascending<T: PartialOrd + std::fmt::LowerHex + Copy>(
    what: &str,
    items: impl Iterator<Item = T>,
) -> Res<()> {
    strictly_ascending_by(what, items, |v| format!("{v:#x}"))
}

fn strictly_ascending_by<T: PartialOrd + Copy>(
    what: &str,
    mut items: impl Iterator<Item = T>,
    show: impl Fn(T) -> String,
) -> Res<()> {
    let Some(mut previous) = items.next() else { return Ok(()) };
    for item in items {
        if item == previous {
            return Err(format!("{what} {} listed twice", show(item)));
        }
        if item < previous {
            return Err(format!("{what} {} listed after {}", show(item), show(previous)));
        }
        previous = item;
    }
    Ok(())
}

/// An account value as an existing account with no code, for tests and hand-built BALs.
pub fn plain_account(nonce: u64, balance: U256) -> AccountValue {
    AccountValue { nonce, balance, code_hash: KECCAK_EMPTY }
}
