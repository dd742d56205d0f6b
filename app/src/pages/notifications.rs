//! The notification centre: what the orchestrator wants an operator to read, marked read or
//! cleared here (its server functions are in [`crate::fns`]: the bell in the header uses them too).

use leptos::prelude::*;

use crate::components::*;
use crate::fns;
use crate::model::{NotificationRow, Paged};

/// A form that marks one notification (or, with an empty `id`, every unread one) read or unread
/// (`read`) or clears it (`cleared`), with or without the wasm; `children` holds its button.
#[component]
pub(crate) fn NotificationForm(
    env: String,
    id: String,
    #[prop(optional)] read: Option<bool>,
    #[prop(optional)] cleared: Option<bool>,
    error: ActionError,
    children: Children,
) -> impl IntoView {
    let mut fields = vec![("env", env.clone()), ("id", id.clone())];
    fields.extend(read.map(|read| ("read", read.to_string())));
    fields.extend(cleared.map(|cleared| ("cleared", cleared.to_string())));
    view! {
        <ChangeForm
            action={endpoint::<fns::UpdateNotification>()}
            fields
            on_submit=move || run(error, fns::update_notification(env.clone(), id.clone(), read, cleared))
        >
            {children()}
        </ChangeForm>
    }
}

#[component]
pub fn NotificationsPage() -> impl IntoView {
    let env = env();
    let data = table_resource(fns::notifications);
    let error = ActionError::new();
    view! {
        <EnvironmentPage
            title="Notifications"
            env
            actions=move || view! {
                <NotificationForm env=env.get_untracked() id=String::new() read=true error>
                    <button class="button button-secondary" id="mark-all-read" type="submit">
                        "Mark all read"
                    </button>
                </NotificationForm>
            }
            notice=move || view! { <ActionMessage error/> }
        >
            <div class="toolbar">
                <span class="muted">"Read: "</span>
                {choice_filter(crate::routes::NOTIFICATIONS.href, "read", &["", "false", "true"])}
                <span class="muted">" Severity: "</span>
                {choice_filter(crate::routes::NOTIFICATIONS.href, "severity", &["", "message", "info", "success", "warning", "error"])}
            </div>
            <Loaded
                resource=data
                loading="Loading notifications…"
                error_title="The notifications could not be loaded"
                view=move |page| view! { <NotificationList env=env.get_untracked() data=page error/> }
            />
        </EnvironmentPage>
    }
}

#[component]
fn NotificationList(env: String, data: Paged<NotificationRow>, error: ActionError) -> impl IntoView {
    if data.rows.is_empty() {
        return view! {
            <Empty title="No notifications">
                <p>"The orchestrator notifies here when something needs attention, such as a failed compile."</p>
            </Empty>
        }
        .into_any();
    }
    view! {
        <ul class="notifications" id="notifications">
            {data
                .rows
                .into_iter()
                .map(|n| {
                    let (e1, e2) = (env.clone(), env.clone());
                    let (id1, id2) = (n.id.clone(), n.id.clone());
                    let read = n.read;
                    view! {
                        <li class=format!("notification severity-{}", n.severity) class:unread=!read data-id=n.id.clone()>
                            <div class="notification-head">
                                <span class=format!("badge severity-badge-{}", n.severity)>{n.severity.clone()}</span>
                                <strong>{n.title}</strong>
                                <span class="muted">{short_date(&n.created)}</span>
                            </div>
                            <p>{n.message}</p>
                            {n.uri.map(|uri| view! { <a href=console_uri(&uri, &env)>"Open"</a> })}
                            <div class="row-actions">
                                <NotificationForm env=e1 id=id1 read=!read error>
                                    <button class="button button-small mark-read" type="submit">
                                        {if read { "Mark unread" } else { "Mark read" }}
                                    </button>
                                </NotificationForm>
                                <NotificationForm env=e2 id=id2 cleared=true error>
                                    <button class="button button-small button-secondary" type="submit">"Clear"</button>
                                </NotificationForm>
                            </div>
                        </li>
                    }
                })
                .collect_view()}
        </ul>
        <Pager path=crate::routes::NOTIFICATIONS.href page=data.page/>
    }
    .into_any()
}
