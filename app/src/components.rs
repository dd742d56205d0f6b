//! Pieces shared by the pages: URL state, live refresh, tables, pager, badges, error and empty
//! states.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use leptos_router::params::ParamsMap;

use crate::BASE;
use crate::model::{PageInfo, TableQuery};

/// Bumped whenever something the open page shows may have changed: by the server's event stream
/// (see [`crate::live`]) and after every action taken in this tab. Resources read it so they refetch.
#[derive(Clone, Copy)]
pub struct Refresh(pub RwSignal<u64>);

impl Refresh {
    pub fn get() -> Refresh {
        use_context::<Refresh>().unwrap_or_else(|| Refresh(RwSignal::new(0)))
    }
    pub fn tick(&self) -> u64 {
        self.0.get()
    }
    pub fn bump(&self) {
        self.0.update(|n| *n += 1);
    }
}

/// A query value of the current URL.
pub fn query(key: &'static str) -> Memo<String> {
    let q = use_query_map();
    Memo::new(move |_| q.with(|q| q.get(key).unwrap_or_default()))
}

/// The environment of the page (`?env=`).
pub fn env() -> Memo<String> {
    query("env")
}

/// Whether `?env=` names an environment the caller may read (true without `?env=`).
#[derive(Clone, Copy)]
pub struct EnvKnown(pub Resource<Result<bool, ServerFnError>>);

impl EnvKnown {
    pub fn get() -> Option<EnvKnown> {
        use_context::<EnvKnown>()
    }
}

/// `env` when it is an environment the caller may read, else "" (so that the frame around an
/// unknown environment's 404 page asks the server nothing about it). Awaited in fetchers; take
/// `known` from [`EnvKnown::get`] in the component's body.
pub async fn known_env(known: Option<EnvKnown>, env: String) -> String {
    match known {
        Some(known) if !env.is_empty() && !matches!(known.0.await, Ok(true)) => String::new(),
        _ => env,
    }
}

pub const CURSOR_KEYS: &[&str] = &["start", "end", "first_id", "last_id"];

/// `path` with the current query, changed by `changes` (`None` removes a key). Any change other
/// than the cursor itself sends the table back to its first page.
pub fn link(path: &str, current: &ParamsMap, changes: &[(&str, Option<String>)]) -> String {
    let mut q = current.clone();
    let paging = changes.iter().all(|(k, _)| CURSOR_KEYS.contains(k));
    if !paging || changes.is_empty() {
        for key in CURSOR_KEYS {
            q.remove(key);
        }
    }
    for (key, value) in changes {
        q.remove(key);
        if let Some(value) = value {
            q.insert(key.to_string(), value.clone());
        }
    }
    format!("{path}{}", query_string(&q))
}

/// `?k=v&...` of a query map, escaping only what must be (ids and dots stay readable).
pub fn query_string(q: &ParamsMap) -> String {
    let pairs: Vec<String> = q.latest_values().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect();
    if pairs.is_empty() { String::new() } else { format!("?{}", pairs.join("&")) }
}

/// The router's `navigate` takes paths below the console's base: strip it from a full href.
pub fn in_app(href: &str) -> String {
    let rest = href.strip_prefix(BASE).unwrap_or(href);
    if rest.starts_with('/') { rest.to_string() } else { format!("/{rest}") }
}

/// A console page of the current environment.
pub fn env_link(page: &str, env: &str) -> String {
    format!("{BASE}/{page}?env={}", encode(env))
}

pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The table state of the current URL: `filter.<name>`, `sort`, `limit` and the cursor.
pub fn table_query() -> Memo<TableQuery> {
    let q = use_query_map();
    Memo::new(move |_| {
        q.with(|q| {
            let mut t = TableQuery { env: q.get("env").unwrap_or_default(), ..Default::default() };
            for (key, value) in q.latest_values() {
                if let Some(name) = key.strip_prefix("filter.")
                    && !value.is_empty()
                {
                    t.filters.insert(name.to_string(), value.to_string());
                }
            }
            t.sort = q.get("sort").filter(|s| !s.is_empty());
            t.limit = q.get("limit").and_then(|l| l.parse().ok());
            t.start = q.get("start");
            t.end = q.get("end");
            t.first_id = q.get("first_id");
            t.last_id = q.get("last_id");
            t
        })
    })
}

