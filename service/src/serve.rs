//! `inmanta server`: open the store, build the router, serve until SIGTERM or SIGINT.

use std::net::SocketAddr;

use anyhow::Context;
use axum::Router;
use tokio::net::TcpListener;
use tower_http::trace::TraceLayer;

use crate::config::ServerConfig;
use crate::rest::{self, AppState};
use crate::security::Security;
use std::sync::Arc;

/// The web console's routes, made by the binary (the console is not part of this crate, so that
/// it compiles beside it): given the orchestrator, the schedulers, the security settings and the
/// configured site directory.
pub type ConsoleRouter = fn(
    orchestrator::Orchestrator,
    Option<Arc<orchestrator::scheduler::Schedulers>>,
    Arc<Security>,
    Option<std::path::PathBuf>,
) -> Router;

pub async fn run(config: ServerConfig, console: ConsoleRouter) -> anyhow::Result<()> {
    crate::connections::raise_open_file_limit();
    std::fs::create_dir_all(&config.storage.state_dir)
        .with_context(|| format!("cannot create the state directory {}", config.storage.state_dir.display()))?;
    // A policy that does not compile stops the start before anything else happens.
    let authorization = authorization(&config)?;
    tracing::info!(database = %config.storage.database_display(), "opening the database");
    let orchestrator = orchestrator::Orchestrator::open(&config.storage.database_url)
        .await
        .with_context(|| format!("cannot open the database {}", config.storage.database_display()))?;
    // SQLite: one server per database file. Held (open) until the process ends.
    let _single_server = orchestrator.store().claim_single_server()?;
    // PostgreSQL: this server joins the others on the database (docs/ha.md).
    orchestrator
        .join_cluster(config.scheduler_lease)
        .await
        .context("cannot register this server among the others on the database")?;

    if let orchestrator::auth::policy::Authorization::PolicyEngine(policy) = &authorization {
        create_policy_roles(&orchestrator, &policy.roles).await?;
    }
    orchestrator.set_authorization(authorization)?;

    // Read the TLS files first: a wrong path fails the start before anything else happens.
    let tls = config.http.tls.as_ref().map(crate::tls::acceptor).transpose()?;
    let mut security = Security::new(
        &orchestrator,
        config.auth.enabled,
        config.auth.login_session_expire,
        config.auth.login_max_failures,
    )
    .await
    .context("cannot load the authentication keys")?
    .with_trusted_proxies(config.http.trusted_proxies.clone())
    .with_token_leeway(config.auth.token_leeway)
    .with_jwt_issuers(&config.auth.jwt_issuers, config.auth.token_leeway)?
    .with_oidc(crate::oidc::Providers::new(config.auth.oidc_providers.clone(), config.auth.oidc_local_fallback)?);
    security.secure_cookies = tls.is_some();
    let security = Arc::new(security);
    let initial_password_file = if config.auth.enabled {
        crate::security::ensure_first_admin(&orchestrator, &config.storage.state_dir).await?
    } else {
        tracing::warn!(
            "authentication is OFF (--no-auth): anyone who can reach this port can do anything; for development only"
        );
        eprintln!("warning: authentication is off (--no-auth); never run like this in production");
        None
    };
    crate::sessions::start_cleanup(orchestrator.clone());
    orchestrator::environment_metrics::start_recording(orchestrator.clone());

    let handler_dir = std::path::absolute(config.storage.state_dir.join("handlers"))?;
    let agents = std::sync::Arc::new(crate::agents::InProcessAgents::new(
        orchestrator.clone(),
        handler_dir,
        config.agents.python.clone(),
    ));
    agents.prestart_python();
    let sessions = crate::remote::Sessions::new(orchestrator.clone(), config.agents.timeout).await?;
    let dispatch = crate::remote::RoutingDispatch { local: agents.clone(), sessions: sessions.clone() };
    let schedulers = orchestrator::scheduler::Schedulers::start(orchestrator.clone(), std::sync::Arc::new(dispatch))
        .await
        .context("cannot start the schedulers")?;
    agents.repair_drift(schedulers.clone());
    orchestrator.start_health_monitor(&std::path::absolute(&config.storage.state_dir)?).await;
    let state = AppState {
        orchestrator: orchestrator.clone(),
        schedulers: schedulers.clone(),
        security: security.clone(),
        reads: Default::default(),
    };
    let remote_agents = Router::new()
        .route("/api/v2/agent/session", axum::routing::get(crate::remote::session))
        .with_state((sessions, security.clone()));
    let rest_router = rest::router_with(
        state,
        rest::limits::Limits::new(config.http.max_request_body_size, config.http.request_timeout),
        rest::files::FileStoreQuota(config.storage.file_store_quota),
    );
    agents.serve_api_with(rest_router.clone());
    let mut app = Router::new().merge(rest_router).merge(remote_agents);
    if config.console.enabled {
        app = app.merge(console(
            orchestrator.clone(),
            Some(schedulers.clone()),
            security.clone(),
            config.console.path.clone(),
        ));
    }
    let same_origin = Arc::new(crate::csrf::SameOrigin {
        tls: tls.is_some(),
        trusted_proxies: config.http.trusted_proxies.clone(),
        allowed: config.http.allowed_origins.clone(),
    });
    let cors = Arc::new(crate::cors::Cors {
        allow_origin: match &config.http.access_control_allow_origin {
            Some(origin) => Some(axum::http::HeaderValue::from_str(origin).with_context(|| {
                format!("[server] access-control-allow-origin {origin:?} cannot be sent as a header value")
            })?),
            None => None,
        },
        auth: config.auth.enabled,
    });
    let app = app
        .merge(crate::metrics::router(orchestrator.clone(), security.clone()))
        .fallback(rest::not_found)
        .layer(axum::middleware::from_fn_with_state(same_origin, crate::csrf::refuse_cross_site))
        .layer(axum::middleware::from_fn_with_state(cors, crate::cors::cross_origin))
        .layer(axum::middleware::from_fn(crate::metrics::track))
        .layer(TraceLayer::new_for_http().on_failure(log_failure));
    if let Some(address) = &config.http.metrics_bind {
        serve_open_metrics(address, orchestrator.clone(), config.http.connection_limits()).await?;
    }

    let address = format!("{}:{}", config.http.bind_address, config.http.bind_port);
    let listener = TcpListener::bind(&address).await.with_context(|| format!("cannot listen on {address}"))?;
    let local: SocketAddr = listener.local_addr()?;
    tracing::info!(%local, "server listening");
    let compiles = crate::compile_runner::RunnerConfig {
        state_dir: std::path::absolute(&config.storage.state_dir)?,
        address: config.compiles.compiler_host.clone().unwrap_or_else(|| match local.ip() {
            ip if ip.is_unspecified() => "127.0.0.1".to_string(),
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
            ip => ip.to_string(),
        }),
        ca_file: config.http.tls.as_ref().map(|files| files.ca_for_compiles.clone()),
        port: local.port(),
        timeout: std::time::Duration::from_secs(config.compiles.timeout),
        parallel: config.compiles.parallel,
        memory_limit: (config.compiles.memory_limit > 0).then_some(config.compiles.memory_limit),
        security: security.clone(),
        claim: config.compiles.claim,
        report_retention: config.compiles.report_retention,
        report_cleanup_interval: config.compiles.report_cleanup_interval,
    };
    crate::compile_runner::start(orchestrator.clone(), compiles);
    // One plain line on stdout that people and scripts can rely on (tests read the port from it).
    let scheme = if tls.is_some() { "https" } else { "http" };
    println!("Inmanta server listening on {scheme}://{local} (console: {scheme}://{local}/console)");
    if let Some(file) = initial_password_file {
        println!("Log in at {scheme}://{local}/console as `admin`; the generated password is in {file}");
    }

    crate::connections::serve(listener, tls, app, config.http.connection_limits(), shutdown_signal()).await?;
    tracing::info!("shutting down: closing the database");
    orchestrator.store().close().await;
    Ok(())
}

