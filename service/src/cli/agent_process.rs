//! `inmanta agent --name A [--name B] [--server URL] [-e ENV] [--token T]`: an agent process on
//! another machine. It connects to the server over a WebSocket, runs the handlers of the agent
//! names it declares when the environment's scheduler sends them work, and reconnects with
//! back-off when the connection drops (the server lists it `down` after `[server] agent-timeout`
//! and keeps its work). Handler executables that versions ship are fetched from the server's file
//! store and kept in `--cache-dir`; so is the Python code of the modules whose `@provider`
//! handlers it runs (in Python executors, `[agent] python`, docs/modules.md).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent::{
    ApiRequest, Events, Executor, FactSource, FileSource, Mode, PythonCode, ResourceRequest, ServerApi, VersionCode,
};
use api::client::Client;
use base64::Engine;
use clap::Args;
use futures_util::{SinkExt, StreamExt};
use reqwest::Method;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use uuid::Uuid;

use super::CliError;
use crate::config::Options;
use crate::remote::{Frame, WireOutcome};

#[derive(Args, Clone, Default)]
pub struct ProcessArgs {
    /// Agent names this process serves (repeat for several).
    #[arg(long = "name")]
    pub names: Vec<String>,
    /// Server URL, e.g. http://orchestrator:8888 (default: --host/--port). The agent token of
    /// the environment comes with --token.
    #[arg(long)]
    pub server: Option<String>,
    /// Where handler executables and Python module code shipped with versions are kept
    /// (default: `handlers/` in [config] state-dir, else data/agent/handlers).
    #[arg(long = "cache-dir")]
    pub cache_dir: Option<PathBuf>,
}

impl ProcessArgs {
    /// `--cache-dir`, else `handlers/` in `[config] state-dir`, else `data/agent/handlers`.
    pub fn handler_dir(&self, options: &Options) -> PathBuf {
        self.cache_dir.clone().unwrap_or_else(|| {
            options
                .get("config", "state-dir")
                .map(PathBuf::from)
                .unwrap_or_else(|| "data/agent".into())
                .join("handlers")
        })
    }
}

/// File contents by hash from the server's file store.
struct ServerFiles {
    client: Client,
    runtime: tokio::runtime::Handle,
}

impl FileSource for ServerFiles {
    fn get(&self, hash: &str) -> Result<Vec<u8>, String> {
        let answer = self
            .runtime
            .block_on(self.client.call(Method::GET, &format!("/api/v1/file/{hash}"), None, None::<&()>))
            .map_err(|e| format!("file {hash}: {e}"))?;
        let content = answer["content"].as_str().ok_or_else(|| format!("file {hash}: no content in the answer"))?;
        base64::engine::general_purpose::STANDARD.decode(content).map_err(|e| format!("file {hash}: {e}"))
    }
}

/// Facts of resources from the server's API, for std's fact references.
struct ServerFacts {
    client: Client,
    runtime: tokio::runtime::Handle,
}

impl FactSource for ServerFacts {
    fn facts(
        &self,
        environment: &str,
        resource_id: &str,
    ) -> Result<serde_json::Map<String, serde_json::Value>, String> {
        let env = Uuid::parse_str(environment).map_err(|_| format!("{environment:?} is not an environment id"))?;
        let facts = self.runtime.block_on(self.client.resource_facts(env, resource_id)).map_err(|e| e.to_string())?;
        Ok(facts.into_iter().map(|f| (f.name, serde_json::Value::String(f.value))).collect())
    }
}

/// The API calls of Python handlers (`self.get_client()`), sent to the server with this agent's
/// token (which the server holds to its environment, as the executor holds the tid header).
struct ServerCalls {
    client: Client,
    runtime: tokio::runtime::Handle,
}

/// How long a handler's API call waits for the server (inmanta-core's client's default).
const API_CALL_PATIENCE: Duration = Duration::from_secs(120);

impl ServerApi for ServerCalls {
    fn call(&self, _environment: &str, request: &ApiRequest) -> (u16, serde_json::Value) {
        let Ok(method) = Method::from_bytes(request.method.as_bytes()) else {
            return (400, serde_json::json!({"message": format!("{:?} is no HTTP method", request.method)}));
        };
        let exchange = self.client.exchange(method, &request.path_and_query, &request.headers, request.body.as_ref());
        match self.runtime.block_on(tokio::time::timeout(API_CALL_PATIENCE, exchange)) {
            Ok(Ok((status, answer))) => (status.as_u16(), answer),
            Ok(Err(e)) => (503, serde_json::json!({"message": e.to_string()})),
            Err(_) => (
                504,
                serde_json::json!({"message": format!(
                    "the server did not answer {} {} within {} s",
                    request.method, request.path_and_query, API_CALL_PATIENCE.as_secs()
                )}),
            ),
        }
    }
}