/// A server function's result that follows what the console knows: `fetch` of `source`, fetched
/// again when `source` changes and on every [`Refresh`] (live events, actions in this tab).
pub fn live_resource<S, T, Fut>(
    source: impl Fn() -> S + Send + Sync + 'static,
    fetch: impl Fn(S) -> Fut + Send + Sync + 'static,
) -> Resource<Result<T, ServerFnError>>
where
    S: PartialEq + Clone + Send + Sync + 'static,
    T: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<T, ServerFnError>> + Send + 'static,
{
    let refresh = Refresh::get();
    Resource::new(move || (source(), refresh.tick()), move |(s, _)| fetch(s))
}

/// The rows of a table page: `fetch` of the table state of the URL ([`table_query`]), live.
pub fn table_resource<T, Fut>(
    fetch: impl Fn(TableQuery) -> Fut + Send + Sync + 'static,
) -> Resource<Result<T, ServerFnError>>
where
    T: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<T, ServerFnError>> + Send + 'static,
{
    let table = table_query();
    live_resource(move || table.get(), fetch)
}

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

/// The wire name of a status a badge shows: a state of `api::state` or a version's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatusName(pub &'static str);

macro_rules! status_names {
    ($($status:ty),+) => {
        $(impl From<$status> for StatusName {
            fn from(status: $status) -> StatusName {
                StatusName(status.as_str())
            }
        })+
    };
}

status_names!(
    api::ResourceState,
    api::CompileStatus,
    api::AgentStatus,
    api::ResourceDiffStatus,
    api::version::VersionStatus
);

#[component]
pub fn StatusBadge(#[prop(into)] status: StatusName) -> impl IntoView {
    let status = status.0;
    let class = format!("badge state-{status}");
    view! { <span class=class data-status=status>{status.replace('_', " ")}</span> }
}

#[component]
pub fn ErrorBox(title: &'static str, error: String) -> impl IntoView {
    let refresh = Refresh::get();
    view! {
        <div class="error" role="alert">
            <p class="error-title">{title}</p>
            <p class="error-detail">{error.trim_start_matches("error running server function: ").to_string()}</p>
            <button class="button button-small" type="button" on:click=move |_| refresh.bump()>
                "Retry"
            </button>
        </div>
    }
}

/// What a page shows for a server function's result: `loading` as a muted line until the first
/// answer, then `view` of the value, or an [`ErrorBox`] titled `error_title` when it failed. A
/// `Transition`, so a refetch keeps the current view until the new one is ready.
/// `not_allowed`, when given, replaces the error box when the caller lacks the permission: a
/// page that only some roles may use explains that instead of showing a failure.
#[component]
pub fn Loaded<T, V, F>(
    resource: Resource<Result<T, ServerFnError>>,
    loading: &'static str,
    error_title: &'static str,
    view: F,
    #[prop(optional, into)] not_allowed: Option<ViewFn>,
) -> impl IntoView
where
    T: Clone + Send + Sync + 'static,
    V: IntoView + 'static,
    F: Fn(T) -> V + Clone + Send + Sync + 'static,
{
    view! {
        <Transition fallback=move || view! { <p class="muted">{loading}</p> }>
            {move || {
                let (view, not_allowed) = (view.clone(), not_allowed.clone());
                Suspend::new(async move {
                    match (resource.await, not_allowed) {
                        (Ok(value), _) => view(value).into_any(),
                        (Err(e), Some(not_allowed)) if error_text(&e).starts_with("not allowed") => {
                            not_allowed.run().into_any()
                        }
                        (Err(e), _) => view! { <ErrorBox title=error_title error=e.to_string()/> }.into_any(),
                    }
                })
            }}
        </Transition>
    }
}

/// A label and the text input it names (`for` is the input's `id`), bound to `value`; `hint`, a
/// line under the input that describes it (`id` + `-hint`).
#[component]
pub fn TextField(
    id: &'static str,
    label: &'static str,
    value: RwSignal<String>,
    #[prop(default = "text")] input_type: &'static str,
    #[prop(optional)] placeholder: Option<&'static str>,
    #[prop(optional)] required: bool,
    #[prop(optional)] autocomplete: Option<&'static str>,
    #[prop(optional)] hint: Option<&'static str>,
) -> impl IntoView {
    let hint_id = format!("{id}-hint");
    view! {
        <label for=id>{label}</label>
        <input
            id=id
            class="input"
            type=input_type
            placeholder=placeholder
            autocomplete=autocomplete
            required=required
            aria-describedby=hint.is_some().then(|| hint_id.clone())
            prop:value=move || value.get()
            on:input=move |ev| value.set(event_target_value(&ev))
        />
        {hint.map(|hint| view! { <p class="muted field-hint" id=hint_id>{hint}</p> })}
    }
}

