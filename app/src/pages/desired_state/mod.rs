//! Desired state: versions, the resources of a version, one versioned resource, compare.

use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_params_map, use_query_map};

use crate::components::*;
pub(crate) mod fns;
#[cfg(all(test, feature = "ssr"))]
mod tests;
use crate::layout::resource_link;
use crate::model::{
    ComplianceView, Paged, ResourceChange, ResourceDiffStatus, VersionRow, VersionStatus, VersionedResourceRow,
};
use crate::pages::environment::short_date;

const VERSIONS: &str = "/console/desiredstate";
const VERSION: &str = "/console/desiredstate/version";

#[component]
pub fn DesiredStatePage() -> impl IntoView {
    let env = env();
    let data = table_resource(fns::versions);
    view! {
        <EnvironmentPage title="Desired State" env>
            <StatusFilter path=VERSIONS values=&["", "active", "candidate", "retired", "skipped_candidate"]/>
            <Loaded
                resource=data
                loading="Loading versions…"
                error_title="The versions could not be loaded"
                view=move |page| view! { <VersionsTable env=env.get_untracked() data=page/> }
            />
        </EnvironmentPage>
    }
}

#[component]
fn VersionsTable(env: String, data: Paged<VersionRow>) -> impl IntoView {
    if data.rows.is_empty() {
        return view! {
            <Empty title="No versions">
                <p>
                    "Versions appear when a model is exported: " <code>"inmanta export"</code>
                    " (or " <code>"PUT /api/v1/version"</code> "). Clear the filters if some are set."
                </p>
            </Empty>
        }
        .into_any();
    }
    let selected: RwSignal<Vec<i64>> = RwSignal::new(Vec::new());
    let error = ActionError::new();
    let compare_env = env.clone();
    let compare_href = move || {
        let mut v = selected.get();
        v.sort();
        (v.len() == 2).then(|| format!("{}&from={}&to={}", env_link("desiredstate/compare", &compare_env), v[0], v[1]))
    };
    let rows = data
        .rows
        .into_iter()
        .map(|v| {
            let version = v.version;
            let href = version_link(&env, version);
            let (env_p, env_d) = (env.clone(), env.clone());
            let candidate = matches!(v.status, VersionStatus::Candidate | VersionStatus::SkippedCandidate);
            let active = v.status == VersionStatus::Active;
            view! {
                <tr data-version=version>
                    <td>
                        <input
                            type="checkbox"
                            class="select-version"
                            aria-label=format!("Select version {version} to compare")
                            prop:checked=move || selected.get().contains(&version)
                            on:change=move |ev| {
                                let on = event_target_checked(&ev);
                                selected.update(|s| {
                                    s.retain(|x| *x != version);
                                    if on {
                                        s.push(version);
                                        if s.len() > 2 {
                                            s.remove(0);
                                        }
                                    }
                                })
                            }
                        />
                    </td>
                    <td><a href=href>{version}</a></td>
                    <td>{short_date(&v.date)}</td>
                    <td><StatusBadge status=v.status/></td>
                    <td>{v.total}</td>
                    <td class="version-message">{v.message.clone()}</td>
                    <td class="row-actions">
                        <a
                            class="button button-small button-secondary compliance"
                            href=compliance_link(&env, version)
                            aria-label=format!("Compare version {version} with the current state (dry run)")
                        >
                            "Compare with current state"
                        </a>
                        {candidate.then(|| view! {
                            <button
                                class="button button-small promote"
                                type="button"
                                on:click=move |_| ask_version_action(error, env_p.clone(), version, false)
                            >
                                "Promote"
                            </button>
                        })}
                        {(!active).then(|| view! {
                            <button
                                class="button button-small button-secondary delete"
                                type="button"
                                on:click=move |_| ask_version_action(error, env_d.clone(), version, true)
                            >
                                "Delete"
                            </button>
                        })}
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="toolbar">
            {move || match compare_href() {
                Some(href) => view! { <a class="button" id="compare" href=href>"Compare selected"</a> }.into_any(),
                None => view! {
                    <span class="button disabled" id="compare" aria-disabled="true" title="Select two versions">
                        "Compare selected"
                    </span>
                }
                    .into_any(),
            }}
            <span class="muted">"Select two versions to compare them."</span>
        </div>
        <ActionMessage error/>
        <table class="table" id="versions">
            <thead>
                <tr>
                    <th scope="col"><span class="sr-only">"Select"</span></th>
                    <SortHeader path=VERSIONS column="version" label="Version"/>
                    <th scope="col">"Date"</th>
                    <th scope="col">"Status"</th>
                    <th scope="col">"Resources"</th>
                    <th scope="col">"Message"</th>
                    <th scope="col"><span class="sr-only">"Actions"</span></th>
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
        <Pager path=VERSIONS page=data.page/>
    }
    .into_any()
}

/// Asks before promoting `version` (or, with `delete`, deleting it), then does it: the versions
/// table and a version's page ask the same question.
fn ask_version_action(error: ActionError, env: String, version: i64, delete: bool) {
    let (question, yes, done) = if delete {
        (format!("Delete version {version}?"), "Delete", format!("Version {version} deleted"))
    } else {
        (
            format!("Promote version {version}? It becomes the desired state and deploys."),
            "Promote",
            format!("Version {version} promoted"),
        )
    };
    error.ask(question, yes, move || act(error, done.clone(), fns::version_action(env.clone(), version, delete)));
}

#[component]
pub fn VersionPage() -> impl IntoView {
    let env = env();
    let version = query("v");
    let table = table_query();
    let data = live_resource(
        move || (table.get(), version.get()),
        |(q, v)| async move {
            let v = version_number(&v)?;
            fns::version_resources(q, v).await
        },
    );
    view! {
        <SubPage
            title=move || format!("Version {}", version.get())
            trail=move || view! {
                <a href=move || env_link("desiredstate", &env.get())>"Desired State"</a>
                " › "
                <span>{move || format!("Version {}", version.get())}</span>
            }
        >
            <div class="page-header">
                <h1>{move || format!("Version {}", version.get())}</h1>
            </div>
            <Show when=move || !env.get().is_empty() fallback=NoEnvironment>
                <VersionHeader env version/>
                <FilterForm
                    path=VERSION
                    fields=vec![("resource_type", "Type"), ("agent", "Agent"), ("resource_id_value", "Value")]
                    keep=vec!["env", "v"]
                />
                <Loaded
                    resource=data
                    loading="Loading resources…"
                    error_title="The version could not be loaded"
                    view=move |page| view! { <VersionResources env=env.get_untracked() version=version.get_untracked() data=page/> }
                />
            </Show>
        </SubPage>
    }
}

/// Status, date, size and message of the version, with what can be done with it: promote a
/// candidate, dry run it against the current state.
#[component]
fn VersionHeader(env: Memo<String>, version: Memo<String>) -> impl IntoView {
    let summary = live_resource(
        move || (env.get(), version.get()),
        |(env, v)| async move {
            let v = version_number(&v)?;
            fns::version_summary(env, v).await
        },
    );
    let error = ActionError::new();
    view! {
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                let v = match summary.await {
                    Ok(v) => v,
                    Err(e) => return view! { <ErrorBox title="The version could not be loaded" error=e.to_string()/> }.into_any(),
                };
                let version = v.version;
                let candidate = matches!(v.status, VersionStatus::Candidate | VersionStatus::SkippedCandidate);
                let env = env.get_untracked();
                let dry_run = compliance_link(&env, version);
                let message = if v.message.is_empty() { "No message".to_string() } else { v.message.clone() };
                view! {
                    <div class="version-header" id="version-header" data-status=v.status.as_str()>
                        <dl class="facts-list">
                            <dt>"Status"</dt>
                            <dd><StatusBadge status=v.status/></dd>
                            <dt>"Exported"</dt>
                            <dd>{short_date(&v.date)}</dd>
                            <dt>"Resources"</dt>
                            <dd>{v.total}</dd>
                            <dt>"Message"</dt>
                            <dd id="version-message" class:muted=v.message.is_empty()>{message}</dd>
                        </dl>
                        <div class="page-actions">
                            {candidate.then(|| view! {
                                <button
                                    class="button button-primary"
                                    id="version-promote"
                                    type="button"
                                    on:click=move |_| ask_version_action(error, env.clone(), version, false)
                                >
                                    "Promote"
                                </button>
                            })}
                            <a class="button button-secondary" id="version-dry-run" href=dry_run>
                                "Dry run against the current state"
                            </a>
                        </div>
                    </div>
                    <ActionMessage error/>
                }
                    .into_any()
            })}
        </Transition>
    }
}

