//! The block-building core: a builder chain that builds each block from a list of
//! transactions with the client's block builder and imports it.

use ethrex_blockchain::{BlockError, Blockchain, PayloadAttributes};
use ethrex_common::{BlockWithBal, Transaction};

/// Which step of `ChainBuilder::build` failed.
#[derive(Debug)]
pub enum BuildError {
    /// The block did not build: some transaction is invalid on the head.
    Build(BlockError),
    /// The built block did not import.
    Import(BlockError),
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::Build(e) => write!(f, "building: {e}"),
            BuildError::Import(e) => write!(f, "importing the built block: {e}"),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Build(e) | BuildError::Import(e) => Some(e),
        }
    }
}

/// A chain whose head the next block is built on. Every block built goes through
/// `Blockchain::build_block` (from Amsterdam with its BAL) and is then imported with the
/// chain's own import options, which checks the builder's output.
pub struct ChainBuilder {
    /// The chain the blocks are built and imported on (its store holds the head).
    pub chain: Blockchain,
}

impl ChainBuilder {
    /// Builds on `chain`'s head.
    pub fn new(chain: Blockchain) -> Self {
        Self { chain }
    }

    /// Builds a block with exactly `transactions` (in order) on the head, imports it
    /// (it becomes the head), and returns it.
    pub fn build(
        &self,
        attributes: &PayloadAttributes,
        transactions: Vec<Transaction>,
    ) -> Result<BlockWithBal, BuildError> {
        let block = self.chain.build_block(attributes, transactions).map_err(BuildError::Build)?;
        self.chain.import_block(block.clone()).map_err(BuildError::Import)?;
        Ok(block)
    }
}
