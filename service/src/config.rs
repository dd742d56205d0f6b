//! Configuration: Inmanta's ini layout (`-c FILE`), overridden by environment variables
//! `INMANTA_<SECTION>_<KEY>` (upper case, `-` becomes `_`), overridden by command-line flags.
//! Every option is documented in docs/configuration.md.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// Raw option values by (section, key), already layered.
#[derive(Debug, Default, Clone)]
pub struct Options {
    values: HashMap<(String, String), String>,
}

impl Options {
    /// Reads the config file (if any) and then the environment on top of it.
    pub fn load(file: Option<&Path>) -> anyhow::Result<Options> {
        let mut options = Options::default();
        if let Some(file) = file {
            let text =
                std::fs::read_to_string(file).with_context(|| format!("cannot read config file {}", file.display()))?;
            options.merge_ini(&text).with_context(|| format!("in config file {}", file.display()))?;
        }
        options.merge_env(std::env::vars());
        Ok(options)
    }

    fn merge_ini(&mut self, text: &str) -> anyhow::Result<()> {
        let mut section = None::<String>;
        for (index, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
                continue;
            }
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                section = Some(name.trim().to_string());
                continue;
            }
            let Some((key, value)) = line.split_once('=').or_else(|| line.split_once(':')) else {
                bail!("line {}: expected `key = value` or `[section]`, found {raw:?}", index + 1);
            };
            let Some(section) = &section else {
                bail!("line {}: option {:?} comes before any [section]", index + 1, key.trim());
            };
            self.set(section, key.trim(), value.trim());
        }
        Ok(())
    }

    fn merge_env(&mut self, vars: impl Iterator<Item = (String, String)>) {
        for (name, value) in vars {
            // Inmanta's `INMANTA_AUTH_JWT_<SECTION>_<OPTION>`, e.g. INMANTA_AUTH_JWT_CI_JWKS_URI.
            if let Some(rest) = name.strip_prefix("INMANTA_AUTH_JWT_") {
                let mut options: Vec<&str> = orchestrator::auth::outside::OPTIONS.to_vec();
                options.sort_by_key(|o| std::cmp::Reverse(o.len()));
                let found = options.iter().find_map(|option| {
                    let section = rest.strip_suffix(&format!("_{}", option.to_ascii_uppercase()))?;
                    (!section.is_empty()).then(|| (section.to_ascii_lowercase(), *option))
                });
                match found {
                    Some((section, option)) => self.set(&format!("auth_jwt_{section}"), option, &value),
                    None => eprintln!("warning: {name} names no option of an auth_jwt section"),
                }
                continue;
            }
            // `INMANTA_OIDC_<PROVIDER>_<OPTION>`, e.g. INMANTA_OIDC_KEYCLOAK_CLIENT_SECRET.
            if let Some(rest) = name.strip_prefix("INMANTA_OIDC_") {
                let mut options: Vec<&str> = crate::oidc::OPTIONS.to_vec();
                options.sort_by_key(|o| std::cmp::Reverse(o.len()));
                let found = options.iter().find_map(|option| {
                    let section = rest.strip_suffix(&format!("_{}", option.to_ascii_uppercase()))?;
                    (!section.is_empty()).then(|| (section.to_ascii_lowercase(), *option))
                });
                match found {
                    Some((section, option)) => self.set(&format!("oidc_{section}"), option, &value),
                    None => eprintln!("warning: {name} names no option of an oidc section"),
                }
                continue;
            }
            if let Some(rest) = name.strip_prefix("INMANTA_") {
                for (section, key) in KNOWN {
                    if rest == env_name(section, key) {
                        self.set(section, key, &value);
                    }
                }
            }
        }
    }

    pub fn set(&mut self, section: &str, key: &str, value: &str) {
        self.values.insert((section.to_string(), key.replace('_', "-")), value.to_string());
    }

    pub fn get(&self, section: &str, key: &str) -> Option<&str> {
        self.values.get(&(section.to_string(), key.to_string())).map(String::as_str)
    }

    /// The `[auth_jwt_<name>]` sections (docs/security.md), in name order.
    pub fn jwt_issuers(&self) -> anyhow::Result<Vec<orchestrator::auth::outside::Issuer>> {
        let mut sections: Vec<&str> =
            self.values.keys().map(|(section, _)| section.as_str()).filter(|s| s.starts_with("auth_jwt_")).collect();
        sections.sort();
        sections.dedup();
        let mut issuers = Vec::new();
        for section in sections {
            let name = &section["auth_jwt_".len()..];
            let issuer =
                orchestrator::auth::outside::Issuer::parse(name, |option| self.get(section, &option.replace('_', "-")))
                    .map_err(|e| anyhow::anyhow!(e))?;
            issuers.push(issuer);
        }
        if issuers.iter().filter(|i| i.sign).count() > 1 {
            bail!("only one auth_jwt section may have sign=true");
        }
        Ok(issuers)
    }

    /// The `[oidc_<name>]` sections (docs/security.md), in name order, and Inmanta's
    /// `[web-ui] oidc_auth_url`, `oidc_realm` and `oidc_client_id` (a Keycloak realm, public
    /// client) as the provider `web-ui`.
    pub fn oidc_providers(&self) -> anyhow::Result<Vec<crate::oidc::ProviderConfig>> {
        let mut sections: Vec<&str> =
            self.values.keys().map(|(section, _)| section.as_str()).filter(|s| s.starts_with("oidc_")).collect();
        sections.sort();
        sections.dedup();
        let mut providers = Vec::new();
        for section in sections {
            let name = &section["oidc_".len()..];
            let provider =
                crate::oidc::ProviderConfig::parse(name, |option| self.get(section, &option.replace('_', "-")))
                    .map_err(|e| anyhow::anyhow!(e))?;
            providers.push(provider);
        }
        let web_ui = |key| self.get("web-ui", key).map(str::trim).filter(|v| !v.is_empty());
        match (web_ui("oidc-auth-url"), web_ui("oidc-realm"), web_ui("oidc-client-id")) {
            (None, None, None) => {}
            (Some(url), Some(realm), Some(client)) => {
                let issuer = format!("{}/realms/{realm}", url.trim_end_matches('/'));
                let options = [("issuer", issuer.as_str()), ("client_id", client), ("display_name", "Keycloak")];
                let provider = crate::oidc::ProviderConfig::parse("web-ui", |option| {
                    options.iter().find(|(k, _)| *k == option).map(|(_, v)| *v)
                })
                .map_err(|e| anyhow::anyhow!(e))?;
                providers.push(provider);
            }
            _ => bail!("[web-ui] oidc_auth_url, oidc_realm and oidc_client_id go together: set all three or none"),
        }
        let method = self.get("server", "auth-method").map(str::trim).unwrap_or("database");
        match method {
            "database" | "jwt" => {}
            "oidc" if providers.is_empty() => {
                bail!("[server] auth_method = oidc needs a login provider: an [oidc_<name>] section (docs/security.md)")
            }
            "oidc" => {}
            other => bail!("[server] auth_method must be database, oidc or jwt, got {other:?}"),
        }
        Ok(providers)
    }

    fn get_bool(&self, section: &str, key: &str, default: bool) -> anyhow::Result<bool> {
        match self.get(section, key).map(str::to_ascii_lowercase).as_deref() {
            None => Ok(default),
            Some("true" | "yes" | "on" | "1") => Ok(true),
            Some("false" | "no" | "off" | "0") => Ok(false),
            Some(other) => bail!("[{section}] {key} must be true or false, got {other:?}"),
        }
    }

    fn get_parsed<T: std::str::FromStr>(&self, section: &str, key: &str, default: T) -> anyhow::Result<T> {
        match self.get(section, key) {
            None => Ok(default),
            Some(v) => v.trim().parse().map_err(|_| anyhow::anyhow!("[{section}] {key} has an invalid value {v:?}")),
        }
    }
}