/// A request that ended in a server error. 503 means "not now": the health check answers it for
/// as long as a fault lasts (asked every second by a load balancer, and the fault itself is logged
/// once when it starts and once when it ends), so it is not an error line each time.
fn log_failure(
    failure: tower_http::classify::ServerErrorsFailureClass,
    latency: std::time::Duration,
    _span: &tracing::Span,
) {
    use tower_http::classify::ServerErrorsFailureClass;
    match failure {
        ServerErrorsFailureClass::StatusCode(axum::http::StatusCode::SERVICE_UNAVAILABLE) => {
            tracing::debug!(?latency, "answered 503 Service Unavailable")
        }
        failure => tracing::error!(classification = %failure, ?latency, "response failed"),
    }
}

async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {},
        _ = terminate => {},
    }
    tracing::info!("signal received: finishing open requests");
}

/// Serves `/metrics` without credentials on `[server] metrics-bind-address:metrics-bind-port`.
/// Its connections have the same limits as the main port's.
async fn serve_open_metrics(
    address: &str,
    orchestrator: orchestrator::Orchestrator,
    limits: crate::connections::ConnectionLimits,
) -> anyhow::Result<()> {
    let listener =
        TcpListener::bind(address).await.with_context(|| format!("cannot listen on {address} for metrics"))?;
    let local = listener.local_addr()?;
    tracing::info!(%local, "metrics listening (no credentials asked)");
    println!("Inmanta metrics listening on http://{local}/metrics");
    tokio::spawn(async move {
        let router = crate::metrics::open_router(orchestrator);
        // Served until the process ends.
        let forever = std::future::pending::<()>();
        if let Err(e) = crate::connections::serve(listener, None, router, limits, forever).await {
            tracing::error!(error = %e, "the metrics listener stopped");
        }
    });
    Ok(())
}

/// The authorization provider of `[server] authorization-provider`, its policy compiled once.
fn authorization(config: &ServerConfig) -> anyhow::Result<orchestrator::auth::policy::Authorization> {
    use orchestrator::auth::policy::Authorization;
    if !config.auth.enabled || config.auth.authorization_provider == crate::config::AuthorizationProvider::Legacy {
        return Ok(Authorization::Legacy);
    }
    let policy = config.auth.policy.load(&rest::endpoint_data()).context("cannot load the access policy")?;
    tracing::info!(policy = %policy.source, "authorization by access policy (policy-engine)");
    Ok(Authorization::PolicyEngine(Arc::new(policy)))
}

/// Creates the roles an access policy lists (its `roles`) that the database lacks, as Inmanta
/// does at start; a role the policy no longer lists is left alone.
async fn create_policy_roles(orchestrator: &orchestrator::Orchestrator, roles: &[String]) -> anyhow::Result<()> {
    let existing = orchestrator.list_roles().await.context("cannot read the roles")?;
    for role in roles.iter().filter(|role| !existing.contains(role)) {
        match orchestrator.create_role(role).await {
            // Another server on the same database made it meanwhile.
            Ok(()) | Err(orchestrator::Error::Conflict(_)) => {}
            Err(e) => return Err(e).with_context(|| format!("cannot create the role {role:?} of the access policy")),
        }
    }
    Ok(())
}
