#![doc = include_str!("../README.md")]

mod codec;
pub mod consumer;
mod derive;
mod design;
mod error;
mod model;
mod sizes;
mod verify;

pub use codec::plain_account;
pub use consumer::{derive_designs, design_error, DesignConsumer};
pub use derive::{derive, Missing, PreState, PreValues, TxAccess};
pub use design::{BalDesign, Execution, UnknownDesign};
pub use error::{DesignBalError, Field};
pub use model::{AccountValue, DesignAccount, DesignBal, DesignSlot, PreTxAccount, PreTxSlot};
pub use sizes::{SizeSplit, SizeStats};
pub use verify::{first_difference, verify};
