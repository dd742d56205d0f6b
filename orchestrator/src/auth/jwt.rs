//! JSON Web Tokens (RFC 7519) with Inmanta's claims (reference/api.md §1.3), signed and checked
//! by the `jsonwebtoken` crate.
//!
//! Only what the server mints is accepted: the algorithm is pinned to HS256 (a token claiming
//! any other, `none` included, is refused), and `iss`, `aud` and `exp` (when present: registered
//! environment tokens may be unlimited) are verified with a configured clock leeway.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

pub const ISSUER: &str = "https://localhost:8888/";
pub const AUDIENCE: &str = "https://localhost:8888/";

/// The one algorithm the server signs with and accepts.
const ALGORITHM: Algorithm = Algorithm::HS256;

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

impl Claims {
    /// The claims every token this server mints carries: its issuer and audience.
    pub fn issued_here() -> Claims {
        Claims { iss: ISSUER.into(), aud: vec![AUDIENCE.into()], ..Claims::default() }
    }
}

/// The signing key and the rules a token must pass; `Debug` never shows the key.
#[derive(Clone)]
pub struct Key {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl Key {
    /// A key from the secret's bytes; `leeway` is the clock skew (seconds) tolerated on `exp`,
    /// for replicas whose clocks differ a little.
    pub fn new(secret: &[u8], leeway: u64) -> Key {
        let mut validation = Validation::new(ALGORITHM);
        validation.set_issuer(&[ISSUER]);
        validation.set_audience(&[AUDIENCE]);
        // Registered environment tokens may have no expiry; when a token has one, it is checked.
        validation.required_spec_claims.clear();
        validation.validate_exp = true;
        validation.leeway = leeway;
        Key { encoding: EncodingKey::from_secret(secret), decoding: DecodingKey::from_secret(secret), validation }
    }

    pub fn set_leeway(&mut self, seconds: u64) {
        self.validation.leeway = seconds;
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Key(<hidden>, leeway {} s)", self.validation.leeway)
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

pub fn encode(key: &Key, claims: &Claims) -> String {
    jsonwebtoken::encode(&Header::new(ALGORITHM), claims, &key.encoding).expect("HS256 signs with any key")
}

pub fn decode(key: &Key, token: &str) -> Result<Claims, TokenError> {
    jsonwebtoken::decode::<Claims>(token.trim(), &key.decoding, &key.validation).map(|data| data.claims).map_err(|e| {
        match e.kind() {
            ErrorKind::InvalidSignature => TokenError::BadSignature,
            ErrorKind::ExpiredSignature => TokenError::Expired,
            ErrorKind::InvalidIssuer | ErrorKind::InvalidAudience => TokenError::WrongAudience,
            _ => TokenError::Malformed,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> i64 {
        chrono::Utc::now().timestamp()
    }

    fn claims(exp: Option<i64>) -> Claims {
        Claims { exp, sub: Some("alice".into()), ..Claims::issued_here() }
    }

    /// The token with its payload replaced by another one, the signature left as it was.
    fn with_payload(token: &str, payload: &Claims) -> String {
        let other = encode(&Key::new(b"other", 0), payload);
        let mut parts: Vec<&str> = token.split('.').collect();
        parts[1] = other.split('.').nth(1).unwrap();
        parts.join(".")
    }

    #[test]
    fn round_trip_and_rejections() {
        let key = Key::new(b"k1", 0);
        let token = encode(&key, &claims(Some(now() + 100)));
        assert_eq!(decode(&key, &token).unwrap().sub.as_deref(), Some("alice"));
        assert_eq!(decode(&key, &encode(&key, &claims(Some(now() - 5)))), Err(TokenError::Expired));
        assert!(decode(&key, &encode(&key, &claims(None))).is_ok(), "environment tokens may have no expiry");
        assert_eq!(decode(&Key::new(b"k2", 0), &token), Err(TokenError::BadSignature));
        // A changed payload with the old signature.
        assert_eq!(decode(&key, &with_payload(&token, &claims(None))), Err(TokenError::BadSignature));
        assert_eq!(decode(&key, "a.b"), Err(TokenError::Malformed));
        let foreign = Claims { iss: "https://elsewhere/".into(), ..claims(None) };
        assert_eq!(decode(&key, &encode(&key, &foreign)), Err(TokenError::WrongAudience));
    }

    #[test]
    fn the_algorithm_is_pinned() {
        let key = Key::new(b"k1", 0);
        let token = encode(&key, &claims(None));
        // "none" tokens never pass: no algorithm but HS256 is accepted.
        let none = format!("{}.{}.", "eyJhbGciOiJub25lIn0", token.split('.').nth(1).unwrap());
        assert!(decode(&key, &none).is_err());
        // A token signed with the same secret but another HMAC algorithm is refused too.
        let hs512 =
            jsonwebtoken::encode(&Header::new(Algorithm::HS512), &claims(None), &EncodingKey::from_secret(b"k1"))
                .unwrap();
        assert_eq!(decode(&key, &hs512), Err(TokenError::Malformed));
    }

    #[test]
    fn leeway_tolerates_small_clock_skew() {
        let expired_a_little = claims(Some(now() - 10));
        let strict = Key::new(b"k", 0);
        let lenient = Key::new(b"k", 60);
        assert_eq!(decode(&strict, &encode(&strict, &expired_a_little)), Err(TokenError::Expired));
        assert!(decode(&lenient, &encode(&lenient, &expired_a_little)).is_ok());
        let long_expired = claims(Some(now() - 120));
        assert_eq!(decode(&lenient, &encode(&lenient, &long_expired)), Err(TokenError::Expired));
    }
}