/// `INMANTA_<SECTION>_<KEY>`: upper case, `-` becomes `_`.
pub fn env_name(section: &str, key: &str) -> String {
    format!("{section}_{key}").to_ascii_uppercase().replace('-', "_")
}

/// Every option this binary reads, so environment variables can be matched without guessing.
pub const KNOWN: &[(&str, &str)] = &[
    ("server", "bind-address"),
    ("server", "bind-port"),
    ("server", "auth"),
    ("server", "login-session-expire"),
    ("server", "login-max-failures"),
    ("server", "trusted-proxies"),
    ("server", "allowed-origins"),
    ("server", "access-control-allow-origin"),
    ("server", "compiler-report-retention"),
    ("server", "cleanup-compiler-reports-interval"),
    ("server", "token-leeway"),
    ("server", "auth-method"),
    ("server", "authorization-provider"),
    ("policy_engine", "policy-file"),
    ("policy_engine", "log-level"),
    ("policy_engine", "executable"),
    ("web-ui", "oidc-local-fallback"),
    ("web-ui", "oidc-auth-url"),
    ("web-ui", "oidc-realm"),
    ("web-ui", "oidc-client-id"),
    ("server", "metrics-bind-address"),
    ("server", "metrics-bind-port"),
    ("server", "max-request-body-size"),
    ("server", "request-timeout"),
    ("server", "header-timeout"),
    ("server", "body-timeout"),
    ("server", "keep-alive-timeout"),
    ("server", "max-connections-per-client"),
    ("server", "file-store-quota"),
    ("server", "ssl-cert-file"),
    ("server", "ssl-key-file"),
    ("server", "compile-timeout"),
    ("server", "compile-parallel"),
    ("server", "compile-memory-limit"),
    ("server", "agent-timeout"),
    ("agent", "python"),
    ("agent", "handler-timeout"),
    ("agent", "python-warm-spare"),
    ("server", "scheduler-lease"),
    ("server", "compile-claim"),
    ("config", "state-dir"),
    ("config", "log-dir"),
    ("config", "logging-config"),
    ("logging", "server"),
    ("logging", "scheduler"),
    ("logging", "compiler"),
    ("database", "url"),
    ("database", "host"),
    ("database", "port"),
    ("database", "name"),
    ("database", "username"),
    ("database", "password"),
    ("web-console", "enabled"),
    ("web-console", "path"),
    ("cmdline_rest_transport", "host"),
    ("cmdline_rest_transport", "port"),
    ("cmdline_rest_transport", "token"),
    ("cmdline_rest_transport", "ssl"),
    ("cmdline_rest_transport", "ssl-ca-cert-file"),
    ("compiler_rest_transport", "host"),
    ("compiler_rest_transport", "port"),
    ("compiler_rest_transport", "token"),
    ("compiler_rest_transport", "ssl"),
    ("compiler_rest_transport", "ssl-ca-cert-file"),
    ("agent_rest_transport", "ssl"),
    ("agent_rest_transport", "ssl-ca-cert-file"),
    ("compiler", "python"),
    ("compiler", "max-steps"),
    ("compiler", "max-instances"),
    ("compiler", "max-depth"),
    ("compiler", "max-memory"),
];

