//! Server status: product, version, database, uptime and the server's components.

use crate::error::ConsoleError;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use leptos_meta::Title;

use crate::components::*;
#[cfg(feature = "ssr")]
use crate::fns::{authorized_global, status_text};
use crate::model::{ComponentStatus, ServerStatus};

#[component]
pub fn StatusPage() -> impl IntoView {
    let refresh = Refresh::get();
    let data = live_resource(|| (), |()| load_server_status());
    view! {
        <Title text="Server Status"/>
        <section class="page">
            <div class="page-header">
                <h1>"Server Status"</h1>
                <button class="button button-secondary" type="button" id="status-refresh" on:click=move |_| refresh.bump()>
                    "Refresh"
                </button>
            </div>
            <Loaded
                resource=data
                loading="Loading the server status…"
                error_title="The server status could not be loaded"
                view=|status| view! { <StatusBody status/> }
            />
        </section>
    }
}

/// `OK`, `Warning`, `Error` as a badge class (`state-ok`, ...).
fn status_badge(status: &str) -> impl IntoView + use<> {
    let class = format!("badge status-{}", status.to_lowercase());
    view! { <span class=class data-status=status.to_string()>{status.to_string()}</span> }
}

#[component]
fn StatusBody(status: ServerStatus) -> impl IntoView {
    let row = |c: ComponentStatus| {
        let details = if c.details.is_empty() {
            view! { <span class="muted">"—"</span> }.into_any()
        } else {
            view! {
                <dl class="facts-inline">
                    {c
                        .details
                        .into_iter()
                        .map(|(k, v)| {
                            let v = if k == "uptime" {
                                v.parse::<f64>().map(duration_text).unwrap_or(v)
                            } else {
                                v
                            };
                            view! {
                                <dt>{k.replace('_', " ")}</dt>
                                <dd>{v}</dd>
                            }
                        })
                        .collect_view()}
                </dl>
            }
            .into_any()
        };
        view! {
            <tr data-component=c.name.clone()>
                <th scope="row" class="mono">{c.name.clone()}</th>
                <td>{status_badge(&c.status)}</td>
                <td>{details}</td>
                <td>{c.message.unwrap_or_default()}</td>
            </tr>
        }
    };
    view! {
        <div class="cards">
            <div class="card" id="server-card">
                <h2>"Server"</h2>
                <dl class="facts-list">
                    <dt>"Product"</dt>
                    <dd id="status-product">{status.product}</dd>
                    <dt>"Edition"</dt>
                    <dd>{status.edition}</dd>
                    <dt>"Version"</dt>
                    <dd id="status-version" class="mono">{status.version}</dd>
                    <dt>"Status"</dt>
                    <dd id="status-overall">{status_badge(&status.status)}</dd>
                    <dt>"Uptime"</dt>
                    <dd id="status-uptime">{duration_text(status.uptime as f64)}</dd>
                </dl>
            </div>
            <div class="card" id="database-card">
                <h2>"Database"</h2>
                <dl class="facts-list">
                    <dt>"Kind"</dt>
                    <dd id="status-database">{status.database}</dd>
                    <dt>"Status"</dt>
                    <dd>{status_badge(&status.database_status)}</dd>
                    <dt>"Version"</dt>
                    <dd class="mono">{status.database_version.unwrap_or_else(|| "unknown".into())}</dd>
                </dl>
            </div>
        </div>
        <div class="card">
            <h2>"Components"</h2>
            <Table
                id="components"
                headings=&[Heading::Plain("Component"), Heading::Plain("Status"), Heading::Plain("Details"), Heading::Plain("Message")]
                rows=status.components
                row
            />
        </div>
    }
}

/// The server's status, as `GET /api/v1/serverstatus` reports it.
#[server(prefix = "/console/fn", endpoint = "server_status", input = Json)]
pub async fn load_server_status() -> Result<ServerStatus, ConsoleError> {
    let s = authorized_global("status.read")?;
    let status = s.orchestrator.server_status(s.schedulers.as_deref()).await;
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let database = status.slices.iter().find(|slice| slice.name == "core.database");
    let uptime = status
        .slices
        .iter()
        .find(|slice| slice.name == "core.server")
        .and_then(|slice| slice.status["uptime"].as_u64())
        .unwrap_or(0);
    Ok(ServerStatus {
        product: status.product.clone(),
        edition: status.edition.clone(),
        version: status.version.clone(),
        status: status_text(&status.status),
        database: database.and_then(|d| d.status["kind"].as_str()).unwrap_or("unknown").to_string(),
        database_status: database.map(|d| status_text(&d.reported_status)).unwrap_or_default(),
        database_version: database.and_then(|d| d.status["version"].as_str()).map(str::to_string),
        uptime,
        components: status
            .slices
            .iter()
            .map(|slice| ComponentStatus {
                name: slice.name.clone(),
                status: status_text(&slice.reported_status),
                message: slice.message.clone(),
                details: slice
                    .status
                    .as_object()
                    .map(|m| m.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), text(v))).collect())
                    .unwrap_or_default(),
            })
            .collect(),
    })
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use crate::test_support::*;
    use axum::http::StatusCode;

    #[tokio::test]
    async fn status_page_shows_the_server_and_its_components() {
        let (_dir, o) = orchestrator_with(&[]).await;
        let env = environment_with_versions(&o, 1).await;
        compiles(&o, env).await;
        let (status, html) = get(router(Some(o)), &format!("/console/status?env={env}")).await;
        assert_eq!(status, StatusCode::OK);
        for needle in [
            "<title>Server Status · Inmanta</title>",
            "Inmanta Service Orchestrator",
            r#"id="status-database">sqlite<"#,
            r#"data-component="core.server""#,
            r#"data-component="core.database""#,
            r#"data-component="core.scheduler_manager""#,
            r#"data-component="core.compiler""#,
            "no scheduler runs in this process",
            "Server Status</a>",
        ] {
            assert!(html.contains(needle), "{needle} missing in {html}");
        }
    }
}
