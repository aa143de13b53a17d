//! Why an Engine API call failed (as opposed to a payload found INVALID, which is an
//! answer, not a failure). Each error carries the code the Engine API specification
//! gives it (execution-apis `src/engine/common.md`); the RPC layer only transports it.

/// A failed Engine API call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// `-38001`: no payload is being built under that id.
    #[error("Unknown payload")]
    UnknownPayload,
    /// `-38002`: the fork choice names blocks that do not form a chain.
    #[error("Invalid forkchoice state: {0}")]
    InvalidForkchoiceState(String),
    /// `-38003`: the payload attributes do not fit the fork at their timestamp.
    #[error("Invalid payload attributes: {0}")]
    InvalidPayloadAttributes(String),
    /// `-38004`: more items asked for than one response carries.
    #[error("Too large request")]
    TooLargeRequest,
    /// `-38005`: the method version does not serve this fork.
    #[error("Unsupported fork: {0}")]
    UnsupportedFork(String),
    /// `-32602`: a parameter is malformed.
    #[error("{0}")]
    InvalidParams(String),
    /// `-32603`: the node failed (storage, missing state); nothing was decided.
    #[error("{0}")]
    Internal(String),
}

impl EngineError {
    /// The JSON-RPC error code.
    pub fn code(&self) -> i32 {
        match self {
            EngineError::UnknownPayload => -38001,
            EngineError::InvalidForkchoiceState(_) => -38002,
            EngineError::InvalidPayloadAttributes(_) => -38003,
            EngineError::TooLargeRequest => -38004,
            EngineError::UnsupportedFork(_) => -38005,
            EngineError::InvalidParams(_) => -32602,
            EngineError::Internal(_) => -32603,
        }
    }

    /// A node failure.
    pub(crate) fn internal(e: impl std::fmt::Display) -> Self {
        EngineError::Internal(e.to_string())
    }
}
