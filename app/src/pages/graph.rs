//! The dependency graph of the released resources: an SVG with one box per resource coloured by
//! its state, requires edges coloured by the state of the required resource; wheel zooms, drag
//! pans, a click opens the resource. Views: every resource, the failures and what they block
//! (`?view=failures`), or the neighbourhood of one resource (`?around=<id>&hops=<n>`, linked
//! from the resource's details page). A search highlights the matching resources.

use crate::error::ConsoleError;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use leptos_router::hooks::use_query_map;

use crate::components::*;

#[cfg(feature = "ssr")]
use crate::fns::{authorized_for, cursor, env_id, fail};
use crate::layout::resource_link;
#[cfg(feature = "ssr")]
use crate::model::GraphNode;
use crate::model::{Graph, GraphFocus, ResourceId, ResourceState};

/// The graph of `rid`'s neighbourhood (the link on a resource's details page).
pub fn around_link(env: &str, rid: &ResourceId) -> String {
    format!("{}&around={}&hops=2", crate::routes::GRAPH.of(env), encode(&rid.to_string()))
}

#[component]
pub fn GraphPage() -> impl IntoView {
    let env = env();
    let (view_q, around, hops) = (query("view"), query("around"), query("hops"));
    let focus = Memo::new(move |_| GraphFocus {
        failures: view_q.get() == "failures",
        around: around.get(),
        hops: hops.get().parse().unwrap_or(2),
    });
    let data = live_resource(move || (env.get(), focus.get()), |(env, focus)| resource_graph(env, focus));
    view! {
        <SubPage
            title="Dependency graph"
            trail=move || view! {
                <a href=move || crate::routes::RESOURCES.of(&env.get())>"Resources"</a>
                " › "
                <span>"Dependency graph"</span>
            }
        >
            <div class="page-header">
                <h1>"Dependency graph"</h1>
                <span class="muted">"Scroll to zoom, drag to pan, click a resource to open it."</span>
            </div>
            <Show when=move || !env.get().is_empty() fallback=NoEnvironment>
                <FocusBar focus/>
                <Loaded
                    resource=data
                    loading="Loading the graph…"
                    error_title="The graph could not be loaded"
                    view=move |g| {
                        if !g.nodes.is_empty() {
                            view! { <GraphView env=env.get_untracked() graph=g/> }.into_any()
                        } else if focus.get_untracked().failures {
                            view! {
                                <Empty title="No failures">
                                    <p>"No resource is failed, undefined or unavailable, so nothing is blocked."</p>
                                </Empty>
                            }
                                .into_any()
                        } else {
                            view! {
                                <Empty title="No resources yet">
                                    <p>"Release a version to see how its resources depend on each other."</p>
                                </Empty>
                            }
                                .into_any()
                        }
                    }
                />
            </Show>
        </SubPage>
    }
}

/// The view chips: all, failures, and (when one is open) the neighbourhood with its hops.
#[component]
fn FocusBar(focus: Memo<GraphFocus>) -> impl IntoView {
    let q = use_query_map();
    move || {
        let current = q.get();
        let f = focus.get();
        let all = link(crate::routes::GRAPH.href, &current, &[("view", None), ("around", None), ("hops", None)]);
        let failures = link(crate::routes::GRAPH.href, &current, &[("view", Some("failures".into()))]);
        let around = (!f.around.is_empty()).then(|| {
            let hops = [1usize, 2, 3]
                .into_iter()
                .map(|n| {
                    let href = link(crate::routes::GRAPH.href, &current, &[("hops", Some(n.to_string()))]);
                    let active = n == f.hops;
                    view! {
                        <a class="chip" class:active=active aria-current=active.then_some("true") href=href data-hops=n>
                            {format!("{n} hop{}", if n == 1 { "" } else { "s" })}
                        </a>
                    }
                })
                .collect_view();
            view! {
                <span class="focus-around" id="graph-around">
                    "Around " <span class="mono">{f.around.clone()}</span> ": "
                </span>
                {hops}
            }
        });
        view! {
            <nav class="toolbar" aria-label="Graph views" id="graph-views">
                <a class="chip" class:active=f.is_all() aria-current=f.is_all().then_some("true") href=all id="graph-all">
                    "All resources"
                </a>
                <a
                    class="chip"
                    class:active=f.failures
                    aria-current=f.failures.then_some("true")
                    href=failures
                    id="graph-failures"
                >
                    "Failures and what they block"
                </a>
                {around}
            </nav>
        }
    }
}

