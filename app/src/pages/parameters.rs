//! Parameters: the values set for the model with `inmanta param set` or the API.

use crate::error::ConsoleError;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;

use crate::components::*;
#[cfg(feature = "ssr")]
use crate::fns::{authorized_for, env_id, fail, page_request, paged};
use crate::model::{Paged, ParameterRow, TableQuery};

#[component]
pub fn ParametersPage() -> impl IntoView {
    let env = env();
    let data = table_resource(parameters);
    view! {
        <EnvironmentPage title="Parameters" env>
            <FilterForm path=crate::routes::PARAMETERS.href fields=vec![("name", "Name"), ("source", "Source")] keep=vec!["env"]/>
            <Loaded
                resource=data
                loading="Loading parameters…"
                error_title="The parameters could not be loaded"
                view=move |page| view! { <ParameterTable data=page/> }
            />
        </EnvironmentPage>
    }
}

#[component]
fn ParameterTable(data: Paged<ParameterRow>) -> impl IntoView {
    let row = |p: ParameterRow| {
        let long = parameter_value_is_long(&p.value);
        let updated = p.updated.as_deref().map(short_date);
        view! { <tr><td>{p.name}</td><td>{p.source}</td><td class="nowrap">{updated}</td><td><FoldedValue value=p.value long/></td></tr> }
    };
    view! {
        <PagedTable
            path=crate::routes::PARAMETERS.href
            id="parameters"
            headings=&[Heading::Sorts("name", "Name"), Heading::Sorts("source", "Source"), Heading::Sorts("updated", "Updated"), Heading::Plain("Value")]
            data
            row
            empty="No parameters"
            hint=|| view! { <p>"Set one with " <code>"inmanta param set"</code> " or through " <code>"PUT /api/v1/param"</code> "."</p> }
        />
    }
}

/// Whether a parameter's or a fact's value folds in its list: long or over several lines.
pub(crate) fn parameter_value_is_long(value: &str) -> bool {
    value.len() > 120 || value.contains('\n')
}

/// Parameters, paged.
#[server(prefix = "/console/fn", endpoint = "parameters", input = Json)]
pub async fn parameters(query: TableQuery) -> Result<Paged<ParameterRow>, ConsoleError> {
    let s = authorized_for("parameter.read", &query.env)?;
    let page = s.orchestrator.parameters(env_id(&query.env)?, &page_request(&query)).await.map_err(fail)?;
    Ok(paged(page, parameter_row))
}

#[cfg(feature = "ssr")]
fn parameter_row(p: api::operations::Parameter) -> ParameterRow {
    ParameterRow {
        name: p.name,
        value: p.value,
        source: p.source,
        updated: p.updated.map(|t| t.to_string()),
        resource_id: None,
    }
}
