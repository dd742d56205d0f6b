//! The dependency graph of the released resources: an SVG with one box per resource coloured by
//! its state, requires edges coloured by the state of the required resource; wheel zooms, drag
//! pans, a click opens the resource. Views: every resource, the failures and what they block
//! (`?view=failures`), or the neighbourhood of one resource (`?around=<id>&hops=<n>`, linked
//! from the resource's details page). A search highlights the matching resources.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::components::*;
use crate::fns::{self, GRAPH_NODE_HEIGHT, GRAPH_NODE_WIDTH};
use crate::layout::resource_link;
use crate::model::{Graph, GraphFocus};

const GRAPH: &str = "/console/resources/graph";

/// The graph of `rid`'s neighbourhood (the link on a resource's details page).
pub fn around_link(env: &str, rid: &str) -> String {
    format!("{}&around={}&hops=2", env_link("resources/graph", env), encode(rid))
}

#[component]
pub fn GraphPage() -> impl IntoView {
    let env = env();
    let refresh = Refresh::get();
    let (view_q, around, hops) = (query("view"), query("around"), query("hops"));
    let focus = Memo::new(move |_| GraphFocus {
        failures: view_q.get() == "failures",
        around: around.get(),
        hops: hops.get().parse().unwrap_or(2),
    });
    let data = Resource::new(
        move || (env.get(), focus.get(), refresh.tick()),
        |(env, focus, _)| fns::resource_graph(env, focus),
    );
    view! {
        <Title text="Dependency graph"/>
        <section class="page">
            <nav class="breadcrumbs" aria-label="Breadcrumbs">
                <a href=move || env_link("resources", &env.get())>"Resources"</a>
                " › "
                <span>"Dependency graph"</span>
            </nav>
            <div class="page-header">
                <h1>"Dependency graph"</h1>
                <span class="muted">"Scroll to zoom, drag to pan, click a resource to open it."</span>
            </div>
            <Show when=move || !env.get().is_empty() fallback=NoEnvironment>
                <FocusBar focus/>
                <Transition fallback=|| view! { <p class="muted">"Loading the graph…"</p> }>
                    {move || Suspend::new(async move {
                        match data.await {
                            Ok(g) if g.nodes.is_empty() && focus.get_untracked().failures => view! {
                                <Empty title="No failures">
                                    <p>"No resource is failed, undefined or unavailable, so nothing is blocked."</p>
                                </Empty>
                            }
                                .into_any(),
                            Ok(g) if g.nodes.is_empty() => view! {
                                <Empty title="No resources yet">
                                    <p>"Release a version to see how its resources depend on each other."</p>
                                </Empty>
                            }
                                .into_any(),
                            Ok(g) => view! { <GraphView env=env.get_untracked() graph=g/> }.into_any(),
                            Err(e) => view! { <ErrorBox title="The graph could not be loaded" error=e.to_string()/> }.into_any(),
                        }
                    })}
                </Transition>
            </Show>
        </section>
    }
}

/// The view chips: all, failures, and (when one is open) the neighbourhood with its hops.
#[component]
fn FocusBar(focus: Memo<GraphFocus>) -> impl IntoView {
    let q = use_query_map();
    move || {
        let current = q.get();
        let f = focus.get();
        let all = link(GRAPH, &current, &[("view", None), ("around", None), ("hops", None)]);
        let failures = link(GRAPH, &current, &[("view", Some("failures".into()))]);
        let around = (!f.around.is_empty()).then(|| {
            let hops = [1usize, 2, 3]
                .into_iter()
                .map(|n| {
                    let href = link(GRAPH, &current, &[("hops", Some(n.to_string()))]);
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
    let mut counts: Vec<(String, usize)> = Vec::new();
    for n in &graph.nodes {
        match counts.iter_mut().find(|(s, _)| *s == n.status) {
            Some((_, c)) => *c += 1,
            None => counts.push((n.status.clone(), 1)),
        }
    }
    counts.sort_by_key(|(s, _)| crate::model::RESOURCE_STATES.iter().position(|x| x == s).unwrap_or(usize::MAX));
    view! {
        <ul class="legend graph-legend" id="graph-legend" aria-label="Legend">
            {counts
                .into_iter()
                .map(|(state, n)| {
                    view! {
                        <li class="legend-item" data-state=state.clone()>
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
                <a href=href class="node" data-id=n.id.clone() data-status=n.status.clone()>
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
    let places: Vec<(String, f64, f64)> = graph.nodes.iter().map(|n| (n.id.to_lowercase(), n.x, n.y)).collect();
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
                <label class="sr-only" for="graph-search">"Search resources"</label>
                <input
                    class="input"
                    type="search"
                    id="graph-search"
                    placeholder="Search resources…"
                    prop:value=move || search.get()
                    on:input=move |ev| search.set(event_target_value(&ev))
                />
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
