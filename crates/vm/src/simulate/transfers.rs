//! The logs a simulated call reports: its own logs, and with `traceTransfers` every
//! ether transfer as an ERC-20 `Transfer` log from the ERC-7528 address, each at the
//! point it happened. Logs of a frame that fails are dropped with it; the index each log
//! got stays used (the suite's expectation: a failed call's logs leave a gap in the
//! block's log indices, where geth 1.17.10 reused them).
//!
//! Written here rather than taken from revm-inspectors' `TransferInspector` because the
//! answers must be geth's: that inspector writes the transfer logs into the journal (so
//! they would reach the receipts, the bloom and the receipts root, which geth keeps
//! free of them), counts CALLCODE as a transfer and gives self-destructs no log; geth's
//! simulation logs self-destructs and skips CALLCODE and DELEGATECALL.

use alloy_primitives::{address, b256, Address, Log, LogData, B256, U256};
use revm::context::ContextTr;
use revm::interpreter::{CallInputs, CallOutcome, CallScheme, CreateInputs, CreateOutcome};
use revm::Inspector;

/// ERC-7528's address for ether, the emitter of transfer logs.
pub const TRANSFER_LOG_ADDRESS: Address = address!("eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee");
/// `keccak256("Transfer(address,address,uint256)")`.
pub const TRANSFER_TOPIC: B256 =
    b256!("ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");

/// Collects one transaction's logs frame by frame.
#[derive(Debug, Default)]
pub(crate) struct CallLogs {
    transfers: bool,
    /// The logs of each open frame, outermost first.
    frames: Vec<Vec<IndexedLog>>,
    /// Per open frame: where its creation's transfer log waits for the new address.
    pending_create: Vec<Option<usize>>,
    /// The transaction's logs once its outermost frame ended (empty if it failed).
    done: Vec<IndexedLog>,
    /// The block-wide index the next log gets.
    next_index: u64,
}

/// A log with its index in the block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedLog {
    /// Its position among the block's logs.
    pub index: u64,
    /// The log.
    pub log: Log,
}

impl CallLogs {
    /// A collector that also logs transfers when `transfers` is set.
    pub(crate) fn new(transfers: bool) -> Self {
        Self { transfers, ..Self::default() }
    }

    /// The logs of the transaction that ran.
    pub(crate) fn take(&mut self) -> Vec<IndexedLog> {
        self.frames.clear();
        self.pending_create.clear();
        std::mem::take(&mut self.done)
    }

    fn transfer(from: Address, to: Address, value: U256) -> Log {
        let topics = vec![TRANSFER_TOPIC, from.into_word(), to.into_word()];
        Log {
            address: TRANSFER_LOG_ADDRESS,
            data: LogData::new_unchecked(topics, B256::from(value).0.to_vec().into()),
        }
    }

    fn enter(&mut self) {
        self.frames.push(Vec::new());
        self.pending_create.push(None);
    }

    fn exit(&mut self, ok: bool) {
        let (Some(frame), Some(_)) = (self.frames.pop(), self.pending_create.pop()) else {
            return;
        };
        match self.frames.last_mut() {
            Some(parent) if ok => parent.extend(frame),
            Some(_) => {}
            None => self.done = if ok { frame } else { Vec::new() },
        }
    }

    fn push(&mut self, log: Log) {
        if let Some(frame) = self.frames.last_mut() {
            frame.push(IndexedLog { index: self.next_index, log });
            self.next_index += 1;
        }
    }
}

impl<CTX: ContextTr> Inspector<CTX> for CallLogs {
    fn log(&mut self, _context: &mut CTX, log: Log) {
        self.push(log);
    }

    fn call(&mut self, _context: &mut CTX, inputs: &mut CallInputs) -> Option<CallOutcome> {
        self.enter();
        let moves_value = !matches!(inputs.scheme, CallScheme::DelegateCall | CallScheme::CallCode);
        let value = inputs.call_value();
        if self.transfers && moves_value && !value.is_zero() {
            self.push(Self::transfer(inputs.caller, inputs.target_address, value));
        }
        None
    }

    fn call_end(&mut self, _context: &mut CTX, _inputs: &CallInputs, outcome: &mut CallOutcome) {
        self.exit(outcome.result.is_ok());
    }

    fn create(&mut self, _context: &mut CTX, inputs: &mut CreateInputs) -> Option<CreateOutcome> {
        self.enter();
        if self.transfers && !inputs.value().is_zero() {
            // The new address is known when the frame ends; the log keeps its place.
            self.push(Self::transfer(inputs.caller(), Address::ZERO, inputs.value()));
            let at = self.frames.last().map_or(0, |f| f.len() - 1);
            if let Some(pending) = self.pending_create.last_mut() {
                *pending = Some(at);
            }
        }
        None
    }

    fn create_end(
        &mut self,
        _context: &mut CTX,
        _inputs: &CreateInputs,
        outcome: &mut CreateOutcome,
    ) {
        let pending = self.pending_create.last().copied().flatten();
        if let (Some(at), Some(address), Some(frame)) =
            (pending, outcome.address, self.frames.last_mut())
        {
            if let Some(IndexedLog { log, .. }) = frame.get_mut(at) {
                let mut topics = log.data.topics().to_vec();
                topics[2] = address.into_word();
                log.data = LogData::new_unchecked(topics, log.data.data.clone());
            }
        }
        self.exit(outcome.result.is_ok());
    }

    fn selfdestruct(&mut self, contract: Address, target: Address, value: U256) {
        if self.transfers && !value.is_zero() {
            self.push(Self::transfer(contract, target, value));
        }
    }
}
