//! What the fixture-reading tests share: where the EF fixtures are, if anywhere.
//!
//! The fixtures are not part of the repository, so these tests run only when
//! `EEST_FIXTURES` names them (CI and `scripts/test.sh` set it); otherwise each test prints
//! why it is skipped and passes, so `cargo test` works in a fresh clone.

use std::path::PathBuf;

/// The fixtures directory from `EEST_FIXTURES`, or `None` (after printing the skip
/// reason) when it is unset or empty. A set but wrong path is the test's error, not a skip.
pub(crate) fn fixtures_root() -> Option<PathBuf> {
    match std::env::var_os("EEST_FIXTURES") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            eprintln!("skipping: EEST_FIXTURES not set");
            None
        }
    }
}