/// `[server] compile-memory-limit` by default: 4 GiB of address space, four times the compiler's
/// default memory budget (`[compiler] max-memory`), room for a model of a few hundred thousand
/// resources.
pub const DEFAULT_COMPILE_MEMORY_LIMIT: u64 = 4 << 30;

/// The settings `inmanta server` runs with, grouped by the part of the server that reads them.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub http: HttpConfig,
    pub auth: AuthConfig,
    pub storage: StorageConfig,
    pub console: ConsoleConfig,
    pub compiles: CompileConfig,
    pub agents: AgentConfig,
    /// Several servers on PostgreSQL: how long a scheduler lease lasts unrenewed (docs/ha.md).
    pub scheduler_lease: std::time::Duration,
}

impl ServerConfig {
    pub fn from_options(options: &Options) -> anyhow::Result<ServerConfig> {
        let storage = StorageConfig::from_options(options)?;
        Ok(ServerConfig {
            http: HttpConfig::from_options(options)?,
            auth: AuthConfig::from_options(options)?,
            console: ConsoleConfig::from_options(options)?,
            compiles: CompileConfig::from_options(options)?,
            agents: AgentConfig::from_options(options, &storage.state_dir)?,
            scheduler_lease: at_least_a_second(
                seconds(options.get_parsed("server", "scheduler-lease", 5.0)?, "[server] scheduler-lease")?,
                "[server] scheduler-lease",
            )?,
            storage,
        })
    }
}

/// Where and how the server listens: addresses, TLS, request and connection limits, and who
/// may send what (proxies, origins).
#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub bind_address: String,
    pub bind_port: u16,
    /// TLS: the certificate chain and private key (PEM); HTTPS only when both are set.
    pub tls: Option<TlsFiles>,
    /// Where `/metrics` is also served without credentials (`[server] metrics-bind-address`
    /// and `metrics-bind-port`); none by default.
    pub metrics_bind: Option<String>,
    pub max_request_body_size: usize,
    /// The longest one REST call may take, its body upload included.
    pub request_timeout: std::time::Duration,
    /// The longest a request head may take to arrive (`[server] header-timeout`).
    pub header_timeout: std::time::Duration,
    /// The longest a request body may pause (`[server] body-timeout`).
    pub body_timeout: std::time::Duration,
    /// The longest a kept-alive connection may sit idle (`[server] keep-alive-timeout`).
    pub keep_alive_timeout: std::time::Duration,
    /// Connections one client address may hold at once; 0 for no cap.
    pub max_connections_per_client: usize,
    /// Proxies whose `X-Forwarded-For` header names the client (for the login throttle).
    pub trusted_proxies: Vec<std::net::IpAddr>,
    /// Origins besides the server's own whose browsers may send state-changing requests
    /// (`[server] allowed-origins`, normalised; see csrf.rs).
    pub allowed_origins: Vec<String>,
    /// `[server] access-control-allow-origin`: the `Access-Control-Allow-Origin` of every
    /// answer, none when unset (Inmanta's option; see cors.rs).
    pub access_control_allow_origin: Option<String>,
}

