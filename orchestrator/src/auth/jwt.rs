//! JSON Web Tokens (RFC 7519) with Inmanta's claims (`urn:inmanta:ct`, `urn:inmanta:env`, ...), signed and checked
//! by the `jsonwebtoken` crate.
//!
//! Only what the server mints is accepted here: the algorithm is pinned to HS256 (a token
//! claiming any other, `none` included, is refused), and `iss`, `aud` and `exp` (when present:
//! registered environment tokens may be unlimited) are verified with a configured clock leeway.
//! Tokens signed by others (`[auth_jwt_<name>]` sections) are checked by [`super::outside`].
//! The refusals say what failed in the words Inmanta uses, so clients see the same reasons.

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

#[cfg(test)]
impl Claims {
    /// The claims every token this server mints carries: its issuer and audience.
    pub fn issued_here() -> Claims {
        Claims { iss: ISSUER.into(), aud: vec![AUDIENCE.into()], ..Claims::default() }
    }
}

/// The signing key, the issuer and audience it signs for, and the rules a token must pass;
/// `Debug` never shows the key.
#[derive(Clone)]
pub struct Key {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    issuer: String,
    audience: String,
}

impl Key {
    /// A key from the secret's bytes for the default issuer; `leeway` is the clock skew
    /// (seconds) tolerated on `exp`, for replicas whose clocks differ a little.
    pub fn new(secret: &[u8], leeway: u64) -> Key {
        Key::for_issuer(secret, ISSUER, AUDIENCE, leeway)
    }

    /// A key that signs as `issuer` for `audience` (an `[auth_jwt_<name>]` section with
    /// `sign=true`).
    pub fn for_issuer(secret: &[u8], issuer: &str, audience: &str, leeway: u64) -> Key {
        let mut validation = Validation::new(ALGORITHM);
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[audience]);
        // Registered environment tokens may have no expiry; when a token has one, it is checked.
        validation.required_spec_claims.clear();
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.leeway = leeway;
        Key {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            validation,
            issuer: issuer.to_string(),
            audience: audience.to_string(),
        }
    }

    pub fn set_leeway(&mut self, seconds: u64) {
        self.validation.leeway = seconds;
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The claims every token this key mints carries: its issuer and audience.
    pub fn claims(&self) -> Claims {
        Claims { iss: self.issuer.clone(), aud: vec![self.audience.clone()], ..Claims::default() }
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Key(<hidden>, leeway {} s)", self.validation.leeway)
    }
}

/// Why a token is refused (403 `Access denied: <this>`), in Inmanta's words where it has them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("Unable to decode provided JWT bearer token.")]
    Malformed,
    #[error("Issuer is required in token to validate.")]
    MissingIssuer,
    #[error("Unknown issuer for token")]
    UnknownIssuer,
    #[error("Algorithm {0} is not supported.")]
    Algorithm(String),
    #[error("kid is missing in jwt header or is not a valid string")]
    MissingKid,
    #[error("The kid provided in the token does not match a known key.")]
    UnknownKid,
    #[error("Signature verification failed")]
    BadSignature,
    #[error("Invalid audience")]
    WrongAudience,
    #[error("Signature has expired")]
    Expired,
    #[error("The token is not yet valid (nbf)")]
    NotYetValid,
    /// The token is signed correctly but its claims cannot be used; the text says which.
    #[error("{0}")]
    Claims(String),
}

impl TokenError {
    /// The refusal for a failed `jsonwebtoken` check.
    pub fn from_check(error: &jsonwebtoken::errors::Error) -> TokenError {
        match error.kind() {
            ErrorKind::InvalidSignature => TokenError::BadSignature,
            ErrorKind::ExpiredSignature => TokenError::Expired,
            ErrorKind::ImmatureSignature => TokenError::NotYetValid,
            ErrorKind::InvalidIssuer => TokenError::UnknownIssuer,
            ErrorKind::InvalidAudience => TokenError::WrongAudience,
            ErrorKind::InvalidAlgorithm => TokenError::Algorithm("of this token".into()),
            _ => TokenError::Malformed,
        }
    }
}

pub fn encode(key: &Key, claims: &Claims) -> String {
    jsonwebtoken::encode(&Header::new(ALGORITHM), claims, &key.encoding).expect("HS256 signs with any key")
}

pub fn decode(key: &Key, token: &str) -> Result<Claims, TokenError> {
    let header = peek(token)?.header;
    if header.alg != "HS256" {
        return Err(TokenError::Algorithm(header.alg));
    }
    jsonwebtoken::decode::<Claims>(token.trim(), &key.decoding, &key.validation)
        .map(|data| data.claims)
        .map_err(|e| TokenError::from_check(&e))
}

/// What a token's header says about how to check it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenHeader {
    /// As written, `none` included (which `jsonwebtoken` cannot even parse).
    pub alg: String,
    pub kid: Option<String>,
}

/// A token's header and claims, read before anything is verified: only to choose the key.
#[derive(Debug, Clone)]
pub struct Unverified {
    pub header: TokenHeader,
    pub claims: serde_json::Map<String, serde_json::Value>,
}

impl Unverified {
    pub fn issuer(&self) -> Option<&str> {
        self.claims.get("iss").and_then(|v| v.as_str())
    }
}

/// Reads a token's header and claims without checking anything.
pub fn peek(token: &str) -> Result<Unverified, TokenError> {
    use base64::Engine;
    let mut parts = token.trim().split('.');
    let (Some(header), Some(claims), Some(_), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(TokenError::Malformed);
    };
    let json = |part: &str| -> Result<serde_json::Map<String, serde_json::Value>, TokenError> {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part.trim_end_matches('='))
            .map_err(|_| TokenError::Malformed)?;
        serde_json::from_slice(&bytes).map_err(|_| TokenError::Malformed)
    };
    let header = json(header)?;
    let Some(alg) = header.get("alg").and_then(|a| a.as_str()) else {
        return Err(TokenError::Algorithm("(missing)".into()));
    };
    let kid = header.get("kid").and_then(|k| k.as_str()).map(str::to_string);
    Ok(Unverified { header: TokenHeader { alg: alg.to_string(), kid }, claims: json(claims)? })
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
        assert_eq!(decode(&key, &encode(&key, &foreign)), Err(TokenError::UnknownIssuer));
        let elsewhere = Claims { aud: vec!["https://elsewhere/".into()], ..claims(None) };
        assert_eq!(decode(&key, &encode(&key, &elsewhere)), Err(TokenError::WrongAudience));
    }

    #[test]
    fn the_algorithm_is_pinned() {
        let key = Key::new(b"k1", 0);
        let token = encode(&key, &claims(None));
        // "none" tokens never pass: no algorithm but HS256 is accepted.
        let none = format!("{}.{}.", "eyJhbGciOiJub25lIn0", token.split('.').nth(1).unwrap());
        assert_eq!(decode(&key, &none), Err(TokenError::Algorithm("none".into())));
        // A token signed with the same secret but another HMAC algorithm is refused too.
        let hs512 =
            jsonwebtoken::encode(&Header::new(Algorithm::HS512), &claims(None), &EncodingKey::from_secret(b"k1"))
                .unwrap();
        assert_eq!(decode(&key, &hs512), Err(TokenError::Algorithm("HS512".into())));
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
