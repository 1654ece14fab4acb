//! The step as a graph, alive (issue 27): the shown schedule's forward and
//! backward nodes with the tensors resident at the current op, played or
//! stepped on the page's one cursor, so the chain, the memory curve and
//! the timelines above follow it. "Save as GIF" saves the same animation,
//! one frame per operation (`io::export_gif`).

use crate::io::{export_gif, gif_plan};
use crate::kit::graph_chart::GraphChart;
use crate::kit::widgets::{SpeedSelect, Switch};
use crate::state::use_app;
use crate::teaching::step_graph::StepGraph;
use leptos::prelude::*;
use std::sync::Arc;

#[component]
pub fn GraphView() -> impl IntoView {
    let state = use_app();
    // Replayed once per schedule while the step-through is on: stepping
    // reads it, never re-simulates. Otherwise the nodes alone, which only
    // a new chain changes: a slider move pays for no replay (it did, and
    // the slider at 300 stages went from 16 to 26 ms).
    let graph = RwSignal::new(None::<Arc<StepGraph>>);
    let stepping = Memo::new(move |_| state.view.step.with(Option::is_some));
    Effect::new(move |_| {
        let g = if stepping.get() {
            state.shown.current.with(|c| {
                let c = c.as_deref()?;
                let ops = c.planned.ops.as_deref()?;
                StepGraph::new(c.chain.clone(), ops, state.controls.link()).ok()
            })
        } else {
            Some(StepGraph::nodes_only(state.loaded.chain.get()))
        };
        graph.set(g.map(Arc::new));
    });
    let proportional = RwSignal::new(true);
    let playing = state.view.playing;
    // The GIF being drawn: Some((frame, frames)) until it downloads.
    let gif_progress = RwSignal::new(None::<(usize, usize)>);
    let gif_cancel = RwSignal::new(false);
    let gif_plan = Memo::new(move |_| gif_plan(state));
    let gif_note = move || {
        match gif_plan.get() {
        None => "No schedule at this budget: nothing to save.".to_string(),
        Some(p) => format!(
            "Save the animation as a looping GIF: {}, at the speed chosen here, the last frame held",
            p.describe()
        ),
    }
    };
    view! {
        <section class="card graph-card" id="learn-graph" aria-labelledby="learn-graph-title">
            <div class="graph-head">
                <h2 id="learn-graph-title">"The step as a graph"</h2>
                <div class="graph-controls">
                    <button id="graph-prev" title="Previous op (←)" aria-label="Graph: previous op"
                        on:click=move |_| state.step_by(-1)>"◀"</button>
                    <button id="graph-play" class="primary" title="Run or pause (space)"
                        aria-label=move || if playing.get() { "Pause the graph" } else { "Run the graph" }
                        on:click=move |_| state.play_pause()>
                        {move || if playing.get() { "❚❚ Pause" } else { "▶ Run" }}
                    </button>
                    <button id="graph-next" title="Next op (→)" aria-label="Graph: next op"
                        on:click=move |_| state.step_by(1)>"▶"</button>
                    <SpeedSelect id="graph-speed" label="Graph speed" speed=state.view.speed />
                    <Switch id="graph-loop" on=state.view.looping label="Loop" />
                    <Switch id="graph-proportional" on=proportional label="Sizes: time and bytes" />
                    {move || match gif_progress.get() {
                        None => view! {
                            <button id="graph-gif" title=gif_note
                                disabled=move || gif_plan.with(Option::is_none)
                                on:click=move |_| export_gif(state, proportional.get_untracked(), gif_progress, gif_cancel)>
                                "Save as GIF"
                            </button>
                        }
                        .into_any(),
                        Some((k, n)) => view! {
                            <span id="graph-gif-progress" class="muted" role="status">{format!("GIF: frame {k} / {n}")}</span>
                            <button id="graph-gif-cancel" on:click=move |_| gif_cancel.set(true)>"Cancel"</button>
                        }
                        .into_any(),
                    }}
                </div>
            </div>
            <p class="muted graph-intro">
                "Forward nodes in a row, backward nodes under them, each arrow a tensor an operation reads. "
                "Filled: on the device after the operation; striped: written by a recomputation."
            </p>
            {move || gif_plan.get().filter(|p| p.capped()).map(|p| view! {
                <p class="muted graph-gif-note">{format!("A GIF keeps {}: this schedule is long.", p.describe())}</p>
            })}
            {move || match graph.with(|g| g.is_some()) {
                true => view! {
                    <GraphChart graph=graph.into() step=state.view.step.into() proportional=proportional.into() />
                }
                .into_any(),
                false => view! { <p class="muted">"No schedule at this budget: nothing to draw."</p> }.into_any(),
            }}
        </section>
    }
}
