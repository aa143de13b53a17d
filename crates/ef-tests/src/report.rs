//! The text `ethrex ef-test` prints for a run.

use crate::runner::{counts_per_file, CaseResult, Counts, Outcome};

/// The text printed for a run: for each file (in order) its `FAIL`/`SKIP` lines and
/// `file: P passed, F failed, S skipped`; then `K skipped` and, last, `N passed, M failed`.
pub fn report(results: &[CaseResult]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for (file, counts) in counts_per_file(results) {
        for r in results.iter().filter(|r| r.file == file) {
            match &r.outcome {
                Outcome::Passed => {}
                Outcome::Failed(reason) => {
                    _ = writeln!(out, "FAIL {} :: {}: {reason}", r.file.display(), r.name)
                }
                Outcome::Skipped(reason) => {
                    _ = writeln!(out, "SKIP {} :: {}: {reason}", r.file.display(), r.name)
                }
            }
        }
        _ = writeln!(
            out,
            "{}: {} passed, {} failed, {} skipped",
            file.display(),
            counts.passed,
            counts.failed,
            counts.skipped
        );
    }
    let total = Counts::of(results);
    _ = writeln!(out, "{} files, {} tests", counts_per_file(results).len(), total.total());
    _ = writeln!(out, "{} skipped", total.skipped);
    _ = writeln!(out, "{} passed, {} failed", total.passed, total.failed);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn case(file: &str, name: &str, outcome: Outcome) -> CaseResult {
        CaseResult { file: Path::new(file).to_path_buf(), name: name.into(), outcome }
    }

    #[test]
    fn report_counts_every_file_and_prints_every_reason() {
        let results = vec![
            case("b.json", "t1", Outcome::Passed),
            case("a.json", "t2", Outcome::Failed("bad root".into())),
            case(
                "a.json",
                "t3",
                Outcome::Skipped("state_test fixture: not a blockchain_test".into()),
            ),
            case("a.json", "t4", Outcome::Passed),
        ];
        let text = report(&results);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "FAIL a.json :: t2: bad root",
                "SKIP a.json :: t3: state_test fixture: not a blockchain_test",
                "a.json: 1 passed, 1 failed, 1 skipped",
                "b.json: 1 passed, 0 failed, 0 skipped",
                "2 files, 4 tests",
                "1 skipped",
                "2 passed, 1 failed",
            ]
        );
    }
}
