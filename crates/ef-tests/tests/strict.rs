//! The runner's strictness: a decode failure satisfies only decode-class exceptions, a
//! wrong rejection reason or an accepted invalid block fails, `postStateHash` is checked,
//! and every entry of a file is counted (other formats skipped with a reason). Built on
//! fixture files, so skipped (with the reason printed) when `EEST_FIXTURES` is not set.

mod common;

use ethrex_ef_tests::{run_file, Counts, Mode, Outcome, RunOptions};
use ethrex_storage::DbKind;
use serde_json::{json, Value};
use std::path::Path;

/// The single test of a fixture file under `root`: (name, test).
fn fixture(root: &Path, relative: &str) -> (String, Value) {
    let path = root.join(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(v.len(), 1, "{relative} should hold one test");
    v.into_iter().next().unwrap()
}

fn valid_transfer(root: &Path) -> Value {
    fixture(root, "block_access_lists_eip7002/bal_7002_no_withdrawal_requests.json").1
}

fn run_entries(entries: Value) -> Vec<(String, Outcome)> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("case.json");
    std::fs::write(&path, entries.to_string()).unwrap();
    run_file(&path, &RunOptions::new(DbKind::Memory, Mode::Both))
        .into_iter()
        .map(|r| (r.name, r.outcome))
        .collect()
}

fn run_one(test: Value) -> Outcome {
    let mut results = run_entries(json!({ "t": test }));
    assert_eq!(results.len(), 1);
    results.pop().unwrap().1
}