/// A label and the choice it names (`for` is the select's `id`), bound to `value`: `prompt` as an
/// empty first option, then `options()` as (value, text) pairs, which follow the data they are
/// read from.
#[component]
pub fn SelectField<O>(
    id: &'static str,
    label: &'static str,
    value: RwSignal<String>,
    options: O,
    #[prop(optional)] prompt: Option<&'static str>,
    #[prop(optional)] required: bool,
) -> impl IntoView
where
    O: Fn() -> Vec<(String, String)> + Send + Sync + 'static,
{
    view! {
        <label for=id>{label}</label>
        <select
            id=id
            class="input"
            required=required
            prop:value=move || value.get()
            on:change=move |ev| value.set(event_target_value(&ev))
        >
            {prompt.map(|prompt| view! { <option value="">{prompt}</option> })}
            {move || {
                options()
                    .into_iter()
                    .map(|(option, text)| {
                        let selected = option == value.get_untracked();
                        view! { <option value=option selected=selected>{text}</option> }
                    })
                    .collect_view()
            }}
        </select>
    }
    // Erased: a form holds several, and their nested view types otherwise overflow the stack of a
    // debug build's test thread while the page renders.
    .into_any()
}

/// A box that searches resources as the user types, bound to `search`; its `label` is for
/// screen readers only (the placeholder says it to the eye).
#[component]
pub fn ResourceSearch(id: &'static str, label: &'static str, search: RwSignal<String>) -> impl IntoView {
    view! {
        <label class="sr-only" for=id>{label}</label>
        <input
            class="input"
            type="search"
            id=id
            placeholder="Search resources…"
            prop:value=move || search.get()
            on:input=move |ev| search.set(event_target_value(&ev))
        />
    }
}

#[component]
pub fn Empty(title: &'static str, children: Children) -> impl IntoView {
    view! {
        <div class="empty">
            <p class="empty-title">{title}</p>
            {children()}
        </div>
    }
}

/// The frame of a page about the chosen environment: `title` as the document title and the
/// heading, `actions` beside the heading (once an environment is chosen), `notice` under it,
/// then `children`; without `?env=`, how to choose an environment instead.
#[component]
pub fn EnvironmentPage(
    title: &'static str,
    env: Memo<String>,
    #[prop(optional, into)] actions: Option<ViewFn>,
    #[prop(optional, into)] notice: Option<ViewFn>,
    children: ChildrenFn,
) -> impl IntoView {
    let chosen = move || !env.get().is_empty();
    view! {
        <leptos_meta::Title text=title/>
        <section class="page">
            <div class="page-header">
                <h1>{title}</h1>
                {actions.map(|actions| view! { <Show when=chosen>{actions.run()}</Show> })}
            </div>
            {notice.map(|notice| notice.run())}
            <Show when=chosen fallback=NoEnvironment>
                {children()}
            </Show>
        </section>
    }
}

/// The frame of a page below another one (a compile, a version, a resource...): `title` as the
/// document title, the breadcrumbs (`trail`: links to the pages above, then where the reader is),
/// then `children`.
#[component]
pub fn SubPage(#[prop(into)] title: TextProp, #[prop(into)] trail: ViewFn, children: Children) -> impl IntoView {
    view! {
        <leptos_meta::Title text=title/>
        <section class="page">
            <nav class="breadcrumbs" aria-label="Breadcrumbs">
                {trail.run()}
            </nav>
            {children()}
        </section>
    }
}

/// Shown on environment pages opened without `?env=`.
#[component]
pub fn NoEnvironment() -> impl IntoView {
    view! {
        <Empty title="No environment selected">
            <p>
                "Pick an environment in the switcher at the top, or "
                <a href=BASE>"see all environments"</a> "."
            </p>
        </Empty>
    }
}

/// A short note about the outcome of an action, shown in the corner for a few seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Toast {
    pub id: u64,
    pub text: String,
    pub ok: bool,
}