pub async fn run(
    base: String,
    env: Uuid,
    args: ProcessArgs,
    token: Option<String>,
    options: &Options,
) -> Result<(), CliError> {
    if args.names.is_empty() {
        return Err(CliError::Usage(
            "give the agent names this process serves with --name (repeat for several)".into(),
        ));
    }
    // HTTPS like Inmanta's agents: `[agent_rest_transport] ssl` and `ssl_ca_cert_file` (else those
    // of `[cmdline_rest_transport]`, else the system's CA bundle).
    let agent_ssl = options.get("agent_rest_transport", "ssl").is_some_and(super::is_true);
    let base = if agent_ssl { base.replacen("http://", "https://", 1) } else { base };
    let ca_file = options
        .get("agent_rest_transport", "ssl-ca-cert-file")
        .or_else(|| options.get("cmdline_rest_transport", "ssl-ca-cert-file"))
        .map(PathBuf::from);
    let usage = |e: String| CliError::Usage(format!("[agent_rest_transport] {e}"));
    let client = Client::new(base.clone())
        .with_token(token.clone())
        .with_ca_file(ca_file.as_deref())
        .map_err(|e| usage(e.to_string()))?;
    let tls = if base.starts_with("https://") { Some(tls_connector(ca_file.as_deref()).map_err(usage)?) } else { None };
    let files = ServerFiles { client: client.clone(), runtime: tokio::runtime::Handle::current() };
    let handler_dir = std::path::absolute(args.handler_dir(options))?;
    let python = crate::config::python_settings(options, handler_dir.join("python"))
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let facts = ServerFacts { client: client.clone(), runtime: tokio::runtime::Handle::current() };
    let executor = Arc::new(
        Executor::new(Arc::new(files))
            .with_facts(Arc::new(facts))
            .with_server_api(Arc::new(ServerCalls {
                client: client.clone(),
                runtime: tokio::runtime::Handle::current(),
            }))
            .with_shipped_handlers(handler_dir)
            .with_python(python),
    );
    if let Some(python) = executor.python() {
        python.prestart();
    }
    let names: Vec<String> = args.names.iter().map(|n| format!("name={}", super::encode_segment(n))).collect();
    let ws_base = base.replacen("https://", "wss://", 1).replacen("http://", "ws://", 1);
    let url = format!("{ws_base}/api/v2/agent/session?environment={env}&{}", names.join("&"));
    let mut backoff = Duration::from_millis(500);
    loop {
        let mut request = url.as_str().into_client_request().map_err(|e| CliError::Usage(format!("{url}: {e}")))?;
        if let Some(token) = &token
            && let Ok(value) = format!("Bearer {token}").parse()
        {
            request.headers_mut().insert("Authorization", value);
        }
        match connect(request, tls.as_ref()).await {
            Ok(stream) => {
                eprintln!("connected to {base} for agents {}", args.names.join(", "));
                backoff = Duration::from_millis(500);
                serve(stream, executor.clone(), client.clone()).await;
                eprintln!("connection to {base} lost; reconnecting");
            }
            // Wrong credentials do not fix themselves: stop and say so.
            Err(tokio_tungstenite::tungstenite::Error::Http(response))
                if matches!(response.status().as_u16(), 401 | 403) =>
            {
                let body = response.body().as_deref().map(String::from_utf8_lossy).unwrap_or_default();
                return Err(CliError::Usage(format!(
                    "the server refused this agent ({}): {body}; pass an agent token of the environment with --token",
                    response.status()
                )));
            }
            Err(e) => eprintln!("cannot connect to {base}: {e}; retrying in {:.1} s", backoff.as_secs_f64()),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(30));
    }
}

/// What the WebSocket runs over: TCP, or TLS over TCP for `wss://`.
trait Transport: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Transport for T {}

/// Opens the agent session: TCP to the server, TLS when `tls` is given, then the WebSocket
/// handshake.
async fn connect(
    request: tokio_tungstenite::tungstenite::handshake::client::Request,
    tls: Option<&tokio_rustls::TlsConnector>,
) -> Result<tokio_tungstenite::WebSocketStream<Box<dyn Transport>>, tokio_tungstenite::tungstenite::Error> {
    let uri = request.uri();
    let host = uri.host().unwrap_or("127.0.0.1").trim_start_matches('[').trim_end_matches(']').to_string();
    let port = uri.port_u16().unwrap_or(if tls.is_some() { 443 } else { 80 });
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
    let _ = tcp.set_nodelay(true);
    let stream: Box<dyn Transport> = match tls {
        Some(tls) => {
            let name = rustls::pki_types::ServerName::try_from(host.clone()).map_err(|e| {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("server name {host}: {e}"))
            })?;
            Box::new(tls.connect(name, tcp).await?)
        }
        None => Box::new(tcp),
    };
    Ok(tokio_tungstenite::client_async(request, stream).await?.0)
}

