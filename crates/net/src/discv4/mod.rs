//! placeholder, filled by the discv4 work
