//! HS256 JSON Web Tokens (RFC 7519) with Inmanta's claims (reference/api.md §1.3).
//!
//! Only what the server mints is accepted: the header must say HS256, the signature is checked
//! in constant time before anything else is read, and `iss`, `aud` and `exp` are verified.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

pub const ISSUER: &str = "https://localhost:8888/";
pub const AUDIENCE: &str = "https://localhost:8888/";

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Claims {
    pub iss: String,
    pub aud: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exp: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
    /// Client types, comma separated; missing means `api`.
    #[serde(rename = "urn:inmanta:ct", default, skip_serializing_if = "Option::is_none")]
    pub client_types: Option<String>,
    #[serde(rename = "urn:inmanta:env", default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    #[serde(rename = "urn:inmanta:created_by", default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    #[serde(rename = "urn:inmanta:is_admin", default, skip_serializing_if = "Option::is_none")]
    pub is_admin: Option<bool>,
    /// Our addition to login tokens: a fingerprint of the password they were issued for, so a
    /// password change ends every session of that user.
    #[serde(rename = "urn:inmanta:pwv", default, skip_serializing_if = "Option::is_none")]
    pub password_version: Option<String>,
}

/// A signing key; `Debug` never shows it.
#[derive(Clone)]
pub struct Key(Vec<u8>);

impl Key {
    pub fn new(bytes: Vec<u8>) -> Key {
        Key(bytes)
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(<hidden>)")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the token is malformed")]
    Malformed,
    #[error("the token's signature is not valid for this server")]
    BadSignature,
    #[error("the token was not issued for this server")]
    WrongAudience,
    #[error("the token has expired")]
    Expired,
}

const HEADER: &str = r#"{"alg":"HS256","typ":"JWT"}"#;

pub fn encode(key: &Key, claims: &Claims) -> String {
    let header = URL_SAFE_NO_PAD.encode(HEADER);
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).expect("claims serialize"));
    let signing_input = format!("{header}.{payload}");
    let signature = URL_SAFE_NO_PAD.encode(mac(key, signing_input.as_bytes()).finalize().into_bytes());
    format!("{signing_input}.{signature}")
}

pub fn decode(key: &Key, token: &str, now: i64) -> Result<Claims, TokenError> {
    let mut parts = token.trim().split('.');
    let (Some(header), Some(payload), Some(signature), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenError::Malformed);
    };
    let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|_| TokenError::Malformed)?;
    let signing_input = &token.trim()[..header.len() + 1 + payload.len()];
    mac(key, signing_input.as_bytes()).verify_slice(&signature).map_err(|_| TokenError::BadSignature)?;
    let header: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).map_err(|_| TokenError::Malformed)?)
            .map_err(|_| TokenError::Malformed)?;
    if header.get("alg").and_then(|a| a.as_str()) != Some("HS256") {
        return Err(TokenError::Malformed);
    }
    let claims: Claims = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).map_err(|_| TokenError::Malformed)?)
        .map_err(|_| TokenError::Malformed)?;
    if claims.iss != ISSUER || !claims.aud.iter().any(|a| a == AUDIENCE) {
        return Err(TokenError::WrongAudience);
    }
    if claims.exp.is_some_and(|exp| exp <= now) {
        return Err(TokenError::Expired);
    }
    Ok(claims)
}

fn mac(key: &Key, input: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(&key.0).expect("HMAC takes keys of any length");
    mac.update(input);
    mac
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(exp: Option<i64>) -> Claims {
        Claims { iss: ISSUER.into(), aud: vec![AUDIENCE.into()], exp, sub: Some("alice".into()), ..Claims::default() }
    }

    #[test]
    fn round_trip_and_rejections() {
        let key = Key::new(b"k1".to_vec());
        let token = encode(&key, &claims(Some(100)));
        assert_eq!(decode(&key, &token, 50).unwrap().sub.as_deref(), Some("alice"));
        assert_eq!(decode(&key, &token, 100), Err(TokenError::Expired));
        assert_eq!(decode(&Key::new(b"k2".to_vec()), &token, 50), Err(TokenError::BadSignature));
        // A changed payload with the old signature.
        let mut parts: Vec<&str> = token.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims(None)).unwrap());
        parts[1] = &forged;
        assert_eq!(decode(&key, &parts.join("."), 50), Err(TokenError::BadSignature));
        assert_eq!(decode(&key, "a.b", 50), Err(TokenError::Malformed));
        // "none" algorithm tokens never pass: there is no signature to match.
        let none = format!("{}.{}.", URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#), parts[1]);
        assert!(decode(&key, &none, 50).is_err());
    }
}