#[component]
fn VersionResources(env: String, version: String, data: Paged<VersionedResourceRow>) -> impl IntoView {
    if data.rows.is_empty() {
        return view! {
            <Empty title="No resources">
                <p>"This version has no resources matching the filters."</p>
            </Empty>
        }
        .into_any();
    }
    view! {
        <table class="table" id="version-resources">
            <thead>
                <tr>
                    <SortHeader path=VERSION column="resource_type" label="Type"/>
                    <SortHeader path=VERSION column="agent" label="Agent"/>
                    <SortHeader path=VERSION column="resource_id_value" label="Value"/>
                    <th scope="col">"Requires"</th>
                </tr>
            </thead>
            <tbody>
                {data
                    .rows
                    .into_iter()
                    .map(|r| {
                        let href = format!(
                            "{}&v={version}&rid={}",
                            env_link("desiredstate/resource", &env),
                            encode(&r.id),
                        );
                        view! {
                            <tr data-id=r.id.clone()>
                                <td>{r.resource_type}</td>
                                <td>{r.agent}</td>
                                <td><a href=href>{r.value}</a></td>
                                <td>{r.requires}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
        <Pager path=VERSION page=data.page/>
    }
    .into_any()
}

#[component]
pub fn VersionResourcePage() -> impl IntoView {
    let env = env();
    let version = query("v");
    let rid = query("rid");
    let data = Resource::new(
        move || (env.get(), version.get(), rid.get()),
        |(env, v, rid)| async move {
            let v = version_number(&v)?;
            fns::version_resource(env, v, rid).await
        },
    );
    view! {
        <SubPage
            title=move || rid.get()
            trail=move || view! {
                <a href=move || env_link("desiredstate", &env.get())>"Desired State"</a>
                " › "
                <a href=move || version_link(&env.get(), version.get())>{move || format!("Version {}", version.get())}</a>
                " › "
                <span>{move || rid.get()}</span>
            }
        >
            <div class="page-header">
                <h1 class="mono">{move || rid.get()}</h1>
            </div>
            <Loaded
                resource=data
                loading="Loading…"
                error_title="The resource could not be loaded"
                view=move |attrs| view! { <AttributeTable attributes=attrs/> }
            />
        </SubPage>
    }
}

/// Attributes as a name/value table; long values fold.
#[component]
pub fn AttributeTable(attributes: Vec<(String, String)>) -> impl IntoView {
    view! {
        <table class="table attributes">
            <thead>
                <tr>
                    <th scope="col">"Attribute"</th>
                    <th scope="col">"Value"</th>
                </tr>
            </thead>
            <tbody>
                {attributes
                    .into_iter()
                    .map(|(name, value)| {
                        let long = value.len() > 200 || value.lines().count() > 4;
                        let key = name.clone();
                        view! {
                            <tr data-attribute=key>
                                <th scope="row" class="mono">{name}</th>
                                <td>
                                    {if long {
                                        view! {
                                            <details>
                                                <summary>{format!("{} characters", value.len())}</summary>
                                                <pre class="code">{value}</pre>
                                            </details>
                                        }
                                            .into_any()
                                    } else {
                                        view! { <code class="value">{value}</code> }.into_any()
                                    }}
                                </td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

#[component]
pub fn ComparePage() -> impl IntoView {
    let env = env();
    let from = query("from");
    let to = query("to");
    let data = Resource::new(
        move || (env.get(), from.get(), to.get()),
        |(env, from, to)| async move {
            let (Ok(a), Ok(b)) = (from.parse::<i64>(), to.parse::<i64>()) else {
                return Err(ServerFnError::new("pick two versions to compare (?from=&to=)"));
            };
            fns::compare_versions(env, a, b).await
        },
    );
    view! {
        <SubPage
            title=move || format!("Compare {} and {}", from.get(), to.get())
            trail=move || view! {
                <a href=move || env_link("desiredstate", &env.get())>"Desired State"</a>
                " › "
                <span>"Compare"</span>
            }
        >
            <div class="page-header">
                <h1>{move || format!("Version {} → {}", from.get(), to.get())}</h1>
            </div>
            <Loaded
                resource=data
                loading="Comparing…"
                error_title="The versions could not be compared"
                view=move |changes| view! { <Changes env=env.get_untracked() changes/> }
            />
        </SubPage>
    }
}

/// Resources with their attribute changes (and unified diffs of file contents), as the compare
/// view and the compliance check show them: collapsed (one line per resource), filtered by kind
/// of change and by a search on the resource id. `summary` replaces the added/modified/deleted
/// line, `empty` the text shown when nothing differs.
#[component]
fn Changes(
    env: String,
    changes: Vec<ResourceChange>,
    #[prop(optional)] summary: Option<String>,
    #[prop(optional)] empty: Option<&'static str>,
) -> impl IntoView {
    if changes.is_empty() {
        return view! {
            <Empty title="No differences">
                <p>{empty.unwrap_or("Both versions want exactly the same resources.")}</p>
            </Empty>
        }
        .into_any();
    }
    let count = |s: ResourceDiffStatus| changes.iter().filter(|c| c.status == s).count();
    let totals = summary.unwrap_or_else(|| {
        format!(
            "{} added, {} modified, {} deleted",
            count(ResourceDiffStatus::Added),
            count(ResourceDiffStatus::Modified),
            count(ResourceDiffStatus::Deleted)
        )
    });
    let mut kinds: Vec<(ResourceDiffStatus, usize)> = Vec::new();
    for c in &changes {
        match kinds.iter_mut().find(|(k, _)| *k == c.status) {
            Some((_, n)) => *n += 1,
            None => kinds.push((c.status, 1)),
        }
    }
    let all = changes.len();
    let kind = RwSignal::new(String::new());
    let search = RwSignal::new(String::new());
    let expanded = RwSignal::new(false);
    let chip = move |value: String, label: String| {
        let (v1, v2, v3) = (value.clone(), value.clone(), value.clone());
        view! {
            <button
                class="chip"
                type="button"
                class:active=move || kind.get() == v1
                aria-pressed=move || (kind.get() == v2).to_string()
                data-kind=value
                on:click=move |_| kind.set(v3.clone())
            >
                {label}
            </button>
        }
    };
    let chips = std::iter::once(chip(String::new(), format!("all ({all})")))
        .chain(kinds.into_iter().map(|(k, n)| chip(k.to_string(), format!("{} ({n})", k.as_str().replace('_', " ")))))
        .collect_view();
    let ids: Vec<(&str, String)> = changes.iter().map(|c| (c.status.as_str(), c.id.to_lowercase())).collect();
    let shown = Memo::new(move |_| {
        let (k, needle) = (kind.get(), search.get().trim().to_lowercase());
        ids.iter().filter(|(s, id)| (k.is_empty() || k == *s) && id.contains(&needle)).count()
    });
    view! {
        <p class="muted" id="compare-summary">{totals}</p>
        <div class="toolbar compare-tools" role="group" aria-label="Filter the changes">
            {chips}
            <ResourceSearch id="compare-search" label="Search the changed resources" search/>
            <button class="button button-secondary button-small" type="button" id="compare-expand" on:click=move |_| expanded.update(|e| *e = !*e)>
                {move || if expanded.get() { "Collapse all" } else { "Expand all" }}
            </button>
            <span class="muted" id="compare-shown" role="status">{move || format!("{} of {all} shown", shown.get())}</span>
        </div>
        <div class="diff-list" id="compare">
            {changes
                .into_iter()
                .map(|c| {
                    let href = resource_link(&env, &c.id);
                    let (class, rid) = (format!("diff diff-{}", c.status), c.id.clone());
                    let (status, id) = (c.status.as_str(), c.id.to_lowercase());
                    let hidden = move || {
                        let k = kind.get();
                        !((k.is_empty() || k == status) && id.contains(&search.get().trim().to_lowercase()))
                    };
                    let count = c.attributes.len();
                    view! {
                        <details class=class data-id=rid prop:open=move || expanded.get() hidden=hidden>
                            <summary>
                                <StatusBadge status=c.status/>
                                " "
                                <span class="mono">{c.id.clone()}</span>
                                <span class="muted">{format!(" · {count} attribute{}", if count == 1 { "" } else { "s" })}</span>
                            </summary>
                            <p class="diff-open"><a href=href>"Open the resource"</a></p>
                            <table class="table diff-table">
                                <thead>
                                    <tr>
                                        <th scope="col">"Attribute"</th>
                                        <th scope="col">"From"</th>
                                        <th scope="col">"To"</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {c
                                        .attributes
                                        .into_iter()
                                        .map(|a| {
                                            view! {
                                                <tr data-attribute=a.name.clone()>
                                                    <th scope="row" class="mono">{a.name.clone()}</th>
                                                    <td><code class="value removed">{a.from}</code></td>
                                                    <td><code class="value added">{a.to}</code></td>
                                                </tr>
                                                {a.file_diff.map(|lines| view! {
                                                    <tr class="file-diff-row">
                                                        <td colspan="3">
                                                            <UnifiedDiff lines/>
                                                        </td>
                                                    </tr>
                                                })}
                                            }
                                        })
                                        .collect_view()}
                                </tbody>
                            </table>
                        </details>
                    }
                })
                .collect_view()}
        </div>
    }
    .into_any()
}

#[component]
fn UnifiedDiff(lines: Vec<String>) -> impl IntoView {
    view! {
        <pre class="code unified-diff" aria-label="File content diff">
            {lines
                .into_iter()
                .map(|line| {
                    let class = if line.starts_with("+++") || line.starts_with("---") {
                        "diff-header"
                    } else if line.starts_with('+') {
                        "diff-add"
                    } else if line.starts_with('-') {
                        "diff-del"
                    } else if line.starts_with("@@") {
                        "diff-hunk"
                    } else {
                        "diff-context"
                    };
                    view! { <span class=class>{line}"\n"</span> }
                })
                .collect_view()}
        </pre>
    }
}

/// A GET form for the `filter.<name>` text filters of a table. Before the wasm loads it submits
/// natively; once hydrated it navigates in the app (keeping the other query state, first page).
#[component]
pub fn FilterForm(
    path: &'static str,
    fields: Vec<(&'static str, &'static str)>,
    /// Query keys carried over (hidden inputs), e.g. `env`.
    keep: Vec<&'static str>,
) -> impl IntoView {
    let q = use_query_map();
    let current = q.get_untracked();
    let clear = format!(
        "{path}{}",
        query_string(
            &keep
                .iter()
                .filter(|k| !k.starts_with("filter."))
                .filter_map(|k| current.get(k).map(|v| (k.to_string(), v)))
                .collect::<leptos_router::params::ParamsMap>()
        )
    );
    let hidden = keep
        .into_iter()
        .chain(["sort", "limit"])
        .filter_map(|k| current.get(k).map(|v| view! { <input type="hidden" name=k value=v/> }))
        .collect_view();
    let values: Vec<(&'static str, RwSignal<String>)> = fields
        .iter()
        .map(|(name, _)| (*name, RwSignal::new(current.get(&format!("filter.{name}")).unwrap_or_default())))
        .collect();
    let inputs = fields
        .into_iter()
        .zip(values.clone())
        .map(|((name, label), (_, value))| {
            let key = format!("filter.{name}");
            let id = format!("filter-{name}");
            let for_id = id.clone();
            view! {
                <label class="filter-field" for=for_id>
                    <span>{label}</span>
                    <input
                        id=id
                        class="input"
                        type="search"
                        name=key
                        placeholder="contains…"
                        prop:value=move || value.get()
                        on:input=move |ev| value.set(event_target_value(&ev))
                    />
                </label>
            }
        })
        .collect_view();
    let navigate = leptos_router::hooks::use_navigate();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let keys: Vec<(String, String)> =
            values.iter().map(|(name, v)| (format!("filter.{name}"), v.get_untracked().trim().to_string())).collect();
        let changes: Vec<(&str, Option<String>)> =
            keys.iter().map(|(k, v)| (k.as_str(), (!v.is_empty()).then(|| v.clone()))).collect();
        navigate(&in_app(&link(path, &q.get_untracked(), &changes)), Default::default());
    };
    view! {
        <form method="get" action=path class="filters" role="search" on:submit=submit>
            {hidden}
            {inputs}
            <button class="button button-secondary" type="submit">"Filter"</button>
            <a class="button button-link" href=clear>"Clear"</a>
        </form>
    }
}

/// A version's page.
pub fn version_link(env: &str, version: impl std::fmt::Display) -> String {
    format!("{}&v={version}", env_link("desiredstate/version", env))
}

/// The version `?v=` names, or the error the page shows when it names none.
fn version_number(v: &str) -> Result<i64, ServerFnError> {
    v.parse().map_err(|_| ServerFnError::new("no version given (?v=)"))
}

/// The compliance check page of a version.
pub fn compliance_link(env: &str, version: i64) -> String {
    format!("{}/desiredstate/{version}/compliancecheck?env={}", crate::BASE, encode(env))
}

/// Dry runs of one version: what the handlers would change to reach it from the current state.
/// The selected report (`?report=`, default the newest) is shown like the compare view and
/// follows the dry run live until every resource is reported.
#[component]
pub fn ComplianceCheckPage() -> impl IntoView {
    let env = env();
    let params = use_params_map();
    let version = Memo::new(move |_| params.with(|p| p.get("version").unwrap_or_default()));
    let report = query("report");
    let refresh = Refresh::get();
    // A complete report does not change: the source keeps the tick it was seen complete at, so
    // the open diffs stay as the reader left them while other events arrive.
    let complete: RwSignal<Option<((String, String), u64)>> = RwSignal::new(None);
    let data = Resource::new(
        move || {
            let key = (version.get(), report.get());
            let tick = match complete.get() {
                Some((done, tick)) if done == key => tick,
                _ => refresh.tick(),
            };
            (env.get(), key, tick)
        },
        move |(env, (version, report), tick)| async move {
            let v: i64 = version.parse().map_err(|_| ServerFnError::new(format!("{version:?} is not a version")))?;
            let view = fns::compliance(env, v, report.clone()).await;
            // Complete only once a named report is done: without one, a newer run may appear.
            if !report.is_empty() && view.as_ref().is_ok_and(|c| c.selected.as_ref().is_some_and(|s| s.todo == 0)) {
                complete.set(Some(((version, report), tick)));
            }
            view
        },
    );
    let error = ActionError::new();
    let busy = RwSignal::new(false);
    let navigate = use_navigate();
    let q = use_query_map();
    let start = move |_| {
        let Ok(v) = version.get_untracked().parse::<i64>() else { return };
        busy.set(true);
        let navigate = navigate.clone();
        let call = fns::dry_run(env.get_untracked(), v);
        let path = format!("{}/desiredstate/{v}/compliancecheck", crate::BASE);
        leptos::task::spawn_local(async move {
            match call.await {
                Ok(id) => {
                    error.set(None);
                    navigate(&in_app(&link(&path, &q.get_untracked(), &[("report", Some(id))])), Default::default());
                }
                Err(e) => error.fail(e),
            }
            busy.set(false);
            error.refresh.bump();
        });
    };
    view! {
        <SubPage
            title=move || format!("Compliance check of version {}", version.get())
            trail=move || view! {
                <a href=move || env_link("desiredstate", &env.get())>"Desired State"</a>
                " › "
                <a href=move || version_link(&env.get(), version.get())>{move || format!("Version {}", version.get())}</a>
                " › "
                <span>"Compliance check"</span>
            }
        >
            <div class="page-header">
                <h1>{move || format!("Compliance check of version {}", version.get())}</h1>
                <button
                    class="button button-primary"
                    type="button"
                    id="dry-run"
                    disabled=move || busy.get() || env.get().is_empty()
                    on:click=start
                >
                    {move || if busy.get() { "Starting…" } else { "Perform dry run" }}
                </button>
            </div>
            <p class="muted">
                "A dry run asks every resource's handler what it would change to reach this version, without changing anything."
            </p>
            <ActionMessage error/>
            <Show when=move || !env.get().is_empty() fallback=NoEnvironment>
                <Loaded
                    resource=data
                    loading="Loading dry runs…"
                    error_title="The dry runs could not be loaded"
                    view=move |view| view! { <ComplianceBody env=env.get_untracked() version=version.get_untracked() view/> }
                />
            </Show>
        </SubPage>
    }
    .into_any()
}

#[component]
fn ComplianceBody(env: String, version: String, view: ComplianceView) -> impl IntoView {
    let halted = view.halted.then(|| {
        view! { <p class="hint" role="status">"The environment is halted: resume it to perform a dry run."</p> }
    });
    let Some(selected) = view.selected else {
        return view! {
            {halted}
            <Empty title="No dry runs of this version yet">
                <p>
                    <strong>"Perform dry run"</strong>
                    " above to compare this version with what is deployed now (or "
                    <code>{format!("inmanta dryrun request {version}")}</code> ")."
                </p>
            </Empty>
        }
        .into_any();
    };
    let path = format!("{}/desiredstate/{version}/compliancecheck", crate::BASE);
    let q = use_query_map();
    let current = q.get_untracked();
    let picker = view
        .reports
        .iter()
        .map(|r| {
            let href = link(&path, &current, &[("report", Some(r.id.clone()))]);
            let active = r.id == selected.id;
            let state = if r.todo > 0 { format!(" ({} of {} done)", r.total - r.todo, r.total) } else { String::new() };
            view! {
                <a class="chip" class:active=active aria-current=active.then_some("true") href=href data-report=r.id.clone()>
                    {format!("{}{state}", short_date(&r.date))}
                </a>
            }
        })
        .collect_view();
    let done = selected.total - selected.todo;
    let progress = (selected.todo > 0).then(|| {
        view! {
            <div class="dry-run-progress" role="status" id="dry-run-progress">
                <progress max=selected.total value=done aria-label="Dry run progress"></progress>
                {format!(" {done} of {} resources checked…", selected.total)}
            </div>
        }
    });
    let total = view.changes.len();
    let unmodified = view.changes.iter().filter(|c| c.status == ResourceDiffStatus::Unmodified).count();
    let changed: Vec<ResourceChange> =
        view.changes.into_iter().filter(|c| c.status != ResourceDiffStatus::Unmodified).collect();
    let mut counts: Vec<(ResourceDiffStatus, usize)> = Vec::new();
    for c in &changed {
        match counts.iter_mut().find(|(s, _)| *s == c.status) {
            Some((_, n)) => *n += 1,
            None => counts.push((c.status, 1)),
        }
    }
    let summary = std::iter::once(format!("{total} resources reported: {unmodified} unmodified"))
        .chain(counts.iter().map(|(s, n)| format!("{n} {}", s.as_str().replace('_', " "))))
        .collect::<Vec<_>>()
        .join(", ");
    let empty = if selected.todo > 0 {
        "No differences reported so far."
    } else {
        "Every reported resource already matches this version: nothing would change."
    };
    view! {
        {halted}
        <nav class="toolbar" aria-label="Dry-run reports, newest first" id="dry-run-reports">
            <span class="muted">"Reports:"</span>
            {picker}
        </nav>
        {progress}
        <Changes
            env
            changes=changed
            summary
            empty
        />
    }
    .into_any()
}
