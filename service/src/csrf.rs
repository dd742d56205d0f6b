//! Cross-site request forgery: a state-changing request (POST, PUT, PATCH, DELETE) that a
//! browser sends from another site is refused (403) before it reaches a handler, so another site
//! cannot log a visitor in as someone else (`/console/login`, `/api/v2/login` set the session
//! cookie), log them out, or call the console's server functions with their session.
//!
//! Which requests are checked: those without an `Authorization` header. A bearer token is
//! never attached by the browser on its own (unlike the session cookie), so a request that
//! carries one was built by a client that holds the token, and the REST API's clients (CLI,
//! agents, scripts) keep working whatever headers they send. Clients that send neither
//! `Origin`, `Referer` nor `Sec-Fetch-Site` are not browsers acting for another site, and pass.
//!
//! A forgery needs the visitor's credentials, which the browser attaches on its own only as the
//! session cookie: a request without it, to a path that does not start a session, is refused
//! only when the browser itself says it comes from another site (`Sec-Fetch-Site: cross-site`).
//! So Inmanta's web console behind a reverse proxy that sends the upstream's address as `Host`
//! (nginx's default) works, with authentication off or with a bearer token, as on Inmanta.
//! The sign-in paths (`/console/login`, `/api/v2/login`) keep the whole check: a forged sign-in
//! would log the visitor in as the forger.
//!
//! Refused: `Sec-Fetch-Site: cross-site`, an `Origin` (or, without one, the origin of the
//! `Referer`) other than the server's own, and `Origin: null`, unless the browser says
//! `Sec-Fetch-Site: same-origin` (a header no page can forge, and that no proxy rewrites). The
//! server's own origin is the scheme it speaks and the `Host` the request names; behind a reverse
//! proxy listed in `[server] trusted-proxies`, its `X-Forwarded-Host` and `X-Forwarded-Proto`.
//! Origins listed in `[server] allowed-origins` are accepted too (a proxy that rewrites `Host`
//! without telling).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::rest::error::ApiError;

/// What the check needs to know about this server.
#[derive(Debug, Clone, Default)]
pub struct SameOrigin {
    /// The server speaks HTTPS.
    pub tls: bool,
    /// Reverse proxies whose `X-Forwarded-Host` / `X-Forwarded-Proto` name the external origin.
    pub trusted_proxies: Vec<IpAddr>,
    /// `[server] allowed-origins`, normalised (`scheme://host[:port]`, default ports dropped).
    pub allowed: Vec<String>,
}

impl SameOrigin {
    /// Reads `[server] allowed-origins` entries (`scheme://host[:port]`); a malformed one is an
    /// error naming it.
    pub fn parse_allowed(text: &str) -> anyhow::Result<Vec<String>> {
        text.split(',')
            .map(str::trim)
            .filter(|o| !o.is_empty())
            .map(|o| {
                normalise(o).ok_or_else(|| {
                    anyhow::anyhow!(
                        "[server] allowed-origins: {o:?} is not an origin such as https://inmanta.example.com"
                    )
                })
            })
            .collect()
    }

