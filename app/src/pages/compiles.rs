//! Compile reports: the compiles of an environment (queued, running, finished) with the
//! Recompile menu, and one compile's details with its stages.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use leptos_router::hooks::{use_params_map, use_query_map};

use api::CompileStatus;

use crate::components::*;
#[cfg(feature = "ssr")]
use crate::fns::{compile_row, env_id, fail, page_request, paged, seconds, services_for};
#[cfg(feature = "ssr")]
use crate::model::CompileError;
use crate::model::{CompileDetailsView, CompileRow, CompileStageRow, Paged, TableQuery};

/// The status filter of the compile reports: any, or one compile status.
const COMPILE_STATUS_CHOICES: [&str; 5] = [
    "",
    CompileStatus::Queued.as_str(),
    CompileStatus::Running.as_str(),
    CompileStatus::Success.as_str(),
    CompileStatus::Failed.as_str(),
];

const COMPILES: &str = "/console/compilereports";

#[component]
pub fn CompileReportsPage() -> impl IntoView {
    let env = env();
    let data = table_resource(compile_reports);
    view! {
        <EnvironmentPage
            title="Compile Reports"
            env
            actions=move || view! {
                <RecompileMenu/>
            }
        >
            <StatusFilter path=COMPILES values=&COMPILE_STATUS_CHOICES/>
            <Loaded
                resource=data
                loading="Loading compile reports…"
                error_title="The compile reports could not be loaded"
                view=move |page| view! { <CompileTable env=env.get_untracked() data=page/> }
            />
        </EnvironmentPage>
    }
    .into_any()
}

/// "Recompile ▾" with "Recompile" and "Update project & recompile"; disabled, with the reason,
/// when the environment does not compile on the server. Its open state lives outside the
/// refetched part, so live updates do not close it.
#[component]
fn RecompileMenu() -> impl IntoView {
    let env = env();
    let enabled = live_resource(move || env.get(), server_compile_enabled);
    let open = RwSignal::new(false);
    let notice = RwSignal::new(None::<String>);
    let error = ActionError::new();
    let start = move |update: bool| {
        open.set(false);
        let call = recompile(env.get_untracked(), update);
        leptos::task::spawn_local(async move {
            match call.await {
                Ok(message) => {
                    error.set(None);
                    notice.set(Some(message));
                }
                Err(e) => {
                    notice.set(None);
                    error.fail(e);
                }
            }
            error.refresh.bump();
        });
    };
    view! {
        <div class="menu">
            <Transition fallback=|| {
                view! { <button class="button" type="button" id="recompile-menu" disabled=true>"Recompile ▾"</button> }
            }>
                {move || {
                    let on = enabled.get().and_then(|r| r.ok()).unwrap_or(true);
                    let settings = env_link("settings", &env.get());
                    view! {
                        <button
                            class="button"
                            type="button"
                            id="recompile-menu"
                            aria-haspopup="menu"
                            aria-expanded=move || open.get().to_string()
                            aria-describedby=(!on).then_some("recompile-hint")
                            title=(!on).then_some("Server compiles are off for this environment (setting server_compile)")
                            disabled=!on
                            on:click=move |_| open.update(|o| *o = !*o)
                        >
                            "Recompile ▾"
                        </button>
                        {(!on).then(|| view! {
                            <p class="hint" id="recompile-hint">
                                "Server compiles are off for this environment. Turn on "
                                <a href=settings>"server_compile"</a>
                                " in the settings to recompile from here."
                            </p>
                        })}
                    }
                }}
            </Transition>
            <Show when=move || open.get()>
                <div class="menu-panel" role="menu" aria-label="Recompile">
                    <button class="menu-item" type="button" role="menuitem" id="recompile" on:click=move |_| start(false)>
                        "Recompile"
                    </button>
                    <button
                        class="menu-item"
                        type="button"
                        role="menuitem"
                        id="recompile-update"
                        on:click=move |_| start(true)
                    >
                        "Update project & recompile"
                    </button>
                </div>
            </Show>
            {move || notice.get().map(|n| view! { <p class="action-notice" role="status">{n}</p> })}
            <ActionMessage error/>
        </div>
    }
    .into_any()
}