/// The colour of each state drawn, with how many resources are in it.
#[component]
fn Legend(graph: Graph) -> impl IntoView {
    let mut counts: Vec<(ResourceState, usize)> = Vec::new();
    for n in &graph.nodes {
        match counts.iter_mut().find(|(s, _)| *s == n.status) {
            Some((_, c)) => *c += 1,
            None => counts.push((n.status, 1)),
        }
    }
    counts.sort_by_key(|(s, _)| crate::model::RESOURCE_STATES.iter().position(|x| x == s).unwrap_or(usize::MAX));
    view! {
        <ul class="legend graph-legend" id="graph-legend" aria-label="Legend">
            {counts
                .into_iter()
                .map(|(state, n)| {
                    let state = state.as_str();
                    view! {
                        <li class="legend-item" data-state=state>
                            <span class=format!("legend-swatch state-bg-{state}") aria-hidden="true"></span>
                            {format!("{} ({n})", state.replace('_', " "))}
                        </li>
                    }
                })
                .collect_view()}
            <li class="legend-item"><span class="legend-edge" aria-hidden="true"></span>"requires (coloured by the required resource)"</li>
        </ul>
    }
}

#[component]
fn GraphView(env: String, graph: Graph) -> impl IntoView {
    // The visible part of the graph, in SVG units: (x, y, width, height).
    let initial = (0.0, 0.0, graph.width.max(800.0), graph.height.max(400.0));
    let view_box = RwSignal::new(initial);
    let drag: RwSignal<Option<(f64, f64)>> = RwSignal::new(None);
    let svg_ref = NodeRef::<leptos::svg::Svg>::new();
    let pixels = move || {
        svg_ref
            .get_untracked()
            .map(|s| (s.client_width().max(1) as f64, s.client_height().max(1) as f64))
            .unwrap_or((1.0, 1.0))
    };
    let on_wheel = move |ev: leptos::ev::WheelEvent| {
        ev.prevent_default();
        let (w, h) = pixels();
        let factor = if ev.delta_y() > 0.0 { 1.15 } else { 1.0 / 1.15 };
        view_box.update(|(x, y, vw, vh)| {
            // Keep the point under the pointer where it is.
            let (px, py) = (*x + ev.offset_x() as f64 / w * *vw, *y + ev.offset_y() as f64 / h * *vh);
            *vw = (*vw * factor).clamp(100.0, initial.2 * 4.0);
            *vh = (*vh * factor).clamp(50.0, initial.3 * 4.0);
            *x = px - ev.offset_x() as f64 / w * *vw;
            *y = py - ev.offset_y() as f64 / h * *vh;
        });
    };
    let on_down = move |ev: leptos::ev::PointerEvent| drag.set(Some((ev.client_x() as f64, ev.client_y() as f64)));
    let on_move = move |ev: leptos::ev::PointerEvent| {
        if let Some((sx, sy)) = drag.get_untracked() {
            let (w, h) = pixels();
            let (cx, cy) = (ev.client_x() as f64, ev.client_y() as f64);
            view_box.update(|(x, y, vw, vh)| {
                *x -= (cx - sx) / w * *vw;
                *y -= (cy - sy) / h * *vh;
            });
            drag.set(Some((cx, cy)));
        }
    };
    let on_up = move |_| drag.set(None);
    let (half, width) = (GRAPH_NODE_HEIGHT / 2.0, GRAPH_NODE_WIDTH);
    let edges = graph
        .edges
        .iter()
        .map(|(from, to)| {
            let (a, b) = (&graph.nodes[*from], &graph.nodes[*to]);
            let path = format!(
                "M{:.1},{:.1} C{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}",
                a.x + width,
                a.y + half,
                a.x + width + 30.0,
                a.y + half,
                b.x - 30.0,
                b.y + half,
                b.x,
                b.y + half
            );
            view! { <path d=path class=format!("edge edge-{}", a.status)></path> }
        })
        .collect_view();
    let nodes = graph
        .nodes
        .iter()
        .map(|n| {
            let href = resource_link(&env, &n.id);
            let label = n.label.clone();
            // Inside a <g> the view macro makes `a` and `title` SVG elements: a page drawn in the
            // browser (client-side navigation) would otherwise get HTML ones, which SVG hides.
            view! {
                <g>
                <a href=href class="node" data-id=n.id.to_string() data-status=n.status.as_str()>
                    <title>{format!("{} ({})", n.id, n.status)}</title>
                    <rect
                        x=n.x
                        y=n.y
                        width=width
                        height=GRAPH_NODE_HEIGHT
                        rx="4"
                        class=format!("node-box node-{}", n.status)
                    ></rect>
                    <text x=n.x + 8.0 y=n.y + half + 4.0 class="node-label">{label}</text>
                </a>
                </g>
            }
        })
        .collect_view();
    let truncated = graph.truncated;
    // Search: a stylesheet with one case-insensitive attribute selector highlights the matches
    // (thousands of nodes, no per-node reactivity); the first match is brought into view.
    let search = RwSignal::new(String::new());
    let places: Vec<(String, f64, f64)> =
        graph.nodes.iter().map(|n| (n.id.to_string().to_lowercase(), n.x, n.y)).collect();
    let places = StoredValue::new(places);
    let matches = Memo::new(move |_| {
        let needle = search.get().trim().to_lowercase();
        if needle.is_empty() {
            return None;
        }
        places.with_value(|p| {
            let hits: Vec<(f64, f64)> =
                p.iter().filter(|(id, _, _)| id.contains(&needle)).map(|(_, x, y)| (*x, *y)).collect();
            Some((hits.len(), hits.first().copied()))
        })
    });
    let highlight = move || {
        let needle = search.get().trim().to_string();
        if needle.is_empty() {
            return String::new();
        }
        let quoted = needle.replace('\\', "\\\\").replace('"', "\\\"");
        format!(
            "#graph.searching a.node {{ opacity: 0.35; }} #graph.searching a.node[data-id*=\"{quoted}\" i] {{ opacity: 1; }} \
             #graph.searching a.node[data-id*=\"{quoted}\" i] .node-box {{ stroke-width: 4; stroke: var(--accent); }}"
        )
    };
    let find = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if let Some((_, Some((x, y)))) = matches.get_untracked() {
            view_box.set((x - 300.0, y - 200.0, 800.0, 450.0));
        }
    };
    let legend = graph.clone();
    view! {
        <style prop:textContent=highlight></style>
        <div class="toolbar graph-toolbar">
            <button class="button button-secondary" type="button" on:click=move |_| view_box.set(initial)>
                "Fit"
            </button>
            <form class="graph-search" role="search" on:submit=find>
                <ResourceSearch id="graph-search" label="Search resources" search/>
                <button class="button button-secondary" type="submit">"Show"</button>
            </form>
            <span class="muted" id="graph-matches" role="status">
                {move || matches.get().map(|(n, _)| format!("{n} match{}", if n == 1 { "" } else { "es" }))}
            </span>
            <span class="muted">{format!("{} resources, {} requires", graph.nodes.len(), graph.edges.len())}</span>
            {(truncated > 0).then(|| view! { <span class="muted" id="graph-truncated">{format!(" ({truncated} more left out: pick the failures view, search or open one resource's neighbourhood)")}</span> })}
        </div>
        <Legend graph=legend/>
        <div class="graph-frame">
            <svg
                node_ref=svg_ref
                id="graph"
                class="graph"
                class:searching=move || !search.get().trim().is_empty()
                role="group"
                aria-label="Resource dependency graph"
                viewBox=move || {
                    let (x, y, w, h) = view_box.get();
                    format!("{x:.1} {y:.1} {w:.1} {h:.1}")
                }
                preserveAspectRatio="xMinYMin meet"
                on:wheel=on_wheel
                on:pointerdown=on_down
                on:pointermove=on_move
                on:pointerup=on_up
                on:pointerleave=on_up
            >
                <g class="edges">{edges}</g>
                <g class="nodes">{nodes}</g>
            </svg>
        </div>
    }
}

