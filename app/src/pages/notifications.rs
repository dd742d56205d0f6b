//! The notification centre: what the orchestrator wants an operator to read, marked read or
//! cleared here (its server functions are in [`crate::fns`]: the bell in the header uses them too).

use leptos::prelude::*;

use crate::components::*;
use crate::fns;
use crate::model::{NotificationRow, Paged};

const NOTIFICATIONS: &str = "/console/notificationcenter";

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
                <button
                    class="button button-secondary"
                    id="mark-all-read"
                    type="button"
                    on:click=move |_| run(error, fns::update_notification(env.get_untracked(), String::new(), Some(true), None))
                >
                    "Mark all read"
                </button>
            }
            notice=move || view! { <ActionMessage error/> }
        >
            <div class="toolbar">
                <span class="muted">"Read: "</span>
                {choice_filter(NOTIFICATIONS, "read", &["", "false", "true"])}
                <span class="muted">" Severity: "</span>
                {choice_filter(NOTIFICATIONS, "severity", &["", "message", "info", "success", "warning", "error"])}
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
                                <button
                                    class="button button-small mark-read"
                                    type="button"
                                    on:click=move |_| run(error, fns::update_notification(e1.clone(), id1.clone(), Some(!read), None))
                                >
                                    {if read { "Mark unread" } else { "Mark read" }}
                                </button>
                                <button
                                    class="button button-small button-secondary"
                                    type="button"
                                    on:click=move |_| run(error, fns::update_notification(e2.clone(), id2.clone(), None, Some(true)))
                                >
                                    "Clear"
                                </button>
                            </div>
                        </li>
                    }
                })
                .collect_view()}
        </ul>
        <Pager path=NOTIFICATIONS page=data.page/>
    }
    .into_any()
}
