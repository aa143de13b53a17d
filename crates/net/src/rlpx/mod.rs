//! placeholder, filled by the rlpx work
