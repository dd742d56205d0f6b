//! Tokens signed by someone else: an identity provider or a CI system, configured as
//! `[auth_jwt_<name>]` sections with Inmanta's option names (docs/security.md). This file reads
//! a section, checks a token against it once its key is known, and turns the claims into a
//! [`Principal`]. Fetching the keys of a JWKS URI is the server's (it knows HTTP).

use std::collections::BTreeMap;
use std::time::Duration;

use api::auth::ClientType;
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::jwt::TokenError;

use super::{Clients, Principal};
/// The JWT crate, for the server's key cache and for tests that sign tokens.
pub use jsonwebtoken;

/// Inmanta's claim with the client types of a token, comma separated (`api` when missing).
pub const CLIENT_TYPES_CLAIM: &str = "urn:inmanta:ct";
/// Inmanta's claim binding a token to one environment.
pub const ENVIRONMENT_CLAIM: &str = "urn:inmanta:env";
/// Inmanta's claim with the roles per environment (`{"<env id>": ["noc", ...]}`); the default of
/// `roles_claim`.
pub const ROLES_CLAIM: &str = "urn:inmanta:roles";
/// Inmanta's claim that makes a user a global admin.
pub const IS_ADMIN_CLAIM: &str = "urn:inmanta:is_admin";

/// The options of an `[auth_jwt_<name>]` section, as Inmanta names them (`-` and `_` alike).
pub const OPTIONS: &[&str] = &[
    "algorithm",
    "sign",
    "expire",
    "client_types",
    "issuer",
    "audience",
    "jwt_username_claim",
    "roles_claim",
    "key",
    "jwks_uri",
    "validate_cert",
    "jwks_request_timeout",
];

/// Where an issuer's keys come from.
#[derive(Clone, PartialEq)]
pub enum KeySource {
    /// HS256: the shared secret (`key`, URL-safe base64 as Inmanta reads it).
    Shared(Vec<u8>),
    /// RS256, ES256, EdDSA: the provider's JSON Web Key Set.
    Jwks { uri: String, validate_cert: bool, timeout: Duration },
}

impl std::fmt::Debug for KeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeySource::Shared(_) => write!(f, "Shared(<hidden>)"),
            KeySource::Jwks { uri, validate_cert, timeout } => f
                .debug_struct("Jwks")
                .field("uri", uri)
                .field("validate_cert", validate_cert)
                .field("timeout", timeout)
                .finish(),
        }
    }
}

/// One `[auth_jwt_<name>]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct Issuer {
    /// The section name without `auth_jwt_`.
    pub name: String,
    pub algorithm: Algorithm,
    /// This server signs its own tokens with this section's key (HS256 only).
    pub sign: bool,
    /// The client types tokens of this issuer may carry.
    pub client_types: Clients,
    pub issuer: String,
    pub audience: String,
    /// The claim that names the user (`jwt_username_claim`, default `sub`).
    pub username_claim: String,
    /// The claim with the roles per environment (`roles_claim`, default `urn:inmanta:roles`).
    pub roles_claim: String,
    /// Seconds the tokens this server signs last, 0 for no expiry (`expire`).
    pub expire: i64,
    pub keys: KeySource,
}

