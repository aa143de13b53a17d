#![doc = include_str!("../README.md")]

pub mod bal_lab;
pub mod bench;
pub mod binary;
pub mod cores_model;
mod ef_fixture;
pub mod generate;
pub mod mutate;
pub mod plot;
pub mod report;
pub mod sweep;