/// A question the console asks before a destructive action, in its own dialog (never the
/// browser's `confirm()`, which blocks the page and cannot be styled or tested like the rest).
/// `then` is a plain `Arc`, not a `Callback`: a callback lives in the reactive owner of the
/// button that asked, which a live update may re-render (and dispose) while the dialog is open.
#[derive(Clone)]
pub struct Question {
    pub text: String,
    /// The label of the button that goes ahead ("Delete", "Promote", ...).
    pub yes: String,
    pub then: std::sync::Arc<dyn Fn() + Send + Sync>,
}

/// The console's toasts and confirmation dialog, provided once by the app.
#[derive(Clone, Copy)]
pub struct Feedback {
    pub toasts: RwSignal<Vec<Toast>>,
    pub question: RwSignal<Option<Question>>,
    next: RwSignal<u64>,
}

impl Feedback {
    pub fn new() -> Feedback {
        Feedback { toasts: RwSignal::new(Vec::new()), question: RwSignal::new(None), next: RwSignal::new(0) }
    }
    pub fn get() -> Feedback {
        use_context::<Feedback>().unwrap_or_default()
    }
    /// Shows a toast; it goes away by itself after a while (errors stay longer).
    pub fn toast(&self, text: impl Into<String>, ok: bool) {
        let id = self.next.get_untracked();
        self.next.set(id + 1);
        self.toasts.update(|t| t.push(Toast { id, text: text.into(), ok }));
        #[cfg(feature = "hydrate")]
        {
            let toasts = self.toasts;
            let ms = if ok { 6_000 } else { 12_000 };
            set_timeout(move || toasts.update(|t| t.retain(|x| x.id != id)), std::time::Duration::from_millis(ms));
        }
    }
    /// Asks `text` in the console's dialog; `then` runs when the user answers with `yes`.
    pub fn ask(&self, text: impl Into<String>, yes: impl Into<String>, then: impl Fn() + Send + Sync + 'static) {
        self.question.set(Some(Question { text: text.into(), yes: yes.into(), then: std::sync::Arc::new(then) }));
    }
}

impl Default for Feedback {
    fn default() -> Self {
        Feedback::new()
    }
}

/// The message of a failed action, shown next to the button that started it (and as a toast).
/// Created in the component's body (where the context is), so event handlers can bump the
/// page's refresh and reach the toasts.
#[derive(Clone, Copy)]
pub struct ActionError {
    message: RwSignal<Option<String>>,
    pub refresh: Refresh,
    pub feedback: Feedback,
}

impl ActionError {
    pub fn new() -> ActionError {
        ActionError { message: RwSignal::new(None), refresh: Refresh::get(), feedback: Feedback::get() }
    }
    pub fn get(&self) -> Option<String> {
        self.message.get()
    }
    pub fn set(&self, message: Option<String>) {
        self.message.set(message)
    }
    pub fn fail(&self, error: ServerFnError) {
        let text = error_text(&error);
        self.feedback.toast(text.clone(), false);
        self.set(Some(text))
    }
    /// Asks before a destructive action (see [`Feedback::ask`]).
    pub fn ask(&self, text: impl Into<String>, yes: impl Into<String>, then: impl Fn() + Send + Sync + 'static) {
        self.feedback.ask(text, yes, then)
    }
}

impl Default for ActionError {
    fn default() -> Self {
        ActionError::new()
    }
}

/// A server function's error as the operator reads it.
pub fn error_text(error: &ServerFnError) -> String {
    let text = error.to_string();
    text.strip_prefix("error running server function: ").unwrap_or(&text).to_string()
}

/// Runs a server call from an event handler: records its error (or clears it), shows the
/// error as a toast, and bumps the page's refresh when it is done.
pub fn run<F>(error: ActionError, call: F)
where
    F: std::future::Future<Output = Result<(), ServerFnError>> + 'static,
{
    act(error, "", call)
}

/// [`run`], with a toast saying `done` when the call succeeded (nothing when `done` is empty).
pub fn act<F>(error: ActionError, done: impl Into<String>, call: F)
where
    F: std::future::Future<Output = Result<(), ServerFnError>> + 'static,
{
    let done = done.into();
    leptos::task::spawn_local(async move {
        match call.await {
            Ok(()) => {
                error.set(None);
                if !done.is_empty() {
                    error.feedback.toast(done, true);
                }
            }
            Err(e) => error.fail(e),
        }
        error.refresh.bump();
    });
}

