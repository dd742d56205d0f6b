//! The dependency graph of the released resources: an SVG with one box per resource coloured by
//! its state, requires edges coloured by the state of the required resource; wheel zooms, drag
//! pans, a click opens the resource.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::components::*;
use crate::fns::{self, GRAPH_NODE_HEIGHT, GRAPH_NODE_WIDTH};
use crate::layout::resource_link;
use crate::model::Graph;

#[component]
pub fn GraphPage() -> impl IntoView {
    let env = env();
    let refresh = Refresh::get();
    let data = Resource::new(move || (env.get(), refresh.tick()), |(env, _)| fns::resource_graph(env));
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
                <Transition fallback=|| view! { <p class="muted">"Loading the graph…"</p> }>
                    {move || Suspend::new(async move {
                        match data.await {
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
            let label: String = n.label.chars().take(24).collect();
            view! {
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
            }
        })
        .collect_view();
    let truncated = graph.truncated;
    view! {
        <div class="toolbar">
            <button class="button button-secondary" type="button" on:click=move |_| view_box.set(initial)>
                "Fit"
            </button>
            <span class="muted">{format!("{} resources, {} requires", graph.nodes.len(), graph.edges.len())}</span>
            {(truncated > 0).then(|| view! { <span class="muted">{format!(" ({truncated} more left out)")}</span> })}
        </div>
        <div class="graph-frame">
            <svg
                node_ref=svg_ref
                id="graph"
                class="graph"
                role="img"
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