fn failure(outcome: Outcome) -> String {
    match outcome {
        Outcome::Failed(reason) => reason,
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// The self-transfer test with its only block made invalid in the given way: the chain
/// must then end at genesis with the genesis state.
fn rejected_block(root: &Path, edit: impl Fn(&mut Value), exception: &str) -> Value {
    let mut test = valid_transfer(root);
    edit(&mut test["blocks"][0]);
    test["blocks"][0]["expectException"] = json!(exception);
    test["lastblockhash"] = test["genesisBlockHeader"]["hash"].clone();
    test["postState"] = test["pre"].clone();
    test
}

fn truncate_rlp(block: &mut Value) {
    let rlp = block["rlp"].as_str().unwrap().to_string();
    block["rlp"] = json!(&rlp[..rlp.len() - 40]);
}

fn garble_bal(block: &mut Value) {
    block["blockAccessList"] = json!([{ "address": "0xzz" }]);
}

#[test]
fn undecodable_block_satisfies_decode_class_exceptions() {
    let Some(root) = common::fixtures_root() else { return };
    for exception in [
        "BlockException.RLP_STRUCTURES_ENCODING",
        "BlockException.INCORRECT_BLOCK_FORMAT",
        "BlockException.INVALID_BAL_HASH|BlockException.RLP_STRUCTURES_ENCODING",
    ] {
        assert_eq!(
            run_one(rejected_block(&root, truncate_rlp, exception)),
            Outcome::Passed,
            "{exception}"
        );
    }
}

#[test]
fn undecodable_block_does_not_satisfy_other_exceptions() {
    let Some(root) = common::fixtures_root() else { return };
    for exception in [
        "TransactionException.INSUFFICIENT_ACCOUNT_FUNDS",
        "BlockException.INVALID_BLOCK_ACCESS_LIST",
        "BlockException.INVALID_BAL_HASH|BlockException.INVALID_BLOCK_HASH",
        "BlockException.RLP_BLOCK_LIMIT_EXCEEDED",
    ] {
        let reason = failure(run_one(rejected_block(&root, truncate_rlp, exception)));
        assert!(
            reason.contains("block RLP does not decode") && reason.contains("does not satisfy"),
            "{exception}: {reason}"
        );
    }
}

#[test]
fn undecodable_bal_satisfies_only_bal_format_exceptions() {
    let Some(root) = common::fixtures_root() else { return };
    for exception in
        ["BlockException.INVALID_BLOCK_ACCESS_LIST", "BlockException.INCORRECT_BLOCK_FORMAT"]
    {
        assert_eq!(
            run_one(rejected_block(&root, garble_bal, exception)),
            Outcome::Passed,
            "{exception}"
        );
    }
    for exception in [
        "BlockException.INVALID_BAL_HASH",
        "BlockException.BLOCK_ACCESS_LIST_GAS_LIMIT_EXCEEDED",
        "BlockException.RLP_STRUCTURES_ENCODING",
        "TransactionException.INSUFFICIENT_ACCOUNT_FUNDS",
    ] {
        let reason = failure(run_one(rejected_block(&root, garble_bal, exception)));
        assert!(
            reason.contains("block access list does not decode")
                && reason.contains("does not satisfy"),
            "{exception}: {reason}"
        );
    }
}

#[test]
fn rejection_for_another_reason_fails() {
    let Some(root) = common::fixtures_root() else { return };
    let (_, mut test) = fixture(&root, "block_access_lists_invalid/bal_invalid_missing_nonce.json");
    assert_eq!(run_one(test.clone()), Outcome::Passed);
    test["blocks"][0]["expectException"] =
        json!("BlockException.INVALID_BAL_HASH|TransactionException.NONCE_MISMATCH_TOO_LOW");
    let reason = failure(run_one(test));
    assert!(reason.contains("rejected as BlockException.INVALID_BLOCK_ACCESS_LIST"), "{reason}");
}

#[test]
fn valid_block_expected_to_fail_fails() {
    let Some(root) = common::fixtures_root() else { return };
    let mut test = valid_transfer(&root);
    test["blocks"][0]["expectException"] = json!("BlockException.INVALID_BLOCK_ACCESS_LIST");
    let reason = failure(run_one(test));
    assert!(reason.contains("imported, but the fixture expects"), "{reason}");
}

fn with_post_state_hash(root: &Path, hash: &str) -> Value {
    let mut test = valid_transfer(root);
    test.as_object_mut().unwrap().remove("postState");
    test["postStateHash"] = json!(hash);
    test
}

#[test]
fn post_state_hash_is_checked() {
    let Some(root) = common::fixtures_root() else { return };
    let good = valid_transfer(&root)["blocks"][0]["blockHeader"]["stateRoot"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(run_one(with_post_state_hash(&root, &good)), Outcome::Passed);

    let wrong = format!("0x{}", "11".repeat(32));
    let reason = failure(run_one(with_post_state_hash(&root, &wrong)));
    assert!(reason.contains("postStateHash") && reason.contains(&wrong[2..]), "{reason}");

    // After a rejected block the head is genesis: its state root is the one to match.
    let mut rejected =
        rejected_block(&root, truncate_rlp, "BlockException.RLP_STRUCTURES_ENCODING");
    rejected.as_object_mut().unwrap().remove("postState");
    rejected["postStateHash"] = rejected["genesisBlockHeader"]["stateRoot"].clone();
    assert_eq!(run_one(rejected.clone()), Outcome::Passed);
    rejected["postStateHash"] = json!(good);
    failure(run_one(rejected));
}

#[test]
fn post_state_or_its_hash_is_required() {
    let Some(root) = common::fixtures_root() else { return };
    let mut test = valid_transfer(&root);
    test.as_object_mut().unwrap().remove("postState");
    let reason = failure(run_one(test));
    assert!(reason.contains("neither postState nor postStateHash"), "{reason}");
}

#[test]
fn every_entry_of_a_file_is_counted() {
    let Some(root) = common::fixtures_root() else { return };
    let valid = valid_transfer(&root);
    let mut wrong_head = valid.clone();
    wrong_head["lastblockhash"] = json!(format!("0x{}", "22".repeat(32)));
    let mut berlin = valid.clone();
    berlin["network"] = json!("Berlin");
    let mut engine = valid.clone();
    // Recognised by shape (no `_info.fixture-format`).
    engine.as_object_mut().unwrap().remove("blocks");
    engine.as_object_mut().unwrap().remove("_info");
    engine["engineNewPayloads"] = json!([]);
    let state_test = json!({ "env": {}, "pre": {}, "transaction": {}, "post": {} });
    let mut named = valid.clone();
    named["_info"] = json!({ "fixture-format": "blockchain_test_sync" });
    let entries = json!({
        "a_valid": valid,
        "b_valid_again": valid,
        "c_wrong_head": wrong_head,
        "d_berlin": berlin,
        "e_engine": engine,
        "f_state": state_test,
        "g_sync": named,
        "h_not_an_object": [1, 2, 3],
    });

    let results = run_entries(entries);
    let names: Vec<&str> = results.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "a_valid",
            "b_valid_again",
            "c_wrong_head",
            "d_berlin",
            "e_engine",
            "f_state",
            "g_sync",
            "h_not_an_object"
        ]
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.json");
    std::fs::write(&path, "{}").unwrap();
    let empty = run_file(&path, &RunOptions::new(DbKind::Memory, Mode::Sequential));
    assert_eq!(Counts::of(&empty), Counts { passed: 0, failed: 0, skipped: 1 });
    assert_eq!(empty[0].outcome.reason(), Some("the file contains no tests"));

    let outcome = |name: &str| results.iter().find(|(n, _)| n == name).unwrap().1.clone();
    assert_eq!(outcome("a_valid"), Outcome::Passed);
    assert!(failure(outcome("c_wrong_head")).contains("lastblockhash"));
    let skip_reason = |name: &str| match outcome(name) {
        Outcome::Skipped(reason) => reason,
        other => panic!("{name}: expected a skip, got {other:?}"),
    };
    assert!(skip_reason("d_berlin").contains("network Berlin is not supported"));
    assert!(skip_reason("e_engine").contains("blockchain_test_engine"));
    assert!(skip_reason("f_state").contains("state_test"));
    assert!(skip_reason("g_sync").contains("blockchain_test_sync"));
    assert!(skip_reason("h_not_an_object").contains("not a JSON object"));

    let results: Vec<_> = {
        std::fs::write(
            &path,
            json!({ "x": valid_transfer(&root), "y": { "txbytes": "0x" } }).to_string(),
        )
        .unwrap();
        run_file(&path, &RunOptions::new(DbKind::Memory, Mode::Sequential))
    };
    assert_eq!(Counts::of(&results), Counts { passed: 1, failed: 0, skipped: 1 });
    assert!(results.iter().all(|r| r.file == path));
}

#[test]
fn counts_of_a_mixed_file() {
    let Some(root) = common::fixtures_root() else { return };
    let valid = valid_transfer(&root);
    let mut wrong_head = valid.clone();
    wrong_head["lastblockhash"] = json!(format!("0x{}", "33".repeat(32)));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.json");
    let entries = json!({ "p1": valid, "p2": valid, "f1": wrong_head, "s1": { "transaction": {}, "post": {} } });
    std::fs::write(&path, entries.to_string()).unwrap();
    let results = run_file(&path, &RunOptions::new(DbKind::Memory, Mode::Sequential));
    assert_eq!(Counts::of(&results), Counts { passed: 2, failed: 1, skipped: 1 });
    let per_file = ethrex_ef_tests::counts_per_file(&results);
    assert_eq!(per_file, vec![(path.clone(), Counts { passed: 2, failed: 1, skipped: 1 })]);
    let text = ethrex_ef_tests::report(&results);
    assert!(text.contains(&format!("{}: 2 passed, 1 failed, 1 skipped", path.display())), "{text}");
    assert!(text.contains(":: s1: state_test fixture: not a blockchain_test"), "{text}");
    assert!(text.ends_with("1 skipped\n2 passed, 1 failed\n"), "{text}");
}