/// The toasts (a polite live region, so screen readers announce outcomes) and the
/// confirmation dialog of the whole console.
#[component]
pub fn FeedbackLayer() -> impl IntoView {
    let feedback = Feedback::get();
    let yes_ref = NodeRef::<leptos::html::Button>::new();
    // Focus goes to the answer that goes ahead when the dialog opens (Escape or Cancel say no).
    Effect::new(move |_| {
        if feedback.question.with(|q| q.is_some())
            && let Some(button) = yes_ref.get()
        {
            let _ = button.focus();
        }
    });
    let close = move || feedback.question.set(None);
    view! {
        <div class="toasts" id="toasts" role="status" aria-live="polite">
            <For each=move || feedback.toasts.get() key=|t| t.id let:t>
                <div class="toast" class:toast-error=!t.ok data-ok=t.ok.to_string()>
                    <span class="toast-text">{t.text.clone()}</span>
                    <button
                        class="icon-button toast-close"
                        type="button"
                        aria-label="Dismiss"
                        on:click=move |_| feedback.toasts.update(|all| all.retain(|x| x.id != t.id))
                    >
                        "×"
                    </button>
                </div>
            </For>
        </div>
        <Show when=move || feedback.question.with(|q| q.is_some())>
            <div class="dialog-backdrop" on:click=move |_| close()>
                <div
                    class="dialog"
                    id="confirm-dialog"
                    role="alertdialog"
                    aria-modal="true"
                    aria-labelledby="confirm-text"
                    on:click=|ev| ev.stop_propagation()
                    on:keydown=move |ev| {
                        if ev.key() == "Escape" {
                            close()
                        }
                    }
                >
                    <p id="confirm-text">{move || feedback.question.with(|q| q.as_ref().map(|q| q.text.clone()))}</p>
                    <div class="dialog-actions">
                        <button class="button button-secondary" id="confirm-no" type="button" on:click=move |_| close()>
                            "Cancel"
                        </button>
                        <button
                            class="button button-primary"
                            id="confirm-yes"
                            type="button"
                            node_ref=yes_ref
                            on:click=move |_| {
                                if let Some(q) = feedback.question.get_untracked() {
                                    feedback.question.set(None);
                                    (q.then)();
                                }
                            }
                        >
                            {move || feedback.question.with(|q| q.as_ref().map(|q| q.yes.clone()))}
                        </button>
                    </div>
                </div>
            </div>
        </Show>
    }
}

#[component]
pub fn ActionMessage(error: ActionError) -> impl IntoView {
    move || error.get().map(|e| view! { <p class="action-error" role="alert">{e}</p> })
}

/// A horizontal bar with one segment per state, each a link that filters the resources page.
#[component]
pub fn DeployBar(env: String, summary: Vec<(api::ResourceState, u64)>, total: u64) -> impl IntoView {
    let segments = summary
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(state, n)| {
            let width = if total == 0 { 0.0 } else { n as f64 * 100.0 / total as f64 };
            let state = state.as_str();
            let href = format!("{}&filter.status={}", env_link("resources", &env), encode(state));
            let label = format!("{}: {n}", state.replace('_', " "));
            view! {
                <a
                    class=format!("bar-segment state-bg-{state}")
                    style=format!("width: {width:.3}%")
                    href=href
                    title=label.clone()
                    aria-label=label
                    data-state=state
                ></a>
            }
        })
        .collect_view();
    view! {
        <div class="deploy-bar" role="group" aria-label="Resources by state">
            {segments}
        </div>
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

/// A duration for people: `0.4 s`, `12 s`, `3 min 4 s`, `2 h 5 min`.
pub fn duration_text(seconds: f64) -> String {
    if seconds < 10.0 {
        return format!("{seconds:.1} s");
    }
    let s = seconds.round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        3600..86400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("{} d {} h", s / 86400, s % 86400 / 3600),
    }
}

/// A link to a compile's details page.
pub fn compile_link(env: &str, id: &str) -> String {
    format!("{BASE}/compilereports/{}?env={}", encode(id), encode(env))
}

/// A console link stored without its environment (a notification's `uri`, e.g.
/// `/console/compilereports/<id>`) made to open in `env`.
pub fn console_uri(uri: &str, env: &str) -> String {
    if !uri.starts_with(BASE) || uri.contains("env=") {
        return uri.to_string();
    }
    let separator = if uri.contains('?') { '&' } else { '?' };
    format!("{uri}{separator}env={}", encode(env))
}
