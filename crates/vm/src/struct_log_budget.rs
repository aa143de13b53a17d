//! A bound on the size of a struct-logger trace, so that one `debug_trace*` request
//! cannot take the node's memory.
//!
//! The time limit bounds a trace's steps by the clock, not by bytes: a 5 s loop records
//! millions of steps, each with its stack (and memory, with `enableMemory`), and the
//! storage a step shows is every slot its contract touched so far, so a trace's answer
//! grows without a bound the gas cap would set. [`StructLogBudget`] adds up, step by
//! step, an estimate of each step's size in the answer (an upper bound of its JSON: hex
//! digits of every stack word, 67 bytes a memory word, every slot of the contract's
//! storage so far); past the budget it halts every frame, as the deadline does, and the
//! trace is refused with [`TraceError::TooLarge`](crate::trace::TraceError::TooLarge)
//! instead of being built. The default budget is the public server's largest answer: a
//! trace past it could not be sent anyway. A block's traces share one budget, since
//! they make one answer.

use alloy_primitives::{Address, U256};
use revm::bytecode::opcode;
use revm::inspector::Inspector;
use revm::interpreter::interpreter_types::{InputsTr, Jumps, MemoryTr, ReturnData, StackTr};
use revm::interpreter::{InstructionResult, Interpreter, InterpreterTypes};
use rustc_hash::{FxHashMap, FxHashSet};

/// The largest answer the public server sends (`HTTP_MAX_RESPONSE` in the rpc crate).
pub const DEFAULT_STRUCT_LOG_BUDGET: usize = 128 * 1024 * 1024;

/// A step's fields other than stack, memory, return data and storage, with their keys
/// (`{"pc":..,"op":"..","gas":..,"gasCost":..,"depth":..}`), at their widest.
const STEP_BYTES: usize = 112;
/// A memory word in the answer: 64 hex digits, quotes and a comma.
const MEMORY_WORD_BYTES: usize = 67;
/// A storage entry in the answer: two quoted 64-digit words, a colon and a comma.
const STORAGE_ENTRY_BYTES: usize = 136;

/// What the struct logger records, as its options ask.
#[derive(Debug, Clone, Copy)]
pub struct Recorded {
    /// Each step's stack (unless `disableStack`).
    pub stack: bool,
    /// Each step's memory (`enableMemory`).
    pub memory: bool,
    /// Each step's return data (`enableReturnData`).
    pub return_data: bool,
    /// The storage of each SLOAD and SSTORE step (unless `disableStorage`).
    pub storage: bool,
}

/// Halts the EVM once the struct logger's answer would pass the budget;
/// [`StructLogBudget::hit`] tells the caller the trace was cut short.
#[derive(Debug)]
pub struct StructLogBudget {
    left: usize,
    recorded: Recorded,
    /// The slots each contract's steps have shown so far (a step shows them all).
    slots: FxHashMap<Address, FxHashSet<U256>>,
    hit: bool,
}

impl StructLogBudget {
    /// A budget of `bytes` for a trace recording `recorded`.
    pub fn new(bytes: usize, recorded: Recorded) -> Self {
        Self { left: bytes, recorded, slots: FxHashMap::default(), hit: false }
    }

    /// Whether the run was halted because the trace outgrew the budget.
    pub fn hit(&self) -> bool {
        self.hit
    }

    /// The bytes of budget left (for the next trace of the same answer).
    pub fn left(&self) -> usize {
        self.left
    }

    /// The step's estimated size in the answer.
    fn step_bytes<INTR: InterpreterTypes>(&mut self, interp: &Interpreter<INTR>) -> usize {
        let mut bytes = STEP_BYTES;
        if self.recorded.stack {
            // "0x", the digits (at least one), quotes and a comma.
            let digits = |w: &U256| (w.bit_len().div_ceil(4)).max(1);
            bytes += interp.stack.data().iter().map(|w| digits(w) + 5).sum::<usize>();
        }
        if self.recorded.memory {
            bytes += interp.memory.size().div_ceil(32) * MEMORY_WORD_BYTES;
        }
        if self.recorded.return_data {
            bytes += 2 * interp.return_data.buffer().len() + 4;
        }
        let op = interp.bytecode.opcode();
        if self.recorded.storage && matches!(op, opcode::SLOAD | opcode::SSTORE) {
            if let Some(slot) = interp.stack.data().last() {
                let seen = self.slots.entry(interp.input.target_address()).or_default();
                seen.insert(*slot);
                bytes += seen.len() * STORAGE_ENTRY_BYTES;
            }
        }
        bytes
    }
}

impl<CTX, INTR: InterpreterTypes> Inspector<CTX, INTR> for StructLogBudget {
    #[inline]
    fn step(&mut self, interp: &mut Interpreter<INTR>, _context: &mut CTX) {
        if !self.hit {
            let bytes = self.step_bytes(interp);
            match self.left.checked_sub(bytes) {
                Some(left) => {
                    self.left = left;
                    return;
                }
                None => self.hit = true,
            }
        }
        // Every frame, the ones below included, stops at its next step.
        interp.halt(InstructionResult::OutOfGas);
    }
}
