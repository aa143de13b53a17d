//! Corrupt fixtures give a failing result that names the file and the problem; nothing
//! panics. Built on a fixture file, so skipped (with the reason printed) when
//! `EEST_FIXTURES` is not set.

mod common;

use ethrex_ef_tests::{run_file, Mode, Outcome, RunOptions};
use ethrex_storage::DbKind;
use std::path::Path;

fn fixture_text(root: &Path) -> String {
    let path = root.join("block_access_lists_eip7002/bal_7002_no_withdrawal_requests.json");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Each result as `Ok(())` (passed) or `Err(reason)`; a skip here is a bug in the test.
fn run_text(text: &str) -> Vec<Result<(), String>> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("case.json");
    std::fs::write(&path, text).unwrap();
    run_file(&path, &RunOptions::new(DbKind::Memory, Mode::Both))
        .into_iter()
        .map(|r| match r.outcome {
            Outcome::Passed => Ok(()),
            Outcome::Failed(reason) => Err(reason),
            Outcome::Skipped(reason) => panic!("unexpected skip: {reason}"),
        })
        .collect()
}

fn edit_first_block(root: &Path, f: impl Fn(&mut serde_json::Value)) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&fixture_text(root)).unwrap();
    for (_, test) in v.as_object_mut().unwrap().iter_mut() {
        f(&mut test["blocks"][0]);
    }
    v.to_string()
}

#[test]
fn the_unmodified_fixture_passes() {
    let Some(root) = common::fixtures_root() else { return };
    let results = run_text(&fixture_text(&root));
    assert!(!results.is_empty());
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
}

#[test]
fn truncated_file_is_reported_not_panicked() {
    let Some(root) = common::fixtures_root() else { return };
    let text = fixture_text(&root);
    let results = run_text(&text[..text.len() / 2]);
    assert_eq!(results.len(), 1);
    let err = results[0].as_ref().unwrap_err();
    assert!(err.contains("invalid JSON"), "{err}");
}

#[test]
fn malformed_block_rlp_is_reported() {
    let Some(root) = common::fixtures_root() else { return };
    let results = run_text(&edit_first_block(&root, |b| {
        let rlp = b["rlp"].as_str().unwrap().to_string();
        b["rlp"] = serde_json::json!(&rlp[..rlp.len() - 40]);
    }));
    let err = results[0].as_ref().unwrap_err();
    assert!(err.contains("block 0") && err.contains("block RLP does not decode"), "{err}");
}

#[test]
fn undecodable_bal_is_reported() {
    let Some(root) = common::fixtures_root() else { return };
    let results = run_text(&edit_first_block(&root, |b| {
        b["blockAccessList"] = serde_json::json!([{"address": "0xzz"}])
    }));
    let err = results[0].as_ref().unwrap_err();
    assert!(err.contains("block access list does not decode"), "{err}");
}

#[test]
fn tampered_bal_value_is_rejected_by_both_paths() {
    let Some(root) = common::fixtures_root() else { return };
    // A valid block whose BAL has a wrong value but the original header hash: the hash
    // check rejects it, so the fixture (which expects success) fails with that reason.
    let results = run_text(&edit_first_block(&root, |b| {
        let accounts = b["blockAccessList"].as_array_mut().unwrap();
        let last = accounts.last_mut().unwrap();
        last["storageReads"].as_array_mut().unwrap().push(serde_json::json!("0x1234"));
    }));
    let err = results[0].as_ref().unwrap_err();
    assert!(err.contains("block access list hash"), "{err}");
}

#[test]
fn missing_fields_are_reported() {
    let Some(root) = common::fixtures_root() else { return };
    let mut v: serde_json::Value = serde_json::from_str(&fixture_text(&root)).unwrap();
    for (_, test) in v.as_object_mut().unwrap().iter_mut() {
        test.as_object_mut().unwrap().remove("genesisRLP");
    }
    let results = run_text(&v.to_string());
    let err = results[0].as_ref().unwrap_err();
    assert!(err.contains("malformed fixture") && err.contains("genesisRLP"), "{err}");
}
