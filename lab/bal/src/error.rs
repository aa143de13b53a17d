//! Why a design BAL was refused.

use crate::BalDesign;
use std::fmt;

/// Which part of a design BAL disagreed with execution or the parent state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The list of accounts (one missing, or one execution never touched).
    Accounts,
    /// An account's list of slots.
    Slots,
    /// A carried pre-block account or slot value.
    PreBlockValue,
    /// A post-transaction diff (balance, nonce, code or slot write, or its index).
    Diff,
    /// A carried pre-transaction value (Type 6), or its index.
    PreTxValue,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::Accounts => "accounts",
            Field::Slots => "slots",
            Field::PreBlockValue => "pre-block value",
            Field::Diff => "diff",
            Field::PreTxValue => "pre-transaction value",
        })
    }
}

/// A design BAL refused: undecodable, not canonical, or untrue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DesignBalError {
    /// The bytes are not RLP of the design's layout (or have bytes left over).
    #[error("{design} BAL is not RLP of its layout: {reason}")]
    Rlp {
        /// The design.
        design: BalDesign,
        /// What the decoder met.
        reason: String,
    },
    /// The layout decodes, but is not in its one canonical form (order, uniqueness,
    /// index range, minimal entries).
    #[error("{design} BAL is not canonical: {reason}")]
    NotCanonical {
        /// The design.
        design: BalDesign,
        /// The first violation.
        reason: String,
    },
    /// The BAL says something execution or the parent state contradicts.
    #[error("{design} BAL disagrees with execution ({field}): {reason}")]
    Mismatch {
        /// The design.
        design: BalDesign,
        /// Which part disagreed.
        field: Field,
        /// The first disagreement.
        reason: String,
    },
}

impl DesignBalError {
    /// The design the error is about.
    pub fn design(&self) -> BalDesign {
        match self {
            DesignBalError::Rlp { design, .. }
            | DesignBalError::NotCanonical { design, .. }
            | DesignBalError::Mismatch { design, .. } => *design,
        }
    }
}
