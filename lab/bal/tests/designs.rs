//! Every design on a hand-built block: what derivation gives (checked field by field
//! against values worked out by hand), round trips through the encoding, the decoder's
//! refusals, and the check a consumer runs.

use alloy_eips::eip7928::{
    AccountChanges, BalanceChange, BlockAccessIndex, NonceChange, SlotChanges, StorageChange,
};
use alloy_primitives::{Address, U256};
use ethrex_bal::{
    derive, first_difference, plain_account, verify, AccountValue, BalDesign, DesignBal,
    DesignBalError, Field, PreValues, TxAccess,
};

fn addr(n: u8) -> Address {
    Address::with_last_byte(n)
}

fn u(n: u64) -> U256 {
    U256::from(n)
}

/// A block of two transactions (indices 1 and 2):
/// - tx 1 sends 10 wei from A (nonce 0 -> 1, balance 100 -> 90) to B (new account, 0 -> 10);
/// - tx 2 reads A's slots 5 and 9, writes slot 5 (3 -> 7), and reads B;
/// - C is only read, by tx 2 (slot 1 = 0x11).
fn block() -> (Vec<AccountChanges>, PreValues, Vec<TxAccess>) {
    let bal = vec![
        AccountChanges {
            address: addr(0xa),
            storage_changes: vec![SlotChanges {
                slot: u(5),
                changes: vec![StorageChange {
                    block_access_index: BlockAccessIndex(2),
                    new_value: u(7),
                }],
            }],
            storage_reads: vec![u(9)],
            balance_changes: vec![BalanceChange {
                block_access_index: BlockAccessIndex(1),
                post_balance: u(90),
            }],
            nonce_changes: vec![NonceChange {
                block_access_index: BlockAccessIndex(1),
                new_nonce: 1,
            }],
            code_changes: vec![],
        },
        AccountChanges {
            address: addr(0xb),
            balance_changes: vec![BalanceChange {
                block_access_index: BlockAccessIndex(1),
                post_balance: u(10),
            }],
            ..Default::default()
        },
        AccountChanges { address: addr(0xc), storage_reads: vec![u(1)], ..Default::default() },
    ];
    let mut pre = PreValues::default();
    pre.accounts.insert(addr(0xa), Some(plain_account(0, u(100))));
    pre.accounts.insert(addr(0xb), None);
    pre.accounts.insert(addr(0xc), Some(plain_account(1, u(0))));
    pre.slots.insert((addr(0xa), u(5)), u(3));
    pre.slots.insert((addr(0xa), u(9)), u(4));
    pre.slots.insert((addr(0xc), u(1)), u(0x11));
    let tx1: TxAccess = [(addr(0xa), Default::default()), (addr(0xb), Default::default())].into();
    let tx2: TxAccess = [
        (addr(0xa), [u(5), u(9)].into()),
        (addr(0xb), Default::default()),
        (addr(0xc), [u(1)].into()),
    ]
    .into();
    (bal, pre, vec![tx1, tx2])
}

fn derived(design: BalDesign) -> DesignBal {
    let (bal, pre, txs) = block();
    derive(design, &bal, &pre, Some(&txs)).expect("every value is known")
}

const INDICES: u64 = 4; // two transactions + pre- and post-block

