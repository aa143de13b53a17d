//! The import pipeline's stages and extension points, each checked against an independent
//! result: the path the options choose, the batch loop against block-by-block import, an
//! execution strategy's output checked like the built-in paths', the observer's changes
//! against the store, and which rejections are verdicts.

use alloy_primitives::B256;
use ethrex_blockchain::error::BalMismatch;
use ethrex_blockchain::{
    BlockError, Blockchain, Cores, ExecutionPath, ExecutionStrategy, ImportObserver, ImportOptions,
    ImportOutcome, InvalidBlock, NodeFault, StateChanges, StrategyInput, StrategyOutput, Threshold,
};
use ethrex_chaingen::adversarial::{generate_chain, snapshot, GeneratedChain, Scenario};
use ethrex_common::BlockWithBal;
use ethrex_vm::{execute_block_sequential, recover_senders, Recovery};
use std::sync::Mutex;
use std::time::Duration;

fn chain(scenario: &Scenario, options: ImportOptions) -> Blockchain {
    scenario.chain(scenario.memory_store(), options)
}

fn options(cores: Cores, threshold: Threshold) -> ImportOptions {
    ImportOptions { cores, threshold, ..ImportOptions::default() }
}

fn generated(seed: u64, blocks: usize) -> (Scenario, GeneratedChain) {
    (Scenario::new(), generate_chain(seed, blocks))
}

#[test]
fn the_threshold_and_cores_choose_the_path_and_every_path_ends_in_the_same_state() {
    let (scenario, generated) = generated(7, 3);
    let cases = [
        (Cores::Pool, Threshold::MinTxs(0), ExecutionPath::Parallel),
        (Cores::Pool, Threshold::MinTxs(usize::MAX), ExecutionPath::SequentialSmallBlock),
        (Cores::Pool, Threshold::Never, ExecutionPath::SequentialDisabled),
        (Cores::One, Threshold::MinTxs(0), ExecutionPath::SequentialDisabled),
    ];
    let mut states = Vec::new();
    for (cores, threshold, want) in cases {
        let chain = chain(&scenario, options(cores, threshold));
        for block in &generated.blocks {
            let outcome = chain.import_block(block.clone()).expect("a valid block");
            assert_eq!(outcome.path, want, "{cores:?} {threshold:?}, block {}", outcome.number);
            assert_eq!(outcome.hash, block.hash());
        }
        states.push(snapshot(&chain.store));
    }
    assert!(states.windows(2).all(|w| w[0] == w[1]), "the paths end in different states");
}

/// Records every block the chain reports.
#[derive(Default)]
struct Recorder(Mutex<Vec<(u64, StateChanges, Duration)>>);

impl ImportObserver for Recorder {
    fn block_imported(&self, outcome: &ImportOutcome, changes: &StateChanges) {
        self.0.lock().unwrap().push((outcome.number, changes.clone(), outcome.timings.total));
    }
}

#[test]
fn the_observer_sees_every_block_with_the_changes_the_store_holds() {
    let (scenario, generated) = generated(11, 3);
    let recorder = std::sync::Arc::new(Recorder::default());
    let chain = chain(&scenario, ImportOptions::default()).with_observer(recorder.clone());
    for block in &generated.blocks {
        chain.import_block(block.clone()).unwrap();
        let seen = recorder.0.lock().unwrap();
        let (number, changes, total) = seen.last().expect("the observer was called");
        assert_eq!(*number, block.number());
        assert!(*total > Duration::ZERO);
        assert!(!changes.accounts.is_empty());
        // Each changed account's post-block value is what the store now holds.
        for change in &changes.accounts {
            let stored = chain.store.account(&change.address).unwrap();
            match change.info {
                Some((nonce, balance, code_hash)) => {
                    let stored = stored.expect("a changed account exists");
                    assert_eq!(
                        (stored.nonce, stored.balance, stored.code_hash),
                        (nonce, balance, code_hash)
                    );
                }
                None => assert!(stored.is_none(), "{} was deleted", change.address),
            }
            for (slot, value) in &change.storage {
                assert_eq!(chain.store.storage(&change.address, slot).unwrap(), *value);
            }
        }
    }
    assert_eq!(recorder.0.lock().unwrap().len(), generated.blocks.len());
}