    /// Why a request must be refused, or `None` when it may go on.
    fn refusal(&self, method: &Method, path: &str, headers: &HeaderMap, peer: Option<IpAddr>) -> Option<String> {
        if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE)
            || headers.contains_key(header::AUTHORIZATION)
        {
            return None;
        }
        let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
        let fetch_site = text(header::HeaderName::from_static("sec-fetch-site"));
        if fetch_site == Some("same-origin") {
            return None;
        }
        if !carries_session_cookie(headers) && !SIGN_IN_PATHS.contains(&path) {
            return (fetch_site == Some("cross-site"))
                .then(|| "the browser says it comes from another site (Sec-Fetch-Site: cross-site)".to_string());
        }
        let claimed = match (text(header::ORIGIN), text(header::REFERER)) {
            (Some(origin), _) => Some(("Origin", normalise(origin).unwrap_or_else(|| origin.to_string()))),
            (None, Some(referer)) => Some(("Referer", normalise(referer).unwrap_or_else(|| referer.to_string()))),
            (None, None) => None,
        };
        if let Some((_, origin)) = &claimed
            && self.allowed.contains(origin)
        {
            return None;
        }
        if fetch_site == Some("cross-site") {
            return Some("the browser says it comes from another site (Sec-Fetch-Site: cross-site)".to_string());
        }
        let (which, origin) = claimed?;
        let own = self.own_origin(headers, peer);
        if own.as_deref() == Some(origin.as_str()) {
            return None;
        }
        Some(format!(
            "its {which} {origin} is not this server's origin ({}); behind a reverse proxy, list the proxy in \
             [server] trusted-proxies and have it send X-Forwarded-Host and X-Forwarded-Proto, or list the origin \
             in [server] allowed-origins",
            own.as_deref().unwrap_or("unknown: the request names no Host")
        ))
    }

    /// `scheme://host[:port]` of this server as the client reached it.
    fn own_origin(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> Option<String> {
        let first = |name: &str| {
            let value = headers.get(name)?.to_str().ok()?;
            value.split(',').next().map(str::trim).filter(|v| !v.is_empty()).map(str::to_string)
        };
        let proxied = peer.is_some_and(|p| self.trusted_proxies.contains(&p));
        let own_scheme = if self.tls { "https" } else { "http" };
        let scheme = proxied.then(|| first("x-forwarded-proto")).flatten().unwrap_or_else(|| own_scheme.to_string());
        let host = proxied.then(|| first("x-forwarded-host")).flatten().or_else(|| first(header::HOST.as_str()))?;
        normalise(&format!("{scheme}://{host}"))
    }
}

/// The paths that start a session: a forged request there needs no cookie to do harm.
const SIGN_IN_PATHS: [&str; 2] = [crate::console_auth::LOGIN, "/api/v2/login"];

/// Whether the request carries the console's session cookie, the one credential a browser sends
/// to another site's request on its own.
fn carries_session_cookie(headers: &HeaderMap) -> bool {
    headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).any(|cookies| {
        cookies
            .split(';')
            .any(|pair| pair.trim().split_once('=').is_some_and(|(name, _)| name == crate::sessions::COOKIE))
    })
}

/// `scheme://host[:port]` of a URL or origin, lower case, without the scheme's default port;
/// `None` for what is no http(s) URL (`null` included).
fn normalise(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => "80",
        "https" => "443",
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let authority = authority.to_ascii_lowercase();
    // An IPv6 literal keeps its brackets; the port is what follows the last `]` or `:`.
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') && port.bytes().all(|b| b.is_ascii_digit()) => (host, Some(port)),
        _ => (authority.as_str(), None),
    };
    Some(match port {
        Some(port) if port != default_port && !port.is_empty() => format!("{scheme}://{host}:{port}"),
        _ => format!("{scheme}://{host}"),
    })
}