/// TLS for `wss://`: the server's certificate is checked against `ca_file`, else the system's
/// CA bundle.
fn tls_connector(ca_file: Option<&std::path::Path>) -> Result<tokio_rustls::TlsConnector, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let pem = api::client::ca_bundle(ca_file)?;
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(CertificateDer::pem_slice_iter(&pem).filter_map(Result::ok));
    if added == 0 {
        return Err(format!(
            "{} holds no usable CA certificate",
            ca_file.map_or_else(|| "the system CA bundle".to_string(), |f| f.display().to_string())
        ));
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS protocol versions: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// Sends what a discovery handler found to the server (`POST /api/v2/discovered`, as Inmanta's
/// executors do); when that fails, so does the run.
async fn report_discovered(client: &Client, env: Uuid, outcome: &mut agent::Outcome) {
    if outcome.discovered.is_empty() {
        return;
    }
    let found = std::mem::take(&mut outcome.discovered);
    if let Err(e) = client.report_discovered(env, &found).await {
        crate::agents::report_failed(outcome, e.to_string());
    }
}

fn failure(message: String) -> WireOutcome {
    WireOutcome {
        status: api::HandlerStatus::Unavailable,
        change: api::Change::NoChange,
        changes: Default::default(),
        logs: vec![api::resource::LogLine {
            level: "ERROR".into(),
            msg: format!("the agent could not run the task: {message}"),
            args: vec![],
            kwargs: Default::default(),
            timestamp: api::Timestamp::now(),
        }],
        facts: Default::default(),
    }
}

async fn serve<S>(stream: tokio_tungstenite::WebSocketStream<S>, executor: Arc<Executor>, client: Client)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sink, mut source) = stream.split();
    let (results, mut outgoing) = tokio::sync::mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        while let Some(text) = outgoing.recv().await {
            if sink.send(Message::Text(text.into())).await.is_err() {
                break;
            }
        }
    });
    while let Some(Ok(message)) = source.next().await {
        let Message::Text(text) = message else { continue };
        let Ok(Frame::Task { id, task }) = serde_json::from_str::<Frame>(&text) else {
            eprintln!("ignored a frame that is not a task");
            continue;
        };
        let executor = executor.clone();
        let results = results.clone();
        let client = client.clone();
        let env = task.environment;
        tokio::spawn(async move {
            let outcome = tokio::task::spawn_blocking(move || {
                let id = api::ResourceId::parse(&task.resource_id).map_err(|e| e.to_string())?;
                let request = ResourceRequest { id, version: task.version, attributes: task.attributes };
                let mode = if task.dry_run { Mode::DryRun } else { Mode::Deploy };
                let events = Events { dependency_changed: task.dependency_changed };
                let python = match &task.python {
                    Some(info) => Some(Arc::new(PythonCode::from_module_version_info(info)?)),
                    None => None,
                };
                let code =
                    VersionCode { environment: task.environment.to_string(), shipped_handler: task.handler, python };
                if task.facts {
                    let facts = executor.facts_with(&request, &code)?;
                    return Ok(agent::Outcome {
                        status: agent::HandlerStatus::Deployed,
                        change: agent::Change::NoChange,
                        changes: Default::default(),
                        logs: vec![],
                        facts,
                        discovered: vec![],
                    });
                }
                Ok::<_, String>(executor.execute_code(&request, &code, mode, &events))
            })
            .await;
            let outcome = match outcome {
                Ok(Ok(mut o)) => {
                    report_discovered(&client, env, &mut o).await;
                    WireOutcome {
                        status: o.status,
                        change: o.change,
                        changes: o
                            .changes
                            .into_iter()
                            .map(|(k, c)| (k, serde_json::json!({"current": c.current, "desired": c.desired})))
                            .collect(),
                        logs: o.logs,
                        facts: o.facts,
                    }
                }
                Ok(Err(message)) => failure(message),
                Err(e) => failure(e.to_string()),
            };
            let frame = serde_json::to_string(&Frame::Result { id, outcome }).unwrap_or_default();
            let _ = results.send(frame);
        });
    }
    writer.abort();
}
