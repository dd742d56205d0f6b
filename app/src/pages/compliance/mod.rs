//! Compliance of the released resources in the console (Inmanta 20.1's compliance reporting):
//! the counts the dashboard and the resources page show, and on a resource's details page its
//! compliance with what a report-only check found different.

use crate::error::ConsoleError;
use api::compliance::{ComplianceSummary, ResourceComplianceDiff};
use api::state::{Compliance, ResourceState};
use leptos::prelude::*;
use leptos::server_fn::codec::Json;

use crate::components::*;
#[cfg(feature = "ssr")]
use crate::fns::{authorized_for, env_id, fail};

/// How many released resources are in each compliance.
#[server(prefix = "/console/fn", endpoint = "compliance_summary", input = Json)]
pub async fn load_compliance_summary(env: String) -> Result<ComplianceSummary, ConsoleError> {
    let s = authorized_for("resource.read", &env)?;
    s.orchestrator.compliance_summary(env_id(&env)?).await.map_err(fail)
}

/// One resource's compliance; none for a resource the released version no longer holds.
#[server(prefix = "/console/fn", endpoint = "resource_compliance", input = Json)]
pub async fn load_resource_compliance(
    env: String,
    rid: api::ResourceId,
) -> Result<Option<ResourceComplianceDiff>, ConsoleError> {
    let s = authorized_for("report.read", &env)?;
    // The report is keyed by the ids' text, as the REST call answers it.
    let rid = rid.to_string();
    match s.orchestrator.compliance_report(env_id(&env)?, std::slice::from_ref(&rid)).await {
        Ok(mut report) => Ok(report.remove(&rid)),
        Err(orchestrator::Error::NotFound(_)) => Ok(None),
        Err(e) => Err(fail(e)),
    }
}

/// The wording and the state colour of a compliance (its badge reuses the resource states').
fn label(compliance: Compliance) -> (&'static str, &'static str) {
    let (text, state) = match compliance {
        Compliance::Compliant => ("compliant", ResourceState::Deployed),
        Compliance::NonCompliant => ("non-compliant", ResourceState::NonCompliant),
        Compliance::HasUpdate => ("has update", ResourceState::Available),
        Compliance::Undefined => (Compliance::Undefined.as_str(), ResourceState::Undefined),
    };
    (text, state.as_str())
}

#[component]
pub fn ComplianceBadge(compliance: Compliance) -> impl IntoView {
    let (text, state) = label(compliance);
    view! { <span class=format!("badge state-{state}") data-compliance=compliance.as_str()>{text}</span> }
}

/// The compliance counts of an environment's released resources, once it has any (with
/// `report_only_only`, once some are report-only): a card whose non-compliant count links to the
/// report-only resources found different.
#[component]
pub fn ComplianceCard(env: Memo<String>, #[prop(optional)] report_only_only: bool) -> impl IntoView {
    let data = live_resource(move || env.get(), load_compliance_summary);
    view! {
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                match data.await {
                    Ok(summary) if summary.total > 0 && (summary.report_only > 0 || !report_only_only) => {
                        view! { <ComplianceCounts env=env.get_untracked() summary/> }.into_any()
                    }
                    _ => ().into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn ComplianceCounts(env: String, summary: ComplianceSummary) -> impl IntoView {
    let count = |c: Compliance| summary.by_compliance.get(&c).copied().unwrap_or(0);
    let counts = Compliance::ALL
        .iter()
        .map(|&c| {
            let (text, state) = label(c);
            view! {
                <span class="compliance-count" data-compliance=c.as_str()>
                    <span class=format!("legend-swatch state-bg-{state}")></span>
                    {format!("{} {text}", count(c))}
                </span>
            }
        })
        .collect_view();
    let non_compliant = count(Compliance::NonCompliant);
    let differs = format!("{}&filter.status={}", crate::routes::RESOURCES.of(&env), ResourceState::NonCompliant);
    view! {
        <div class="card" id="compliance" data-total=summary.total data-non-compliant=non_compliant>
            <h2>"Compliance"</h2>
            <p class="legend">{counts}</p>
            <p class="muted">
                {format!("{} of {} resources are report-only: checked, never changed. ", summary.report_only, summary.total)}
                {(non_compliant > 0).then(|| view! { <a href=differs id="non-compliant-link">"Show the resources found different"</a> })}
            </p>
        </div>
    }
}

/// A resource's compliance and, when a report-only check found it different, the attributes
/// that differ.
#[component]
pub fn ResourceCompliance(env: Memo<String>, rid: Memo<String>) -> impl IntoView {
    let data = live_resource(
        move || (env.get(), rid.get()),
        |(e, r)| async move { load_resource_compliance(e, rid_argument(&r)?).await },
    );
    view! {
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                match data.await {
                    Ok(Some(report)) => view! { <ComplianceDetails report/> }.into_any(),
                    _ => ().into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn ComplianceDetails(report: ResourceComplianceDiff) -> impl IntoView {
    let diff = report.attribute_diff.clone().filter(|d| !d.is_empty()).map(|diff| {
        let show = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let row = move |(attribute, change): (String, api::compliance::AttributeStateChange)| {
            let name = attribute.clone();
            view! {
                <tr data-attribute=name>
                    <td class="mono">{attribute}</td>
                    <td class="mono">{show(&change.current)}</td>
                    <td class="mono">{show(&change.desired)}</td>
                </tr>
            }
        };
        let headings = &[Heading::Plain("Attribute"), Heading::Plain("Current"), Heading::Plain("Desired")];
        view! {
            <Table id="compliance-diff" caption="What the last check found different" headings rows=diff.into_iter().collect() row/>
        }
    });
    view! {
        <div class="card" id="resource-compliance" data-compliance=report.compliance.as_str()>
            <h2>"Compliance"</h2>
            <dl class="facts-list">
                <dt>"Compliance"</dt>
                <dd><ComplianceBadge compliance=report.compliance/></dd>
                <dt>"Report only"</dt>
                <dd>{if report.report_only { "yes: checked, never changed" } else { "no" }}</dd>
                <dt>"Last handler run"</dt>
                <dd>
                    {report.last_handler_run.as_str()}
                    {report.last_handler_run_at.map(|at| format!(" at {}", at.short()))}
                </dd>
            </dl>
            {diff}
        </div>
    }
}

#[cfg(all(test, feature = "ssr"))]
mod tests;
