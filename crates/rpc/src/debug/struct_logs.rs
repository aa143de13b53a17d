//! The struct logger's answer in geth's shape, written step by step.
//!
//! A deep trace has millions of steps; as a `serde_json::Value` tree each step's keys and
//! hex words are separate allocations, several times the answer's bytes. So the steps
//! are shaped as revm-inspectors' typed `StructLog`s and serialized one at a time into
//! the answer's text, each step's memory freed as it is written: the answer is built
//! beside the recorded steps, not beside a tree of them.

use alloy_primitives::{B256, U256};
use alloy_rpc_types_trace::geth::{DefaultFrame, StructLog};
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::BTreeMap;

/// `frame` as geth writes it: `gas`, `failed`, `returnValue`, `structLogs` first (the
/// frame's other fields after them), and each step as [`shape_step`] leaves it.
pub(crate) fn struct_logger_json(
    mut frame: DefaultFrame,
) -> Result<Box<RawValue>, serde_json::Error> {
    let logs = std::mem::take(&mut frame.struct_logs);
    let mut fields = match serde_json::to_value(&frame)? {
        Value::Object(fields) => fields,
        _ => Default::default(),
    };
    fields.shift_remove("structLogs");
    let mut out: Vec<u8> = Vec::with_capacity(256 + logs.len() * 128);
    out.push(b'{');
    for key in ["gas", "failed", "returnValue"] {
        if let Some(value) = fields.shift_remove(key) {
            write_entry(&mut out, key, &value)?;
            out.push(b',');
        }
    }
    out.extend_from_slice(b"\"structLogs\":[");
    let mut frames: Vec<BTreeMap<B256, B256>> = Vec::new();
    let mut logs = logs.into_iter().peekable();
    let mut first = true;
    while let Some(mut log) = logs.next() {
        storage_at_access(&mut log, logs.peek(), &mut frames);
        let mut step = serde_json::to_value(&log)?;
        drop(log);
        if let Some(step) = step.as_object_mut() {
            shape_step(step);
        }
        if !first {
            out.push(b',');
        }
        first = false;
        serde_json::to_writer(&mut out, &step)?;
    }
    out.push(b']');
    for (key, value) in &fields {
        out.push(b',');
        write_entry(&mut out, key, value)?;
    }
    out.push(b'}');
    // serde_json's output and ASCII punctuation: UTF-8.
    let text = String::from_utf8(out).map_err(serde::ser::Error::custom)?;
    RawValue::from_string(text)
}

/// `"key":value` into `out`.
fn write_entry(out: &mut Vec<u8>, key: &str, value: &Value) -> Result<(), serde_json::Error> {
    serde_json::to_writer(&mut *out, key)?;
    out.push(b':');
    serde_json::to_writer(&mut *out, value)
}

/// A step as geth writes it: its error in geth's words, the fixed cost of an opcode that
/// ran out of gas (revm-inspectors shows 0), no zero `refund`, no empty `returnData`.
fn shape_step(log: &mut serde_json::Map<String, Value>) {
    if let Some(error) = log.get("error").and_then(Value::as_str) {
        let geth = geth_step_error(error);
        if geth == "out of gas" && log.get("gasCost").and_then(Value::as_u64) == Some(0) {
            let op = log.get("op").and_then(Value::as_str).unwrap_or_default();
            if let Some(cost) = static_cost(op) {
                log.insert("gasCost".into(), Value::from(cost));
            }
        }
        log.insert("error".into(), Value::from(geth));
    }
    if log.get("refund").and_then(Value::as_u64) == Some(0) {
        log.shift_remove("refund");
    }
    if log.get("returnData").and_then(Value::as_str) == Some("0x") {
        log.shift_remove("returnData");
    }
}

/// geth's storage snapshot: at each `SLOAD` and `SSTORE` step, every slot the running
/// contract has loaded or stored so far, this step's included (the value loaded, the
/// top of the `next` step's stack; or the value stored, the second item of this step's
/// stack), in slot order as geth's map is written. revm-inspectors records a step's slot
/// from the next step on and not the earlier loads, so the snapshots are rebuilt from the
/// steps, one map per call frame in `frames` (geth keeps one per contract address: the
/// two differ only when a contract's code runs in two frames of one transaction).
fn storage_at_access(
    log: &mut StructLog,
    next: Option<&StructLog>,
    frames: &mut Vec<BTreeMap<B256, B256>>,
) {
    let depth = (log.depth as usize).max(1);
    frames.resize_with(depth, Default::default);
    let op = log.op.as_ref();
    if (op != "SLOAD" && op != "SSTORE") || log.storage.is_none() {
        return;
    }
    let Some(stack) = log.stack.as_deref() else { return };
    let Some(key) = stack.last() else { return };
    let value = if op == "SSTORE" {
        stack.len().checked_sub(2).map(|j| stack[j])
    } else {
        next.filter(|next| next.depth == log.depth)
            .and_then(|next| next.stack.as_deref()?.last().copied())
    };
    let Some(value) = value else { return };
    let frame = &mut frames[depth - 1];
    frame.insert(word(key), word(&value));
    log.storage = Some(frame.clone());
}

/// A stack word as a storage key or value.
fn word(value: &U256) -> B256 {
    B256::from(value.to_be_bytes())
}

