//! The designs by name: what each carries and how its consumer executes.

use std::fmt;
use std::str::FromStr;

/// One block-level access list design. Two axes of the research meet here: read
/// precision (`Full`, `Type2` = batched I/O, `ParallelIo`) and content (`Type1`..`Type6`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BalDesign {
    /// Addresses and slots: prefetch, then sequential execution.
    Type1,
    /// EIP-7928 (= batched I/O): post-transaction diffs plus the keys read.
    Type2,
    /// Addresses, slots and pre-block slot values.
    Type3,
    /// Type 3 plus pre-block account values.
    Type4,
    /// Addresses, slots, pre-block slot values and post-transaction diffs.
    Type5,
    /// Addresses, slots and pre-transaction account and slot values.
    Type6,
    /// Post-transaction diffs plus the pre-block value of every account and slot.
    Full,
    /// Post-transaction diffs only; reads happen on demand.
    ParallelIo,
}

/// How a design's consumer runs the block's transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Execution {
    /// One after the other, on a cache the design warmed or seeded.
    Sequential,
    /// In parallel, every transaction on the pre-state the design gives it.
    Parallel,
}

/// A design name the command line or a report did not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown BAL design {0:?} (expected all or a list of: {names})", names = BalDesign::names())]
pub struct UnknownDesign(pub String);

impl BalDesign {
    /// Every design, each once, in report order.
    pub const ALL: [BalDesign; 8] = [
        BalDesign::Type1,
        BalDesign::Type2,
        BalDesign::Type3,
        BalDesign::Type4,
        BalDesign::Type5,
        BalDesign::Type6,
        BalDesign::Full,
        BalDesign::ParallelIo,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            BalDesign::Type1 => "type1",
            BalDesign::Type2 => "type2",
            BalDesign::Type3 => "type3",
            BalDesign::Type4 => "type4",
            BalDesign::Type5 => "type5",
            BalDesign::Type6 => "type6",
            BalDesign::Full => "full",
            BalDesign::ParallelIo => "parallel-io",
        }
    }

    fn names() -> String {
        let mut names: Vec<&str> = Self::ALL.iter().map(|d| d.name()).collect();
        names.extend(["batched-io", "eip7928"]);
        names.join(", ")
    }

    /// `all`, or a comma-separated list of names and aliases (`batched-io` and `eip7928`
    /// are `type2`); repeated designs are kept once, in first-named order.
    pub fn parse_list(list: &str) -> Result<Vec<BalDesign>, UnknownDesign> {
        if list.trim() == "all" {
            return Ok(Self::ALL.to_vec());
        }
        let mut out = Vec::new();
        for name in list.split(',').map(str::trim) {
            let design = name.parse()?;
            if !out.contains(&design) {
                out.push(design);
            }
        }
        if out.is_empty() {
            return Err(UnknownDesign(list.to_string()));
        }
        Ok(out)
    }

    /// The design carries post-transaction diffs (balance, nonce, code, slot writes).
    pub fn carries_diffs(self) -> bool {
        matches!(
            self,
            BalDesign::Type2 | BalDesign::Type5 | BalDesign::Full | BalDesign::ParallelIo
        )
    }

    /// The design names the accounts and slots only read (every design but parallel I/O).
    pub fn carries_reads(self) -> bool {
        self != BalDesign::ParallelIo
    }

    /// The design carries every slot's pre-block value.
    pub fn carries_pre_block_slots(self) -> bool {
        matches!(self, BalDesign::Type3 | BalDesign::Type4 | BalDesign::Type5 | BalDesign::Full)
    }

    /// The design carries every account's pre-block value (nonce, balance, code hash).
    pub fn carries_pre_block_accounts(self) -> bool {
        matches!(self, BalDesign::Type4 | BalDesign::Full)
    }

    /// The design carries values as they were before each transaction (Type 6).
    pub fn carries_pre_tx_values(self) -> bool {
        self == BalDesign::Type6
    }

    /// Sequential or parallel execution.
    pub fn execution(self) -> Execution {
        match self {
            BalDesign::Type1 | BalDesign::Type3 | BalDesign::Type4 => Execution::Sequential,
            _ => Execution::Parallel,
        }
    }

    /// What it carries, in a few words (for reports).
    pub fn describe(self) -> &'static str {
        match self {
            BalDesign::Type1 => "addresses + slots",
            BalDesign::Type2 => "diffs + keys read (EIP-7928, batched I/O)",
            BalDesign::Type3 => "addresses + slots + pre-block slot values",
            BalDesign::Type4 => "addresses + slots + pre-block slot and account values",
            BalDesign::Type5 => "addresses + slots + pre-block slot values + diffs",
            BalDesign::Type6 => "addresses + slots + pre-transaction values",
            BalDesign::Full => "diffs + pre-block values of every account and slot",
            BalDesign::ParallelIo => "diffs only",
        }
    }
}

impl FromStr for BalDesign {
    type Err = UnknownDesign;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "type1" => BalDesign::Type1,
            "type2" | "batched-io" | "eip7928" => BalDesign::Type2,
            "type3" => BalDesign::Type3,
            "type4" => BalDesign::Type4,
            "type5" => BalDesign::Type5,
            "type6" => BalDesign::Type6,
            "full" => BalDesign::Full,
            "parallel-io" => BalDesign::ParallelIo,
            other => return Err(UnknownDesign(other.to_string())),
        })
    }
}

impl fmt::Display for BalDesign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
