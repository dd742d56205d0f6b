//! One compile's details: what triggered it, its errors and its stages with their output.

use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

use api::CompileStatus;

use super::fns::compile_details;
use crate::components::*;
use crate::model::{CompileDetailsView, CompileStageRow};

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
                <a href=move || crate::routes::COMPILE_REPORTS.of(&env.get())>"Compile Reports"</a>
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
        let row = |(k, v): (String, String)| {
            view! { <tr><th scope="row" class="mono">{k}</th><td><code class="value">{v}</code></td></tr> }
        };
        let headings = &[Heading::Plain("Variable"), Heading::Plain("Value")];
        view! { <Table id="compile-variables" headings rows=details.environment_variables row/> }.into_any()
    };
    let errors = (!details.errors.is_empty()).then(|| {
        view! {
            <div class="card" id="compile-errors">
                <h2>"Compile errors"</h2>
                <Table headings=&[Heading::Plain("Type"), Heading::Plain("Message"), Heading::Plain("Location")] rows=details.errors row=|e: api::compile_error::CompileError| {
                    // lines are 0-based in the compile data
                    let place = e.location.map(|l| format!("{}:{}", l.uri, l.range.start.line + 1)).unwrap_or_default();
                    view! {
                        <tr class="compile-error">
                            <td class="mono">{e.kind.inmanta_type().to_string()}</td>
                            <td><pre class="log-message">{e.message}</pre></td>
                            <td class="mono">{place}</td>
                        </tr>
                    }
                }/>
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
