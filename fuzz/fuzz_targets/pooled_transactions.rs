#![no_main]
//! See `ethrex_fuzz_logic::pooled_transactions` for what this target calls and asserts.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ethrex_fuzz_logic::pooled_transactions(data));
