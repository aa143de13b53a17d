//! The installed polling filters (`eth/filters.rs` serves them): what each watches, where
//! it stopped, when it was last polled; bounded in count, expired when not polled.

use crate::error::{EthApiError, EthResult};
use alloy_primitives::U256;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The most filters installed at once.
pub(crate) const MAX_FILTERS: usize = 10_000;
/// How long a filter lives without being polled.
pub(crate) const FILTER_TIMEOUT: Duration = Duration::from_secs(300);

/// What a filter watches.
pub(crate) enum Kind {
    Blocks,
    Logs {
        filter: Value,
    },
    /// Transactions the pool admits as executable; `next` is the admission number to
    /// report from (`Node::admitted_since`).
    Pending {
        next: u64,
        /// Whole transactions (as `eth_getTransactionByHash` gives pooled ones), not hashes.
        full: bool,
    },
}

/// One installed filter.
pub(crate) struct Installed {
    pub(crate) kind: Kind,
    /// The last canonical block number it reported.
    pub(crate) last: u64,
    /// When it was last polled.
    pub(crate) polled: Instant,
}

/// The installed filters, by id.
#[derive(Default)]
pub(crate) struct Filters {
    next: u64,
    pub(crate) installed: HashMap<u64, Installed>,
}

impl Filters {
    pub(crate) fn install(&mut self, kind: Kind, head: u64) -> EthResult<U256> {
        let now = Instant::now();
        self.installed.retain(|_, f| now.duration_since(f.polled) < FILTER_TIMEOUT);
        if self.installed.len() >= MAX_FILTERS {
            return Err(EthApiError::LimitExceeded(format!(
                "too many filters installed (max {MAX_FILTERS})"
            )));
        }
        self.next += 1;
        self.installed.insert(self.next, Installed { kind, last: head, polled: now });
        Ok(U256::from(self.next))
    }
}

/// The filter registry every `EthRpc` clone shares.
pub(crate) type SharedFilters = std::sync::Arc<Mutex<Filters>>;
