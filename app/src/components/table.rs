//! The parts of a table page: the table itself, pager, sortable headers, filters, and the
//! attribute table.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use super::frame::Empty;
use super::url::{CURSOR_KEYS, in_app, link, query_string};
use crate::model::{PageInfo, Paged};

/// "x–y of total", previous/next page and page sizes, all as links that keep the other state.
#[component]
pub fn Pager(path: &'static str, page: PageInfo) -> impl IntoView {
    let q = use_query_map();
    let current = q.get_untracked();
    let size: u64 = current.get("limit").and_then(|l| l.parse().ok()).unwrap_or(20);
    let cursor_link = |pairs: &Vec<(String, String)>| {
        let mut changes: Vec<(&str, Option<String>)> = CURSOR_KEYS.iter().map(|k| (*k, None)).collect();
        for (k, v) in pairs {
            if let Some(slot) = changes.iter_mut().find(|(key, _)| key == k) {
                slot.1 = Some(v.clone());
            }
        }
        link(path, &current, &changes)
    };
    let prev = page.prev.as_ref().map(cursor_link);
    let next = page.next.as_ref().map(cursor_link);
    let first = page.before + if page.shown > 0 { 1 } else { 0 };
    let last = page.before + page.shown;
    let sizes = [20u64, 50, 100, 250]
        .into_iter()
        .map(|n| {
            let href = link(path, &current, &[("limit", Some(n.to_string()))]);
            view! {
                <a href=href class="page-size" class:active=n == size aria-current=(n == size).then_some("true")>
                    {n}
                </a>
            }
        })
        .collect_view();
    view! {
        <nav class="pager" aria-label="Pages">
            <span class="pager-count">{format!("{first}–{last} of {}", page.total)}</span>
            <span class="pager-sizes">"Per page: " {sizes}</span>
            <span class="pager-nav">
                {match prev {
                    Some(href) => view! { <a class="button button-small" href=href rel="prev">"‹ Previous"</a> }.into_any(),
                    None => view! { <span class="button button-small disabled" aria-disabled="true">"‹ Previous"</span> }.into_any(),
                }}
                {match next {
                    Some(href) => view! { <a class="button button-small" href=href rel="next">"Next ›"</a> }.into_any(),
                    None => view! { <span class="button button-small disabled" aria-disabled="true">"Next ›"</span> }.into_any(),
                }}
            </span>
        </nav>
    }
}

/// A column header that sorts the table by `column` (toggling the direction).
#[component]
pub fn SortHeader(path: &'static str, column: &'static str, label: &'static str) -> impl IntoView {
    let q = use_query_map();
    let state = move || {
        let current = q.get();
        let sort = current.get("sort").unwrap_or_default();
        let (dir, next) = if sort == format!("{column}.asc") {
            (Some("ascending"), "desc")
        } else if sort == format!("{column}.desc") {
            (Some("descending"), "asc")
        } else {
            (None, "asc")
        };
        (dir, link(path, &current, &[("sort", Some(format!("{column}.{next}")))]))
    };
    view! {
        <th scope="col" aria-sort=move || state().0.unwrap_or("none")>
            <a class="sort" href=move || state().1>
                {label}
                {move || match state().0 {
                    Some("ascending") => " ▲",
                    Some(_) => " ▼",
                    None => "",
                }}
            </a>
        </th>
    }
}

/// Links that set one `filter.<name>` to each of `values` (the first, empty, clears it).
pub fn choice_filter(path: &'static str, name: &'static str, values: &'static [&'static str]) -> impl IntoView {
    let q = use_query_map();
    move || {
        let current = q.get();
        let key = format!("filter.{name}");
        let selected = current.get(&key).unwrap_or_default();
        values
            .iter()
            .map(|v| {
                let href = link(path, &current, &[(key.as_str(), (!v.is_empty()).then(|| v.to_string()))]);
                let active = selected == *v;
                view! {
                    <a class="chip" class:active=active href=href>
                        {if v.is_empty() { "all" } else { v }}
                    </a>
                }
            })
            .collect_view()
    }
}

