//! The compare page: what changes between two versions, per resource and attribute.

use crate::error::ConsoleError;
use leptos::prelude::*;

use super::*;
use crate::components::*;
use crate::layout::resource_link;
use crate::model::{AttributeChange, ResourceChange, ResourceDiffStatus};

#[component]
pub fn ComparePage() -> impl IntoView {
    let env = env();
    let from = query("from");
    let to = query("to");
    let data = Resource::new(
        move || (env.get(), from.get(), to.get()),
        |(env, from, to)| async move {
            let (Ok(a), Ok(b)) = (from.parse::<i64>(), to.parse::<i64>()) else {
                return Err(ConsoleError::refused("pick two versions to compare (?from=&to=)"));
            };
            fns::compare_versions(env, a, b).await
        },
    );
    view! {
        <SubPage
            title=move || format!("Compare {} and {}", from.get(), to.get())
            trail=move || view! {
                <a href=move || crate::routes::DESIRED_STATE.of(&env.get())>"Desired State"</a>
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
pub(super) fn Changes(
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
    let ids: Vec<(&str, String)> =
        changes.iter().map(|c| (c.status.as_str(), c.id.to_string().to_lowercase())).collect();
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
                    let (class, rid) = (format!("diff diff-{}", c.status), c.id.to_string());
                    let (status, id) = (c.status.as_str(), rid.to_lowercase());
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
                                <span class="mono">{c.id.to_string()}</span>
                                <span class="muted">{format!(" · {count} attribute{}", if count == 1 { "" } else { "s" })}</span>
                            </summary>
                            <p class="diff-open"><a href=href>"Open the resource"</a></p>
                            <Table class="table diff-table" headings=&[Heading::Plain("Attribute"), Heading::Plain("From"), Heading::Plain("To")] rows=c.attributes row=attribute_rows/>
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

/// One attribute of a compared resource: its two values, and the file's diff under them.
fn attribute_rows(a: AttributeChange) -> impl IntoView {
    view! {
        <tr data-attribute=a.name.clone()>
            <th scope="row" class="mono">{a.name.clone()}</th>
            <td><code class="value removed">{a.from}</code></td>
            <td><code class="value added">{a.to}</code></td>
        </tr>
        {a.file_diff.map(|lines| view! { <tr class="file-diff-row"><td colspan="3"><UnifiedDiff lines/></td></tr> })}
    }
}