/// The middleware in front of every route (serve.rs).
pub async fn refuse_cross_site(State(rule): State<Arc<SameOrigin>>, request: Request, next: Next) -> Response {
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
    if let Some(why) = rule.refusal(request.method(), request.uri().path(), request.headers(), peer) {
        tracing::warn!(method = %request.method(), path = %request.uri().path(), %why, "cross-site request refused");
        return ApiError::new(StatusCode::FORBIDDEN, format!("cross-site request refused: {why}")).into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (k.parse().unwrap(), v.parse().unwrap())).collect()
    }

    #[test]
    fn origins_are_compared_without_default_ports_or_case() {
        assert_eq!(normalise("HTTPS://Example.com:443/console/login?x=1").as_deref(), Some("https://example.com"));
        assert_eq!(normalise("http://127.0.0.1:8888").as_deref(), Some("http://127.0.0.1:8888"));
        assert_eq!(normalise("http://[::1]:8888/x").as_deref(), Some("http://[::1]:8888"));
        assert_eq!(normalise("http://[::1]/x").as_deref(), Some("http://[::1]"));
        assert_eq!(normalise("null"), None);
        assert_eq!(normalise("file:///etc/passwd"), None);
        assert!(SameOrigin::parse_allowed("https://a.example, http://b.example:8080").is_ok());
        assert!(SameOrigin::parse_allowed("a.example").is_err());
    }

    #[test]
    fn only_state_changing_browser_requests_from_elsewhere_are_refused() {
        let rule = SameOrigin::default();
        let post = Method::POST;
        let host = ("host", "127.0.0.1:8888");
        let cookie = ("cookie", "theme=dark; inmanta_session=abc");
        let refusal = |method: &Method, pairs: &[(&str, &str)]| {
            let mut pairs = pairs.to_vec();
            pairs.push(cookie);
            rule.refusal(method, "/console/api/x", &headers(&pairs), None)
        };
        assert!(refusal(&post, &[host, ("origin", "http://127.0.0.1:8888")]).is_none());
        assert!(refusal(&post, &[host, ("origin", "https://evil.example")]).is_some());
        assert!(refusal(&post, &[host, ("origin", "null")]).is_some());
        assert!(refusal(&post, &[host, ("referer", "https://evil.example/x")]).is_some());
        assert!(refusal(&post, &[host, ("referer", "http://127.0.0.1:8888/console")]).is_none());
        assert!(refusal(&post, &[host, ("sec-fetch-site", "cross-site")]).is_some());
        assert!(refusal(&post, &[host]).is_none(), "not a browser");
        let evil = ("origin", "https://evil.example");
        assert!(refusal(&Method::GET, &[host, evil]).is_none());
        assert!(refusal(&post, &[host, evil, ("authorization", "Bearer x")]).is_none());
        // The browser's own word that the page is of this origin outweighs a Host a proxy set.
        assert!(
            refusal(&post, &[host, ("origin", "https://inmanta.example"), ("sec-fetch-site", "same-origin")]).is_none()
        );
    }

    #[test]
    fn without_the_session_cookie_only_the_sign_in_paths_check_the_origin() {
        let rule = SameOrigin::default();
        let proxied = |path: &str, extra: &[(&str, &str)]| {
            let mut pairs = vec![("host", "127.0.0.1:8888"), ("origin", "https://inmanta.example.com")];
            pairs.extend_from_slice(extra);
            rule.refusal(&Method::POST, path, &headers(&pairs), None)
        };
        // nginx's default: Host is the upstream's address, Origin the site's.
        assert!(proxied("/api/v1/deploy", &[]).is_none());
        assert!(proxied("/api/v1/deploy", &[("cookie", "theme=dark")]).is_none(), "another cookie");
        assert!(proxied("/api/v1/deploy", &[("sec-fetch-site", "cross-site")]).is_some());
        assert!(proxied("/api/v1/deploy", &[("cookie", "inmanta_session=abc")]).is_some());
        assert!(proxied("/console/login", &[]).is_some());
        assert!(proxied("/api/v2/login", &[]).is_some());
        assert!(proxied("/api/v2/login", &[("sec-fetch-site", "same-origin")]).is_none());
    }

    #[test]
    fn a_trusted_proxy_names_the_external_origin() {
        let proxy: IpAddr = "10.0.0.1".parse().unwrap();
        let rule = SameOrigin { trusted_proxies: vec![proxy], ..Default::default() };
        let request = headers(&[
            ("host", "127.0.0.1:8888"),
            ("x-forwarded-host", "inmanta.example.com"),
            ("x-forwarded-proto", "https"),
            ("origin", "https://inmanta.example.com"),
        ]);
        let login = crate::console_auth::LOGIN;
        assert!(rule.refusal(&Method::POST, login, &request, Some(proxy)).is_none());
        // The same headers from anyone else are not believed.
        assert!(rule.refusal(&Method::POST, login, &request, Some("10.0.0.2".parse().unwrap())).is_some());
        let allowed = SameOrigin { allowed: vec!["https://inmanta.example.com".into()], ..Default::default() };
        assert!(allowed.refusal(&Method::POST, login, &request, None).is_none());
    }
}