/// A change to a strategy's output.
type Tamper = fn(&mut StrategyOutput);

/// Executes sequentially, then tampers with the output as told.
struct Sequential {
    tamper: Tamper,
}

impl ExecutionStrategy for Sequential {
    fn execute(&self, input: StrategyInput<'_>) -> Result<StrategyOutput, BlockError> {
        let senders = recover_senders(&input.block.body.transactions, Recovery::Pool)?;
        let output =
            execute_block_sequential(input.cache, input.block, &senders, &input.chain.config)?;
        let mut out = StrategyOutput {
            senders,
            output,
            fell_back: false,
            warmer: Duration::ZERO,
            exec: Duration::ZERO,
            validate: Duration::ZERO,
        };
        (self.tamper)(&mut out);
        Ok(out)
    }
}

/// Fails as a node would when its storage does.
struct Broken;

impl ExecutionStrategy for Broken {
    fn execute(&self, _: StrategyInput<'_>) -> Result<StrategyOutput, BlockError> {
        Err(BlockError::storage("the strategy's disk failed"))
    }
}

#[test]
fn a_strategys_output_is_checked_like_the_pipelines_and_a_lie_leaves_no_trace() {
    let (scenario, generated) = generated(13, 2);
    let plain = chain(&scenario, ImportOptions::default());
    let with = chain(&scenario, ImportOptions::default());
    let block = &generated.blocks[0];
    let before = snapshot(&with.store);
    let lies: [(Tamper, &str); 4] = [
        (|o| o.output.gas_used += 1, "BlockException.INVALID_GAS_USED"),
        (|o| drop(o.output.receipts.pop()), "BlockException.INVALID_RECEIPTS_ROOT"),
        (|o| o.output.bal = None, "BlockException.INVALID_BLOCK_ACCESS_LIST"),
        (
            |o| o.output.accounts.iter_mut().for_each(|a| a.storage.clear()),
            "BlockException.INVALID_STATE_ROOT",
        ),
    ];
    for (tamper, want) in lies {
        let error = with.import_block_with(block.clone(), &Sequential { tamper }).unwrap_err();
        assert!(error.is_invalid_block(), "{want}: {error}");
        assert_eq!(error.ef_exception(), want);
        assert_eq!(snapshot(&with.store), before, "{want} left a trace");
    }
    if let Err(BlockError::Invalid(InvalidBlock::BalMismatch(reason))) =
        with.import_block_with(block.clone(), &Sequential { tamper: |o| o.output.bal = None })
    {
        assert_eq!(reason, BalMismatch::NotBuilt);
    } else {
        panic!("a missing BAL is a BAL mismatch");
    }

    let fault = with.import_block_with(block.clone(), &Broken).unwrap_err();
    assert!(matches!(fault, BlockError::Fault(NodeFault::Storage(_))), "{fault:?}");
    assert!(!fault.is_invalid_block());
    assert_eq!(snapshot(&with.store), before);

    for block in &generated.blocks {
        let outcome =
            with.import_block_with(block.clone(), &Sequential { tamper: |_| {} }).unwrap();
        assert_eq!(outcome.path, ExecutionPath::Strategy);
        plain.import_block(block.clone()).unwrap();
    }
    assert_eq!(snapshot(&with.store), snapshot(&plain.store));
}

