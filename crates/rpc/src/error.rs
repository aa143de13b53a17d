//! The one error the public methods answer with, and the JSON-RPC error each kind
//! becomes (codes and messages as geth's where clients match on them).

use ethrex_storage::history::HistoryError;
use ethrex_storage::StoreError;
use jsonrpsee::types::error::{INTERNAL_ERROR_CODE, INVALID_PARAMS_CODE};
use jsonrpsee::types::ErrorObjectOwned;

/// geth's code for a request it understood but cannot serve.
pub const SERVER_ERROR: i32 = -32000;

/// The code of a request over a limit (EIP-1474's "limit exceeded").
pub const LIMIT_EXCEEDED: i32 = -32005;

/// Why a public method could not answer.
#[derive(Debug, thiserror::Error)]
pub enum EthApiError {
    /// The block a state or block query names is not known (geth: `header not found`).
    #[error("header not found")]
    HeaderNotFound,
    /// A block tag the node has no block for yet (`safe`, `finalized`).
    #[error("{0} block not found")]
    LabelNotSet(&'static str),
    /// Historical state that cannot be read.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// A parameter that parsed but makes no sense.
    #[error("{0}")]
    InvalidParams(String),
    /// The transaction pool refused a transaction (geth's words).
    #[error("{0}")]
    Pool(String),
    /// The block a query names by hash is not known (geth: `unknown block`).
    #[error("unknown block")]
    UnknownBlock,
    /// A query past the node's limits (range, results); geth's "limit exceeded" code.
    #[error("{0}")]
    LimitExceeded(String),
    /// A trace that cannot be made (geth's words: `transaction not found`, `genesis is
    /// not traceable`, ...).
    #[error("{0}")]
    Trace(String),
    /// A filter id not installed (or expired), or used for the wrong kind of filter.
    #[error("{0}")]
    Filter(String),
    /// A request the node does not serve.
    #[error("{0}")]
    Unsupported(String),
    /// The store failed.
    #[error("internal error: {0}")]
    Store(#[from] StoreError),
    /// Anything else that should not happen.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<EthApiError> for ErrorObjectOwned {
    fn from(e: EthApiError) -> Self {
        let code = match &e {
            EthApiError::InvalidParams(_) => INVALID_PARAMS_CODE,
            EthApiError::Store(_) | EthApiError::Internal(_) => INTERNAL_ERROR_CODE,
            EthApiError::History(HistoryError::Store(_)) => INTERNAL_ERROR_CODE,
            EthApiError::LimitExceeded(_) => LIMIT_EXCEEDED,
            _ => SERVER_ERROR,
        };
        ErrorObjectOwned::owned(code, e.to_string(), None::<()>)
    }
}

/// What the methods return.
pub type EthResult<T> = Result<T, EthApiError>;
