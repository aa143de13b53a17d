//! The reasons geth appends to "execution reverted", decoded from revert data written
//! out by hand (the ABI encodings of `Error(string)` and `Panic(uint256)`).

use alloy_primitives::hex;
use ethrex_vm::call::revert_reason;

#[test]
fn an_error_string_is_its_text() {
    // Error("user error"): selector, offset 0x20, length 10, the bytes padded.
    let data = hex!("08c379a00000000000000000000000000000000000000000000000000000000000000020000000000000000000000000000000000000000000000000000000000000000a75736572206572726f7200000000000000000000000000000000000000000000");
    assert_eq!(revert_reason(&data).as_deref(), Some("user error"));
}

#[test]
fn a_panic_code_is_its_meaning() {
    let data = hex!("4e487b710000000000000000000000000000000000000000000000000000000000000001");
    assert_eq!(revert_reason(&data).as_deref(), Some("assert(false)"));
    let data = hex!("4e487b710000000000000000000000000000000000000000000000000000000000000011");
    assert_eq!(revert_reason(&data).as_deref(), Some("arithmetic underflow or overflow"));
}

#[test]
fn other_or_truncated_data_has_no_reason() {
    assert_eq!(revert_reason(&hex!("77726f6e672d63616c6c6461746173697a65")), None);
    assert_eq!(revert_reason(&hex!("08c379a0000000")), None);
    // An offset pointing past the end.
    let data = hex!("08c379a000000000000000000000000000000000000000000000000000000000000000ff");
    assert_eq!(revert_reason(&data), None);
}
