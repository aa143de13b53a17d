//! Engine API authentication: HS256 JWTs signed with a 32-byte shared secret, `iat`
//! within 60 seconds of now. The secret file is created (random, hex) if missing, as
//! other clients do, so a consensus client can be pointed at it.

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

const MAX_IAT_DRIFT_SECS: u64 = 60;

/// The 32-byte secret the Engine API's HS256 tokens are signed with, shared with the
/// consensus client.
#[derive(Clone)]
pub struct JwtSecret([u8; 32]);

/// Why a secret could not be loaded or a request's token was rejected.
#[derive(Debug, thiserror::Error)]
pub enum JwtError {
    /// The secret file could not be read, created or parsed: its path and the reason.
    #[error("JWT secret file {0}: {1}")]
    File(String, String),
    /// No `Authorization: Bearer <token>` header.
    #[error("missing or malformed Authorization header")]
    MissingBearer,
    /// The token does not decode, is not HS256-signed with this secret, or has no `iat`.
    #[error("invalid token: {0}")]
    Invalid(String),
    /// The token's `iat` claim is more than 60 seconds away from the local clock.
    #[error("token iat {iat} is more than {MAX_IAT_DRIFT_SECS}s from now ({now})")]
    Stale {
        /// The token's issued-at time, UNIX seconds.
        iat: u64,
        /// The local time it was checked against, UNIX seconds.
        now: u64,
    },
}

#[derive(Deserialize)]
struct Claims {
    iat: u64,
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}

impl JwtSecret {
    /// Parses 32 bytes of hex (surrounding whitespace and a `0x` prefix allowed); the error
    /// says whether the text is not hex or has the wrong length.
    pub fn from_hex(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let text = text.strip_prefix("0x").unwrap_or(text);
        let bytes = alloy_primitives::hex::decode(text).map_err(|e| format!("not hex: {e}"))?;
        let arr: [u8; 32] =
            bytes.try_into().map_err(|b: Vec<u8>| format!("{} bytes, expected 32", b.len()))?;
        Ok(Self(arr))
    }

    /// Reads the secret from `path`; if the file does not exist, creates it (and its
    /// directory) holding a random secret in hex, as other clients do.
    pub fn load_or_create(path: &Path) -> Result<Self, JwtError> {
        let file_err = |e: String| JwtError::File(path.display().to_string(), e);
        match std::fs::read_to_string(path) {
            Ok(text) => Self::from_hex(&text).map_err(file_err),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let secret: [u8; 32] = rand::random();
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| file_err(e.to_string()))?;
                }
                std::fs::write(path, alloy_primitives::hex::encode(secret))
                    .map_err(|e| file_err(e.to_string()))?;
                Ok(Self(secret))
            }
            Err(e) => Err(file_err(e.to_string())),
        }
    }

    /// The raw secret, the HS256 key.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Checks an `Authorization` header value: `Bearer <token>` with a token signed by this
    /// secret (HS256) whose `iat` is within 60 seconds of now; `exp` is not checked.
    pub(crate) fn validate_header(&self, header: Option<&str>) -> Result<(), JwtError> {
        let token =
            header.and_then(|h| h.strip_prefix("Bearer ")).ok_or(JwtError::MissingBearer)?;
        let mut validation = Validation::new(Algorithm::HS256);
        validation.validate_exp = false;
        validation.required_spec_claims.clear();
        let data =
            jsonwebtoken::decode::<Claims>(token, &DecodingKey::from_secret(&self.0), &validation)
                .map_err(|e| JwtError::Invalid(e.to_string()))?;
        let now = now();
        if data.claims.iat.abs_diff(now) > MAX_IAT_DRIFT_SECS {
            return Err(JwtError::Stale { iat: data.claims.iat, now });
        }
        Ok(())
    }

    /// A token signed with this secret for `iat = now`, as a consensus client would send
    /// (tests, tools).
    pub fn token(&self) -> String {
        let claims = serde_json::json!({ "iat": now() });
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(Algorithm::HS256),
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(&self.0),
        )
        .expect("HS256 encoding of a JSON object cannot fail")
    }
}
