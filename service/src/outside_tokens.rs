//! Bearer tokens signed by outside issuers (`[auth_jwt_<name>]` sections, docs/security.md):
//! the keys of each issuer, a shared secret or the provider's JWKS, fetched over HTTP and cached.
//! A token whose `kid` is not in the cache refetches the set, at most once per
//! [`MIN_REFRESH`], so a provider's key rotation is picked up without a restart and a flood of
//! made-up `kid`s cannot hammer the provider. What the claims allow is decided by
//! `orchestrator::auth::outside`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use orchestrator::auth::Principal;
use orchestrator::auth::jwt::{TokenError, Unverified};
use orchestrator::auth::outside::jsonwebtoken::DecodingKey;
use orchestrator::auth::outside::jsonwebtoken::jwk::JwkSet;
use orchestrator::auth::outside::{Issuer, KeySource};
use tokio::sync::Mutex;

/// The shortest time between two fetches of one issuer's key set.
pub const MIN_REFRESH: Duration = Duration::from_secs(5);
/// A key set older than this is fetched again at the next token, so keys the provider dropped
/// stop being accepted.
pub const MAX_AGE: Duration = Duration::from_secs(600);

/// Every outside issuer of the configuration, by `iss`.
#[derive(Debug, Default)]
pub struct OutsideIssuers {
    issuers: HashMap<String, IssuerKeys>,
    leeway: u64,
}

#[derive(Debug)]
struct IssuerKeys {
    issuer: Issuer,
    /// The provider's key set, for JWKS issuers.
    jwks: Option<KeySet>,
}

/// The keys of one JSON Web Key Set URI, by `kid`, fetched when needed: the cache every check of
/// a provider's signature goes through (outside tokens here, OpenID Connect ID tokens in
/// `oidc.rs`).
#[derive(Debug)]
pub struct KeySet {
    /// Whose keys these are, for the log.
    owner: String,
    uri: String,
    validate_cert: bool,
    timeout: Duration,
    cache: Mutex<Cached>,
}

#[derive(Default)]
struct Cached {
    keys: HashMap<String, DecodingKey>,
    fetched: Option<Instant>,
}

impl std::fmt::Debug for Cached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cached").field("kids", &self.keys.keys().collect::<Vec<_>>()).finish()
    }
}

impl OutsideIssuers {
    /// The issuers tokens are checked against; a section that signs is the server's own issuer
    /// and is not among them. Two sections with one issuer are refused, as Inmanta does.
    pub fn new(issuers: Vec<Issuer>, leeway: u64) -> anyhow::Result<OutsideIssuers> {
        let mut by_issuer = HashMap::new();
        for issuer in issuers.into_iter().filter(|i| !i.sign) {
            let name = issuer.name.clone();
            let key = issuer.issuer.clone();
            let jwks = match &issuer.keys {
                KeySource::Shared(_) => None,
                KeySource::Jwks { uri, validate_cert, timeout } => {
                    Some(KeySet::new(&issuer.issuer, uri, *validate_cert, *timeout))
                }
            };
            let keys = IssuerKeys { issuer, jwks };
            if by_issuer.insert(key.clone(), keys).is_some() {
                anyhow::bail!("[auth_jwt_{name}]: only one auth_jwt section per issuer is supported ({key})");
            }
        }
        Ok(OutsideIssuers { issuers: by_issuer, leeway })
    }

    pub fn is_empty(&self) -> bool {
        self.issuers.is_empty()
    }

