//! Facts: what handlers report about the resources they manage, each with its resource.

use crate::error::ConsoleError;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;

use super::parameters::parameter_value_is_long;
use crate::components::*;
#[cfg(feature = "ssr")]
use crate::fns::{authorized_for, env_id, fact_row, fail, page_request, paged};
use crate::layout::resource_link;
use crate::model::{Paged, ParameterRow, TableQuery};

#[component]
pub fn FactsPage() -> impl IntoView {
    let env = env();
    let data = table_resource(facts);
    view! {
        <EnvironmentPage title="Facts" env>
            <FilterForm path=crate::routes::FACTS.href fields=vec![("name", "Name"), ("resource_id", "Resource")] keep=vec!["env"]/>
            <Loaded
                resource=data
                loading="Loading facts…"
                error_title="The facts could not be loaded"
                view=move |page| view! { <FactTable env=env.get_untracked() data=page/> }
            />
        </EnvironmentPage>
    }
}

#[component]
fn FactTable(env: String, data: Paged<ParameterRow>) -> impl IntoView {
    let row = move |f: ParameterRow| {
        let href = f.resource_id.as_ref().map(|id| resource_link(&env, id));
        let long = parameter_value_is_long(&f.value);
        view! {
            <tr>
                <td>{f.name}</td>
                <td><a class="mono" href=href>{f.resource_id.map(|id| id.to_string())}</a></td>
                <td class="nowrap">{f.updated.as_deref().map(short_date)}</td>
                <td><FoldedValue value=f.value long/></td>
            </tr>
        }
    };
    view! {
        <PagedTable
            path=crate::routes::FACTS.href
            id="facts"
            headings=&[Heading::Sorts("name", "Name"), Heading::Sorts("resource_id", "Resource"), Heading::Plain("Updated"), Heading::Plain("Value")]
            data
            row
            empty="No facts"
            hint=|| view! { <p>"Handlers report facts about the resources they manage; none are stored yet."</p> }
        />
    }
}

/// Facts, paged.
#[server(prefix = "/console/fn", endpoint = "facts", input = Json)]
pub async fn facts(query: TableQuery) -> Result<Paged<ParameterRow>, ConsoleError> {
    let s = authorized_for("fact.read", &query.env)?;
    let page = s.orchestrator.facts(env_id(&query.env)?, &page_request(&query)).await.map_err(fail)?;
    Ok(paged(page, fact_row))
}
