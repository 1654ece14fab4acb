//! The *Code & files* place: the loaded chain in words, where its numbers
//! come from, and every import and export.

use super::measured_run::ImportRunButton;
use crate::io::{self, DashboardButtons};
use crate::kit::format::{bytes, ms};
use crate::state::use_app;
use leptos::prelude::*;
use remat_core::examples;
use remat_core::solvers::memory_floor;

/// The *Code & files* place: the loaded chain in words, where its numbers
/// come from, and every import and export.
#[component]
pub fn ChainFiles() -> impl IntoView {
    let state = use_app();
    view! {
        <section class="card chain-files">
            <div class="chain-about">
                <strong>{move || state.loaded.chain.get().name.clone()}</strong>
                {move || {
                    let c = state.loaded.chain.get();
                    format!(
                        " — {} stages · no-limit step {} · M_low {} · M_high {}",
                        c.len(),
                        ms(c.sequential_seconds()),
                        bytes(state.loaded.m_low.get()),
                        bytes(state.loaded.m_high.get())
                    )
                }}
                <ChainSourceLine />
                {move || state.loaded.chain.with(|c| c.inputs_summary()).map(|batch| view! {
                    <div id="chain-batch">{format!("batch: {batch}")}</div>
                })}
            </div>
            <p id="budget-range-help" class="muted">
                "The budget counts activations only. M_low: the least rotor's schedules need (recomputing the most); M_high: keeping everything, no recomputation. Offloading can go below M_low, down to the floor of "
                {move || bytes(state.loaded.chain.with(|c| memory_floor(c)).bytes)}
                ", the least any schedule needs."
            </p>
            <div class="exports">
                <span class="label">"Import"</span>
                <ImportRunButton />
            </div>
            <div class="exports">
                <span class="label">"Export"</span>
                <button id="export-schedule" on:click=move |_| io::export_schedule(state)
                    title="remat-schedule/1: run it, or check it with `remat simulate`">"Schedule"</button>
                <button id="export-trace" on:click=move |_| io::export_trace(state)
                    title="Chrome trace-event JSON, for Perfetto or chrome://tracing">"Trace"</button>
                <button id="export-chain" on:click=move |_| io::export_chain(state)
                    title="remat-chain/1">"Chain"</button>
                <DashboardButtons />
            </div>
        </section>
    }
}

/// Where the loaded chain's numbers come from (its `source`), tagged
/// measured / analytic / hand-made: one line, the whole text on demand.
#[component]
fn ChainSourceLine() -> impl IntoView {
    let state = use_app();
    let source = move || state.loaded.chain.get().source.clone();
    let tag = move || source_kind(&source());
    view! {
        <details id="chain-source" class="chain-source">
            <summary>
                <span class=move || format!("source-tag {}", tag().replace(' ', "-"))>{tag}</span>
                <span class="source-text">{source}</span>
            </summary>
            <p class="source-full">{source}</p>
        </details>
    }
}

/// The tag in front of a chain's `source`.
fn source_kind(source: &str) -> String {
    match examples::provenance_of(source) {
        Some(p) => p.label().into(),
        None if source.is_empty() => "no source given".into(),
        None => "source".into(),
    }
}