/// The toolbar of a table page that filters on `filter.status`: one link per value of `values`.
#[component]
pub fn StatusFilter(path: &'static str, values: &'static [&'static str]) -> impl IntoView {
    view! { <div class="toolbar" aria-label="Filter on status">{choice_filter(path, "status", values)}</div> }
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

/// A column heading of a [`Table`].
#[derive(Clone, Copy)]
pub enum Heading {
    /// A label.
    Plain(&'static str),
    /// `(column, label)`: a label that sorts the page by `column` ([`SortHeader`]).
    Sorts(&'static str, &'static str),
    /// A label for screen readers only (a column of buttons).
    Unseen(&'static str),
}

/// The table every list of the console is: a row of `headings`, then `row` of each of `rows`
/// (which makes the `<tr>`), under `caption` when given; `empty` in its place when there are no
/// rows and it is given. Sorting headings link to `path`.
#[component]
pub fn Table<R, V, F>(
    headings: &'static [Heading],
    rows: Vec<R>,
    row: F,
    #[prop(optional)] id: &'static str,
    #[prop(default = "table")] class: &'static str,
    #[prop(optional)] path: &'static str,
    #[prop(optional)] caption: Option<&'static str>,
    #[prop(optional, into)] empty: Option<ViewFn>,
) -> impl IntoView
where
    R: 'static,
    V: IntoView + 'static,
    F: FnMut(R) -> V,
{
    if let Some(empty) = empty.filter(|_| rows.is_empty()) {
        return empty.run();
    }
    let caption = caption.map(|caption| view! { <caption>{caption}</caption> });
    let headings = headings
        .iter()
        .map(|heading| match *heading {
            Heading::Plain(label) => view! { <th scope="col">{label}</th> }.into_any(),
            Heading::Sorts(column, label) => view! { <SortHeader path column label/> }.into_any(),
            Heading::Unseen(label) => view! { <th scope="col"><span class="sr-only">{label}</span></th> }.into_any(),
        })
        .collect_view();
    view! {
        <table class=class id=(!id.is_empty()).then_some(id)>
            {caption}
            <thead><tr>{headings}</tr></thead>
            <tbody>{rows.into_iter().map(row).collect_view()}</tbody>
        </table>
    }
    .into_any()
}

/// One page of a paged list: its [`Table`] and [`Pager`], or, without rows, [`Empty`] titled
/// `empty` with `hint` under it.
#[component]
pub fn PagedTable<R, V, F>(
    path: &'static str,
    headings: &'static [Heading],
    data: Paged<R>,
    row: F,
    empty: &'static str,
    #[prop(into)] hint: ViewFn,
    #[prop(optional)] id: &'static str,
) -> impl IntoView
where
    R: 'static,
    V: IntoView + 'static,
    F: FnMut(R) -> V,
{
    if data.rows.is_empty() {
        return view! { <Empty title=empty>{hint.run()}</Empty> }.into_any();
    }
    view! {
        <Table path headings rows=data.rows row id/>
        <Pager path page=data.page/>
    }
    .into_any()
}

/// Attributes as a name/value table; long values fold.
#[component]
pub fn AttributeTable(attributes: Vec<(String, String)>) -> impl IntoView {
    let row = |(name, value): (String, String)| {
        let long = value.len() > 200 || value.lines().count() > 4;
        let key = name.clone();
        view! {
            <tr data-attribute=key>
                <th scope="row" class="mono">{name}</th>
                <td><FoldedValue value long/></td>
            </tr>
        }
    };
    view! { <Table class="table attributes" headings=&[Heading::Plain("Attribute"), Heading::Plain("Value")] rows=attributes row/> }
}

/// A value in a table cell: whole when short, folded under its length when `long` (the caller
/// decides what is long for its table).
#[component]
pub fn FoldedValue(value: String, long: bool) -> impl IntoView {
    if long {
        view! {
            <details>
                <summary>{format!("{} characters", value.len())}</summary>
                <pre class="code">{value}</pre>
            </details>
        }
        .into_any()
    } else {
        view! { <code class="value">{value}</code> }.into_any()
    }
}