impl HttpConfig {
    fn from_options(options: &Options) -> anyhow::Result<HttpConfig> {
        let timeout = |key: &str, default: std::time::Duration| -> anyhow::Result<std::time::Duration> {
            let name = format!("[server] {key}");
            seconds(options.get_parsed("server", key, default.as_secs_f64())?, &name)
        };
        Ok(HttpConfig {
            bind_address: options.get("server", "bind-address").unwrap_or("127.0.0.1").to_string(),
            bind_port: options.get_parsed("server", "bind-port", 8888)?,
            tls: tls_files(options)?,
            metrics_bind: match options.get("server", "metrics-bind-port").filter(|p| !p.trim().is_empty()) {
                None => None,
                Some(_) => Some(format!(
                    "{}:{}",
                    options.get("server", "metrics-bind-address").unwrap_or("127.0.0.1"),
                    options.get_parsed::<u16>("server", "metrics-bind-port", 0)?
                )),
            },
            max_request_body_size: options.get_parsed("server", "max-request-body-size", 100 * 1024 * 1024)?,
            request_timeout: timeout("request-timeout", crate::rest::limits::DEFAULT_REQUEST_TIMEOUT)?,
            header_timeout: positive(
                timeout("header-timeout", crate::connections::DEFAULT_HEADER_TIMEOUT)?,
                "[server] header-timeout",
            )?,
            body_timeout: positive(
                timeout("body-timeout", crate::connections::DEFAULT_BODY_TIMEOUT)?,
                "[server] body-timeout",
            )?,
            keep_alive_timeout: positive(
                timeout("keep-alive-timeout", crate::connections::DEFAULT_KEEP_ALIVE_TIMEOUT)?,
                "[server] keep-alive-timeout",
            )?,
            max_connections_per_client: options.get_parsed(
                "server",
                "max-connections-per-client",
                crate::connections::DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
            )?,
            trusted_proxies: trusted_proxies(options)?,
            access_control_allow_origin: options
                .get("server", "access-control-allow-origin")
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string),
            allowed_origins: crate::csrf::SameOrigin::parse_allowed(
                options.get("server", "allowed-origins").unwrap_or_default(),
            )?,
        })
    }

    /// What a client may hold open, and for how long (connections.rs).
    pub fn connection_limits(&self) -> crate::connections::ConnectionLimits {
        crate::connections::ConnectionLimits {
            header_timeout: self.header_timeout,
            body_timeout: self.body_timeout,
            keep_alive_timeout: self.keep_alive_timeout,
            max_per_client: self.max_connections_per_client,
            trusted_proxies: self.trusted_proxies.clone(),
        }
    }
}

/// Who may call the server and how they prove it: logins, tokens, outside issuers, OIDC.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// Authentication and authorization; off only with `--no-auth` or `[server] auth=false`.
    pub enabled: bool,
    /// Seconds a login token and a console session last.
    pub login_session_expire: i64,
    /// Failed logins a user may make from one address before the delays start (an address
    /// gets four times more over all users before it is paced).
    pub login_max_failures: usize,
    /// Seconds of clock skew tolerated on a token's expiry.
    pub token_leeway: u64,
    /// The `[auth_jwt_<name>]` sections: outside issuers whose tokens are accepted, and the
    /// section whose key this server signs with (`sign=true`), if any.
    pub jwt_issuers: Vec<orchestrator::auth::outside::Issuer>,
    /// The `[oidc_<name>]` sections: providers offered on the console's login page.
    pub oidc_providers: Vec<crate::oidc::ProviderConfig>,
    /// `[web-ui] oidc_local_fallback`: the local login form stays next to the providers.
    pub oidc_local_fallback: bool,
    /// `[server] authorization-provider`: who decides what users may do.
    pub authorization_provider: AuthorizationProvider,
    /// `[policy_engine]`: the access policy of the `policy-engine` provider.
    pub policy: PolicyConfig,
}

/// `[server] authorization-provider`, Inmanta's two values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthorizationProvider {
    /// Roles to labels, in code: Inmanta's default.
    Legacy,
    /// An access policy in Rego decides for users.
    PolicyEngine,
}

impl AuthorizationProvider {
    fn parse(value: Option<&str>) -> anyhow::Result<AuthorizationProvider> {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("legacy") => Ok(AuthorizationProvider::Legacy),
            Some("policy-engine") => Ok(AuthorizationProvider::PolicyEngine),
            Some(other) => {
                bail!("[server] authorization-provider must be legacy or policy-engine, got {other:?}")
            }
        }
    }
}

/// `[policy_engine]`: where the access policy is and how much of its work is logged.
#[derive(Debug, Clone)]
pub struct PolicyConfig {
    /// `policy-file`; unset: Inmanta's path if that file exists, else the built-in policy.
    pub policy_file: Option<PathBuf>,
    /// `log-level` is `debug` or `info`: every decision's input is logged at INFO.
    pub log_decisions: bool,
}

