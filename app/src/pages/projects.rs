//! Projects: the groups environments live in. Listed for everyone; created, renamed and
//! deleted by admins (the server functions check it).

use crate::error::ConsoleError;
use leptos::prelude::*;
use leptos_meta::Title;

use crate::components::{
    ActionError, ActionMessage, ChangeForm, Empty, Heading, Loaded, Table, TextField, act, endpoint, live_resource, run,
};
use crate::fns;
#[cfg(feature = "ssr")]
use crate::fns::{authorized_global, fail};
use crate::model::ProjectSummary;

#[component]
pub fn ProjectsPage() -> impl IntoView {
    let projects = live_resource(|| (), |()| fns::list_projects());
    let error = ActionError::new();
    let name = RwSignal::new(String::new());
    let create = move || {
        let new = name.get_untracked();
        name.set(String::new());
        run(error, create_project(new));
    };
    view! {
        <Title text="Projects"/>
        <section class="page">
            <div class="page-header">
                <h1>"Projects"</h1>
            </div>
            <ChangeForm action={endpoint::<CreateProject>()} class="inline-form card" id="create-project" on_submit=create>
                <TextField id="project-name" name="name" label="New project" value=name required=true placeholder="name"/>
                <button class="button button-primary" type="submit">"Create project"</button>
            </ChangeForm>
            <ActionMessage error=error/>
            <Loaded
                resource=projects
                loading="Loading projects…"
                error_title="The projects could not be loaded"
                view=move |list| {
                    if list.is_empty() {
                        view! {
                            <Empty title="No projects yet">
                                <p>"Create one above; environments are created inside a project."</p>
                            </Empty>
                        }
                        .into_any()
                    } else {
                        view! { <ProjectTable projects=list error=error/> }.into_any()
                    }
                }
            />
        </section>
    }
}

#[component]
fn ProjectTable(projects: Vec<ProjectSummary>, error: ActionError) -> impl IntoView {
    view! {
        <Table
            id="projects"
            headings=&[Heading::Plain("Name"), Heading::Plain("Environments"), Heading::Plain("Id"), Heading::Unseen("Actions")]
            rows=projects
            row=move |p| view! { <ProjectRow project=p error=error/> }
        />
    }
}

#[component]
fn ProjectRow(project: ProjectSummary, error: ActionError) -> impl IntoView {
    let editing = RwSignal::new(false);
    let new_name = RwSignal::new(project.name.clone());
    let (id, id_rename, id_delete) = (project.id.clone(), project.id.clone(), project.id.clone());
    let name = project.name.clone();
    let (row_id, row_name) = (id.clone(), name.clone());
    let empty = project.environments == 0;
    let rename = move || {
        editing.set(false);
        run(error, rename_project(id_rename.clone(), new_name.get_untracked()));
    };
    view! {
        <tr data-id=row_id data-name=row_name>
            <td class="name">
                // A disclosure, so renaming works before the wasm has loaded too.
                <details class="rename-details" prop:open=move || editing.get()>
                    <summary class="rename-summary">{name.clone()}</summary>
                    <ChangeForm
                        action={endpoint::<RenameProject>()}
                        fields=vec![("id", id.clone())]
                        on_submit=rename
                    >
                        <label class="sr-only" for=format!("rename-{id}")>"New name"</label>
                        <input
                            id=format!("rename-{id}")
                            class="input"
                            type="text"
                            name="name"
                            value=new_name.get_untracked()
                            required
                            prop:value=move || new_name.get()
                            on:input=move |ev| new_name.set(event_target_value(&ev))
                        />
                        <button class="button button-small" type="submit">"Save"</button>
                        <button class="button button-small button-link" type="button" on:click=move |_| editing.set(false)>
                            "Cancel"
                        </button>
                    </ChangeForm>
                </details>
            </td>
            <td>{project.environments}</td>
            <td class="mono">{project.id.clone()}</td>
            <td class="row-actions">
                <button class="button button-small button-secondary rename" type="button" on:click=move |_| editing.set(true)>
                    "Rename"
                </button>
                <ChangeForm
                    action={endpoint::<DeleteProject>()}
                    fields=vec![("id", id_delete.clone())]
                    on_submit=move || {
                        let (id, name) = (id_delete.clone(), project.name.clone());
                        error.ask(format!("Delete project {name}?"), "Delete", move || {
                            act(error, format!("Project {name} deleted"), delete_project(id.clone()))
                        })
                    }
                >
                    <button
                        class="button button-small button-danger delete"
                        type="submit"
                        disabled=!empty
                        title=if empty { "Delete this project" } else { "Delete its environments first" }
                    >
                        "Delete"
                    </button>
                </ChangeForm>
            </td>
        </tr>
    }
}

