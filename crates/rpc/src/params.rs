//! Parameter errors as geth reports them, and parameter types stricter than alloy's.
//!
//! jsonrpsee answers a parameter that does not parse with -32602 and the parser's text
//! in the error's `data`; geth puts the reason in the message (`invalid argument 0: ...`)
//! and sends no `data`. Clients and Hive's suite compare `data`, so [`GethParamErrors`]
//! moves it into the message (for single calls; a batch's answers pass unchanged).
//!
//! The same layer answers a subscription asked for over plain HTTP as geth does
//! (-32601 `notifications not supported`, and -32000 `subscription not found` to an
//! unsubscribe); jsonrpsee answers both with a bare -32603 `Internal error`, which reads
//! as a fault of the node.

use crate::error::SERVER_ERROR;
use jsonrpsee::core::middleware::{Batch, Notification, RpcServiceT};
use jsonrpsee::types::error::{INTERNAL_ERROR_CODE, INVALID_PARAMS_CODE, METHOD_NOT_FOUND_CODE};
use jsonrpsee::types::{ErrorObject, Request};
use jsonrpsee::MethodResponse;
use serde::{Deserialize, Deserializer};
use std::future::Future;

/// The layer that installs [`GethParamErrors`].
#[derive(Debug, Clone, Copy, Default)]
pub struct GethParamErrorsLayer;

impl<S> tower::Layer<S> for GethParamErrorsLayer {
    type Service = GethParamErrors<S>;
    fn layer(&self, inner: S) -> Self::Service {
        GethParamErrors(inner)
    }
}

/// Rewrites -32602 answers that carry `data` into geth's form.
#[derive(Debug, Clone)]
pub struct GethParamErrors<S>(S);

impl<S> RpcServiceT for GethParamErrors<S>
where
    S: RpcServiceT<MethodResponse = MethodResponse> + Send + Sync + Clone + 'static,
{
    type MethodResponse = MethodResponse;
    type NotificationResponse = S::NotificationResponse;
    type BatchResponse = S::BatchResponse;

    fn call<'a>(&self, request: Request<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        let inner = self.0.clone();
        async move {
            let id = request.id().into_owned();
            let geth_answer = match request.method_name() {
                "eth_subscribe" => Some((METHOD_NOT_FOUND_CODE, "notifications not supported")),
                "eth_unsubscribe" => Some((SERVER_ERROR, "subscription not found")),
                _ => None,
            };
            let response = inner.call(request).await;
            if let Some((code, message)) = geth_answer.filter(|_| no_subscriptions_here(&response))
            {
                return MethodResponse::error(id, ErrorObject::owned(code, message, None::<()>))
                    .with_extensions(response.extensions().clone());
            }
            if response.as_error_code() != Some(INVALID_PARAMS_CODE) {
                return response;
            }
            match geth_form(response.as_json().get()) {
                Some(message) => MethodResponse::error(
                    id,
                    ErrorObject::owned(INVALID_PARAMS_CODE, message, None::<()>),
                )
                .with_extensions(response.extensions().clone()),
                None => response,
            }
        }
    }

    fn batch<'a>(
        &self,
        requests: Batch<'a>,
    ) -> impl Future<Output = Self::BatchResponse> + Send + 'a {
        self.0.batch(requests)
    }

    fn notification<'a>(
        &self,
        n: Notification<'a>,
    ) -> impl Future<Output = Self::NotificationResponse> + Send + 'a {
        self.0.notification(n)
    }
}

/// Whether `response` is jsonrpsee's answer to a subscription on a connection that
/// cannot carry one (plain HTTP): -32603 with the bare `Internal error` text.
fn no_subscriptions_here(response: &MethodResponse) -> bool {
    if response.as_error_code() != Some(INTERNAL_ERROR_CODE) {
        return false;
    }
    let value: serde_json::Value =
        serde_json::from_str(response.as_json().get()).unwrap_or_default();
    value["error"]["message"] == "Internal error" && value["error"].get("data").is_none()
}

/// `invalid argument: <data>` for an error response with `data`; `None` without.
fn geth_form(json: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let data = value.get("error")?.get("data")?;
    let reason = data.as_str().map_or_else(|| data.to_string(), str::to_string);
    // serde's position suffix means nothing to a caller of a JSON-RPC method.
    let reason = match reason.find(" at line ") {
        Some(i) => &reason[..i],
        None => &reason,
    };
    Some(format!("invalid argument: {reason}"))
}

/// A 32-byte hash that must be written as geth requires: `0x` and 64 hex digits
/// (alloy's own parser also takes them without the prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StrictHash(pub alloy_primitives::B256);

impl<'de> Deserialize<'de> for StrictHash {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let digits = text
            .strip_prefix("0x")
            .ok_or_else(|| serde::de::Error::custom("hex string without 0x prefix"))?;
        if digits.len() != 64 {
            return Err(serde::de::Error::custom(format!(
                "hex string has length {}, want 64 for a 32-byte hash",
                digits.len()
            )));
        }
        let mut bytes = [0u8; 32];
        alloy_primitives::hex::decode_to_slice(digits, &mut bytes)
            .map_err(|e| serde::de::Error::custom(format!("invalid hex string: {e}")))?;
        Ok(Self(bytes.into()))
    }
}