impl PolicyConfig {
    fn from_options(options: &Options) -> anyhow::Result<PolicyConfig> {
        let log_level = options.get("policy_engine", "log-level").unwrap_or("error").trim().to_ascii_lowercase();
        let log_decisions = match log_level.as_str() {
            "debug" | "info" => true,
            "error" => false,
            other => bail!("[policy_engine] log-level must be debug, info or error, got {other:?}"),
        };
        let policy_file = options.get("policy_engine", "policy-file").map(str::trim).filter(|p| !p.is_empty());
        Ok(PolicyConfig { policy_file: policy_file.map(PathBuf::from), log_decisions })
    }

    /// The access policy this configuration names, compiled against `endpoints`: the configured
    /// file, else Inmanta's default path when that file exists, else the built-in policy.
    pub fn load(
        &self,
        endpoints: &orchestrator::auth::policy::Endpoints,
    ) -> Result<orchestrator::auth::policy::AccessPolicy, orchestrator::auth::policy::PolicyError> {
        use orchestrator::auth::policy::{AccessPolicy, INMANTA_POLICY_FILE};
        let inmanta_default = std::path::Path::new(INMANTA_POLICY_FILE);
        let mut policy = match &self.policy_file {
            Some(path) => AccessPolicy::load(path, endpoints)?,
            None if inmanta_default.is_file() => AccessPolicy::load(inmanta_default, endpoints)?,
            None => AccessPolicy::default_policy(endpoints),
        };
        policy.log_decisions = self.log_decisions;
        Ok(policy)
    }
}

impl AuthConfig {
    fn from_options(options: &Options) -> anyhow::Result<AuthConfig> {
        Ok(AuthConfig {
            enabled: options.get_bool("server", "auth", true)?,
            login_session_expire: options.get_parsed("server", "login-session-expire", 3600)?,
            login_max_failures: options.get_parsed("server", "login-max-failures", 5)?,
            token_leeway: options.get_parsed("server", "token-leeway", 0)?,
            jwt_issuers: options.jwt_issuers()?,
            oidc_providers: options.oidc_providers()?,
            oidc_local_fallback: options.get_bool("web-ui", "oidc-local-fallback", false)?,
            authorization_provider: AuthorizationProvider::parse(options.get("server", "authorization-provider"))?,
            policy: PolicyConfig::from_options(options)?,
        })
    }
}

/// Where the server keeps its state: the state and log directories, the database, the file
/// store's budget.
#[derive(Debug, Clone)]
pub struct StorageConfig {
    pub state_dir: PathBuf,
    pub log_dir: Option<PathBuf>,
    pub database_url: String,
    /// Bytes the file store may hold in all.
    pub file_store_quota: u64,
}

impl StorageConfig {
    fn from_options(options: &Options) -> anyhow::Result<StorageConfig> {
        let state_dir = PathBuf::from(options.get("config", "state-dir").unwrap_or("data/server"));
        Ok(StorageConfig {
            database_url: database_url(options, &state_dir)?,
            log_dir: options.get("config", "log-dir").map(PathBuf::from),
            file_store_quota: options.get_parsed(
                "server",
                "file-store-quota",
                crate::rest::files::DEFAULT_FILE_STORE_QUOTA,
            )?,
            state_dir,
        })
    }

    /// The database URL without its password, for logs.
    pub fn database_display(&self) -> String {
        match self.database_url.split_once('@') {
            Some((credentials, rest)) if credentials.contains("://") => {
                let (scheme, user) = credentials.split_once("://").unwrap_or(("", credentials));
                let user = user.split(':').next().unwrap_or_default();
                format!("{scheme}://{user}@{rest}")
            }
            _ => self.database_url.clone(),
        }
    }
}

/// `[web-console]`: whether the console is served, and from which built files.
#[derive(Debug, Clone)]
pub struct ConsoleConfig {
    pub enabled: bool,
    pub path: Option<PathBuf>,
}

impl ConsoleConfig {
    fn from_options(options: &Options) -> anyhow::Result<ConsoleConfig> {
        Ok(ConsoleConfig {
            enabled: options.get_bool("web-console", "enabled", true)?,
            path: options.get("web-console", "path").map(PathBuf::from),
        })
    }
}

/// Server-side compiles: their deadline, how many at once, their memory, their claims, and
/// where their exports push to.
#[derive(Debug, Clone)]
pub struct CompileConfig {
    /// Seconds one server-side compile may take, all stages together.
    pub timeout: u64,
    /// Server-side compiles running at once over all environments.
    pub parallel: usize,
    /// Bytes of address space a server-side compile process may use (0: no limit): a compile
    /// that escapes the compiler's own memory budget dies, not the server's machine.
    pub memory_limit: u64,
    /// How long a server-side compile's claim lasts unrenewed before another server may run it.
    pub claim: std::time::Duration,
    /// The host name server-side exports push to (`[compiler_rest_transport] host`): with TLS,
    /// a name the certificate holds. Default: the bind address (127.0.0.1 when unspecified).
    pub compiler_host: Option<String>,
    /// How long a finished compile and its report are kept (`[server] compiler-report-retention`,
    /// Inmanta's option and default, seven days), and how often older ones are removed
    /// (`[server] cleanup-compiler-reports-interval`, an hour).
    pub report_retention: std::time::Duration,
    pub report_cleanup_interval: std::time::Duration,
}