#[test]
fn derivation_matches_the_hand_worked_values() {
    // Keys: every design but parallel-io names A (slots 5, 9), B and C (slot 1).
    for design in BalDesign::ALL {
        let d = derived(design);
        let keys: Vec<(Address, U256)> = d.slot_keys().collect();
        if design == BalDesign::ParallelIo {
            assert_eq!(
                d.accounts.iter().map(|a| a.address).collect::<Vec<_>>(),
                [addr(0xa), addr(0xb)]
            );
            assert_eq!(keys, [(addr(0xa), u(5))], "parallel-io carries changed slots only");
        } else {
            assert_eq!(
                d.accounts.iter().map(|a| a.address).collect::<Vec<_>>(),
                [addr(0xa), addr(0xb), addr(0xc)],
                "{design}"
            );
            assert_eq!(keys, [(addr(0xa), u(5)), (addr(0xa), u(9)), (addr(0xc), u(1))], "{design}");
        }
        let a = &d.accounts[0];
        assert_eq!(!a.balance_changes.is_empty(), design.carries_diffs(), "{design}");
        assert_eq!(a.slots[0].changes.len(), usize::from(design.carries_diffs()), "{design}");
        let pre_slots: Vec<Option<U256>> = a.slots.iter().map(|s| s.pre).collect();
        if design.carries_pre_block_slots() {
            assert_eq!(pre_slots, [Some(u(3)), Some(u(4))], "{design}");
        } else {
            assert!(pre_slots.iter().all(Option::is_none), "{design}");
        }
        if design.carries_pre_block_accounts() {
            assert_eq!(a.pre, Some(Some(plain_account(0, u(100)))));
            assert_eq!(d.accounts[1].pre, Some(None), "B did not exist before the block");
        } else {
            assert_eq!(a.pre, None, "{design}");
        }
    }
    // Type 6: A before tx 1 as before the block, before tx 2 after tx 1's transfer; its
    // slots before tx 2 (slot 5 is written by tx 2 itself, so still 3); B absent before
    // tx 1 and holding 10 wei before tx 2; C's slot before tx 2.
    let t6 = derived(BalDesign::Type6);
    let a = &t6.accounts[0];
    assert_eq!(
        a.pre_tx.iter().map(|e| (e.index, e.value)).collect::<Vec<_>>(),
        [(1, Some(plain_account(0, u(100)))), (2, Some(plain_account(1, u(90)))),]
    );
    assert_eq!(
        a.slots[0].pre_tx.iter().map(|e| (e.index, e.value)).collect::<Vec<_>>(),
        [(2, u(3))]
    );
    assert_eq!(
        a.slots[1].pre_tx.iter().map(|e| (e.index, e.value)).collect::<Vec<_>>(),
        [(2, u(4))]
    );
    let b = &t6.accounts[1];
    assert_eq!(
        b.pre_tx.iter().map(|e| (e.index, e.value)).collect::<Vec<_>>(),
        [
            (1, None),
            (
                2,
                Some(AccountValue {
                    nonce: 0,
                    balance: u(10),
                    code_hash: ethrex_common::KECCAK_EMPTY
                })
            ),
        ]
    );
    let c = &t6.accounts[2];
    assert_eq!(c.pre_tx.iter().map(|e| e.index).collect::<Vec<_>>(), [2]);
    assert_eq!(
        c.slots[0].pre_tx.iter().map(|e| (e.index, e.value)).collect::<Vec<_>>(),
        [(2, u(0x11))]
    );
}

#[test]
fn type2_is_eip7928_and_type2_sizes_order() {
    let (bal, _, _) = block();
    let t2 = derived(BalDesign::Type2);
    assert_eq!(t2.to_eip7928(), bal);
    let mut eip = Vec::new();
    alloy_rlp::Encodable::encode(&bal, &mut eip);
    assert_eq!(t2.encode(), eip, "type2's encoding is EIP-7928's byte for byte");
    let size = |d| derived(d).size_split().total;
    assert!(size(BalDesign::Type1) < size(BalDesign::Type3));
    assert!(size(BalDesign::Type3) < size(BalDesign::Type4));
    assert!(size(BalDesign::ParallelIo) < size(BalDesign::Type2));
    assert!(size(BalDesign::Type2) < size(BalDesign::Full));
    for design in BalDesign::ALL {
        let s = derived(design).size_split();
        assert_eq!(s.total, s.accounts + s.slots + s.values + s.code, "{design}");
    }
}

#[test]
fn every_design_round_trips() {
    for design in BalDesign::ALL {
        let d = derived(design);
        let bytes = d.encode();
        let back = DesignBal::decode(design, &bytes, INDICES).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, d, "{design}");
        assert_eq!(back.encode(), bytes, "{design}");
    }
}