/// The fixed cost of an opcode whose cost has no dynamic part: geth's struct logger shows
/// it on the step that ran out of gas, where revm-inspectors shows 0. (revm keeps gas in
/// its instruction table, which it does not expose by opcode; the Yellow Paper's tiers.)
fn static_cost(op: &str) -> Option<u64> {
    const BASE: &[&str] = &[
        "ADDRESS",
        "ORIGIN",
        "CALLER",
        "CALLVALUE",
        "CALLDATASIZE",
        "CODESIZE",
        "GASPRICE",
        "COINBASE",
        "TIMESTAMP",
        "NUMBER",
        "DIFFICULTY",
        "PREVRANDAO",
        "GASLIMIT",
        "CHAINID",
        "RETURNDATASIZE",
        "POP",
        "PC",
        "MSIZE",
        "GAS",
        "BASEFEE",
        "BLOBBASEFEE",
        "PUSH0",
    ];
    const VERY_LOW: &[&str] = &[
        "ADD",
        "SUB",
        "NOT",
        "LT",
        "GT",
        "SLT",
        "SGT",
        "EQ",
        "ISZERO",
        "AND",
        "OR",
        "XOR",
        "BYTE",
        "SHL",
        "SHR",
        "SAR",
        "CALLDATALOAD",
        "BLOBHASH",
        "CLZ",
    ];
    const LOW: &[&str] = &["MUL", "DIV", "SDIV", "MOD", "SMOD", "SIGNEXTEND", "SELFBALANCE"];
    Some(match op {
        _ if BASE.contains(&op) => 2,
        _ if VERY_LOW.contains(&op) => 3,
        _ if op.starts_with("PUSH") || op.starts_with("DUP") || op.starts_with("SWAP") => 3,
        _ if LOW.contains(&op) => 5,
        "ADDMOD" | "MULMOD" | "JUMP" => 8,
        "JUMPI" => 10,
        "JUMPDEST" => 1,
        _ => return None,
    })
}

/// A step's error in geth's words where revm-inspectors gives revm's debug name.
fn geth_step_error(error: &str) -> String {
    let name = error.strip_prefix("Some(").and_then(|e| e.strip_suffix(')')).unwrap_or(error);
    match name {
        "OutOfGas" | "MemoryOOG" | "MemoryLimitOOG" | "PrecompileOOG" | "InvalidOperandOOG" => {
            "out of gas".into()
        }
        "InvalidJump" => "invalid jump destination".into(),
        "Revert" => "execution reverted".into(),
        "StateChangeDuringStaticCall" => "write protection".into(),
        "CallTooDeep" => "max call depth exceeded".into(),
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(op: &'static str, depth: u64, stack: &[u64]) -> StructLog {
        let storage = matches!(op, "SLOAD" | "SSTORE").then(BTreeMap::new);
        StructLog {
            op: op.into(),
            depth,
            gas: 100,
            stack: Some(stack.iter().map(|w| U256::from(*w)).collect()),
            storage,
            ..Default::default()
        }
    }

    fn frame(logs: Vec<StructLog>) -> Value {
        let frame =
            DefaultFrame { failed: false, gas: 21_000, struct_logs: logs, ..Default::default() };
        serde_json::from_str(struct_logger_json(frame).unwrap().get()).unwrap()
    }

    fn hex(n: u64) -> String {
        format!("{:#066x}", n)
    }

    #[test]
    fn each_storage_step_shows_every_slot_its_frame_touched_so_far_in_slot_order() {
        // SLOAD 9 (loads 5, the next step's top), SSTORE 2 := 7, SLOAD 2 (loads 7).
        let json = frame(vec![
            step("SLOAD", 1, &[9]),
            step("PUSH1", 1, &[5]),
            step("SSTORE", 1, &[7, 2]),
            step("SLOAD", 1, &[2]),
            step("STOP", 1, &[7]),
        ]);
        let logs = json["structLogs"].as_array().unwrap();
        assert_eq!(logs.len(), 5);
        let storage = |i: usize| logs[i]["storage"].as_object().unwrap().clone();
        assert_eq!(storage(0).into_iter().collect::<Vec<_>>(), vec![(hex(9), hex(5).into())]);
        let keys: Vec<String> = storage(2).keys().cloned().collect();
        assert_eq!(keys, vec![hex(2), hex(9)], "slot order, not the order touched");
        assert_eq!(storage(2)[&hex(2)], Value::from(hex(7)));
        assert_eq!(storage(3).len(), 2);
        assert!(logs[1].get("storage").is_none(), "only SLOAD and SSTORE steps show storage");
    }

    #[test]
    fn a_frame_entered_again_at_a_depth_starts_with_no_slots() {
        let json = frame(vec![
            step("SLOAD", 2, &[1]),
            step("STOP", 2, &[3]),
            step("CALL", 1, &[]),
            step("SLOAD", 2, &[4]),
            step("STOP", 2, &[6]),
        ]);
        let logs = json["structLogs"].as_array().unwrap();
        let keys: Vec<&String> = logs[3]["storage"].as_object().unwrap().keys().collect();
        assert_eq!(keys, vec![&hex(4)]);
    }

    #[test]
    fn the_answer_has_geths_field_order_and_step_shapes() {
        let mut oog = step("ADD", 1, &[1, 2]);
        oog.error = Some("OutOfGas".into());
        oog.gas_cost = 0;
        oog.refund_counter = Some(0);
        oog.return_data = Some(Default::default());
        let frame =
            DefaultFrame { failed: true, gas: 7, struct_logs: vec![oog], ..Default::default() };
        let text = struct_logger_json(frame).unwrap().get().to_string();
        assert!(text.starts_with(r#"{"gas":7,"failed":true,"returnValue":"#), "{text}");
        let json: Value = serde_json::from_str(&text).unwrap();
        let log = &json["structLogs"][0];
        assert_eq!(log["error"], "out of gas");
        assert_eq!(log["gasCost"], 3, "ADD's fixed cost on the step that ran out of gas");
        assert!(log.get("refund").is_none() && log.get("returnData").is_none(), "{log}");
    }
}
