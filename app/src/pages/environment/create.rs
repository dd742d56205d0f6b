//! The page that creates an environment, in an existing project or a new one.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_navigate;

use super::fns;
use crate::components::*;

#[component]
pub fn CreateEnvironmentPage() -> impl IntoView {
    let projects = Resource::new(|| (), |_| crate::fns::list_projects());
    let project = RwSignal::new(String::new());
    let new_project = RwSignal::new(String::new());
    let name = RwSignal::new(String::new());
    let repository = RwSignal::new(String::new());
    let branch = RwSignal::new(String::from("master"));
    let description = RwSignal::new(String::new());
    let error = ActionError::new();
    let busy = RwSignal::new(false);
    let navigate = use_navigate();
    let submit = move || {
        busy.set(true);
        let navigate = navigate.clone();
        let call = fns::create_environment(
            project.get_untracked(),
            new_project.get_untracked(),
            name.get_untracked(),
            repository.get_untracked(),
            branch.get_untracked(),
            description.get_untracked(),
        );
        leptos::task::spawn_local(async move {
            match call.await {
                Ok(id) => navigate(&in_app(&crate::routes::DASHBOARD.of(&id)), Default::default()),
                Err(e) => error.fail(e),
            }
            busy.set(false);
        });
    };
    view! {
        <Title text="Create environment"/>
        <section class="page page-narrow">
            <div class="page-header">
                <h1>"Create environment"</h1>
            </div>
            <ChangeForm
                action={endpoint::<fns::CreateEnvironment>()}
                class="form card"
                id="create-environment"
                on_submit=submit
            >
                <label for="project">"Project"</label>
                <Transition fallback=|| view! { <p class="muted">"Loading projects…"</p> }>
                    {move || {
                        let list = projects.get().and_then(|r| r.ok()).unwrap_or_default();
                        view! {
                            <select
                                id="project"
                                name="project_id"
                                class="input"
                                prop:value=move || project.get()
                                on:change=move |ev| project.set(event_target_value(&ev))
                            >
                                <option value="">"— new project (type its name below) —"</option>
                                {list
                                    .into_iter()
                                    .map(|p| view! { <option value=p.id.clone()>{p.name}</option> })
                                    .collect_view()}
                            </select>
                        }
                    }}
                </Transition>
                <Show when=move || project.get().is_empty()>
                    <TextField id="new-project" name="new_project" label="New project name" value=new_project/>
                </Show>
                <TextField id="env-name" name="name" label="Name" value=name required=true/>
                <TextField id="env-description" name="description" label="Description" value=description/>
                <TextField id="env-repo" name="repository" label="Repository URL" value=repository input_type="url" placeholder="https://github.com/example/project.git"/>
                <TextField id="env-branch" name="branch" label="Branch" value=branch/>
                <ActionMessage error/>
                <div class="form-actions">
                    <button class="button" type="submit" disabled=move || busy.get()>"Create"</button>
                    <a class="button button-secondary" href=format!("{}/", crate::BASE)>"Cancel"</a>
                </div>
            </ChangeForm>
        </section>
    }
}
