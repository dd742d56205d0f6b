//! The environments page: every environment with its project, the console's start page.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::BASE;
use crate::components::{Empty, Loaded, live_resource};
use crate::fns::list_environments;
use crate::model::EnvironmentSummary;

/// Lists every environment with its project.
#[component]
pub fn EnvironmentsPage() -> impl IntoView {
    let environments = live_resource(|| (), |()| list_environments());
    view! {
        <Title text="Environments"/>
        <section class="page">
            <div class="page-header">
                <h1>"Environments"</h1>
                <a class="button button-secondary" href=format!("{BASE}/environment/create")>"Create environment"</a>
                <button id="reload" class="button" type="button" on:click=move |_| environments.refetch()>
                    "Reload"
                </button>
            </div>
            <Loaded
                resource=environments
                loading="Loading environments…"
                error_title="The environments could not be loaded"
                view=|list| {
                    if list.is_empty() {
                        EmptyEnvironments().into_any()
                    } else {
                        view! { <EnvironmentTable environments=list/> }.into_any()
                    }
                }
            />
        </section>
    }
}

#[component]
fn EnvironmentTable(environments: Vec<EnvironmentSummary>) -> impl IntoView {
    view! {
        <table class="table" id="environments">
            <thead>
                <tr>
                    <th scope="col">"Name"</th>
                    <th scope="col">"Project"</th>
                    <th scope="col">"Project id"</th>
                    <th scope="col">"Id"</th>
                </tr>
            </thead>
            <tbody>
                {environments
                    .into_iter()
                    .map(|env| {
                        let id = env.id.clone();
                        view! {
                            <tr data-id=id>
                                <td class="name">
                                    <a href=crate::routes::DASHBOARD.of(&env.id)>{env.name}</a>
                                    {env.halted.then(|| view! { <span class="badge badge-warning">"halted"</span> })}
                                </td>
                                <td>{env.project_name}</td>
                                <td class="mono">{env.project_id}</td>
                                <td class="mono">{env.id}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

#[component]
fn EmptyEnvironments() -> impl IntoView {
    view! {
        <div id="no-environments">
            <Empty title="No environments yet">
                <p>
                    <a href=format!("{BASE}/environment/create")>"Create an environment"</a> " here, with "
                    <code>"inmanta environment create -n NAME -p PROJECT"</code> ", or through the API ("
                    <code>"PUT /api/v2/environment"</code> ")."
                </p>
            </Empty>
        </div>
    }
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::*;
    use crate::test_support::*;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    #[tokio::test]
    async fn page_lists_the_environments_of_the_orchestrator() {
        let (_dir, o) = orchestrator_with(&[("infra", "production"), ("infra", "staging"), ("apps", "dev")]).await;
        let ids: Vec<String> = o.list_environments().await.unwrap().iter().map(|e| e.id.to_string()).collect();
        let (status, html) = get(router(Some(o)), "/console").await;
        assert_eq!(status, StatusCode::OK);
        for needle in ["production", "staging", "dev", "infra", "apps", "<title>Environments · Inmanta</title>"] {
            assert!(html.contains(needle), "{needle} missing in {html}");
        }
        for id in ids {
            assert!(html.contains(&id), "{id} missing in {html}");
        }
        assert!(html.contains(r#"import("/console/pkg/console.0123.js")"#), "{html}");
        assert!(html.contains(r#"href="/console/pkg/console.0123.css""#), "{html}");
        assert!(!html.contains("No environments yet"), "{html}");
        // Sorted by project name, then environment name.
        let order: Vec<usize> = ["dev", "production", "staging"].iter().map(|n| html.find(n).unwrap()).collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{html}");
    }

    #[tokio::test]
    async fn page_without_environments_says_how_to_create_one() {
        let (_dir, o) = orchestrator_with(&[]).await;
        let (status, html) = get(router(Some(o)), "/console").await;
        assert_eq!(status, StatusCode::OK);
        assert!(html.contains("No environments yet"), "{html}");
        assert!(html.contains("inmanta environment create"), "{html}");
    }

    #[tokio::test]
    async fn page_shows_the_error_when_the_orchestrator_is_missing() {
        let (status, html) = get(router(None), "/console").await;
        assert_eq!(status, StatusCode::OK);
        assert!(html.contains("The environments could not be loaded"), "{html}");
        assert!(html.contains("not connected to an orchestrator"), "{html}");
    }

    #[tokio::test]
    async fn server_function_answers_on_its_fixed_endpoint() {
        let (_dir, o) = orchestrator_with(&[("infra", "production")]).await;
        let request = Request::post("/console/fn/list_environments")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::empty())
            .unwrap();
        let response = router(Some(o)).oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let rows: Vec<EnvironmentSummary> = serde_json::from_slice(&body).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].name.as_str(), rows[0].project_name.as_str()), ("production", "infra"));
    }
}