#[test]
fn decoder_refuses_non_canonical_input() {
    for design in BalDesign::ALL {
        let d = derived(design);
        // Trailing bytes.
        let mut bytes = d.encode();
        bytes.push(0x80);
        assert!(
            matches!(DesignBal::decode(design, &bytes, INDICES), Err(DesignBalError::Rlp { .. })),
            "{design}"
        );
        // Truncated.
        let bytes = d.encode();
        assert!(DesignBal::decode(design, &bytes[..bytes.len() - 1], INDICES).is_err(), "{design}");
        // Accounts out of order.
        let mut swapped = d.clone();
        swapped.accounts.swap(0, 1);
        assert!(
            matches!(
                DesignBal::decode(design, &swapped.encode(), INDICES),
                Err(DesignBalError::NotCanonical { .. })
            ),
            "{design}"
        );
        // A repeated account.
        let mut repeated = d.clone();
        repeated.accounts.insert(1, d.accounts[0].clone());
        assert!(
            matches!(
                DesignBal::decode(design, &repeated.encode(), INDICES),
                Err(DesignBalError::NotCanonical { .. })
            ),
            "{design}"
        );
        // Slots out of order (A has two slots in every design but parallel-io; in type2
        // they sit in two lists, the changed and the read, each one slot long).
        if !matches!(design, BalDesign::ParallelIo | BalDesign::Type2) {
            let mut slots = d.clone();
            slots.accounts[0].slots.swap(0, 1);
            assert!(
                matches!(
                    DesignBal::decode(design, &slots.encode(), INDICES),
                    Err(DesignBalError::NotCanonical { .. })
                ),
                "{design}"
            );
        }
        // An index past the block.
        if design.carries_diffs() {
            let mut late = d.clone();
            late.accounts[0].balance_changes[0].block_access_index = BlockAccessIndex(INDICES);
            assert!(
                matches!(
                    DesignBal::decode(design, &late.encode(), INDICES),
                    Err(DesignBalError::NotCanonical { .. })
                ),
                "{design}"
            );
        }
    }
    // Type 6: an entry at index 0 (no transaction) and a repeated entry.
    let d = derived(BalDesign::Type6);
    let mut zero = d.clone();
    zero.accounts[2].pre_tx[0].index = 0;
    assert!(matches!(
        DesignBal::decode(BalDesign::Type6, &zero.encode(), INDICES),
        Err(DesignBalError::NotCanonical { .. })
    ));
    let mut repeat = d.clone();
    repeat.accounts[0].pre_tx[1].value = repeat.accounts[0].pre_tx[0].value;
    assert!(matches!(
        DesignBal::decode(BalDesign::Type6, &repeat.encode(), INDICES),
        Err(DesignBalError::NotCanonical { .. })
    ));
    // type2 (EIP-7928) refuses a slot both changed and read.
    let (mut bal, _, _) = block();
    bal[0].storage_reads.push(u(5));
    let mut bytes = Vec::new();
    alloy_rlp::Encodable::encode(&bal, &mut bytes);
    assert!(matches!(
        DesignBal::decode(BalDesign::Type2, &bytes, INDICES),
        Err(DesignBalError::NotCanonical { .. })
    ));
    // ... and a changed slot without a change (it would re-encode as a read).
    let (mut bal, _, _) = block();
    bal[0].storage_changes.push(SlotChanges { slot: u(6), changes: vec![] });
    let mut bytes = Vec::new();
    alloy_rlp::Encodable::encode(&bal, &mut bytes);
    assert!(matches!(
        DesignBal::decode(BalDesign::Type2, &bytes, INDICES),
        Err(DesignBalError::NotCanonical { .. })
    ));
    // parallel-io refuses a slot only read.
    let mut read = derived(BalDesign::ParallelIo);
    read.accounts[0].slots.push(ethrex_bal::DesignSlot { slot: u(9), ..Default::default() });
    assert!(matches!(
        DesignBal::decode(BalDesign::ParallelIo, &read.encode(), INDICES),
        Err(DesignBalError::NotCanonical { .. })
    ));
}

#[test]
fn verify_accepts_the_truth_and_names_each_lie() {
    let (bal, pre, txs) = block();
    for design in BalDesign::ALL {
        let d = derived(design);
        verify(&d, &bal, &pre, Some(&txs)).unwrap_or_else(|e| panic!("{design}: {e}"));
        let field_of = |lie: &DesignBal| match verify(lie, &bal, &pre, Some(&txs)) {
            Err(DesignBalError::Mismatch { field, design: got, .. }) => {
                assert_eq!(got, design);
                field
            }
            other => panic!("{design}: a lie was not refused: {other:?}"),
        };
        // Drop an account.
        let mut lie = d.clone();
        lie.accounts.remove(0);
        assert_eq!(field_of(&lie), Field::Accounts, "{design}");
        // Add an account execution never touched.
        let mut lie = d.clone();
        lie.accounts.push(ethrex_bal::DesignAccount { address: addr(0xf), ..Default::default() });
        assert_eq!(field_of(&lie), Field::Accounts, "{design}");
        // Drop a slot.
        let mut lie = d.clone();
        lie.accounts[0].slots.remove(0);
        assert_eq!(field_of(&lie), Field::Slots, "{design}");
        // Change a carried value.
        let mut lie = d.clone();
        let s = &mut lie.accounts[0].slots[0];
        match design {
            _ if design.carries_pre_block_slots() => {
                s.pre = Some(u(1234));
                assert_eq!(field_of(&lie), Field::PreBlockValue, "{design}");
            }
            BalDesign::Type6 => {
                s.pre_tx[0].value = u(1234);
                assert_eq!(field_of(&lie), Field::PreTxValue, "{design}");
            }
            _ if design.carries_diffs() => {
                s.changes[0].new_value = u(1234);
                assert_eq!(field_of(&lie), Field::Diff, "{design}");
            }
            _ => {}
        }
        if design.carries_pre_block_accounts() {
            let mut lie = d.clone();
            lie.accounts[0].pre = Some(Some(plain_account(0, u(101))));
            assert_eq!(field_of(&lie), Field::PreBlockValue, "{design}");
        }
        if design.carries_diffs() {
            let mut lie = d.clone();
            lie.accounts[0].balance_changes[0].block_access_index = BlockAccessIndex(2);
            assert_eq!(field_of(&lie), Field::Diff, "{design}");
        }
        if design == BalDesign::Type6 {
            let mut lie = d.clone();
            lie.accounts[0].pre_tx[1].index = 1;
            lie.accounts[0].pre_tx.remove(0);
            assert_eq!(field_of(&lie), Field::PreTxValue, "{design}");
        }
        assert!(first_difference(&d, &d).is_none());
    }
}

