//! The Engine API target: JSON-RPC request bodies through the handlers the node's
//! authenticated port serves (`ethrex_rpc::server::auth_methods`), without HTTP.

use crate::import_scenario;
use ethrex_chaingen::adversarial::sequential_options;
use ethrex_rpc::server::auth_methods;
use ethrex_rpc::Node;
use serde_json::Value;
use std::sync::{Arc, OnceLock};

/// The statuses a `newPayload` may answer.
const PAYLOAD_STATUSES: [&str; 5] =
    ["VALID", "INVALID", "SYNCING", "ACCEPTED", "INVALID_BLOCK_HASH"];

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime")
    })
}

/// The methods of the Engine API port, sorted: what the selector byte of
/// [`engine_api`] indexes.
pub fn engine_methods() -> &'static [String] {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let node = Arc::new(Node::new(
            import_scenario().chain(import_scenario().memory_store(), sequential_options()),
        ));
        let methods = auth_methods(node).expect("the Engine API methods merge");
        let mut names: Vec<String> = methods.method_names().map(str::to_owned).collect();
        names.sort();
        names
    })
}

/// One JSON-RPC request to a fresh node (an in-memory store holding
/// [`import_scenario`]'s genesis). Byte 0 below `0x80`: it picks the method
/// (`engine_methods()[b % len]`) and the rest, as UTF-8, is the `params` value, spliced
/// into `{"jsonrpc":"2.0","id":1,"method":M,"params":<rest>}` as text. Byte 0 `0x80` or
/// above: the rest is the whole request body.
///
/// Asserts no panic; a parsed request gets a JSON-RPC 2.0 response with exactly one of
/// `result` and `error`; a `newPayload` answer has a known status, and one that is not
/// VALID leaves the store's content (every table, every byte) unchanged, while a VALID one
/// names a block the store holds; afterwards the node still answers `eth_blockNumber`.
pub fn engine_api(data: &[u8]) {
    let [selector, rest @ ..] = data else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let scenario = import_scenario();
    let store = scenario.memory_store();
    let before = store.all_entries().expect("the store reads its entries");
    let node = Arc::new(Node::new(scenario.chain(store, sequential_options())));
    let methods = auth_methods(node.clone()).expect("the Engine API methods merge");
    let (method, body) = if *selector >= 0x80 {
        (None, text.to_owned())
    } else {
        let names = engine_methods();
        let method = names[usize::from(*selector) % names.len()].as_str();
        (Some(method), format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{text}}}"#))
    };
    let rt = runtime();
    let Ok((response, _)) = rt.block_on(methods.raw_json_request(&body, 1)) else {
        return; // not a JSON-RPC request: the server answers a parse error
    };
    let response: Value = serde_json::from_str(response.get()).expect("a JSON response");
    assert_eq!(response["jsonrpc"], "2.0", "{response}");
    let result = response.get("result");
    assert!(result.is_some() != response.get("error").is_some(), "result xor error: {response}");
    let payload = method.is_some_and(|m| m.starts_with("engine_newPayload"));
    if let (true, Some(result)) = (payload, result) {
        let status = result["status"].as_str().unwrap_or_else(|| panic!("no status: {response}"));
        assert!(PAYLOAD_STATUSES.contains(&status), "unknown status: {response}");
        if status == "VALID" {
            let hash = result["latestValidHash"].as_str().expect("a VALID payload names its hash");
            let hash = hash.parse().expect("a block hash");
            assert!(
                node.chain.store.header(&hash).expect("a header read").is_some(),
                "VALID, but the store lacks the block: {response}"
            );
        } else {
            let after = node.chain.store.all_entries().expect("the store reads its entries");
            assert!(after == before, "a {status} payload changed the store: {response}");
        }
    }
    let probe = r#"{"jsonrpc":"2.0","id":2,"method":"eth_blockNumber","params":[]}"#;
    let (answer, _) = rt.block_on(methods.raw_json_request(probe, 1)).expect("a valid request");
    assert!(answer.get().contains("\"result\""), "the node stopped answering: {}", answer.get());
}