/// Node size and spacing of the dependency graph (SVG user units).
pub const GRAPH_NODE_WIDTH: f64 = 180.0;

pub const GRAPH_NODE_HEIGHT: f64 = 26.0;

#[cfg(feature = "ssr")]
const GRAPH_COLUMN: f64 = 240.0;

#[cfg(feature = "ssr")]
const GRAPH_ROW: f64 = 36.0;

/// Width to height the wrapped picture aims at (about the graph frame's).
#[cfg(feature = "ssr")]
const GRAPH_ASPECT: f64 = 1.6;

/// Pictures up to this many columns are never wrapped.
#[cfg(feature = "ssr")]
const GRAPH_WRAP_COLUMNS: usize = 12;

/// Space between two bands of a wrapped picture.
#[cfg(feature = "ssr")]
const GRAPH_BAND_GAP: f64 = 60.0;

/// Nodes per column before a depth level wraps into another column.
#[cfg(feature = "ssr")]
const GRAPH_COLUMN_ROWS: usize = 40;

#[cfg(feature = "ssr")]
const GRAPH_MAX_NODES: usize = 5000;

/// Resources read to pick a focused view (failures, a neighbourhood) from.
#[cfg(feature = "ssr")]
const GRAPH_FOCUS_FETCH_MAX: usize = 100_000;

