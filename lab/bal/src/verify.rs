//! A consumer's check of the design BAL it was given: derive the design again from its
//! own execution and the parent state, and compare. Canonical form makes the derived
//! value unique, so any lie in any field shows as a difference; the first one found is
//! named with the field it is in.

use crate::derive::{derive, Missing, PreState, TxAccess};
use crate::error::Field;
use crate::model::{DesignAccount, DesignBal};
use crate::DesignBalError;
use alloy_eips::eip7928::BlockAccessList;

/// `given` is exactly the design of a block whose execution produced `bal`, on a parent
/// state `pre` answers for (it must know every value `given` carries), with
/// per-transaction accesses `txs` (Type 6).
pub fn verify(
    given: &DesignBal,
    bal: &BlockAccessList,
    pre: &dyn PreState,
    txs: Option<&[TxAccess]>,
) -> Result<(), DesignBalError> {
    let design = given.design;
    let mismatch = |field, reason| DesignBalError::Mismatch { design, field, reason };
    let derived = derive(design, bal, pre, txs).map_err(|m| match m {
        Missing::Account(a) => {
            mismatch(Field::Accounts, format!("execution touched {a}, which it does not list"))
        }
        Missing::Slot(a, s) => mismatch(
            Field::Slots,
            format!("execution touched slot {s:#x} of {a}, which it does not list"),
        ),
        Missing::TxAccesses => mismatch(Field::PreTxValue, "no per-transaction accesses".into()),
    })?;
    match first_difference(given, &derived) {
        None => Ok(()),
        Some((field, reason)) => Err(mismatch(field, reason)),
    }
}

/// The first place where `given` and `derived` differ (`None`: equal).
pub fn first_difference(given: &DesignBal, derived: &DesignBal) -> Option<(Field, String)> {
    let mut g = given.accounts.iter().peekable();
    let mut d = derived.accounts.iter().peekable();
    loop {
        match (g.peek(), d.peek()) {
            (None, None) => return None,
            (Some(a), None) => return Some(extra_account(a)),
            (None, Some(b)) => return Some(missing_account(b)),
            (Some(a), Some(b)) if a.address < b.address => return Some(extra_account(a)),
            (Some(a), Some(b)) if a.address > b.address => return Some(missing_account(b)),
            (Some(a), Some(b)) => {
                if let Some(found) = account_difference(a, b) {
                    return Some(found);
                }
                g.next();
                d.next();
            }
        }
    }
}

fn extra_account(a: &DesignAccount) -> (Field, String) {
    (Field::Accounts, format!("lists {}, which execution did not touch", a.address))
}

fn missing_account(a: &DesignAccount) -> (Field, String) {
    (Field::Accounts, format!("execution touched {}, which it does not list", a.address))
}

fn account_difference(g: &DesignAccount, d: &DesignAccount) -> Option<(Field, String)> {
    let at = |what: String| format!("account {}: {what}", g.address);
    let g_slots: Vec<_> = g.slots.iter().map(|s| s.slot).collect();
    let d_slots: Vec<_> = d.slots.iter().map(|s| s.slot).collect();
    if g_slots != d_slots {
        // Both lists ascend (canonical form), so one merge finds the first slot in one
        // and not the other.
        let (mut i, mut j) = (0, 0);
        let reason = loop {
            match (g_slots.get(i), d_slots.get(j)) {
                (Some(g), Some(d)) if g == d => (i, j) = (i + 1, j + 1),
                (Some(g), Some(d)) if g < d => {
                    break format!("lists slot {g:#x}, which execution did not touch")
                }
                (Some(g), None) => {
                    break format!("lists slot {g:#x}, which execution did not touch")
                }
                (_, Some(d)) => {
                    break format!("execution touched slot {d:#x}, which it does not list")
                }
                (None, None) => break "slot lists differ".into(),
            }
        };
        return Some((Field::Slots, at(reason)));
    }
    if g.pre != d.pre {
        return Some((
            Field::PreBlockValue,
            at(format!("carries {:?} before the block, the parent state holds {:?}", g.pre, d.pre)),
        ));
    }
    for (gs, ds) in g.slots.iter().zip(&d.slots) {
        // The slot's fields against what execution and the parent state give; the first
        // that differs is the lie (formatted only then: this runs for every slot).
        let differs = [
            (gs.pre != ds.pre, Field::PreBlockValue),
            (gs.changes != ds.changes, Field::Diff),
            (gs.pre_tx != ds.pre_tx, Field::PreTxValue),
        ];
        if let Some(&(_, field)) = differs.iter().find(|f| f.0) {
            let (given, truth) = match field {
                Field::PreBlockValue => (format!("{:?}", gs.pre), format!("{:?}", ds.pre)),
                Field::Diff => (format!("{:?}", gs.changes), format!("{:?}", ds.changes)),
                _ => (format!("{:?}", gs.pre_tx), format!("{:?}", ds.pre_tx)),
            };
            let reason = format!(
                "slot {:#x} {field}: carries {given}, execution and the parent state give {truth}",
                gs.slot
            );
            return Some((field, at(reason)));
        }
    }
    if g.balance_changes != d.balance_changes
        || g.nonce_changes != d.nonce_changes
        || g.code_changes != d.code_changes
    {
        return Some((
            Field::Diff,
            at(format!(
                "balance/nonce/code changes {:?} {:?} {} code, execution wrote {:?} {:?} {} code",
                g.balance_changes,
                g.nonce_changes,
                g.code_changes.len(),
                d.balance_changes,
                d.nonce_changes,
                d.code_changes.len()
            )),
        ));
    }
    if g.pre_tx != d.pre_tx {
        let index = g
            .pre_tx
            .iter()
            .zip(&d.pre_tx)
            .find(|(a, b)| a != b)
            .map_or_else(|| "count".to_string(), |(a, _)| format!("index {}", a.index));
        return Some((Field::PreTxValue, at(format!("pre-transaction entries differ at {index}"))));
    }
    None
}