impl Issuer {
    /// Reads the section `auth_jwt_<name>`; `get` answers an option by its Inmanta name.
    pub fn parse<'a>(name: &str, get: impl Fn(&str) -> Option<&'a str>) -> Result<Issuer, String> {
        let section = format!("[auth_jwt_{name}]");
        let algorithm = match get("algorithm").map(str::trim) {
            None => return Err(format!("{section}: algorithm is required (HS256, RS256, ES256 or EdDSA)")),
            Some(a) if a.eq_ignore_ascii_case("HS256") => Algorithm::HS256,
            Some(a) if a.eq_ignore_ascii_case("RS256") => Algorithm::RS256,
            Some(a) if a.eq_ignore_ascii_case("ES256") => Algorithm::ES256,
            Some(a) if a.eq_ignore_ascii_case("EdDSA") => Algorithm::EdDSA,
            Some(other) => {
                return Err(format!(
                    "{section}: algorithm {other:?} is not supported: use HS256, RS256, ES256 or EdDSA"
                ));
            }
        };
        let flag = |option: &str, default: bool| match get(option).map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None => Ok(default),
            Some("true" | "yes" | "on" | "1") => Ok(true),
            Some("false" | "no" | "off" | "0") => Ok(false),
            Some(other) => Err(format!("{section}: {option} must be true or false, got {other:?}")),
        };
        let sign = flag("sign", false)?;
        let Some(types) = get("client_types") else {
            return Err(format!("{section}: client_types is required (api, agent, compiler, comma separated)"));
        };
        let mut clients = Vec::new();
        for t in types.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            clients.push(ClientType::parse(t).ok_or_else(|| format!("{section}: invalid client_type {t:?}"))?);
        }
        let expire = match get("expire") {
            None => 0,
            Some(v) => v.trim().parse().map_err(|_| format!("{section}: expire must be a number of seconds"))?,
        };
        let issuer = get("issuer").map(str::trim).unwrap_or(super::jwt::ISSUER).to_string();
        let audience = get("audience").map(str::trim).map(str::to_string).unwrap_or_else(|| issuer.clone());
        let username_claim = match get("jwt_username_claim") {
            Some(_) if sign => {
                return Err(format!("{section}: a section used for signing cannot use a custom jwt_username_claim"));
            }
            Some(claim) => claim.trim().to_string(),
            None => "sub".to_string(),
        };
        let keys = if algorithm == Algorithm::HS256 {
            let Some(key) = get("key") else { return Err(format!("{section}: key is required for HS256")) };
            let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(key.trim().trim_end_matches('='))
                .map_err(|_| format!("{section}: key must be URL-safe base64"))?;
            if secret.len() < 32 {
                return Err(format!("{section}: HS256 requires a key of 32 bytes (256 bits) or longer"));
            }
            KeySource::Shared(secret)
        } else {
            if sign {
                return Err(format!("{section}: only an HS256 section can sign (sign=true)"));
            }
            let Some(uri) = get("jwks_uri").map(str::trim) else {
                return Err(format!("{section}: jwks_uri is required for {algorithm:?}"));
            };
            let timeout = match get("jwks_request_timeout") {
                None => 30.0,
                Some(v) => {
                    v.trim().parse::<f64>().map_err(|_| format!("{section}: jwks_request_timeout is in seconds"))?
                }
            };
            let timeout = Duration::try_from_secs_f64(timeout)
                .map_err(|_| format!("{section}: jwks_request_timeout must be a positive number of seconds"))?;
            KeySource::Jwks { uri: uri.to_string(), validate_cert: flag("validate_cert", true)?, timeout }
        };
        Ok(Issuer {
            name: name.to_string(),
            algorithm,
            sign,
            client_types: Clients::of(&clients),
            issuer,
            audience,
            username_claim,
            roles_claim: get("roles_claim").map(str::trim).unwrap_or(ROLES_CLAIM).to_string(),
            expire,
            keys,
        })
    }

    /// The algorithm as written in a token header.
    pub fn algorithm_name(&self) -> &'static str {
        match self.algorithm {
            Algorithm::HS256 => "HS256",
            Algorithm::RS256 => "RS256",
            Algorithm::ES256 => "ES256",
            _ => "EdDSA",
        }
    }

    /// Checks the token's algorithm and signature with `key` (found by its `kid` for a JWKS),
    /// then its audience, issuer, expiry and not-before, with `leeway` seconds of clock skew.
    pub fn verify(
        &self,
        token: &str,
        alg: &str,
        key: &DecodingKey,
        leeway: u64,
    ) -> Result<Map<String, Value>, TokenError> {
        if alg != self.algorithm_name() {
            return Err(TokenError::Algorithm(alg.to_string()));
        }
        let mut validation = Validation::new(self.algorithm);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        // As Inmanta: `exp` and `nbf` are checked when present, not required.
        validation.required_spec_claims.clear();
        validation.validate_nbf = true;
        validation.leeway = leeway;
        jsonwebtoken::decode::<Map<String, Value>>(token.trim(), key, &validation)
            .map(|data| data.claims)
            .map_err(|e| TokenError::from_check(&e))
    }

    /// Who the verified claims name. With `urn:inmanta:env` the token acts in that environment
    /// for its client types; without it, a token for agents or the compiler is a service token
    /// (Inmanta's bootstrap token is one) and any other names a user by `jwt_username_claim`,
    /// with the roles of `roles_claim` and `urn:inmanta:is_admin`.
    pub fn principal(&self, claims: &Map<String, Value>) -> Result<Principal, TokenError> {
        principal_of(claims, self.client_types, &self.username_claim, &self.roles_claim)
    }
}