/// The released resources of the environment with their requires, laid out for the graph page:
/// all of them (up to the size limit), only the failures and what they block, or the
/// neighbourhood of one resource (see [`GraphFocus`]).
#[server(prefix = "/console/fn", endpoint = "resource_graph", input = Json)]
pub async fn resource_graph(env: String, focus: GraphFocus) -> Result<Graph, ConsoleError> {
    use std::collections::HashMap;
    let s = authorized_for("resource.read", &env)?;
    let id = env_id(&env)?;
    // The whole graph is cut at GRAPH_MAX_NODES; a focused view picks from every resource first.
    let fetch_max = if focus.is_all() { GRAPH_MAX_NODES } else { GRAPH_FOCUS_FETCH_MAX };
    let mut rows = Vec::new();
    let mut req = orchestrator::paging::PageRequest {
        limit: Some(1000),
        sort: Some("resource_id.asc".into()),
        filters: vec![("status".into(), "!orphaned".into())],
        ..Default::default()
    };
    let mut total = loop {
        let (page, _) = s.orchestrator.released_resources(id, &req, false).await.map_err(fail)?;
        let total = page.metadata.total;
        let next = page.links.next.clone();
        rows.extend(page.items);
        match next {
            Some(link) if rows.len() < fetch_max => {
                let cursor = cursor(&link);
                let get = |k: &str| cursor.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
                req.start = get("start");
                req.end = get("end");
                req.first_id = get("first_id");
                req.last_id = get("last_id");
            }
            _ => break total,
        }
    };
    if !focus.is_all() {
        let index: HashMap<&ResourceId, usize> = rows.iter().enumerate().map(|(i, r)| (&r.resource_id, i)).collect();
        let requires: Vec<Vec<usize>> =
            rows.iter().map(|r| r.requires.iter().filter_map(|q| index.get(&q.id).copied()).collect()).collect();
        let statuses: Vec<ResourceState> = rows.iter().map(|r| r.status).collect();
        // `around` is the text of the URL: a malformed id is refused saying what an id looks like.
        let around = match focus.around.as_str() {
            "" => None,
            text => Some(ResourceId::parse(text).map_err(|e| ConsoleError::refused(format!("around: {e}")))?),
        };
        let find = |text: &str| ResourceId::parse(text).ok().and_then(|id| index.get(&id).copied());
        let keep = crate::model::graph_focus(&focus, &requires, &statuses, find);
        if around.as_ref().is_some_and(|id| !index.contains_key(id)) {
            return Err(ConsoleError::refused(format!(
                "{} is not a released resource of this environment",
                focus.around
            )));
        }
        let mut i = 0;
        rows.retain(|_| {
            i += 1;
            keep[i - 1]
        });
        total = rows.len() as u64;
    }
    rows.truncate(GRAPH_MAX_NODES);
    let index: HashMap<&ResourceId, usize> = rows.iter().enumerate().map(|(i, r)| (&r.resource_id, i)).collect();
    let requires: Vec<Vec<usize>> =
        rows.iter().map(|r| r.requires.iter().filter_map(|q| index.get(&q.id).copied()).collect()).collect();
    let labels = crate::model::short_labels(
        &rows
            .iter()
            .map(|r| (r.id_details.resource_type.as_str(), r.id_details.resource_id_value.as_str()))
            .collect::<Vec<_>>(),
    );
    // Depth along requires (longest path from a resource that requires nothing), iteratively.
    let mut depth = vec![0usize; rows.len()];
    for _ in 0..rows.len().min(64) {
        let mut changed = false;
        for (i, reqs) in requires.iter().enumerate() {
            let d = reqs.iter().map(|r| depth[*r] + 1).max().unwrap_or(0);
            if d > depth[i] {
                depth[i] = d;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let levels = depth.iter().max().map(|d| d + 1).unwrap_or(0);
    let mut column_of_level = vec![0usize; levels + 1];
    let mut counts = vec![0usize; levels];
    for d in &depth {
        counts[*d] += 1;
    }
    for level in 0..levels {
        column_of_level[level + 1] = column_of_level[level] + counts[level].div_ceil(GRAPH_COLUMN_ROWS).max(1);
    }
    // Column and row of each node; long chains give many narrow columns.
    let mut seen = vec![0usize; levels];
    let mut places = Vec::with_capacity(rows.len());
    let mut max_rows = 0;
    for d in &depth {
        let n = seen[*d];
        seen[*d] += 1;
        places.push((column_of_level[*d] + n / GRAPH_COLUMN_ROWS, n % GRAPH_COLUMN_ROWS));
        max_rows = max_rows.max(n % GRAPH_COLUMN_ROWS + 1);
    }
    // A very wide picture is wrapped into bands of columns stacked downwards, so that it keeps
    // roughly the frame's proportions and a thousand resources stay readable when fitted.
    let columns = column_of_level[levels].max(1);
    let band_height = max_rows as f64 * GRAPH_ROW + GRAPH_BAND_GAP;
    let per_band = if columns <= GRAPH_WRAP_COLUMNS {
        columns
    } else {
        ((GRAPH_ASPECT * columns as f64 * band_height / GRAPH_COLUMN).sqrt().ceil() as usize)
            .clamp(GRAPH_WRAP_COLUMNS, columns)
    };
    let bands = columns.div_ceil(per_band);
    let nodes = rows
        .iter()
        .zip(&places)
        .zip(labels)
        .map(|((r, (column, row)), label)| GraphNode {
            id: r.resource_id.clone(),
            label,
            status: r.status,
            x: 20.0 + (column % per_band) as f64 * GRAPH_COLUMN,
            y: 20.0 + (column / per_band) as f64 * band_height + *row as f64 * GRAPH_ROW,
        })
        .collect();
    let edges = requires.iter().enumerate().flat_map(|(i, reqs)| reqs.iter().map(move |r| (*r, i))).collect();
    Ok(Graph {
        width: 40.0 + per_band.min(columns) as f64 * GRAPH_COLUMN,
        height: 40.0 + bands as f64 * band_height - GRAPH_BAND_GAP,
        nodes,
        edges,
        truncated: total.saturating_sub(rows.len() as u64),
    })
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::*;
    use crate::test_support::*;

    /// A thousand resources in long chains are laid out in bands that keep the frame's
    /// proportions, every node in its own place inside the picture.
    #[tokio::test]
    async fn the_graph_of_a_thousand_resources_keeps_its_proportions() {
        let _ = any_spawner::Executor::init_tokio();
        let (_dir, o) = orchestrator_with(&[("infra", "big")]).await;
        let env = o.list_environments().await.unwrap()[0].id;
        let version = o.reserve_version(env).await.unwrap();
        let id = |i: usize| format!("std::testing::NullResource[agent{},name=r{i}],v={version}", i / 100);
        let resources = (0..1000)
            .map(|i| {
                serde_json::json!({"id": id(i), "name": format!("r{i}"), "agentname": format!("agent{}", i / 100),
                    "fail": false, "value": "", "int_value": 0, "purged": false, "send_event": false,
                    "receive_events": false, "requires": if i % 100 > 0 { vec![id(i - 1)] } else { vec![] }})
                .as_object()
                .unwrap()
                .clone()
            })
            .collect();
        // auto_deploy (the default) releases it.
        o.put_version(env, api::version::PutVersion { version, resources, ..Default::default() }).await.unwrap();
        let owner = Owner::new();
        owner.set();
        provide_context(o.clone());
        provide_context(orchestrator::auth::Principal::Unrestricted);
        let graph = resource_graph(env.to_string(), GraphFocus::default()).await.unwrap();
        assert_eq!((graph.nodes.len(), graph.edges.len()), (1000, 990));
        let ratio = graph.width / graph.height;
        assert!((1.0..3.0).contains(&ratio), "{} x {}", graph.width, graph.height);
        let mut places = std::collections::HashSet::new();
        for node in &graph.nodes {
            assert!(node.x >= 0.0 && node.x + GRAPH_NODE_WIDTH <= graph.width, "{node:?}");
            assert!(node.y >= 0.0 && node.y + GRAPH_NODE_HEIGHT <= graph.height, "{node:?}");
            assert!(places.insert((node.x as i64, node.y as i64)), "two nodes at {node:?}");
        }
    }
}