impl CompileConfig {
    fn from_options(options: &Options) -> anyhow::Result<CompileConfig> {
        Ok(CompileConfig {
            timeout: options.get_parsed("server", "compile-timeout", 1200)?,
            parallel: options.get_parsed("server", "compile-parallel", 2)?,
            memory_limit: options.get_parsed("server", "compile-memory-limit", DEFAULT_COMPILE_MEMORY_LIMIT)?,
            claim: at_least_a_second(
                seconds(options.get_parsed("server", "compile-claim", 30.0)?, "[server] compile-claim")?,
                "[server] compile-claim",
            )?,
            compiler_host: options.get("compiler_rest_transport", "host").filter(|h| !h.is_empty()).map(str::to_string),
            report_retention: seconds(
                options.get_parsed("server", "compiler-report-retention", 604_800.0)?,
                "[server] compiler-report-retention",
            )?,
            report_cleanup_interval: at_least_a_second(
                seconds(
                    options.get_parsed("server", "cleanup-compiler-reports-interval", 3600.0)?,
                    "[server] cleanup-compiler-reports-interval",
                )?,
                "[server] cleanup-compiler-reports-interval",
            )?,
        })
    }
}

/// The agents: how long a remote one stays up after its connection drops, and how the
/// in-process ones run Python handlers.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// How long a remote agent whose connection dropped stays `up`, waiting for it to reconnect.
    pub timeout: std::time::Duration,
    /// How the in-process agents run Python handlers (`[agent] python`, `handler-timeout`).
    pub python: agent::PythonSettings,
}

impl AgentConfig {
    fn from_options(options: &Options, state_dir: &Path) -> anyhow::Result<AgentConfig> {
        Ok(AgentConfig {
            timeout: seconds(options.get_parsed("server", "agent-timeout", 30.0)?, "[server] agent-timeout")?,
            python: python_settings(options, std::path::absolute(state_dir.join("python"))?)?,
        })
    }
}

/// The certificate and key files of `[server] ssl-cert-file` / `ssl-key-file`.
#[derive(Debug, Clone, PartialEq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// What the server's own export children check its certificate against:
    /// `[compiler_rest_transport] ssl-ca-cert-file`, else the certificate file itself (enough
    /// when it is self-signed or holds its issuer).
    pub ca_for_compiles: PathBuf,
}

fn tls_files(options: &Options) -> anyhow::Result<Option<TlsFiles>> {
    let cert = options.get("server", "ssl-cert-file").filter(|v| !v.is_empty());
    let key = options.get("server", "ssl-key-file").filter(|v| !v.is_empty());
    match (cert, key) {
        (None, None) => Ok(None),
        (Some(cert), Some(key)) => Ok(Some(TlsFiles {
            cert: cert.into(),
            key: key.into(),
            ca_for_compiles: options
                .get("compiler_rest_transport", "ssl-ca-cert-file")
                .filter(|v| !v.is_empty())
                .unwrap_or(cert)
                .into(),
        })),
        _ => bail!("[server] ssl-cert-file and ssl-key-file go together: set both for HTTPS, or neither"),
    }
}

/// Timeouts of 0 would refuse every request.
fn positive(d: std::time::Duration, name: &str) -> anyhow::Result<std::time::Duration> {
    if d.is_zero() {
        bail!("{name} must be more than 0 seconds");
    }
    Ok(d)
}

/// Leases and claims shorter than a second would expire between two renewals.
fn at_least_a_second(d: std::time::Duration, name: &str) -> anyhow::Result<std::time::Duration> {
    if d < std::time::Duration::from_secs(1) {
        bail!("{name} must be at least 1 second, got {} s", d.as_secs_f64());
    }
    Ok(d)
}

/// `[server] trusted-proxies`: IP addresses, comma separated.
fn trusted_proxies(options: &Options) -> anyhow::Result<Vec<std::net::IpAddr>> {
    let text = options.get("server", "trusted-proxies").unwrap_or_default();
    let parse =
        |a: &str| a.parse().map_err(|_| anyhow::anyhow!("[server] trusted-proxies: {a:?} is not an IP address"));
    text.split(',').map(str::trim).filter(|a| !a.is_empty()).map(parse).collect()
}

