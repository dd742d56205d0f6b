//! Server status: product, version, database, uptime and the server's components.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::components::*;
use crate::fns;
use crate::model::ServerStatus;

#[component]
pub fn StatusPage() -> impl IntoView {
    let refresh = Refresh::get();
    let data = Resource::new(move || refresh.tick(), |_| fns::load_server_status());
    view! {
        <Title text="Server Status"/>
        <section class="page">
            <div class="page-header">
                <h1>"Server Status"</h1>
                <button class="button button-secondary" type="button" id="status-refresh" on:click=move |_| refresh.bump()>
                    "Refresh"
                </button>
            </div>
            <Transition fallback=|| view! { <p class="muted">"Loading the server status…"</p> }>
                {move || Suspend::new(async move {
                    match data.await {
                        Ok(status) => view! { <StatusBody status/> }.into_any(),
                        Err(e) => view! { <ErrorBox title="The server status could not be loaded" error=e.to_string()/> }.into_any(),
                    }
                })}
            </Transition>
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
    let components = status
        .components
        .into_iter()
        .map(|c| {
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
        })
        .collect_view();
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
            <table class="table" id="components">
                <thead>
                    <tr>
                        <th scope="col">"Component"</th>
                        <th scope="col">"Status"</th>
                        <th scope="col">"Details"</th>
                        <th scope="col">"Message"</th>
                    </tr>
                </thead>
                <tbody>{components}</tbody>
            </table>
        </div>
    }
}