/// See [`Issuer::principal`]; `allowed` are the client types the issuer may grant.
pub fn principal_of(
    claims: &Map<String, Value>,
    allowed: Clients,
    username_claim: &str,
    roles_claim: &str,
) -> Result<Principal, TokenError> {
    let types = match claims.get(CLIENT_TYPES_CLAIM) {
        None => vec![ClientType::Api],
        Some(Value::String(text)) => {
            let mut types = Vec::new();
            for name in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
                types.push(ClientType::parse(name).ok_or_else(|| {
                    TokenError::Claims(format!("unknown client type {name:?} in {CLIENT_TYPES_CLAIM}"))
                })?);
            }
            types
        }
        Some(_) => return Err(TokenError::Claims(format!("the claim {CLIENT_TYPES_CLAIM} must be a string"))),
    };
    if let Some(extra) = types.iter().find(|t| !allowed.contains(**t)) {
        return Err(TokenError::Claims(format!(
            "the issuer of this token may not grant client type {} (its client_types are {})",
            extra.as_str(),
            allowed.types().iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ")
        )));
    }
    let clients = Clients::of(&types);
    if let Some(env) = claims.get(ENVIRONMENT_CLAIM) {
        let environment = env
            .as_str()
            .and_then(|e| Uuid::parse_str(e).ok())
            .ok_or_else(|| TokenError::Claims(format!("the claim {ENVIRONMENT_CLAIM} is not an environment id")))?;
        let jti = claims.get("jti").and_then(|j| j.as_str()).map(str::to_string);
        return Ok(Principal::Token { environment, clients, jti });
    }
    if clients.contains(ClientType::Agent) || clients.contains(ClientType::Compiler) {
        return Ok(Principal::Service { clients });
    }
    let username = match claims.get(username_claim) {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        _ => return Err(TokenError::Claims(format!("the token names no user (claim {username_claim})"))),
    };
    let is_admin = matches!(claims.get(IS_ADMIN_CLAIM), Some(Value::Bool(true)));
    let mut roles: BTreeMap<Uuid, Vec<String>> = BTreeMap::new();
    match claims.get(roles_claim) {
        None | Some(Value::Null) => {}
        Some(Value::Object(per_environment)) => {
            for (env, granted) in per_environment {
                let Ok(env) = Uuid::parse_str(env) else {
                    return Err(TokenError::Claims(format!(
                        "{env:?} in the claim {roles_claim} is not an environment id"
                    )));
                };
                let granted = match granted {
                    Value::String(role) => vec![role.clone()],
                    Value::Array(list) => list.iter().filter_map(|r| r.as_str()).map(str::to_string).collect(),
                    _ => return Err(TokenError::Claims(format!("the roles of {env} in {roles_claim} are not a list"))),
                };
                roles.entry(env).or_default().extend(granted);
            }
        }
        Some(_) => {
            return Err(TokenError::Claims(format!(
                "the claim {roles_claim} must map environment ids to lists of roles"
            )));
        }
    }
    Ok(Principal::User { username, is_admin, roles, must_change_password: false })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn section(options: &[(&str, &str)]) -> Result<Issuer, String> {
        Issuer::parse("ci", |name| options.iter().find(|(k, _)| *k == name).map(|(_, v)| *v))
    }

    const KEY: &str = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldC0xMjM0NTY3ODk";

    #[test]
    fn sections_read_with_inmanta_defaults_and_clear_errors() {
        let issuer = section(&[("algorithm", "HS256"), ("key", KEY), ("client_types", "api, agent")]).unwrap();
        assert_eq!(issuer.issuer, "https://localhost:8888/");
        assert_eq!(issuer.audience, issuer.issuer, "the audience defaults to the issuer");
        assert_eq!(issuer.username_claim, "sub");
        assert_eq!(issuer.roles_claim, ROLES_CLAIM);
        assert_eq!(issuer.client_types, Clients::API_AGENT);
        let err = section(&[("algorithm", "HS256"), ("key", "c2hvcnQ"), ("client_types", "api")]).unwrap_err();
        assert!(err.contains("32 bytes"), "{err}");
        let err = section(&[("algorithm", "RS256"), ("client_types", "api")]).unwrap_err();
        assert!(err.contains("jwks_uri"), "{err}");
        let err = section(&[("algorithm", "none"), ("client_types", "api")]).unwrap_err();
        assert!(err.contains("not supported"), "{err}");
        let err = section(&[("algorithm", "HS256"), ("key", KEY)]).unwrap_err();
        assert!(err.contains("client_types"), "{err}");
        let err = section(&[
            ("algorithm", "HS256"),
            ("key", KEY),
            ("client_types", "api"),
            ("sign", "true"),
            ("jwt_username_claim", "email"),
        ])
        .unwrap_err();
        assert!(err.contains("custom jwt_username_claim"), "{err}");
    }

    #[test]
    fn claims_become_principals() {
        let env = Uuid::new_v4();
        let claims = |value: Value| value.as_object().unwrap().clone();
        let user = principal_of(
            &claims(json!({"email": "ann@example.com", "groups": {env.to_string(): ["noc"]}})),
            Clients::API,
            "email",
            "groups",
        )
        .unwrap();
        assert_eq!(
            user,
            Principal::User {
                username: "ann@example.com".into(),
                is_admin: false,
                roles: [(env, vec!["noc".to_string()])].into(),
                must_change_password: false
            }
        );
        let scoped = principal_of(
            &claims(json!({"urn:inmanta:ct": "agent", "urn:inmanta:env": env.to_string()})),
            Clients::ALL,
            "sub",
            ROLES_CLAIM,
        )
        .unwrap();
        assert_eq!(scoped, Principal::Token { environment: env, clients: Clients::AGENT, jti: None });
        let service =
            principal_of(&claims(json!({"urn:inmanta:ct": "api,compiler,agent"})), Clients::ALL, "sub", ROLES_CLAIM)
                .unwrap();
        assert_eq!(service, Principal::Service { clients: Clients::ALL });
        let too_much = principal_of(&claims(json!({"urn:inmanta:ct": "agent"})), Clients::API, "sub", ROLES_CLAIM);
        assert!(matches!(too_much, Err(TokenError::Claims(m)) if m.contains("may not grant client type agent")));
        let nobody = principal_of(&claims(json!({})), Clients::API, "sub", ROLES_CLAIM);
        assert!(matches!(nobody, Err(TokenError::Claims(m)) if m.contains("names no user")));
    }
}