    /// Checks a token of an outside issuer and says who it names.
    pub async fn authenticate(&self, token: &str, unverified: &Unverified) -> Result<Principal, TokenError> {
        let iss = unverified.issuer().ok_or(TokenError::MissingIssuer)?;
        let entry = self.issuers.get(iss).ok_or(TokenError::UnknownIssuer)?;
        let issuer = &entry.issuer;
        let alg = unverified.header.alg.as_str();
        if alg != issuer.algorithm_name() {
            return Err(TokenError::Algorithm(alg.to_string()));
        }
        let claims = match &issuer.keys {
            KeySource::Shared(secret) => issuer.verify(token, alg, &DecodingKey::from_secret(secret), self.leeway)?,
            KeySource::Jwks { .. } => {
                let kid = unverified.header.kid.as_deref().ok_or(TokenError::MissingKid)?;
                let jwks = entry.jwks.as_ref().ok_or(TokenError::UnknownKid)?;
                issuer.verify(token, alg, &jwks.key(kid).await?, self.leeway)?
            }
        };
        issuer.principal(&claims)
    }
}

impl KeySet {
    /// The key set at `uri` of `owner` (an issuer), fetched at the first key asked for.
    pub fn new(owner: &str, uri: &str, validate_cert: bool, timeout: Duration) -> KeySet {
        KeySet {
            owner: owner.to_string(),
            uri: uri.to_string(),
            validate_cert,
            timeout,
            cache: Mutex::new(Cached::default()),
        }
    }

    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The key with this `kid`, fetching the set when it is unknown (or old) and the last
    /// fetch is long enough ago. The lock is held while fetching, so concurrent requests with
    /// a new `kid` cause one fetch.
    pub async fn key(&self, kid: &str) -> Result<DecodingKey, TokenError> {
        let (uri, validate_cert, timeout) = (self.uri.as_str(), self.validate_cert, self.timeout);
        let mut cache = self.cache.lock().await;
        let age = cache.fetched.map(|at| at.elapsed());
        let stale = age.is_none_or(|age| age >= MAX_AGE);
        if !stale && let Some(key) = cache.keys.get(kid) {
            return Ok(key.clone());
        }
        if age.is_none_or(|age| age >= MIN_REFRESH) {
            cache.fetched = Some(Instant::now());
            match fetch(uri, validate_cert, timeout).await {
                Ok(keys) => {
                    tracing::info!(issuer = %self.owner, kids = ?keys.keys().collect::<Vec<_>>(), "fetched the issuer's signing keys");
                    cache.keys = keys;
                }
                Err(e) => {
                    tracing::warn!(issuer = %self.owner, %uri, "cannot fetch the issuer's signing keys: {e}");
                    if cache.keys.is_empty() {
                        return Err(TokenError::Claims(format!(
                            "the signing keys of this token's issuer cannot be fetched from {uri}"
                        )));
                    }
                }
            }
        }
        cache.keys.get(kid).cloned().ok_or(TokenError::UnknownKid)
    }
}

/// The keys of a JSON Web Key Set by `kid`; keys without one, or of a kind that cannot verify,
/// are left out.
async fn fetch(uri: &str, validate_cert: bool, timeout: Duration) -> anyhow::Result<HashMap<String, DecodingKey>> {
    let client = http_client(validate_cert, timeout)?;
    let response = client.get(uri).send().await?.error_for_status()?;
    let set: JwkSet = serde_json::from_slice(&response.bytes().await?)?;
    let mut keys = HashMap::new();
    for jwk in &set.keys {
        let Some(kid) = &jwk.common.key_id else { continue };
        match DecodingKey::from_jwk(jwk) {
            Ok(key) => {
                keys.insert(kid.clone(), key);
            }
            Err(e) => tracing::warn!(%uri, %kid, "a key of the set cannot be used: {e}"),
        }
    }
    Ok(keys)
}

/// A client for an identity provider: the system's CA bundle, or no certificate check at all
/// when the configuration says `validate_cert=false`.
pub fn http_client(validate_cert: bool, timeout: Duration) -> anyhow::Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder().timeout(timeout);
    if validate_cert {
        // The system's CA bundle, as every other client of ours (no bundle: plain HTTP only).
        if let Ok(pem) = api::client::ca_bundle(None) {
            for cert in reqwest::Certificate::from_pem_bundle(&pem)? {
                builder = builder.add_root_certificate(cert);
            }
        }
    } else {
        builder = builder.danger_accept_invalid_certs(true);
    }
    Ok(builder.build()?)
}