#[component]
fn CompileTable(env: String, data: Paged<CompileRow>) -> impl IntoView {
    let q = use_query_map();
    if data.rows.is_empty() {
        let current = q.get_untracked();
        let filtered = current.latest_values().any(|(k, v)| k.starts_with("filter.") && !v.is_empty());
        if filtered {
            let clear = link(COMPILES, &current, &[("filter.status", None)]);
            return view! {
                <Empty title="No compile reports match the filter">
                    <p><a class="button button-secondary" href=clear>"Clear the filter"</a></p>
                </Empty>
            }
            .into_any();
        }
        return view! {
            <Empty title="No compile reports yet">
                <p>
                    "A compile appears here when one is requested: use " <strong>"Recompile"</strong>
                    " above, " <code>"POST /api/v1/notify/<environment>"</code> ", or the "
                    <code>"auto_full_compile"</code> " setting. Compiles check out the environment's repository, set in "
                    <a href=env_link("settings", &env)>"Settings"</a> "."
                </p>
            </Empty>
        }
        .into_any();
    }
    view! {
        <table class="table" id="compile-reports">
            <thead>
                <tr>
                    <SortHeader path=COMPILES column="requested" label="Requested"/>
                    <th scope="col">"Status"</th>
                    <th scope="col">"Message"</th>
                    <th scope="col">"Wait time"</th>
                    <th scope="col">"Duration"</th>
                    <th scope="col"><span class="sr-only">"Actions"</span></th>
                </tr>
            </thead>
            <tbody>
                {data
                    .rows
                    .into_iter()
                    .map(|c| {
                        let href = compile_link(&env, &c.id);
                        let label = format!("Show details of the compile requested at {}", short_date(&c.requested));
                        view! {
                            <tr data-id=c.id.clone() data-status=c.status.as_str()>
                                <td class="nowrap">{short_date(&c.requested)}</td>
                                <td><StatusBadge status=c.status/></td>
                                <td>{c.message.clone()}</td>
                                <td class="nowrap">{c.wait.map(duration_text).unwrap_or_default()}</td>
                                <td class="nowrap">{c.duration.map(duration_text).unwrap_or_default()}</td>
                                <td class="row-actions">
                                    <a class="button button-small button-secondary" href=href aria-label=label>
                                        "Show details"
                                    </a>
                                </td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
        <Pager path=COMPILES page=data.page/>
    }
    .into_any()
}

#[component]
pub fn CompileDetailsPage() -> impl IntoView {
    let env = env();
    let params = use_params_map();
    let id = Memo::new(move |_| params.with(|p| p.get("id").unwrap_or_default()));
    let refresh = Refresh::get();
    // A finished compile does not change any more: stop refetching it (the source keeps the tick
    // it was seen finished at), so stages the reader opened stay open while other events of the
    // environment arrive.
    let finished: RwSignal<Option<(String, u64)>> = RwSignal::new(None);
    let data = Resource::new(
        move || {
            let id = id.get();
            let tick = match finished.get() {
                Some((done, tick)) if done == id => tick,
                _ => refresh.tick(),
            };
            (env.get(), id, tick)
        },
        move |(env, id, tick)| async move {
            let details = compile_details(env, id.clone()).await;
            if details.as_ref().is_ok_and(|d| d.compile.completed.is_some()) {
                finished.set(Some((id, tick)));
            }
            details
        },
    );
    view! {
        <SubPage
            title="Compile details"
            trail=move || view! {
                <a href=move || env_link("compilereports", &env.get())>"Compile Reports"</a>
                " › "
                <span class="mono">{move || id.get()}</span>
            }
        >
            <div class="page-header">
                <h1>"Compile details"</h1>
            </div>
            <Show when=move || !env.get().is_empty() fallback=NoEnvironment>
                <Loaded
                    resource=data
                    loading="Loading the compile…"
                    error_title="The compile could not be loaded"
                    view=move |d| view! { <CompileDetailsBody env=env.get_untracked() details=d/> }
                />
            </Show>
        </SubPage>
    }
    .into_any()
}

#[component]
fn CompileDetailsBody(env: String, details: CompileDetailsView) -> impl IntoView {
    let c = details.compile;
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let version = c.version.map(|v| {
        let href = version_link(&env, v);
        view! { <a href=href id="compile-version">{format!("Version {v}")}</a> }
    });
    let timeline = view! {
        <ol class="timeline" aria-label="Timeline">
            <li class="timeline-step done">
                <span class="timeline-label">"Requested"</span>
                <span>{short_date(&c.requested)}</span>
            </li>
            <li class="timeline-step" class:done=c.started.is_some()>
                <span class="timeline-label">"Started"</span>
                <span>
                    {match &c.started {
                        Some(s) => short_date(s),
                        None => "waiting in the queue".to_string(),
                    }}
                </span>
                {c.wait.map(|w| view! { <span class="muted">{format!("after {}", duration_text(w))}</span> })}
            </li>
            <li class="timeline-step" class:done=c.completed.is_some() class:failed=c.status == CompileStatus::Failed>
                <span class="timeline-label">"Completed"</span>
                <span>
                    {match (&c.completed, &c.started) {
                        (Some(done), _) => short_date(done),
                        (None, Some(_)) => "running".to_string(),
                        (None, None) => "not started".to_string(),
                    }}
                </span>
                {c.duration.map(|d| view! { <span class="muted">{format!("took {}", duration_text(d))}</span> })}
            </li>
        </ol>
    };
    let variables = if details.environment_variables.is_empty() {
        view! { <p class="muted">"No extra environment variables."</p> }.into_any()
    } else {
        view! {
            <table class="table" id="compile-variables">
                <thead>
                    <tr>
                        <th scope="col">"Variable"</th>
                        <th scope="col">"Value"</th>
                    </tr>
                </thead>
                <tbody>
                    {details
                        .environment_variables
                        .into_iter()
                        .map(|(k, v)| view! {
                            <tr>
                                <th scope="row" class="mono">{k}</th>
                                <td><code class="value">{v}</code></td>
                            </tr>
                        })
                        .collect_view()}
                </tbody>
            </table>
        }
        .into_any()
    };
    let errors = (!details.errors.is_empty()).then(|| {
        view! {
            <div class="card" id="compile-errors">
                <h2>"Compile errors"</h2>
                <table class="table">
                    <thead>
                        <tr>
                            <th scope="col">"Type"</th>
                            <th scope="col">"Message"</th>
                            <th scope="col">"Location"</th>
                        </tr>
                    </thead>
                    <tbody>
                        {details
                            .errors
                            .into_iter()
                            .map(|e| {
                                let place = match (e.file, e.line) {
                                    (Some(f), Some(l)) => format!("{f}:{l}"),
                                    (Some(f), None) => f,
                                    _ => String::new(),
                                };
                                view! {
                                    <tr class="compile-error">
                                        <td class="mono">{e.kind}</td>
                                        <td><pre class="log-message">{e.message}</pre></td>
                                        <td class="mono">{place}</td>
                                    </tr>
                                }
                            })
                            .collect_view()}
                    </tbody>
                </table>
            </div>
        }
    });
    let first_failed = details.stages.iter().position(|s| s.returncode.is_some_and(|rc| rc != 0));
    let stages = if details.stages.is_empty() {
        view! {
            <p class="muted">
                {if c.started.is_none() {
                    "The compile is waiting in the queue: its stages appear once it starts."
                } else {
                    "No stages recorded."
                }}
            </p>
        }
        .into_any()
    } else {
        details
            .stages
            .into_iter()
            .enumerate()
            .map(|(i, stage)| view! { <Stage stage open=first_failed == Some(i)/> })
            .collect_view()
            .into_any()
    };
    view! {
        <div class="compile-summary">
            <StatusBadge status=c.status/>
            <span class="mono muted">{c.id.clone()}</span>
        </div>
        {timeline}
        <div class="cards">
            <div class="card">
                <h2>"Request"</h2>
                <dl class="facts-list" id="compile-facts">
                    <dt>"Trigger"</dt>
                    <dd>{if details.trigger.is_empty() { "—".to_string() } else { details.trigger }}</dd>
                    <dt>"Message"</dt>
                    <dd>{if c.message.is_empty() { "—".to_string() } else { c.message.clone() }}</dd>
                    <dt>"Export"</dt>
                    <dd>{yes_no(c.do_export)}</dd>
                    <dt>"Update project"</dt>
                    <dd>{yes_no(c.force_update)}</dd>
                    <dt>"Version"</dt>
                    <dd>
                        {match version {
                            Some(v) => v.into_any(),
                            None => view! { <span class="muted">"none produced"</span> }.into_any(),
                        }}
                    </dd>
                </dl>
                {details.failed_message.map(|m| view! { <p class="action-error" role="alert">{m}</p> })}
            </div>
            <div class="card">
                <h2>"Environment variables"</h2>
                {variables}
            </div>
        </div>
        {errors}
        <div class="card" id="compile-stages">
            <h2>"Stages"</h2>
            {stages}
        </div>
    }
}

/// One stage: folded unless it is the first that failed.
#[component]
fn Stage(stage: CompileStageRow, open: bool) -> impl IntoView {
    let failed = stage.returncode.is_some_and(|rc| rc != 0);
    let code = match stage.returncode {
        Some(0) => view! { <span class="return-code ok" title="return code 0">"✓ 0"</span> }.into_any(),
        Some(rc) => view! {
            <span class="return-code failed" title=format!("return code {rc}") aria-label=format!("failed with return code {rc}")>
                {format!("✕ {rc}")}
            </span>
        }
        .into_any(),
        None => view! { <span class="return-code muted">"running"</span> }.into_any(),
    };
    let output = |label: &'static str, text: String, class: &'static str| {
        (!text.trim().is_empty()).then(|| {
            view! {
                <h3 class="stream-label">{label}</h3>
                <pre class=format!("code log {class}") aria-label=label>{text}</pre>
            }
        })
    };
    let empty = stage.stdout.trim().is_empty() && stage.stderr.trim().is_empty();
    view! {
        <details class="stage" class:stage-failed=failed data-stage=stage.name.clone() open=open>
            <summary>
                {code}
                " "
                <strong>{stage.name.clone()}</strong>
                <span class="muted">
                    {stage.duration.map(|d| format!(" · {}", duration_text(d))).unwrap_or_default()}
                </span>
            </summary>
            {(!stage.command.is_empty()).then(|| view! {
                <p>"Command: " <code class="value">{stage.command.clone()}</code></p>
            })}
            <p class="muted">
                {format!("Started {}", short_date(&stage.started))}
                {stage.completed.as_ref().map(|c| format!(", completed {}", short_date(c)))}
            </p>
            {output("stdout", stage.stdout, "stdout")}
            {output("stderr", stage.stderr, "stderr")}
            {empty.then(|| view! { <p class="muted">"No output."</p> })}
        </details>
    }
}

/// Compile reports, newest first. `filter.status` (queued, running, success, failed) becomes the
/// API's `started` / `completed` / `success` filters.
#[server(prefix = "/console/fn", endpoint = "compile_reports", input = Json)]
pub async fn compile_reports(query: TableQuery) -> Result<Paged<CompileRow>, ServerFnError> {
    let s = services_for("compile-report.read", &query.env)?;
    let id = env_id(&query.env)?;
    let mut query = query;
    let status = query.filters.remove("status").unwrap_or_default();
    let extra: &[(&str, &str)] = match CompileStatus::parse(&status) {
        _ if status.is_empty() => &[],
        Some(CompileStatus::Queued) => &[("started", "false")],
        Some(CompileStatus::Running) => &[("started", "true"), ("completed", "false")],
        Some(CompileStatus::Success) => &[("success", "true")],
        Some(CompileStatus::Failed) => &[("success", "false")],
        None => {
            let other = &status;
            return Err(ServerFnError::new(format!(
                "{other:?} is not a compile status: use queued, running, success or failed"
            )));
        }
    };
    let mut req = page_request(&query);
    req.filters.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let page = s.orchestrator.compile_reports(id, &req).await.map_err(fail)?;
    Ok(paged(page, |c| compile_row(&c)))
}

/// Whether the environment compiles on the server (`server_compile`): the Recompile menu is
/// disabled otherwise.
#[server(prefix = "/console/fn", endpoint = "server_compile_enabled", input = Json)]
pub async fn server_compile_enabled(env: String) -> Result<bool, ServerFnError> {
    let s = services_for("environment.setting.read", &env)?;
    server_compile(&s.orchestrator, env_id(&env)?).await
}

/// Queues a compile of the environment (`update`: pull the repository and update modules first).
/// Returns what the operator should read: the queued compile, or why nothing was queued.
#[server(prefix = "/console/fn", endpoint = "recompile", input = Json)]
pub async fn recompile(env: String, update: bool) -> Result<String, ServerFnError> {
    let s = services_for(if update { "compiler.execute.update" } else { "compiler.execute" }, &env)?;
    let id = env_id(&env)?;
    if !server_compile(&s.orchestrator, id).await? {
        return Err(ServerFnError::new(
            "server compiles are off for this environment: turn on the server_compile setting first",
        ));
    }
    let message =
        if update { "Update project and recompile from the web console" } else { "Recompile from the web console" };
    let requested = s
        .orchestrator
        .request_compile(
            id,
            orchestrator::compiles::CompileRequest {
                force_update: update,
                metadata: serde_json::json!({"type": "console", "message": message}),
                ..Default::default()
            },
        )
        .await
        .map_err(fail)?;
    match requested.id {
        Some(_) if requested.merged => Ok("Joined a compile that was already waiting.".into()),
        Some(_) => Ok("Compile queued.".into()),
        None => Err(ServerFnError::new(requested.warnings.join("; "))),
    }
}

/// One compile with its stages and errors.
#[server(prefix = "/console/fn", endpoint = "compile_details", input = Json)]
pub async fn compile_details(env: String, id: String) -> Result<CompileDetailsView, ServerFnError> {
    let s = services_for("compile-report.read", &env)?;
    let env = env_id(&env)?;
    let id: uuid::Uuid = id.parse().map_err(|_| ServerFnError::new(format!("{id:?} is not a compile id")))?;
    let d = s.orchestrator.compile_details(env, id).await.map_err(fail)?;
    let errors = d
        .compile_data
        .as_ref()
        .and_then(|data| data["errors"].as_array())
        .map(|errors| {
            errors
                .iter()
                .map(|e| {
                    let location = &e["location"];
                    CompileError {
                        kind: e["type"].as_str().unwrap_or_default().to_string(),
                        message: e["message"].as_str().unwrap_or_default().to_string(),
                        file: location["uri"].as_str().or_else(|| location["file"].as_str()).map(str::to_string),
                        line: location["range"]["start"]["line"]
                            .as_i64()
                            .or_else(|| location["lnr"].as_i64())
                            .map(|l| l + 1),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let stages = d
        .reports
        .unwrap_or_default()
        .into_iter()
        .map(|stage| CompileStageRow {
            duration: Some(seconds(stage.started, stage.completed)),
            name: stage.name,
            command: stage.command,
            started: stage.started.to_string(),
            completed: stage.completed.map(|t| t.to_string()),
            returncode: stage.returncode,
            stdout: stage.outstream,
            stderr: stage.errstream,
        })
        .collect();
    Ok(CompileDetailsView {
        compile: compile_row(&d.report),
        trigger: d.report.metadata.get("type").and_then(|t| t.as_str()).unwrap_or_default().to_string(),
        failed_message: d.report.failed_compile_message.clone().filter(|m| !m.is_empty()),
        environment_variables: d.report.environment_variables.into_iter().collect(),
        errors,
        stages,
    })
}

/// The `server_compile` setting of an environment (its default when unset).
#[cfg(feature = "ssr")]
async fn server_compile(o: &orchestrator::Orchestrator, env: uuid::Uuid) -> Result<bool, ServerFnError> {
    let all = o.environment_settings(env).await.map_err(fail)?;
    let name = api::settings::names::SERVER_COMPILE;
    let value = all.settings.get(name).or_else(|| all.definition.get(name).map(|d| &d.default));
    Ok(value.and_then(api::SettingValue::as_bool).unwrap_or(true))
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use crate::test_support::*;
    use axum::http::StatusCode;

    #[tokio::test]
    async fn compile_pages_show_reports_stages_and_errors() {
        let (_dir, o) = orchestrator_with(&[]).await;
        let env = environment_with_versions(&o, 2).await;
        let (failed, queued) = compiles(&o, env).await;
        let router = router(Some(o.clone()));

        let (status, html) = get(router.clone(), &format!("/console/compilereports?env={env}")).await;
        assert_eq!(status, StatusCode::OK);
        for needle in [
            "<title>Compile Reports · Inmanta</title>",
            &format!(r#"data-id="{failed}" data-status="failed""#),
            &format!(r#"data-id="{queued}" data-status="queued""#),
            "first try",
            "second try",
            "Show details",
            r#"id="recompile-menu""#,
            &format!("/console/compilereports/{failed}?env={env}"),
            "Compile Reports</a>",
        ] {
            assert!(html.contains(needle), "{needle} missing in {html}");
        }
        assert!(!html.contains("Server compiles are off"), "{html}");
        // Newest first.
        assert!(html.find(&queued.to_string()).unwrap() < html.find(&failed.to_string()).unwrap(), "{html}");

        let (_, html) = get(router.clone(), &format!("/console/compilereports?env={env}&filter.status=failed")).await;
        assert!(html.contains(&failed.to_string()) && !html.contains(&queued.to_string()), "{html}");
        let (_, html) = get(router.clone(), &format!("/console/compilereports?env={env}&filter.status=success")).await;
        assert!(html.contains("No compile reports match the filter") && html.contains("Clear the filter"), "{html}");

        let (status, html) = get(router.clone(), &format!("/console/compilereports/{failed}?env={env}")).await;
        assert_eq!(status, StatusCode::OK);
        for needle in [
            "Requested",
            "Started",
            "Completed",
            r#"data-stage="Init""#,
            "git clone /nowhere/repo project",
            "fatal: repository",
            "✕ 128",
            "ParserError",
            "unexpected token",
            "main.cf:3",
            "DEBUG",
            "stage Cloning repository failed",
            "none produced",
        ] {
            assert!(html.contains(needle), "{needle} missing in {html}");
        }
        // The failed stage is open, the one that passed is folded.
        assert!(html.contains(r#"data-stage="Cloning repository" open"#), "{html}");
        assert!(!html.contains(r#"data-stage="Init" open"#), "{html}");

        let (_, html) = get(router.clone(), &format!("/console/compilereports/{queued}?env={env}")).await;
        assert!(html.contains("waiting in the queue"), "{html}");
        let (_, html) =
            get(router.clone(), &format!("/console/compilereports/{}?env={env}", uuid::Uuid::new_v4())).await;
        assert!(html.contains("The compile could not be loaded") && html.contains("does not exist"), "{html}");

        let (_, html) = get(router.clone(), &format!("/console/dashboard?env={env}")).await;
        assert!(html.contains("Latest compile reports") && html.contains("second try"), "{html}");
        assert!(html.contains(r#"data-status="queued""#) && html.contains(r#"data-status="failed""#), "{html}");

        // The failure's notification opens the details in this environment.
        let (_, html) = get(router.clone(), &format!("/console/notificationcenter?env={env}")).await;
        assert!(html.contains(&format!(r#"href="/console/compilereports/{failed}?env={env}""#)), "{html}");

        o.set_environment_setting(env, "server_compile", &serde_json::json!(false)).await.unwrap();
        let (_, html) = get(router.clone(), &format!("/console/compilereports?env={env}")).await;
        assert!(
            html.contains("Server compiles are off") && html.contains(r#"aria-describedby="recompile-hint""#),
            "{html}"
        );
    }
}
