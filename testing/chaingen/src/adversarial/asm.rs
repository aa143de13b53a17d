//! A tiny assembler: opcodes, pushes, and labels for jump targets.

use alloy_primitives::{Address, Bytes};
use std::collections::HashMap;

/// The opcodes the contracts use.
pub mod op {
    /// Halt.
    pub const STOP: u8 = 0x00;
    /// a + b.
    pub const ADD: u8 = 0x01;
    /// a - b.
    pub const SUB: u8 = 0x03;
    /// a == 0.
    pub const ISZERO: u8 = 0x15;
    /// Balance of an address.
    pub const BALANCE: u8 = 0x31;
    /// The caller.
    pub const CALLER: u8 = 0x33;
    /// The call value.
    pub const CALLVALUE: u8 = 0x34;
    /// A calldata word.
    pub const CALLDATALOAD: u8 = 0x35;
    /// Calldata length.
    pub const CALLDATASIZE: u8 = 0x36;
    /// Calldata to memory.
    pub const CALLDATACOPY: u8 = 0x37;
    /// Code to memory.
    pub const CODECOPY: u8 = 0x39;
    /// Block timestamp.
    pub const TIMESTAMP: u8 = 0x42;
    /// Block number.
    pub const NUMBER: u8 = 0x43;
    /// Drop the top.
    pub const POP: u8 = 0x50;
    /// A memory word.
    pub const MLOAD: u8 = 0x51;
    /// Store a memory word.
    pub const MSTORE: u8 = 0x52;
    /// A storage slot.
    pub const SLOAD: u8 = 0x54;
    /// Write a storage slot.
    pub const SSTORE: u8 = 0x55;
    /// Jump.
    pub const JUMP: u8 = 0x56;
    /// Conditional jump.
    pub const JUMPI: u8 = 0x57;
    /// Gas left.
    pub const GAS: u8 = 0x5a;
    /// Jump target.
    pub const JUMPDEST: u8 = 0x5b;
    /// Push 0.
    pub const PUSH0: u8 = 0x5f;
    /// Push 1 byte (PUSHn is PUSH1 + n - 1).
    pub const PUSH1: u8 = 0x60;
    /// Push 2 bytes.
    pub const PUSH2: u8 = 0x61;
    /// Duplicate the top.
    pub const DUP1: u8 = 0x80;
    /// Swap the top two.
    pub const SWAP1: u8 = 0x90;
    /// Log with 1 topic.
    pub const LOG1: u8 = 0xa1;
    /// Log with 2 topics.
    pub const LOG2: u8 = 0xa2;
    /// Log with 3 topics.
    pub const LOG3: u8 = 0xa3;
    /// Create a contract.
    pub const CREATE: u8 = 0xf0;
    /// Message call.
    pub const CALL: u8 = 0xf1;
    /// Return memory.
    pub const RETURN: u8 = 0xf3;
    /// Create at a salted address.
    pub const CREATE2: u8 = 0xf5;
    /// Read-only call.
    pub const STATICCALL: u8 = 0xfa;
    /// Revert with memory.
    pub const REVERT: u8 = 0xfd;
    /// Selfdestruct (EIP-6780).
    pub const SELFDESTRUCT: u8 = 0xff;
}

/// Bytecode being assembled, with its labels and the jumps still to patch.
#[derive(Default)]
pub struct Asm {
    code: Vec<u8>,
    labels: HashMap<&'static str, usize>,
    fixups: Vec<(usize, &'static str)>,
}

impl Asm {
    /// Empty code.
    pub fn new() -> Self {
        Self::default()
    }
    /// Appends opcodes without immediates.
    pub fn ops(mut self, ops: &[u8]) -> Self {
        self.code.extend_from_slice(ops);
        self
    }
    /// PUSH0 for zero, otherwise the shortest PUSHn of the big-endian bytes.
    pub fn push(mut self, value: u64) -> Self {
        if value == 0 {
            self.code.push(op::PUSH0);
            return self;
        }
        let bytes = value.to_be_bytes();
        let first = bytes.iter().position(|b| *b != 0).unwrap();
        self.code.push(op::PUSH1 + (7 - first) as u8);
        self.code.extend_from_slice(&bytes[first..]);
        self
    }
    /// PUSH20 address.
    pub fn push_address(mut self, address: Address) -> Self {
        self.code.push(op::PUSH1 + 19);
        self.code.extend_from_slice(address.as_slice());
        self
    }
    /// PUSH2 of a label's offset, patched in `build`.
    pub fn push_label(mut self, label: &'static str) -> Self {
        self.code.push(op::PUSH2);
        self.fixups.push((self.code.len(), label));
        self.code.extend_from_slice(&[0, 0]);
        self
    }
    /// Marks a jump target (emits JUMPDEST).
    pub fn label(mut self, label: &'static str) -> Self {
        assert!(
            self.labels.insert(label, self.code.len()).is_none(),
            "label {label} defined twice"
        );
        self.code.push(op::JUMPDEST);
        self
    }
    /// Bytes assembled so far.
    pub fn len(&self) -> usize {
        self.code.len()
    }
    /// No bytes assembled yet.
    pub fn is_empty(&self) -> bool {
        self.code.is_empty()
    }
    /// The code, with every label reference patched. Panics on an undefined label.
    pub fn build(mut self) -> Bytes {
        for (at, label) in &self.fixups {
            let target =
                *self.labels.get(label).unwrap_or_else(|| panic!("undefined label {label}"));
            self.code[*at..*at + 2].copy_from_slice(&(target as u16).to_be_bytes());
        }
        Bytes::from(self.code)
    }
}

/// Init code: runs `constructor`, then returns `runtime` (copied from the end of the init
/// code) as the deployed code.
pub fn initcode(constructor: Asm, runtime: &[u8]) -> Bytes {
    // PUSH2 len, DUP1, PUSH2 offset, PUSH0, CODECOPY, PUSH0, RETURN = 11 bytes.
    const LOADER: usize = 11;
    let offset = constructor.len() + LOADER;
    let mut code = constructor
        .ops(&[op::PUSH2])
        .ops(&(runtime.len() as u16).to_be_bytes()) // size of the runtime
        .ops(&[op::DUP1]) // keep the size for RETURN
        .ops(&[op::PUSH2])
        .ops(&(offset as u16).to_be_bytes()) // where the runtime starts in the init code
        .ops(&[op::PUSH0, op::CODECOPY]) // memory[0..len] = runtime
        .ops(&[op::PUSH0, op::RETURN]) // return memory[0..len]
        .build()
        .to_vec();
    assert_eq!(code.len(), offset);
    code.extend_from_slice(runtime);
    Bytes::from(code)
}