/// Also posted as a plain form (no wasm).
#[server(prefix = "/console/fn", endpoint = "create_project")]
pub async fn create_project(name: String) -> Result<(), ConsoleError> {
    let s = authorized_global("project.create")?;
    s.orchestrator.create_project(&name, None).await.map_err(fail)?;
    Ok(())
}

/// Also posted as a plain form (no wasm).
#[server(prefix = "/console/fn", endpoint = "rename_project")]
pub async fn rename_project(id: String, name: String) -> Result<(), ConsoleError> {
    let s = authorized_global("project.modify")?;
    let id = id.parse().map_err(|_| ConsoleError::refused(format!("{id:?} is not a project id")))?;
    s.orchestrator.modify_project(id, &name).await.map_err(fail)?;
    Ok(())
}

/// Deletes an empty project; one with environments is refused with their names.
/// Also posted as a plain form (no wasm).
#[server(prefix = "/console/fn", endpoint = "delete_project")]
pub async fn delete_project(id: String) -> Result<(), ConsoleError> {
    let s = authorized_global("project.delete")?;
    let id = id.parse().map_err(|_| ConsoleError::refused(format!("{id:?} is not a project id")))?;
    s.orchestrator.delete_project(id).await.map_err(fail)
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::*;
    use crate::test_support::*;
    use axum::http::StatusCode;

    /// Projects are managed by admins: a read-only user may list them but not create one.
    #[tokio::test]
    async fn projects_are_listed_for_all_and_managed_by_admins() {
        let _ = any_spawner::Executor::init_tokio();
        let (_dir, o) = orchestrator_with(&[]).await;
        let env = environment_with_versions(&o, 1).await;
        let owner = Owner::new();
        owner.set();
        provide_context(o.clone());
        o.create_user("rita", "Rita-password-123", false, false).await.unwrap();
        o.assign_role("rita", env, "read-only").await.unwrap();
        provide_context(o.user_record("rita").await.unwrap().unwrap().principal());
        assert_eq!(crate::fns::list_projects().await.unwrap().len(), 1);
        let error = create_project("extra".into()).await.unwrap_err();
        assert!(error.to_string().contains("only an admin"), "{error}");

        provide_context(orchestrator::auth::Principal::Unrestricted);
        create_project("extra".into()).await.unwrap();
        let extra = crate::fns::list_projects().await.unwrap().into_iter().find(|p| p.name == "extra").unwrap();
        rename_project(extra.id.clone(), "renamed".into()).await.unwrap();
        let busy = crate::fns::list_projects().await.unwrap().into_iter().find(|p| p.environments == 1).unwrap();
        let error = delete_project(busy.id).await.unwrap_err();
        assert!(error.to_string().contains("delete them first"), "{error}");
        delete_project(extra.id).await.unwrap();
        assert!(crate::fns::list_projects().await.unwrap().iter().all(|p| p.name != "renamed"));

        let (status, html) = get(router(Some(o)), "/console/projects").await;
        assert_eq!(status, StatusCode::OK);
        assert!(html.contains(r#"id="projects""#) && html.contains("Create project"), "{html}");
    }
}
