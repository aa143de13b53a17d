//! Which `expectException` values a block that cannot even be decoded satisfies.
//!
//! A fixture block whose `rlp` (or whose `blockAccessList`) does not decode is rejected
//! before any consensus rule runs, so it proves only that the block is malformed. It
//! therefore satisfies only the exceptions that *are* "this block is malformed", never a
//! rule that needs a decoded block (a hash, a gas limit, an invalid transaction, ...).
//!
//! `expectException` may list alternatives separated by `|`; the block passes when any
//! alternative is satisfied.
//!
//! | expected exception                                  | block RLP does not decode | BAL does not decode |
//! |-----------------------------------------------------|:-------------------------:|:-------------------:|
//! | `BlockException.RLP_*`, `TransactionException.RLP_*` (e.g. `RLP_STRUCTURES_ENCODING`, `RLP_WITHDRAWALS_NOT_READ`, `RLP_INVALID_FIELD_OVERFLOW_64`, `RLP_INVALID_ADDRESS`), except `RLP_BLOCK_LIMIT_EXCEEDED` | yes | no |
//! | `BlockException.INCORRECT_BLOCK_FORMAT`             | yes                       | yes                 |
//! | `TransactionException.TYPE_NOT_SUPPORTED` (a transaction type the decoder does not know) | yes | no |
//! | `BlockException.INVALID_BLOCK_ACCESS_LIST` (the BAL is invalid, malformed included) | no | yes |
//! | everything else, e.g. `BlockException.RLP_BLOCK_LIMIT_EXCEEDED` (a size rule on a decoded block), `BlockException.INVALID_BAL_HASH`, `BlockException.INVALID_BLOCK_HASH`, `BlockException.BLOCK_ACCESS_LIST_GAS_LIMIT_EXCEEDED`, `TransactionException.INSUFFICIENT_ACCOUNT_FUNDS` | no | no |
//!
//! The names used by the fixtures the team runs (tests-bal v7.3.1 and the glamsterdam
//! set): `BlockException.INVALID_BLOCK_ACCESS_LIST`, `BlockException.INCORRECT_BLOCK_FORMAT`,
//! `BlockException.BLOCK_ACCESS_LIST_GAS_LIMIT_EXCEEDED`,
//! `BlockException.INVALID_BAL_HASH|BlockException.INVALID_BLOCK_HASH` and
//! `TransactionException.INSUFFICIENT_ACCOUNT_FUNDS`.

/// What could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeFailure {
    /// The block's `rlp`.
    BlockRlp,
    /// The block's `blockAccessList`.
    Bal,
}

/// The alternatives of an `expectException` value (`A|B` -> `[A, B]`), trimmed.
pub fn alternatives(expected: &str) -> impl Iterator<Item = &str> {
    expected.split('|').map(str::trim).filter(|s| !s.is_empty())
}

/// Whether one exception name is satisfied by a decode failure of the given kind.
pub fn decode_failure_satisfies_one(failure: DecodeFailure, exception: &str) -> bool {
    let Some((family, name)) = exception.split_once('.') else { return false };
    if family != "BlockException" && family != "TransactionException" {
        return false;
    }
    match failure {
        DecodeFailure::BlockRlp => {
            (name.starts_with("RLP_") && name != "RLP_BLOCK_LIMIT_EXCEEDED")
                || exception == "BlockException.INCORRECT_BLOCK_FORMAT"
                || exception == "TransactionException.TYPE_NOT_SUPPORTED"
        }
        DecodeFailure::Bal => {
            exception == "BlockException.INCORRECT_BLOCK_FORMAT"
                || exception == "BlockException.INVALID_BLOCK_ACCESS_LIST"
        }
    }
}

/// Whether an `expectException` value (possibly `A|B|...`) is satisfied by a decode failure.
pub fn decode_failure_satisfies(failure: DecodeFailure, expected: &str) -> bool {
    alternatives(expected).any(|name| decode_failure_satisfies_one(failure, name))
}

/// Whether a rejection reported as `actual` (an exact EF name) is one of the alternatives.
pub fn rejection_satisfies(actual: &str, expected: &str) -> bool {
    alternatives(expected).any(|name| name == actual)
}

#[cfg(test)]
mod tests {
    use super::*;
    use DecodeFailure::*;

    #[test]
    fn block_rlp_failures_satisfy_only_decode_class_names() {
        for yes in [
            "BlockException.RLP_STRUCTURES_ENCODING",
            "BlockException.RLP_WITHDRAWALS_NOT_READ",
            "BlockException.INCORRECT_BLOCK_FORMAT",
            "TransactionException.TYPE_NOT_SUPPORTED",
            "TransactionException.RLP_INVALID_VALUE",
        ] {
            assert!(decode_failure_satisfies(BlockRlp, yes), "{yes}");
        }
        for no in [
            "BlockException.RLP_BLOCK_LIMIT_EXCEEDED",
            "BlockException.INVALID_BLOCK_ACCESS_LIST",
            "BlockException.INVALID_BAL_HASH",
            "BlockException.INVALID_BLOCK_HASH",
            "BlockException.BLOCK_ACCESS_LIST_GAS_LIMIT_EXCEEDED",
            "TransactionException.INSUFFICIENT_ACCOUNT_FUNDS",
            "BlockException.INVALID_STATE_ROOT",
            "RLP_STRUCTURES_ENCODING",
            "SomethingElse.RLP_STRUCTURES_ENCODING",
            "",
        ] {
            assert!(!decode_failure_satisfies(BlockRlp, no), "{no}");
        }
    }

    #[test]
    fn bal_failures_satisfy_only_bal_format_names() {
        assert!(decode_failure_satisfies(Bal, "BlockException.INVALID_BLOCK_ACCESS_LIST"));
        assert!(decode_failure_satisfies(Bal, "BlockException.INCORRECT_BLOCK_FORMAT"));
        for no in [
            "BlockException.INVALID_BAL_HASH",
            "BlockException.BLOCK_ACCESS_LIST_GAS_LIMIT_EXCEEDED",
            "BlockException.RLP_STRUCTURES_ENCODING",
            "TransactionException.INSUFFICIENT_ACCOUNT_FUNDS",
        ] {
            assert!(!decode_failure_satisfies(Bal, no), "{no}");
        }
    }

    #[test]
    fn alternatives_are_split_on_pipes() {
        let both = "BlockException.INVALID_BAL_HASH|BlockException.INVALID_BLOCK_HASH";
        assert!(!decode_failure_satisfies(BlockRlp, both));
        assert!(decode_failure_satisfies(
            BlockRlp,
            "BlockException.INVALID_BAL_HASH | BlockException.RLP_STRUCTURES_ENCODING"
        ));
        assert!(rejection_satisfies("BlockException.INVALID_BLOCK_HASH", both));
        assert!(rejection_satisfies("BlockException.INVALID_BAL_HASH", both));
        assert!(!rejection_satisfies("BlockException.INVALID_BAL", both));
        assert!(!rejection_satisfies(
            "BlockException.INVALID_BLOCK_HASH",
            "BlockException.INVALID_BLOCK_HASHES"
        ));
        assert_eq!(alternatives(" A | |B").collect::<Vec<_>>(), ["A", "B"]);
    }
}
