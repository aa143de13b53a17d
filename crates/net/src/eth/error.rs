//! The error decoding or handling an eth message.

/// Why an eth message was rejected. Every variant is a protocol violation by the peer
/// (the caller disconnects it with `SubprotocolError` or `BreachOfProtocol`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EthError {
    /// The payload is larger than [`super::MAX_MESSAGE_SIZE`].
    #[error("eth message of {0} bytes is over the size limit")]
    MessageTooLarge(usize),
    /// The protocol version is not one this implementation speaks.
    #[error("unsupported eth version {0}")]
    UnsupportedVersion(u32),
    /// The message id is not an eth message id.
    #[error("unknown eth message id {code:#x}")]
    UnknownMessage {
        /// The message id, relative to the eth offset.
        code: u64,
    },
    /// The message exists in some eth version but not in the negotiated one (for example
    /// `NewBlock` on eth/69+, or `GetBlockAccessLists` before eth/71).
    #[error("eth message {name} (id {code:#x}) is not part of eth/{version}")]
    NotInVersion {
        /// The negotiated version.
        version: u32,
        /// The message id.
        code: u64,
        /// The message's name.
        name: &'static str,
    },
    /// The payload is not valid RLP for the message.
    #[error("malformed eth message: {0}")]
    Rlp(alloy_rlp::Error),
    /// A list carries more items than allowed.
    #[error("list of more than {max} items")]
    TooManyItems {
        /// The limit that was exceeded.
        max: usize,
    },
    /// The payload has bytes after the message.
    #[error("trailing bytes after the eth message")]
    TrailingBytes,
    /// A field has a value the protocol does not allow.
    #[error("invalid eth message: {0}")]
    Invalid(&'static str),
}

impl From<alloy_rlp::Error> for EthError {
    fn from(e: alloy_rlp::Error) -> Self {
        EthError::Rlp(e)
    }
}