#[test]
fn the_batch_loop_matches_block_by_block_import_and_stops_at_an_invalid_block() {
    let (scenario, generated) = generated(17, 6);
    let one_by_one = chain(&scenario, options(Cores::Pool, Threshold::MinTxs(0)));
    for block in &generated.blocks {
        one_by_one.import_block(block.clone()).unwrap();
    }
    let batched = chain(&scenario, options(Cores::Pool, Threshold::MinTxs(0)));
    let outcomes = batched.import_batch(&generated.blocks).expect("a valid batch");
    let numbers: Vec<u64> = outcomes.iter().map(|o| o.number).collect();
    let want: Vec<u64> = generated.blocks.iter().map(BlockWithBal::number).collect();
    assert_eq!(numbers, want);
    // A block that cannot go on with its unit is imported on its own, on the parallel
    // path; the first two blocks form a unit.
    let paths: Vec<_> = outcomes.iter().map(|o| o.path).collect();
    assert_eq!(paths[..2], [ExecutionPath::ParallelBatch; 2], "{paths:?}");
    assert!(
        paths.iter().all(|p| matches!(p, ExecutionPath::ParallelBatch | ExecutionPath::Parallel)),
        "{paths:?}"
    );
    batched.store.flush().unwrap();
    assert_eq!(snapshot(&batched.store), snapshot(&one_by_one.store));

    // Block 3 of 6 claims another state root: the batch imports 0-2 and stops there.
    let mut blocks = generated.blocks.clone();
    blocks[3].block.header.state_root = B256::repeat_byte(0x55);
    let stopped = chain(&scenario, options(Cores::Pool, Threshold::MinTxs(0)));
    let error = stopped.import_batch(&blocks).unwrap_err();
    assert_eq!(error.number, blocks[3].number());
    assert_eq!(error.imported.len(), 3);
    // The changed header no longer extends block 2 by hash only for blocks 4 and 5; block
    // 3 itself is judged on its own, with `import_block`'s verdict.
    assert_eq!(error.source.ef_exception(), "BlockException.INVALID_STATE_ROOT");
    assert_eq!(stopped.store.head().unwrap(), Some(blocks[2].hash()));

    // Without the pool, the batch is block-by-block sequential import.
    let sequential = chain(&scenario, options(Cores::One, Threshold::MinTxs(0)));
    let outcomes = sequential.import_batch(&generated.blocks).unwrap();
    assert!(outcomes.iter().all(|o| o.path == ExecutionPath::SequentialDisabled));
    sequential.store.flush().unwrap();
    assert_eq!(snapshot(&sequential.store), snapshot(&one_by_one.store));
}

#[test]
fn a_block_on_an_unknown_or_stale_parent_is_not_judged() {
    let (scenario, generated) = generated(19, 2);
    let chain = chain(&scenario, ImportOptions::default());
    // The second block's parent was never imported.
    let error = chain.import_block(generated.blocks[1].clone()).unwrap_err();
    assert_eq!(error, BlockError::Fault(NodeFault::UnknownParent(generated.blocks[0].hash())));
    assert!(!error.is_invalid_block());
    assert_eq!(error.ef_exception(), "BlockException.UNKNOWN_PARENT");

    let mut orphan = generated.blocks[0].clone();
    orphan.block.header.parent_hash = B256::repeat_byte(0x11);
    assert!(matches!(
        chain.import_block(orphan).unwrap_err(),
        BlockError::Fault(NodeFault::UnknownParent(_))
    ));

    // The first block imports; importing it again finds its parent no longer the head.
    chain.import_block(generated.blocks[0].clone()).unwrap();
    let again = chain.import_block(generated.blocks[0].clone()).unwrap_err();
    assert!(matches!(again, BlockError::Fault(NodeFault::ParentStateUnavailable(_))), "{again:?}");
}

#[test]
fn an_amsterdam_block_without_its_bal_is_checked_against_the_header_and_its_built_bal_stored() {
    let (scenario, generated) = generated(11, 3);
    let with_bal = chain(&scenario, ImportOptions::default());
    let without = chain(&scenario, ImportOptions::default());
    for block in &generated.blocks {
        with_bal.import_block(block.clone()).expect("a valid block with its BAL");
        let bare = BlockWithBal { block: block.block.clone(), bal: None };

        // The same block committing to another BAL: execution builds the real one, whose
        // hash is not the header's.
        let mut lying = bare.clone();
        lying.block.header.block_access_list_hash = Some(B256::repeat_byte(0x5a));
        let before = snapshot(&without.store);
        let err = without.import_block(lying).expect_err("a header committing to another BAL");
        assert!(
            matches!(err, BlockError::Invalid(InvalidBlock::BalHashMismatch { .. })),
            "block {}: {err}",
            block.number()
        );
        assert_eq!(snapshot(&without.store), before, "a rejected block left a trace");

        let outcome = without.import_block(bare).expect("the block imports without its BAL");
        assert_eq!(outcome.path, ExecutionPath::SequentialNoBal);
        let hash = block.hash();
        assert_eq!(
            without.store.bal(&hash).unwrap().as_ref(),
            block.bal.as_ref(),
            "the stored BAL is not the one the block was built with"
        );
    }
    assert_eq!(snapshot(&without.store), snapshot(&with_bal.store));
}
