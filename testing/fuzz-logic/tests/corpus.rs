//! Replays every file of `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/`
//! through the target's logic, on stable: the seeds and every crash the fuzzer found
//! stay checked in CI without libFuzzer.

use std::path::{Path, PathBuf};

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a readable directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_corpus_and_regression_file_passes_its_target() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut total = 0;
    for (name, run) in ethrex_fuzz_logic::TARGETS {
        let corpus = files(&fuzz.join("corpus").join(name));
        assert!(!corpus.is_empty(), "no seed corpus for {name}");
        for path in corpus.iter().chain(&files(&fuzz.join("regressions").join(name))) {
            let data = std::fs::read(path).expect("a readable corpus file");
            let outcome = std::panic::catch_unwind(|| run(&data));
            assert!(outcome.is_ok(), "{name}: {} fails", path.display());
            total += 1;
        }
    }
    assert!(total > 0);
}