/// `[database] url` wins; else a PostgreSQL URL when `[database] host` is set; else SQLite in
/// the state directory.
fn database_url(options: &Options, state_dir: &Path) -> anyhow::Result<String> {
    if let Some(url) = options.get("database", "url").filter(|u| !u.is_empty()) {
        return Ok(url.to_string());
    }
    if let Some(host) = options.get("database", "host").filter(|h| !h.is_empty()) {
        let port: u16 = options.get_parsed("database", "port", 5432)?;
        let name = options.get("database", "name").unwrap_or("inmanta");
        let user = options.get("database", "username").unwrap_or("postgres");
        let credentials = match options.get("database", "password").filter(|p| !p.is_empty()) {
            Some(password) => format!("{}:{}", api::url::encode(user), api::url::encode(password)),
            None => api::url::encode(user),
        };
        return Ok(format!("postgres://{credentials}@{host}:{port}/{name}"));
    }
    let absolute = if state_dir.is_absolute() {
        state_dir.to_path_buf()
    } else {
        std::env::current_dir().context("cannot read the current directory")?.join(state_dir)
    };
    Ok(format!("sqlite://{}", absolute.join("inmanta.db").display()))
}

/// A duration given in (possibly fractional) seconds.
/// How agents run the Python handlers of modules (docs/modules.md): the interpreter of
/// `[agent] python` (default `python3` on the PATH; inmanta-core must be importable by it), each
/// call limited to `[agent] handler-timeout` seconds (default 300), code kept in `cache_dir`.
pub fn python_settings(options: &Options, cache_dir: PathBuf) -> anyhow::Result<agent::PythonSettings> {
    let python = options.get("agent", "python").map(str::trim).filter(|p| !p.is_empty()).unwrap_or("python3");
    let mut settings = agent::PythonSettings::new(PathBuf::from(python), cache_dir);
    settings.handler_timeout =
        seconds(options.get_parsed("agent", "handler-timeout", 300.0)?, "[agent] handler-timeout")?;
    if settings.handler_timeout.is_zero() {
        bail!("[agent] handler-timeout must be more than 0 seconds");
    }
    settings.warm_spare = options.get_bool("agent", "python-warm-spare", true)?;
    Ok(settings)
}

