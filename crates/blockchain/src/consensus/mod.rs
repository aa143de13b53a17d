//! The consensus rules of each era, each where a reader looks for it: proof-of-work
//! difficulty (`pow`), ommers (`ommers`), London's base fee and gas limit transition
//! (`london`), the merge by total difficulty (`merge`) and the DAO fork's extra data
//! (`dao`). `validation` puts them together per header.

pub mod dao;
pub mod london;
pub mod merge;
pub mod ommers;
pub mod pow;