#[test]
fn design_names_and_aliases() {
    assert_eq!(BalDesign::parse_list("all").unwrap(), BalDesign::ALL.to_vec());
    assert_eq!(
        BalDesign::parse_list("batched-io,eip7928,type2,full").unwrap(),
        [BalDesign::Type2, BalDesign::Full]
    );
    assert!(BalDesign::parse_list("type7").unwrap_err().to_string().contains("type7"));
    for d in BalDesign::ALL {
        assert_eq!(d.name().parse::<BalDesign>().unwrap(), d);
    }
}

#[test]
fn type6_sees_system_call_writes_and_code_the_block_deploys() {
    use alloy_eips::eip7928::CodeChange;
    use alloy_primitives::{keccak256, Bytes};
    let code = Bytes::from_static(&[0x60, 0x00, 0x60, 0x00, 0xf3]);
    // Index 0 (a pre-block system call) writes S's slot 1; tx 1 deploys D; tx 2 reads S's
    // slot 1 and calls D.
    let bal = vec![
        AccountChanges {
            address: addr(0x5),
            storage_changes: vec![SlotChanges {
                slot: u(1),
                changes: vec![StorageChange {
                    block_access_index: BlockAccessIndex(0),
                    new_value: u(0x55),
                }],
            }],
            ..Default::default()
        },
        AccountChanges {
            address: addr(0xd),
            nonce_changes: vec![NonceChange {
                block_access_index: BlockAccessIndex(1),
                new_nonce: 1,
            }],
            code_changes: vec![CodeChange {
                block_access_index: BlockAccessIndex(1),
                new_code: code.clone(),
            }],
            ..Default::default()
        },
    ];
    let mut pre = PreValues::default();
    pre.accounts.insert(addr(0x5), Some(plain_account(1, u(0))));
    pre.accounts.insert(addr(0xd), None);
    pre.slots.insert((addr(0x5), u(1)), u(0));
    let txs: Vec<TxAccess> = vec![
        [(addr(0xd), Default::default())].into(),
        [(addr(0x5), [u(1)].into()), (addr(0xd), Default::default())].into(),
    ];
    let d = derive(BalDesign::Type6, &bal, &pre, Some(&txs)).unwrap();
    let s = &d.accounts[0];
    assert_eq!(
        s.pre_tx.iter().map(|e| (e.index, e.value)).collect::<Vec<_>>(),
        [(2, Some(plain_account(1, u(0))))]
    );
    assert_eq!(
        s.slots[0].pre_tx.iter().map(|e| (e.index, e.value)).collect::<Vec<_>>(),
        [(2, u(0x55))]
    );
    let dep = &d.accounts[1];
    assert_eq!(dep.pre_tx.len(), 2);
    assert_eq!(
        (dep.pre_tx[0].index, dep.pre_tx[0].value, dep.pre_tx[0].code.is_empty()),
        (1, None, true)
    );
    assert_eq!(dep.pre_tx[1].index, 2);
    assert_eq!(
        dep.pre_tx[1].value,
        Some(AccountValue { nonce: 1, balance: u(0), code_hash: keccak256(&code) })
    );
    assert_eq!(dep.pre_tx[1].code, code, "code the block deployed travels with the entry");
    let bytes = d.encode();
    assert_eq!(DesignBal::decode(BalDesign::Type6, &bytes, INDICES).unwrap(), d);
    // Code that does not hash to the entry's code hash is not canonical.
    let mut lie = d.clone();
    lie.accounts[1].pre_tx[1].code = Bytes::from_static(&[0x00]);
    assert!(matches!(
        DesignBal::decode(BalDesign::Type6, &lie.encode(), INDICES),
        Err(DesignBalError::NotCanonical { .. })
    ));
    verify(&d, &bal, &pre, Some(&txs)).unwrap();
}