fn seconds(value: f64, option: &str) -> anyhow::Result<std::time::Duration> {
    std::time::Duration::try_from_secs_f64(value)
        .map_err(|_| anyhow::anyhow!("{option} must be a number of seconds, 0 or more, got {value}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_then_environment_then_flags() {
        let mut options = Options::default();
        options
            .merge_ini(
                "# comment\n[server]\nbind-port = 9000\nbind-address=0.0.0.0\n[database]\nhost = db\npassword = p@ss\n",
            )
            .unwrap();
        options.merge_env(
            vec![("INMANTA_SERVER_BIND_PORT".to_string(), "9100".to_string()), ("UNRELATED".into(), "x".into())]
                .into_iter(),
        );
        let config = ServerConfig::from_options(&options).unwrap();
        assert_eq!(config.http.bind_port, 9100);
        assert_eq!(config.http.bind_address, "0.0.0.0");
        assert_eq!(config.storage.database_url, "postgres://postgres:p%40ss@db:5432/inmanta");
        assert_eq!(config.storage.database_display(), "postgres://postgres@db:5432/inmanta");
        options.set("server", "bind-port", "9200");
        assert_eq!(ServerConfig::from_options(&options).unwrap().http.bind_port, 9200);
    }

    #[test]
    fn defaults_to_sqlite_in_the_state_dir() {
        let mut options = Options::default();
        options.set("config", "state-dir", "/srv/inmanta");
        let config = ServerConfig::from_options(&options).unwrap();
        assert_eq!(config.storage.database_url, "sqlite:///srv/inmanta/inmanta.db");
        assert_eq!(config.http.bind_port, 8888);
        assert_eq!(config.http.bind_address, "127.0.0.1");
        assert_eq!(config.agents.timeout, std::time::Duration::from_secs(30));
    }

    #[test]
    fn agent_timeout_in_seconds() {
        let mut options = Options::default();
        options.merge_env(vec![("INMANTA_SERVER_AGENT_TIMEOUT".to_string(), "1.5".to_string())].into_iter());
        assert_eq!(
            ServerConfig::from_options(&options).unwrap().agents.timeout,
            std::time::Duration::from_millis(1500)
        );
        options.set("server", "agent-timeout", "-1");
        let err = ServerConfig::from_options(&options).unwrap_err().to_string();
        assert!(err.contains("[server] agent-timeout"), "{err}");
    }

    #[test]
    fn connection_limits_default_and_refuse_zero_timeouts() {
        let mut options = Options::default();
        let limits = ServerConfig::from_options(&options).unwrap().http.connection_limits();
        assert_eq!(limits.header_timeout, std::time::Duration::from_secs(10));
        assert_eq!(limits.body_timeout, std::time::Duration::from_secs(30));
        assert_eq!(limits.max_per_client, 256);
        options.set("server", "header-timeout", "0");
        let err = ServerConfig::from_options(&options).unwrap_err().to_string();
        assert!(err.contains("[server] header-timeout"), "{err}");
        options.set("server", "header-timeout", "2.5");
        options.set("server", "max-connections-per-client", "0");
        let limits = ServerConfig::from_options(&options).unwrap().http.connection_limits();
        assert_eq!(limits.header_timeout, std::time::Duration::from_millis(2500));
        assert_eq!(limits.max_per_client, 0);
    }

    #[test]
    fn auth_jwt_sections_from_the_file_and_the_environment() {
        let mut options = Options::default();
        options
            .merge_ini(
                "[auth_jwt_ci]\nalgorithm = RS256\nclient_types = api,agent\njwks_uri = http://idp/jwks\nissuer = https://idp/\n",
            )
            .unwrap();
        options.merge_env(
            vec![
                ("INMANTA_AUTH_JWT_CI_JWT_USERNAME_CLAIM".to_string(), "email".to_string()),
                ("INMANTA_AUTH_JWT_CI_VALIDATE_CERT".to_string(), "false".to_string()),
            ]
            .into_iter(),
        );
        let issuers = options.jwt_issuers().unwrap();
        assert_eq!(issuers.len(), 1);
        assert_eq!(issuers[0].name, "ci");
        assert_eq!(issuers[0].username_claim, "email");
        assert_eq!(issuers[0].audience, "https://idp/");
        assert!(matches!(&issuers[0].keys, orchestrator::auth::outside::KeySource::Jwks { validate_cert: false, .. }));
        options.set("auth_jwt_other", "algorithm", "HS256");
        let err = options.jwt_issuers().unwrap_err().to_string();
        assert!(err.contains("[auth_jwt_other]"), "{err}");
    }

    #[test]
    fn bad_values_are_reported_with_their_option() {
        let mut options = Options::default();
        options.set("server", "bind-port", "eighty");
        let err = ServerConfig::from_options(&options).unwrap_err().to_string();
        assert!(err.contains("[server] bind-port"), "{err}");
        assert!(Options::default().merge_ini("bind-port = 1\n").is_err());
    }
}

/// The commented `inmanta.cfg` the Debian package installs (`inmanta config-template`): every
/// option of [`KNOWN`], commented out, with its default and meaning from docs/configuration.md,
/// so the file never lists an option the binary does not read nor misses one it does.
pub fn template() -> String {
    let docs = include_str!("../../docs/configuration.md");
    let rows: Vec<Vec<String>> = docs
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| l.split('|').map(|c| c.trim().trim_matches('`').replace('_', "-")).collect())
        .collect();
    let mut out = String::from(
        "# Configuration of the inmanta server (docs/configuration.md). Every option is listed, commented\n\
         # out with its default; INMANTA_<SECTION>_<KEY> environment variables and flags override it.\n",
    );
    let mut section = "";
    for (s, key) in KNOWN {
        if *s != section {
            section = s;
            out.push_str(&format!("\n[{section}]\n"));
        }
        let row = rows.iter().find(|r| r.len() > 4 && r[1] == s.replace('_', "-") && r[2] == *key);
        match row {
            Some(r) => {
                let meaning = r.get(5).map(String::as_str).unwrap_or(r[4].as_str());
                out.push_str(&format!("# {}\n# default: {}\n", one_line(meaning), one_line(&r[4])));
            }
            None => out.push_str("# see docs/configuration.md\n"),
        }
        out.push_str(&format!("#{key} =\n"));
    }
    out
}

/// A table cell as a comment: markdown links and emphasis dropped, at most 300 characters.
fn one_line(text: &str) -> String {
    let mut plain = text.replace("**", "").replace('[', "");
    // `text](target)` of a link keeps its text.
    while let Some(start) = plain.find("](") {
        let end = plain[start..].find(')').map_or(plain.len(), |e| start + e + 1);
        plain.replace_range(start..end, "");
    }
    if plain.chars().count() > 300 { format!("{}...", plain.chars().take(300).collect::<String>()) } else { plain }
}

#[cfg(test)]
mod template_tests {
    #[test]
    fn the_template_lists_every_option_and_parses() {
        let text = super::template();
        for (section, key) in super::KNOWN {
            assert!(text.contains(&format!("#{key} =")), "[{section}] {key} missing");
        }
        let docs = include_str!("../../docs/configuration.md");
        for (section, key) in super::KNOWN {
            let mentioned = docs.contains(*key) || docs.contains(&key.replace('-', "_"));
            assert!(mentioned, "[{section}] {key} is not documented in docs/configuration.md");
        }
        // Commented out, it changes nothing: the file parses to no option at all.
        let mut options = super::Options::default();
        options.merge_ini(&text).unwrap();
        assert!(options.values.is_empty());
        assert!(
            text.contains("[server]\n# address the API and console listen on\n# default: 127.0.0.1\n#bind-address ="),
            "{text}"
        );
    }
}
